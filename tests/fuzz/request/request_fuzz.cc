// Fuzzes the coordinator's domain-side validation of a pair-test request (RunTest): bytes
// parsed as a gdrmesh.v1.RunTestRequest, converted once (proto/convert.h), then checked as
// ControlService.RunTest checks it: validatePairTestSpec against the limits, then
// checkPairAgainstInventory against two fixed workers. Any bytes must give OK or an error
// Status, never a crash; and a spec that passes must be within every limit (a violation
// aborts: a finding).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/pair_spec.h"
#include "coordinator/orchestrator/pair_test.h"
#include "gdrmesh/v1/gdrmesh.pb.h"
#include "proto/convert.h"

namespace {

gdrmesh::WorkerStatus worker(const char* name, bool gpu) {
  gdrmesh::WorkerStatus w;
  w.name = name;
  w.state = "online";
  w.inventory.hostname = std::string(name) + "-host";
  w.inventory.transports = {"emulated"};
  gdrmesh::Nic nic;
  nic.name = "mlx5_0";
  w.inventory.nics.push_back(nic);
  if (gpu) {
    gdrmesh::Gpu g;
    g.index = 0;
    g.name = "fuzz GPU";
    w.inventory.gpus.push_back(g);
  }
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gdrmesh::WorkerStatus a = worker("a", true);
  static const gdrmesh::WorkerStatus b = worker("b", false);
  gdrmesh::v1::RunTestRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  const gdrmesh::PairTestSpec spec = gdrmesh::convert::fromProto(req);
  const gdrmesh::PairTestLimits limits;
  if (!gdrmesh::validatePairTestSpec(spec, limits).ok()) return 0;
  if (spec.message_size > limits.max_message_size || spec.iterations > limits.max_iterations ||
      spec.num_qps > limits.max_qps || spec.tx_depth > limits.max_tx_depth ||
      spec.inline_size > limits.max_inline ||
      !(spec.duration_seconds >= 0 && spec.duration_seconds <= limits.max_seconds) ||
      !(spec.timeout_seconds >= 0 && spec.timeout_seconds <= limits.max_seconds)) {
    std::abort();  // validation let a request past a limit
  }
  (void)gdrmesh::checkPairAgainstInventory(spec, a, b);
  (void)gdrmesh::checkPairAgainstInventory(spec, b, a);
  return 0;
}
