// The store contract: one parameterised suite that every Store implementation is instantiated
// against (INSTANTIATE_TEST_SUITE_P(Name, ResultStoreContractTest, ...)). Every method of every
// interface of store.h is called by it (store_contract_test.cc: results, workers, sweeps,
// schedule runs; store_contract_verdicts_test.cc: sweep reports; store_contract_aggregates_test.cc:
// test markers, aggregates, pair history, retention, actions; store_contract_paths_test.cc: tests'
// paths through the fabric; store_contract_fabric_test.cc: the fabric's history;
// store_contract_link_counters_test.cc: port counters and link verdicts). Instantiated for SQLite
// (file and memory, sqlite_store_test.cc) and the MemoryStore of tests/support
// (memory_store_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "common/status.h"
#include "coordinator/store/store.h"

namespace gdrmesh::testing {

// One store under test, plus a way to close it and open the same storage again.
class StoreHarness {
 public:
  virtual ~StoreHarness() = default;
  virtual ResultStore& store() = 0;
  virtual SweepStore& sweeps() = 0;
  virtual ActionStore& actions() = 0;
  virtual HookStateStore& hookState() = 0;
  virtual TestPathStore& paths() = 0;
  virtual FabricHistory& fabric() = 0;
  virtual LinkCounterStore& linkCounters() = 0;
  // False for stores that keep nothing across a reopen (the reopen test is skipped).
  virtual bool persistent() const = 0;
  // Closes the store and opens the same storage again.
  virtual Status reopen() = 0;
};

struct StoreFactory {
  std::string name;  // test-name suffix
  std::function<Result<std::unique_ptr<StoreHarness>>()> make;
};

// gtest prints the parameter by name, not as bytes.
inline void PrintTo(const StoreFactory& f, std::ostream* os) {
  *os << f.name;
}

inline std::string storeFactoryName(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

class ResultStoreContractTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  ResultStore& store() { return harness_->store(); }
  SweepStore& sweeps() { return harness_->sweeps(); }
  ActionStore& actions() { return harness_->actions(); }
  HookStateStore& hookState() { return harness_->hookState(); }
  TestPathStore& paths() { return harness_->paths(); }
  FabricHistory& fabric() { return harness_->fabric(); }
  LinkCounterStore& linkCounters() { return harness_->linkCounters(); }
  std::unique_ptr<StoreHarness> harness_;
};

// A TestResult with every field set to a value other than its default (extreme values,
// -0.0, a denormal, infinity, NaN, SQL metacharacters, UTF-8, an embedded NUL).
TestResult makeFullResult(const std::string& test_id);
// A small result: `initiator` -> `target`, started at `started_ms`.
TestResult makeResult(const std::string& test_id, const std::string& initiator,
                      const std::string& target, int64_t started_ms,
                      TestStatus status = TestStatus::kPassed, const std::string& run_id = "");
// Field by field; doubles compared bit for bit. Includes `id`.
void expectSameResult(const TestResult& want, const TestResult& got);
// A sweep with every field set (JSON with quotes, UTF-8).
SweepRecord makeSweep(const std::string& id, int64_t created_ms, const std::string& state);
void expectSameSweep(const SweepRecord& want, const SweepRecord& got);

}  // namespace gdrmesh::testing
