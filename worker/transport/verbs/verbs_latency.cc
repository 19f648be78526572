// VerbsEndpointImpl: the latency ping-pong, one loop for both sides (as perftest's *_lat).
//   write, host memory on both sides: each side polls the last byte of its own buffer (the
//     initiator writes v, the target answers v ^ 0x80); one exchange through the CQ first, so
//     that both know the byte the counter starts from; the initiator restores its byte and the
//     target's copy of it afterwards.
//   write with GPU memory, write_imm, send: ping and pong are receive completions; sends are
//     signalled every latSignalEvery() iterations (and the last).
//   read: the initiator alone, one RDMA read at a time; the target has nothing to do.
// The initiator stamps once per iteration (tick_clock.h: the TSC where the kernel trusts it);
// samples are RTT/2 (read: the whole round trip).
#include <vector>

#include "worker/transport/verbs/tick_clock.h"
#include "worker/transport/verbs/verbs_endpoint.h"

namespace gdrmesh::verbs {
namespace {

// One post of the latency loops (internal, so that it inlines into them as a lambda would).
Status postLatency(ibv_qp* qp, SendRequest& req, ibv_wr_opcode opc, unsigned flags, uint32_t imm,
                   Op op, const std::string& dev) {
  if (int rc = req.post(qp, opc, flags, imm)) {
    return callError("ibv_post_send (" + std::string(opName(op)) + ")", rc, dev);
  }
  return Status();
}

}  // namespace

// The initiator's stamps: one clock read per iteration, as perftest (a stamp per post, samples
// from consecutive stamps): each sample covers one whole iteration, and the clock is read half
// as often. Samples are kept in ticks and converted once the span's tick rate is known.
struct VerbsEndpointImpl::LatencyStamps {
  LatencyStamps(uint64_t warmup_iterations, std::vector<double>* samples)
      : warmup(warmup_iterations), out(samples) {}

  void begin() {
    clock.begin();
    prev = clock.ticks();
  }
  // Iteration k (from 1) ends: a sample once the warm-up is over.
  void stamp(uint64_t k) {
    const uint64_t t = clock.ticks();
    if (k > warmup) out->push_back(static_cast<double>(t - prev));
    prev = t;
  }
  // Ends the span; samples in microseconds, each the iteration over `per_sample`.
  void toMicroseconds(double per_sample) {
    clock.end();
    const double scale = clock.nsPerTick() / (1e3 * per_sample);
    for (double& x : *out) x *= scale;
  }

  TickClock clock;
  uint64_t prev = 0;
  const uint64_t warmup;
  std::vector<double>* const out;
};

Status VerbsEndpointImpl::pingPong(const RunSpec& rs, Watch& watch, std::vector<double>* samples) {
  const bool initiator = spec_.role == Role::kInitiator;
  if (!initiator && spec_.op == Op::kRead) return Status();
  const uint64_t s = rs.message_size;
  if (initiator) samples->reserve(rs.iterations);
  SendRequest req(localAddr(0), static_cast<uint32_t>(s), lkey(), peer_.addr, peer_.rkey,
                  spec_.op != Op::kRead && s <= spec_.inline_size);
  LatencyStamps stamps(rs.warmup_iterations, samples);
  if (spec_.op == Op::kRead) {
    GDR_RETURN_IF_ERROR(readLoop(rs, watch, req, stamps));
    stamps.toMicroseconds(1.0);
    return Status();
  }
  const bool poll_memory = spec_.op == Op::kWrite && buffer_.kind() == MemoryKind::kHost &&
                           peer_.memory == MemoryKind::kHost;
  uint8_t base = 0;
  if (poll_memory) GDR_RETURN_IF_ERROR(syncCounterByte(rs, watch, req, &base));
  GDR_RETURN_IF_ERROR(exchangeLoop(rs, watch, req, poll_memory, base, stamps));
  if (initiator) stamps.toMicroseconds(2.0);  // a sample is a round trip: half is the latency
  if (poll_memory && initiator) GDR_RETURN_IF_ERROR(restoreCounterByte(rs, watch, req, base));
  return Status();
}

Status VerbsEndpointImpl::readLoop(const RunSpec& rs, Watch& watch, SendRequest& req,
                                   LatencyStamps& stamps) {
  ibv_qp* qp = qps_[0];
  const uint64_t total = rs.warmup_iterations + rs.iterations;
  const unsigned inl = req.inlineFlag();
  ibv_wc wc{};
  stamps.begin();
  for (uint64_t k = 1; k <= total; ++k) {
    GDR_RETURN_IF_ERROR(
        postLatency(qp, req, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED | inl, 0, spec_.op, dev_));
    GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA read"));
    stamps.stamp(k);
  }
  return Status();
}

Status VerbsEndpointImpl::syncCounterByte(const RunSpec& rs, Watch& watch, SendRequest& req,
                                          uint8_t* base) {
  const bool initiator = spec_.role == Role::kInitiator;
  volatile uint8_t* last = counterByte(rs);
  ibv_wc wc{};
  // The initiator's byte reaches the target, so that both sides know the byte the counter
  // starts from.
  if (initiator) {
    *base = *last;
  } else {
    GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the first ping"));
    GDR_RETURN_IF_ERROR(postRecv(0));
    *base = *last;
  }
  GDR_RETURN_IF_ERROR(postLatency(qps_[0], req, IBV_WR_RDMA_WRITE_WITH_IMM,
                                  IBV_SEND_SIGNALED | req.inlineFlag(), 0, spec_.op, dev_));
  GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write (sync)"));
  if (initiator) {
    GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, "waiting for the pong"));
    GDR_RETURN_IF_ERROR(postRecv(0));
  }
  return Status();
}

Status VerbsEndpointImpl::exchangeLoop(const RunSpec& rs, Watch& watch, SendRequest& req,
                                       bool poll_memory, uint8_t base, LatencyStamps& stamps) {
  const bool initiator = spec_.role == Role::kInitiator;
  ibv_qp* qp = qps_[0];
  const uint64_t total = rs.warmup_iterations + rs.iterations;
  const unsigned inl = req.inlineFlag();
  volatile uint8_t* last = counterByte(rs);
  ibv_wc wc{};
  const ibv_wr_opcode opc = spec_.op == Op::kSend ? IBV_WR_SEND : IBV_WR_RDMA_WRITE_WITH_IMM;
  const char* wait_for = initiator ? "waiting for the pong" : "waiting for the ping";
  const uint64_t signal_every = latSignalEvery();
  stamps.begin();
  for (uint64_t k = 1; k <= total; ++k) {
    if (poll_memory) {
      const uint8_t ping = static_cast<uint8_t>(base + k);
      const uint8_t pong = static_cast<uint8_t>(ping ^ 0x80);
      if (initiator) {
        *last = ping;
      } else {
        while (*last != ping) GDR_RETURN_IF_ERROR(watch.check(wait_for));
        *last = pong;
      }
      GDR_RETURN_IF_ERROR(
          postLatency(qp, req, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED | inl, 0, spec_.op, dev_));
      if (initiator) {
        while (*last != pong) GDR_RETURN_IF_ERROR(watch.check(wait_for));
      }
      GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, "RDMA write"));
    } else {
      // Selective signalling: the send completion is not on the ping-pong's critical path, so
      // only every signal_every-th send (and the last) is signalled and reaped.
      const bool signal = k % signal_every == 0 || k == total;
      const unsigned flags = (signal ? IBV_SEND_SIGNALED : 0) | inl;
      if (initiator) {
        GDR_RETURN_IF_ERROR(
            postLatency(qp, req, opc, flags, static_cast<uint32_t>(k), spec_.op, dev_));
        GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, wait_for));
      } else {
        GDR_RETURN_IF_ERROR(pollOne(recv_cq_.get(), &wc, watch, wait_for));
        GDR_RETURN_IF_ERROR(
            postLatency(qp, req, opc, flags, static_cast<uint32_t>(k), spec_.op, dev_));
      }
      GDR_RETURN_IF_ERROR(postRecv(0));
      if (signal) GDR_RETURN_IF_ERROR(pollOne(send_cq_.get(), &wc, watch, opName(spec_.op)));
    }
    if (initiator) stamps.stamp(k);
  }
  return Status();
}

Status VerbsEndpointImpl::restoreCounterByte(const RunSpec& rs, Watch& watch, SendRequest& req,
                                             uint8_t base) {
  // Restore the counter byte and hand the target our [0, size) intact.
  *counterByte(rs) = base;
  GDR_RETURN_IF_ERROR(
      postLatency(qps_[0], req, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 0, spec_.op, dev_));
  ibv_wc wc{};
  return pollOne(send_cq_.get(), &wc, watch, "RDMA write (restore)");
}

Result<Measurement> VerbsEndpointImpl::runLatency(const RunSpec& rs) {
  Measurement m;
  m.message_size = rs.message_size;
  m.iterations = rs.iterations;
  m.warmup_iterations = rs.warmup_iterations;
  Watch watch(aborted_, rs.timeout_seconds, dev_);
  std::vector<double> samples;
  GDR_RETURN_IF_ERROR(fail(pingPong(rs, watch, &samples)));
  if (spec_.role == Role::kTarget) return m;
  m.has_latency = true;
  m.lat = computeLatency(std::move(samples));
  return m;
}

}  // namespace gdrmesh::verbs
