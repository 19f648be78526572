// The results store, in domain terms. The one implementation is SQLite (sqlite_store.h); the
// contract test suite (tests/unit/store) is written against this interface.
//
// Thread contract: all methods are safe to call from any thread concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

struct ResultQuery {
  uint32_t limit = 50;  // newest first; 0 = no limit
  std::string worker;   // either endpoint on this worker; "" = any
  std::optional<TestStatus> status;
  std::string run_id;    // "" = any
  int64_t since_ms = 0;  // started_ms >= since_ms
};

struct WorkerRecord {
  std::string name;
  std::string hostname;
  std::string inventory_json;  // the inventory as registered, JSON (opaque to the store)
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  // Inserts a finished result; returns its row id. A full disk or I/O error is a Status
  // (kResourceExhausted for SQLITE_FULL) and nothing half-written stays behind.
  virtual Result<int64_t> insertResult(const TestResult& result) = 0;
  virtual Result<std::vector<TestResult>> queryResults(const ResultQuery& query) = 0;
  virtual Result<std::optional<TestResult>> getResult(const std::string& test_id) = 0;
  // Remembers a worker's latest inventory (upsert by name).
  virtual Status upsertWorker(const WorkerRecord& worker) = 0;
  virtual Result<std::vector<WorkerRecord>> listWorkers() = 0;
};

}  // namespace gdrmesh
