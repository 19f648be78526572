#include "common/capabilities.h"

#include <algorithm>

#include "common/units.h"

namespace gdrmesh {
namespace {

template <typename T>
bool has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

template <typename T>
std::string list(const std::vector<T>& v) {
  std::string out;
  for (const T& x : v) out += (out.empty() ? "" : ", ") + std::string(toString(x));
  return out.empty() ? "none" : out;
}

const std::vector<Op> kAllOps{Op::kWrite, Op::kRead, Op::kSend, Op::kWriteImm};

const TransportCapabilities* find(const std::vector<TransportCapabilities>& caps, TransportKind t) {
  for (const auto& c : caps) {
    if (c.transport == t) return &c;
  }
  return nullptr;
}

bool listed(const Inventory& inv, TransportKind t) {
  return has(inv.transports, std::string(toString(t)));
}

// The transports a request may use, in the order the coordinator prefers them.
std::vector<TransportKind> candidates(const PairTestSpec& spec) {
  if (spec.transport) return {*spec.transport};
  return {TransportKind::kVerbs, TransportKind::kSimulated, TransportKind::kEmulated};
}

std::string noteFor(const Inventory& inv, TransportKind t) {
  const std::string prefix = std::string(toString(t)) + ":";
  for (const auto& n : inv.notes) {
    if (n.rfind(prefix, 0) == 0) return n;
  }
  return "";
}

}  // namespace

TransportCapabilities emulatedCapabilities() {
  TransportCapabilities c;
  c.transport = TransportKind::kEmulated;
  c.bandwidth_ops = kAllOps;
  c.latency_ops = {Op::kWrite, Op::kRead, Op::kSend};  // write_imm latency: verbs only
  // GPU memory only through a pinned host mirror: the TCP stream moves host memory.
  c.memory = {MemoryKind::kHost, MemoryKind::kCuda};
  c.reg_paths = {RegPath::kHost, RegPath::kStaged};
  c.end_signal = true;  // an END frame on the data connection
  return c;
}

TransportCapabilities verbsCapabilities() {
  TransportCapabilities c;
  c.transport = TransportKind::kVerbs;
  c.bandwidth_ops = kAllOps;
  c.latency_ops = kAllOps;
  c.memory = {MemoryKind::kHost, MemoryKind::kCuda};
  c.reg_paths = {RegPath::kHost, RegPath::kDmabuf, RegPath::kPeermem, RegPath::kStaged};
  c.max_message_size = 1ULL << 31;  // the largest RC message InfiniBand allows (2^31 B)
  // The bound of a request; a device may accept less, which creating the QP reports.
  c.max_inline = PairTestLimits{}.max_inline;
  c.rdma_cm = true;
  c.gid_index = true;
  c.bidirectional = true;
  c.end_signal = true;  // a zero-byte SEND with immediate data after the last completion
  return c;
}

TransportCapabilities simulatedCapabilities() {
  TransportCapabilities c;
  c.transport = TransportKind::kSimulated;
  c.bandwidth_ops = kAllOps;
  c.latency_ops = kAllOps;
  c.memory = {MemoryKind::kHost, MemoryKind::kCuda};
  c.reg_paths = {RegPath::kHost, RegPath::kDmabuf, RegPath::kPeermem, RegPath::kStaged};
  c.bidirectional = true;
  c.end_signal = true;  // the simulated initiator's run ending tells its simulated target
  return c;
}

std::vector<std::string> unsupportedBy(const TransportCapabilities& c, const PairTestSpec& spec,
                                       Role side) {
  std::vector<std::string> out;
  const bool lat = spec.mode == Mode::kLatency;
  if (!has(lat ? c.latency_ops : c.bandwidth_ops, spec.op)) {
    out.push_back(std::string("--op ") + toString(spec.op) + " --mode " + toString(spec.mode));
  }
  const EndpointSelector& s = side == Role::kInitiator ? spec.initiator : spec.target;
  if (!has(c.memory, s.memory)) {
    out.push_back(std::string(toString(s.memory)) + " memory");
  } else if (s.memory == MemoryKind::kCuda) {
    if (s.reg == RegPath::kAuto) {
      if (!has(c.reg_paths, RegPath::kDmabuf) && !has(c.reg_paths, RegPath::kPeermem)) {
        out.push_back("--reg auto (dmabuf or peermem) on cuda memory");
      }
    } else if (!has(c.reg_paths, s.reg)) {
      out.push_back(std::string("--reg ") + toString(s.reg) + " on cuda memory");
    }
  } else if (!has(c.reg_paths, RegPath::kHost)) {
    out.push_back("host registration");
  }
  if (c.max_message_size > 0 && spec.message_size > c.max_message_size) {
    out.push_back("--size " + formatSize(spec.message_size) + " (at most " +
                  formatSize(c.max_message_size) + ")");
  }
  if (spec.inline_size > c.max_inline) {
    out.push_back("--inline " + std::to_string(spec.inline_size) +
                  (c.max_inline > 0 ? " (at most " + std::to_string(c.max_inline) + ")" : ""));
  }
  if (spec.use_rdma_cm && !c.rdma_cm) out.push_back("--rdma-cm");
  if (spec.gid_index >= 0 && !c.gid_index) out.push_back("--gid-index");
  if (spec.bidirectional && !c.bidirectional) out.push_back("--bidir");
  return out;
}

std::string describeCapabilities(const TransportCapabilities& c) {
  std::string s = "bw " + list(c.bandwidth_ops) + "; lat " + list(c.latency_ops) + "; memory " +
                  list(c.memory) + "; reg " + list(c.reg_paths);
  if (c.max_message_size > 0) s += "; size <= " + formatSize(c.max_message_size);
  s += c.max_inline > 0 ? "; inline <= " + std::to_string(c.max_inline) : "; no inline";
  if (c.rdma_cm) s += "; rdma-cm";
  if (c.gid_index) s += "; gid-index";
  if (c.bidirectional) s += "; bidir";
  return s;
}

std::vector<TransportKind> transportsServing(const Inventory& inv, const PairTestSpec& spec,
                                             Role side) {
  std::vector<TransportKind> out;
  for (TransportKind t : candidates(spec)) {
    if (!listed(inv, t)) continue;
    const TransportCapabilities* c = find(inv.capabilities, t);
    if (c == nullptr || unsupportedBy(*c, spec, side).empty()) out.push_back(t);
  }
  return out;
}

Status checkCapabilities(const PairTestSpec& spec, const WorkerStatus& initiator,
                         const WorkerStatus& target) {
  for (Role role : {Role::kInitiator, Role::kTarget}) {
    const WorkerStatus& w = role == Role::kInitiator ? initiator : target;
    const auto wanted = candidates(spec);
    const bool any_listed = std::any_of(wanted.begin(), wanted.end(),
                                        [&](TransportKind t) { return listed(w.inventory, t); });
    // Nothing wanted is here (offline, or the host lacks it): the run says so as a result.
    if (!any_listed || !transportsServing(w.inventory, spec, role).empty()) continue;
    // GPU memory on a worker with no GPU: the run reports that state of the host (SKIPPED,
    // naming the side) before what a transport could do with a GPU it does not have.
    const EndpointSelector& s = role == Role::kInitiator ? spec.initiator : spec.target;
    if (s.memory == MemoryKind::kCuda && w.inventory.gpus.empty()) continue;
    std::vector<std::string> asked;
    std::string why;
    for (TransportKind t : wanted) {
      std::string one = std::string(toString(t)) + ": ";
      if (!listed(w.inventory, t)) {
        // Simulated is never an alternative for a real worker, nor the other way round.
        if (!spec.transport && (t == TransportKind::kSimulated) != w.simulated) continue;
        const std::string note = noteFor(w.inventory, t);
        one += "not available here" + (note.empty() ? "" : " (" + note + ")");
      } else {
        const TransportCapabilities* c = find(w.inventory.capabilities, t);
        for (const auto& u : unsupportedBy(*c, spec, role)) {
          if (!has(asked, u)) asked.push_back(u);
        }
        one += "supports " + describeCapabilities(*c);
      }
      why += (why.empty() ? "" : "; ") + one;
    }
    std::string what;
    for (const auto& a : asked) what += (what.empty() ? "" : ", ") + a;
    const char* side = role == Role::kInitiator ? "SRC, initiator" : "DST, target";
    return failedPrecondition(
        "worker " + w.name + " (" + side + ") has no transport that supports " + what + ": " + why,
        "ask for what a transport there supports (`gdrmesh workers -o json` lists each "
        "worker's capabilities), or use a worker that has the transport");
  }
  return {};
}

}  // namespace gdrmesh
