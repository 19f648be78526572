// Runs one pair test across two workers: validates the request, prepares both endpoints,
// exchanges their descriptions, runs both sides, verifies the destination, releases both, and
// stores the result. Every fabric failure becomes a stored FAILED/SKIPPED result with a reason;
// only bad requests (unknown worker, size out of range, ...) are returned as a Status, naming
// the field.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/status.h"
#include "coordinator/service/registry.h"
#include "coordinator/store/store.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh {

struct PairRunnerOptions {
  uint64_t max_message_size = 1ULL << 30;  // 1 GiB
  uint64_t max_iterations = 100'000'000;
  double default_timeout_seconds = 120;
  double command_timeout_seconds = 60;  // prepare/connect/verify/release
};

class PairRunner {
 public:
  PairRunner(Registry& registry, PairRunnerOptions options)
      : registry_(registry), options_(options) {}

  // Validation only: OK when the request can be attempted.
  Status validate(const v1::RunTestRequest& req) const;

  // Runs the test. Returns a Status only for invalid requests; otherwise the finished result
  // (not yet stored).
  Result<TestResult> run(const v1::RunTestRequest& req);

 private:
  Registry& registry_;
  const PairRunnerOptions options_;
};

std::string newTestId();

}  // namespace gdrmesh
