#include "common/pair_spec.h"

#include <algorithm>
#include <optional>

#include "common/capabilities.h"
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
  return resolveRegPath(s.memory, s.reg, field).status();
}

bool isGpuRegPath(RegPath p) {
  return p == RegPath::kDmabuf || p == RegPath::kPeermem || p == RegPath::kStaged;
}

}  // namespace

Result<RegPath> resolveRegPath(MemoryKind memory, RegPath requested, const std::string& field) {
  if (memory != MemoryKind::kCuda && isGpuRegPath(requested)) {
    return invalidArgument(field + ": registration path " + std::string(toString(requested)) +
                               " applies to GPU memory only",
                           "put that side on cuda memory, or register it as host (or auto)");
  }
  if (memory == MemoryKind::kCuda && requested == RegPath::kHost) {
    return invalidArgument(field + ": registration path host does not apply to GPU memory",
                           "use auto, dmabuf, peermem or staged for a side on cuda memory");
  }
  return effectiveRegPath(memory, requested);
}

RegPath effectiveRegPath(MemoryKind memory, RegPath requested) {
  return memory != MemoryKind::kCuda && requested == RegPath::kAuto ? RegPath::kHost : requested;
}

Result<MemoryChoice> parseMemoryChoice(const std::string& text, const std::string& field) {
  const std::string fix = "write host, cuda or cuda:N (N: the GPU index, e.g. cuda:0)";
  MemoryChoice c;
  const size_t colon = text.find(':');
  auto kind = parseMemoryKind(std::string_view(text).substr(0, colon));
  if (!kind) return invalidArgument(field + ": '" + text + "' is not a memory", fix);
  c.kind = *kind;
  if (colon == std::string::npos) return c;
  const std::string index = text.substr(colon + 1);
  if (c.kind != MemoryKind::kCuda) {
    return invalidArgument(field + ": '" + text + "': host memory takes no index", fix);
  }
  if (index.empty() || index.size() > 4 ||
      index.find_first_not_of("0123456789") != std::string::npos) {
    return invalidArgument(field + ": '" + text + "': '" + index + "' is not a GPU index", fix);
  }
  c.gpu = std::stoi(index);
  return c;
}

std::string memoryText(MemoryKind kind, int gpu) {
  if (kind != MemoryKind::kCuda) return toString(kind);
  return std::string(toString(kind)) + ":" + std::to_string(gpu < 0 ? 0 : gpu);
}

namespace {

Result<RegPath> parseRegOption(const std::string& text, const std::string& name) {
  auto reg = text.empty() ? std::optional<RegPath>(RegPath::kAuto) : parseRegPath(text);
  if (!reg) {
    return invalidArgument(name + ": '" + text + "' is not a registration path",
                           "use one of auto, host, dmabuf, peermem, staged");
  }
  return *reg;
}

}  // namespace

Status applyMemoryOptions(const MemoryOptions& o, const MemoryOptionNames& names,
                          PairTestSpec* spec) {
  const std::string& is = names.assign;
  if (!o.both.empty() && (!o.src.empty() || !o.dst.empty())) {
    const std::string& side = o.src.empty() ? names.dst : names.src;
    return invalidArgument(
        side + ": cannot be combined with " + names.both + " (which sets both sides)",
        "give " + names.both + is + "M for both sides, or " + names.src + is + "M and/or " +
            names.dst + is + "M, e.g. " + names.src + is + "host " + names.dst + is + "cuda:0");
  }
  if (!o.reg.empty() && (!o.src_reg.empty() || !o.dst_reg.empty())) {
    const std::string& side = o.src_reg.empty() ? names.dst_reg : names.src_reg;
    return invalidArgument(
        side + ": cannot be combined with " + names.reg + " (which sets both sides)",
        "give " + names.reg + is + "R for both sides, or " + names.src_reg + is + "R and/or " +
            names.dst_reg + is + "R, e.g. " + names.src_reg + is + "staged " + names.dst_reg + is +
            "dmabuf");
  }
  GDR_ASSIGN_OR_RETURN(const RegPath reg, parseRegOption(o.reg, names.reg));
  if (o.gpu < -1) {
    return invalidArgument(names.gpu + ": " + std::to_string(o.gpu) + " is not a GPU index",
                           "use " + names.gpu + " 0, 1, ...");
  }
  struct Side {
    const std::string* text;
    const std::string* name;
    const std::string* reg_text;  // this side's own path ("" = none)
    const std::string* reg_name;
    EndpointSelector* sel;
  };
  const Side sides[] = {
      {o.both.empty() ? &o.src : &o.both, o.both.empty() ? &names.src : &names.both, &o.src_reg,
       &names.src_reg, &spec->initiator},
      {o.both.empty() ? &o.dst : &o.both, o.both.empty() ? &names.dst : &names.both, &o.dst_reg,
       &names.dst_reg, &spec->target}};
  bool any_cuda = false;
  for (const Side& side : sides) {
    MemoryChoice c;
    if (!side.text->empty()) {
      GDR_ASSIGN_OR_RETURN(c, parseMemoryChoice(*side.text, *side.name));
    }
    if (c.kind == MemoryKind::kCuda) {
      any_cuda = true;
      if (c.gpu >= 0 && o.gpu >= 0 && c.gpu != o.gpu) {
        return invalidArgument(names.gpu + ": " + std::to_string(o.gpu) + " contradicts " +
                                   *side.name + is + *side.text,
                               "drop " + names.gpu + ", or make the two GPU indexes agree");
      }
      side.sel->memory = MemoryKind::kCuda;
      side.sel->gpu = c.gpu >= 0 ? c.gpu : std::max(0, o.gpu);
    } else {
      side.sel->memory = MemoryKind::kHost;
      side.sel->gpu = -1;
    }
    if (side.reg_text->empty()) {
      // --reg is the path of the GPU sides; host sides register host memory.
      side.sel->reg =
          effectiveRegPath(side.sel->memory, c.kind == MemoryKind::kCuda ? reg : RegPath::kAuto);
      if (c.kind == MemoryKind::kCuda) {
        GDR_RETURN_IF_ERROR(resolveRegPath(side.sel->memory, reg, names.reg).status());
      }
    } else {
      GDR_ASSIGN_OR_RETURN(const RegPath own, parseRegOption(*side.reg_text, *side.reg_name));
      GDR_ASSIGN_OR_RETURN(side.sel->reg, resolveRegPath(side.sel->memory, own, *side.reg_name));
    }
  }
  if (!any_cuda && o.gpu >= 0) {
    return invalidArgument(names.gpu + ": a GPU index was given but no side uses cuda memory",
                           "add " + names.both + is + "cuda (or " + names.src + is + "cuda:N / " +
                               names.dst + is + "cuda:N), or drop " + names.gpu);
  }
  if (!any_cuda && isGpuRegPath(reg)) {
    return invalidArgument(
        names.reg + ": " + o.reg + " applies to GPU memory only, and no side uses cuda memory",
        "add " + names.both + is + "cuda (or " + names.src + is + "cuda:N / " + names.dst + is +
            "cuda:N), or use " + names.reg + is + "host");
  }
  return {};
}

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
  if (spec.cq_moderation > limits.max_tx_depth) {
    return invalidArgument("cq-mod: must be in 0.." + std::to_string(limits.max_tx_depth),
                           "signal at least once per tx-depth sends");
  }
  // Written so that NaN (a double from the wire) fails too.
  if (!(spec.duration_seconds >= 0 && spec.duration_seconds <= limits.max_seconds)) {
    return invalidArgument("duration: must be in 0..86400 s");
  }
  if (spec.duration_seconds > 0 && spec.mode == Mode::kLatency) {
    return invalidArgument("duration: latency tests count iterations",
                           "use --iters with --mode lat");
  }
  if (spec.inline_size > limits.max_inline) {
    return invalidArgument("inline: must be in 0.." + std::to_string(limits.max_inline) + " B");
  }
  if (!(spec.timeout_seconds >= 0 && spec.timeout_seconds <= limits.max_seconds)) {
    return invalidArgument("timeout: must be in 0..86400 s");
  }
  if (spec.bidirectional && spec.mode == Mode::kLatency) {
    return invalidArgument("bidir: applies to bandwidth tests", "drop --bidir or use --mode bw");
  }
  return {};
}

Status validateSideSpec(const SideSpec& side, const PairTestLimits& limits) {
  const EndpointSpec& e = side.endpoint;
  if (e.test_id.empty() || e.test_id.size() > limits.max_test_id) {
    return invalidArgument("test_id: must be 1.." + std::to_string(limits.max_test_id) +
                           " bytes (got " + std::to_string(e.test_id.size()) + ")");
  }
  // A bidirectional run uses two halves of the buffer, each up to the largest message.
  const uint64_t max_buffer = 2 * limits.max_message_size;
  if (e.buffer_size == 0 || e.buffer_size > max_buffer) {
    return invalidArgument("buffer_size: must be in 1.." + std::to_string(max_buffer) +
                           " bytes (got " + std::to_string(e.buffer_size) + ")");
  }
  if (e.num_qps == 0 || e.num_qps > limits.max_qps) {
    return invalidArgument("num_qps: must be in 1.." + std::to_string(limits.max_qps));
  }
  if (e.tx_depth == 0 || e.tx_depth > limits.max_tx_depth) {
    return invalidArgument("tx_depth: must be in 1.." + std::to_string(limits.max_tx_depth));
  }
  if (e.rx_depth == 0 || e.rx_depth > limits.max_rx_depth) {
    return invalidArgument("rx_depth: must be in 1.." + std::to_string(limits.max_rx_depth));
  }
  if (e.inline_size > limits.max_inline) {
    return invalidArgument("inline_size: must be in 0.." + std::to_string(limits.max_inline));
  }
  if (side.memory == MemoryKind::kCuda && (side.gpu < 0 || side.gpu > limits.max_gpu_index)) {
    return invalidArgument("gpu: a cuda side needs a GPU index in 0.." +
                           std::to_string(limits.max_gpu_index) + " (got " +
                           std::to_string(side.gpu) + ")");
  }
  return {};
}

Status validateRunSpec(const RunSpec& run, const PairTestLimits& limits) {
  if (run.message_size == 0 || run.message_size > limits.max_message_size) {
    return invalidArgument("message_size: must be in 1.." +
                           std::to_string(limits.max_message_size) + " bytes");
  }
  if (run.iterations > limits.max_iterations) {
    return invalidArgument("iterations: must be at most " + std::to_string(limits.max_iterations));
  }
  if (run.warmup_iterations > limits.max_warmup_iterations) {
    return invalidArgument("warmup_iterations: must be at most " +
                           std::to_string(limits.max_warmup_iterations));
  }
  if (run.cq_moderation > limits.max_tx_depth) {
    return invalidArgument("cq_moderation: must be at most " + std::to_string(limits.max_tx_depth));
  }
  // Written so that NaN (a double from the wire) fails too.
  if (!(run.duration_seconds >= 0 && run.duration_seconds <= limits.max_seconds)) {
    return invalidArgument("duration_seconds: must be in 0..86400");
  }
  // A run's timeout is the test's timeout plus its duration (PairTestSpec::runTimeoutSeconds).
  if (!(run.timeout_seconds >= 0 && run.timeout_seconds <= 2 * limits.max_seconds)) {
    return invalidArgument("timeout_seconds: must be in 0..172800");
  }
  return {};
}

Status checkTransportOptions(const PairTestSpec& spec, TransportKind transport) {
  // What each transport accepts is stated once, in its capabilities.
  const TransportCapabilities c = transport == TransportKind::kVerbs       ? verbsCapabilities()
                                  : transport == TransportKind::kSimulated ? simulatedCapabilities()
                                                                           : emulatedCapabilities();
  const char* t = toString(transport);
  auto refuse = [&](const std::string& opt) {
    return invalidArgument(opt + ": not supported by the " + t + " transport",
                           "drop " + opt + ", or ask for --transport verbs");
  };
  if (spec.use_rdma_cm && !c.rdma_cm) return refuse("--rdma-cm");
  if (spec.gid_index >= 0 && !c.gid_index) return refuse("--gid-index");
  if (spec.inline_size > c.max_inline) return refuse("--inline");
  if (spec.bidirectional && !c.bidirectional) return refuse("--bidir");
  return {};
}

}  // namespace gdrmesh
