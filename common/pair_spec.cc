#include "common/pair_spec.h"

#include "common/units.h"

namespace gdrmesh {
namespace {

Status checkSide(const EndpointSelector& s, const std::string& field) {
  if (s.worker.empty()) {
    return invalidArgument(field + ": no worker given", "name a worker from `gdrmesh workers`");
  }
  if (s.memory != MemoryKind::kCuda && s.gpu >= 0) {
    return invalidArgument(field + ": a GPU index was given with host memory",
                           "add --memory cuda, or drop the GPU index");
  }
  if (s.memory == MemoryKind::kCuda && s.gpu < -1) {
    return invalidArgument(field + ": gpu " + std::to_string(s.gpu) + " is not an index",
                           "use --gpu 0, 1, ...");
  }
  if (s.memory != MemoryKind::kCuda &&
      (s.reg == RegPath::kDmabuf || s.reg == RegPath::kPeermem || s.reg == RegPath::kStaged)) {
    return invalidArgument(field + ": registration path " + std::string(toString(s.reg)) +
                               " applies to GPU memory only",
                           "add --memory cuda or use --reg host");
  }
  return {};
}

}  // namespace

Status validatePairTestSpec(const PairTestSpec& spec, const PairTestLimits& limits) {
  GDR_RETURN_IF_ERROR(checkSide(spec.initiator, "initiator"));
  GDR_RETURN_IF_ERROR(checkSide(spec.target, "target"));
  if (spec.message_size == 0) return invalidArgument("size: must be > 0", "e.g. --size 64KiB");
  if (spec.message_size > limits.max_message_size) {
    return invalidArgument("size: " + formatSize(spec.message_size) + " is above the maximum " +
                               formatSize(limits.max_message_size),
                           "use a smaller --size (the coordinator's --max-size sets the limit)");
  }
  if (spec.iterations == 0 || spec.iterations > limits.max_iterations) {
    return invalidArgument("iters: must be in 1.." + std::to_string(limits.max_iterations));
  }
  if (spec.warmup_iterations > limits.max_warmup_iterations) {
    return invalidArgument("warmup: must be at most " +
                           std::to_string(limits.max_warmup_iterations));
  }
  if (spec.num_qps == 0 || spec.num_qps > limits.max_qps) {
    return invalidArgument("qps: must be in 1.." + std::to_string(limits.max_qps));
  }
  if (spec.tx_depth == 0 || spec.tx_depth > limits.max_tx_depth) {
    return invalidArgument("tx-depth: must be in 1.." + std::to_string(limits.max_tx_depth));
  }
  if (spec.duration_seconds < 0 || spec.duration_seconds > limits.max_seconds) {
    return invalidArgument("duration: must be in 0..86400 s");
  }
  if (spec.duration_seconds > 0 && spec.mode == Mode::kLatency) {
    return invalidArgument("duration: latency tests count iterations",
                           "use --iters with --mode lat");
  }
  if (spec.inline_size > limits.max_inline) {
    return invalidArgument("inline: must be in 0.." + std::to_string(limits.max_inline) + " B");
  }
  if (spec.timeout_seconds < 0 || spec.timeout_seconds > limits.max_seconds) {
    return invalidArgument("timeout: must be in 0..86400 s");
  }
  if (spec.bidirectional && spec.mode == Mode::kLatency) {
    return invalidArgument("bidir: applies to bandwidth tests", "drop --bidir or use --mode bw");
  }
  return {};
}

Status checkTransportOptions(const PairTestSpec& spec, TransportKind transport) {
  if (transport == TransportKind::kVerbs) return {};
  const char* t = toString(transport);
  auto refuse = [&](const std::string& opt) {
    return invalidArgument(opt + ": not supported by the " + t + " transport",
                           "drop " + opt + ", or ask for --transport verbs");
  };
  if (spec.use_rdma_cm) return refuse("--rdma-cm");
  if (spec.gid_index >= 0) return refuse("--gid-index");
  if (spec.inline_size > 0) return refuse("--inline");
  if (spec.bidirectional && transport == TransportKind::kEmulated) return refuse("--bidir");
  return {};
}

}  // namespace gdrmesh
