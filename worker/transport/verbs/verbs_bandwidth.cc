// VerbsEndpointImpl: the bandwidth loop (as perftest's *_bw): up to tx_depth outstanding per
// QP, a completion every cq_moderation sends, per-message post/completion stamps; receives
// reaped and re-posted where the op consumes them; warm-up, then the measured phase, counted
// or timed (a final marker in the immediate data ends a timed run on the receiving side).
#include <arpa/inet.h>

#include <deque>
#include <vector>

#include "worker/transport/verbs/verbs_endpoint.h"

namespace gdrmesh::verbs {
namespace {

constexpr int kPollBatch = 16;               // perftest's CTX_POLL_BATCH
constexpr uint32_t kDefaultCqMod = 100;      // perftest's default cq_mod
constexpr uint32_t kFinalImm = 0xffffffffu;  // last message of a duration run

}  // namespace

// One direction of a bandwidth run (sender side), plus the receive side where messages arrive.
struct VerbsEndpointImpl::Stream {
  bool send = false;
  bool recv = false;
  Op op = Op::kWrite;
  uint64_t size = 0;
  uint64_t local_off = 0;
  uint64_t remote_off = 0;
  uint64_t count = 0;  // per QP; 0 = until end_ns (duration)
  uint64_t end_ns = 0;
  uint32_t cq_mod = 1;
  bool record = false;
  uint64_t recv_expected = 0;  // per QP, cumulative over the phases; 0 = until the final marker
  std::vector<uint64_t> posted_ns, completed_ns;
  uint64_t messages = 0;
};

Status VerbsEndpointImpl::reapSends(Stream& st, std::vector<std::deque<uint64_t>>& marks,
                                    std::vector<uint64_t>& completed) {
  const size_t nq = qps_.size();
  ibv_wc wc[kPollBatch];
  int n = ibv_poll_cq(send_cq_.get(), kPollBatch, wc);
  if (n < 0) return callError("ibv_poll_cq", EIO, dev_);
  if (n > 0) {
    const uint64_t t = st.record ? nowNs() : 0;
    for (int i = 0; i < n; ++i) {
      GDR_RETURN_IF_ERROR(checkWc(wc[i], opName(st.op)));
      const size_t q = wc[i].wr_id;
      if (q >= nq || marks[q].empty()) return internalError("unexpected send completion");
      const uint64_t upto = marks[q].front();
      marks[q].pop_front();
      if (st.record) st.completed_ns.insert(st.completed_ns.end(), upto - completed[q], t);
      completed[q] = upto;
    }
  }
  return Status();
}

Status VerbsEndpointImpl::reapReceives(RecvProgress& rx) {
  const size_t nq = qps_.size();
  ibv_wc wc[kPollBatch];
  int n = ibv_poll_cq(recv_cq_.get(), kPollBatch, wc);
  if (n < 0) return callError("ibv_poll_cq", EIO, dev_);
  for (int i = 0; i < n; ++i) {
    GDR_RETURN_IF_ERROR(checkWc(wc[i], "receive"));
    if (isEndSignal(wc[i])) {
      // The initiator's end signal, reaped with the last data of another QP: not data.
      end_seen_ = true;
      continue;
    }
    const size_t q = wc[i].wr_id;
    if (q >= nq) return internalError("unexpected receive completion");
    ++rx.received[q];
    if ((wc[i].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[i].imm_data) == kFinalImm) {
      rx.final_seen[q] = true;
    }
    GDR_RETURN_IF_ERROR(postRecv(q));
  }
  return Status();
}

Status VerbsEndpointImpl::pump(Stream& st, Watch& watch, RecvProgress& rx) {
  const size_t nq = qps_.size();
  std::vector<uint64_t> posted(nq, 0), completed(nq, 0);
  std::vector<uint64_t>& received = rx.received;
  std::vector<bool>& final_seen = rx.final_seen;
  std::vector<bool> stopped(nq, !st.send);
  std::vector<std::deque<uint64_t>> marks(nq);
  const bool duration = st.count == 0;
  const bool use_inline = st.op != Op::kRead && st.size <= spec_.inline_size;

  SendRequest req(localAddr(st.local_off), static_cast<uint32_t>(st.size), lkey(),
                  peer_.addr + st.remote_off, peer_.rkey, use_inline);
  const ibv_wr_opcode base_opcode = opcodeFor(st.op);
  const unsigned base_flags = req.inlineFlag();

  for (;;) {
    if (st.send) {
      const bool time_up = duration && nowNs() >= st.end_ns;
      for (size_t q = 0; q < nq; ++q) {
        if (stopped[q]) continue;
        while (posted[q] - completed[q] < spec_.tx_depth) {
          bool last = false;
          if (duration) {
            last = time_up;
          } else {
            last = posted[q] + 1 == st.count;
          }
          const bool signal = last || (posted[q] + 1) % st.cq_mod == 0;
          ibv_wr_opcode opcode = base_opcode;
          uint32_t imm = static_cast<uint32_t>(posted[q]);
          if (duration && last) {
            // The receiver stops at this marker; sends carry it as immediate data.
            if (st.op == Op::kSend) opcode = IBV_WR_SEND_WITH_IMM;
            imm = kFinalImm;
          }
          if (st.record) st.posted_ns.push_back(nowNs());
          if (int rc = req.post(qps_[q], opcode, base_flags | (signal ? IBV_SEND_SIGNALED : 0), imm,
                                q)) {
            return postError(rc, st.op);
          }
          ++posted[q];
          if (signal) marks[q].push_back(posted[q]);
          if (last) {
            stopped[q] = true;
            break;
          }
        }
      }
      GDR_RETURN_IF_ERROR(reapSends(st, marks, completed));
    }
    if (st.recv) GDR_RETURN_IF_ERROR(reapReceives(rx));
    bool done = true;
    for (size_t q = 0; q < nq && done; ++q) {
      if (st.send && !(stopped[q] && completed[q] == posted[q])) done = false;
      if (st.recv) {
        if (st.recv_expected > 0 ? received[q] < st.recv_expected : !final_seen[q]) done = false;
      }
    }
    if (done) break;
    GDR_RETURN_IF_ERROR(
        watch.check(st.send ? "waiting for send completions" : "waiting for the peer's messages"));
  }
  for (size_t q = 0; q < nq; ++q) st.messages += posted[q];
  return Status();
}

Result<Measurement> VerbsEndpointImpl::runBandwidth(const RunSpec& rs) {
  Measurement m;
  m.message_size = rs.message_size;
  m.iterations = rs.iterations;
  m.warmup_iterations = rs.warmup_iterations;
  const bool initiator = spec_.role == Role::kInitiator;
  const bool duration = rs.duration_seconds > 0;
  const bool recv_op = spec_.op == Op::kSend || spec_.op == Op::kWriteImm;
  const bool sends = initiator || rs.bidirectional;
  const bool receives = recv_op && (!initiator || rs.bidirectional);
  if (!sends && !receives) return m;  // write/read target: the NIC does the work

  Watch watch(aborted_, rs.timeout_seconds, dev_);
  const uint64_t half = spec_.buffer_size / 2;
  const uint64_t off = initiator ? 0 : half;  // reverse direction uses the upper half
  uint32_t cq_mod = rs.cq_moderation ? rs.cq_moderation : kDefaultCqMod;
  cq_mod = std::max<uint32_t>(1, std::min(cq_mod, spec_.tx_depth));

  RecvProgress rx;
  rx.received.assign(qps_.size(), 0);
  rx.final_seen.assign(qps_.size(), false);
  // Warm-up (not measured): counted, so the receiver knows how many messages to expect.
  if (rs.warmup_iterations > 0) {
    Stream w;
    w.send = sends;
    w.recv = receives;
    w.op = spec_.op;
    w.size = rs.message_size;
    w.local_off = w.remote_off = off;
    w.count = rs.warmup_iterations;
    w.cq_mod = cq_mod;
    w.recv_expected = rs.warmup_iterations;
    GDR_RETURN_IF_ERROR(fail(pump(w, watch, rx)));
  }
  Stream st;
  st.send = sends;
  st.recv = receives;
  st.op = spec_.op;
  st.size = rs.message_size;
  st.local_off = st.remote_off = off;
  st.cq_mod = cq_mod;
  if (duration) {
    st.count = 0;
    st.recv_expected = 0;
    st.end_ns = nowNs() + static_cast<uint64_t>(rs.duration_seconds * 1e9);
  } else {
    st.count = rs.iterations;
    st.recv_expected = rs.warmup_iterations + rs.iterations;
    st.record = sends;
    st.posted_ns.reserve(rs.iterations * qps_.size());
    st.completed_ns.reserve(rs.iterations * qps_.size());
  }
  const uint64_t t0 = nowNs();
  GDR_RETURN_IF_ERROR(fail(pump(st, watch, rx)));
  const uint64_t t1 = nowNs();
  if (sends) {
    m.has_bandwidth = true;
    if (st.record) {
      m.bw = computeBandwidth(rs.message_size, st.posted_ns, st.completed_ns, spec_.tx_depth);
    } else {
      m.bw = bandwidthFromTotals(st.messages * rs.message_size, st.messages,
                                 static_cast<double>(t1 - t0) / 1e9);
      m.iterations = st.messages / qps_.size();
    }
  }
  return m;
}

}  // namespace gdrmesh::verbs
