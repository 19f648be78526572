// VerbsEndpointImpl: one side of a pair test over RC queue pairs (internal to the verbs
// transport; the contract is in verbs_transport.h). Its methods live in one file per job:
//   verbs_endpoint.cc     resources (device, PD, MR, CQs, QPs), run() checks, completions
//   verbs_connection.cc   QP state transitions and the out-of-band connect()
//   verbs_cm.cc           the rdma_cm connection mode
//   verbs_bandwidth.cc    the bandwidth loop
//   verbs_latency.cc      the latency ping-pong
// Device and port handling is in verbs_device.h, the work-request builders and the watch of the
// busy-polling loops in verbs_work_request.h.
#pragma once

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "worker/transport/fault_injection.h"
#include "worker/transport/verbs/cpu_placement.h"
#include "worker/transport/verbs/verbs_errors.h"
#include "worker/transport/verbs/verbs_objects.h"
#include "worker/transport/verbs/verbs_registration.h"
#include "worker/transport/verbs/verbs_transport.h"
#include "worker/transport/verbs/verbs_work_request.h"

namespace gdrmesh::verbs {

class VerbsEndpointImpl final : public VerbsEndpoint, public FaultInjectable {
 public:
  VerbsEndpointImpl(EndpointSpec spec, Buffer& buffer, MrRegistrar& registrar,
                    std::string sysfs_root, uint32_t max_rd_atomic, uint32_t qp_timeout,
                    std::shared_ptr<CpuPlacer> placer)
      : spec_(std::move(spec)),
        buffer_(buffer),
        registrar_(registrar),
        sysfs_root_(std::move(sysfs_root)),
        max_rd_atomic_(max_rd_atomic),
        qp_timeout_(qp_timeout),
        placer_(std::move(placer)) {
    local_.fields.emplace<VerbsDesc>();
  }

  ~VerbsEndpointImpl() override {
    // rdma_cm: disconnect first (the peer sees DISCONNECTED), then the members go in order.
    for (auto& id : cm_ids_) {
      if (id && id->qp) rdma_disconnect(id.get());
    }
    if (abort_fd_ >= 0) ::close(abort_fd_);
  }

  Status init(RegPath reg);

  const EndpointDesc& local() const override { return local_; }
  Status connect(const EndpointDesc& peer) override;
  Result<Measurement> run(const RunSpec& rs) override;
  void abort() override {
    aborted_.store(true);
    // Wakes a target blocked on the end signal's completion event.
    if (abort_fd_ >= 0) {
      const uint64_t one = 1;
      (void)!::write(abort_fd_, &one, sizeof(one));
    }
  }
  uint32_t pathMtu() const override { return path_mtu_; }

  int gidIndex() const override { return gid_index_; }
  const std::string& registrationAttempts() const override { return reg_.attempts; }
  uint32_t rdAtomic() const override { return rd_atomic_; }
  const CpuPlacement& cpuPlacement() const override { return cpu_.placement(); }
  // Deregisters the MR now (the QPs stay up).
  Status invalidateRemoteAccess() override { return deregisterMr(); }

 private:
  // Latency loops signal every kLatSignal-th send (below the smallest tx_depth we allow in
  // practice: the send queue never fills with unreaped work requests).
  static constexpr uint64_t kLatSignal = 16;

  // Marks the endpoint broken when `s` is an error (only destruction remains then).
  Status fail(Status s) {
    if (!s.ok()) broken_ = true;
    return s;
  }
  Status deregisterMr();
  uint64_t localAddr(uint64_t off) const {
    return reinterpret_cast<uintptr_t>(buffer_.data()) + off;
  }
  uint32_t lkey() const { return reg_.mr ? reg_.mr->lkey : 0; }
  // One receive on QP q over the receive region; the completion's wr_id is q.
  Status postRecv(size_t q) {
    if (int rc = postReceive(qps_[q], localAddr(recv_offset_), static_cast<uint32_t>(recv_length_),
                             lkey(), q)) {
      return callError("ibv_post_recv", rc, dev_);
    }
    return Status();
  }
  Status postError(int rc, Op op) const {
    return callError("ibv_post_send (" + std::string(opName(op)) + ")", rc, dev_);
  }
  // init()'s steps: the spec's depths and sizes; the device, its port, the CPU placement and
  // (RoCE, or a GID index asked for) the GID; the CQs with the receive completion channel and
  // the abort eventfd; what this side publishes (local_) once all is set up.
  Status checkInitSpec() const;
  Status openPort(ibv_gid* gid);
  Status createCqs();
  void describeLocal(const ibv_gid& gid);
  // RC QP attributes from the spec: our CQs, tx/rx depth, one SGE, the inline size.
  ibv_qp_init_attr qpInitAttr() const;
  // Signalling interval of the latency loops: never more unreaped sends than the queue holds.
  uint64_t latSignalEvery() const {
    return std::max<uint64_t>(1, std::min<uint64_t>(kLatSignal, spec_.tx_depth));
  }

  // verbs_cm.cc
  Status initCm();
  Status connectCm(const VerbsDesc& peer);
  Status connectCmInitiator(const VerbsDesc& peer, uint64_t deadline_ns);
  Status acceptCm(uint64_t deadline_ns);
  rdma_conn_param cmConnParam() const;
  Status createCmQp(rdma_cm_id* id, size_t q);
  // Waits for the next event on the rdma_cm channel (abort and deadline aware). The caller acks.
  Result<rdma_cm_event*> nextCmEvent(uint64_t deadline_ns, const char* what);

  // verbs_connection.cc
  Status createQps();
  Status modifyToInit(ibv_qp* qp);
  Status modifyToRtr(ibv_qp* qp, const QpInfo& remote, const ibv_gid& dgid);
  Status modifyToRts(ibv_qp* qp, uint32_t psn);

  // Completions: OK, or the work completion's error (explained by a port that went down).
  Status checkWc(const ibv_wc& wc, const char* what) {
    if (wc.status == IBV_WC_SUCCESS) return Status();
    return completionFailure(wc, what);
  }
  Status completionFailure(const ibv_wc& wc, const char* what);
  // A flushed completion only follows the QP's real error, which may wait on the other CQ: polls
  // both CQs empty and appends the failed completions of QP `qpn` (the endpoint is broken by
  // then, nothing more is reaped).
  void drainFailures(uint32_t qpn, std::vector<FailedCompletion>& failed);
  Status pollOne(ibv_cq* cq, ibv_wc* wc, Watch& watch, const char* what) {
    for (;;) {
      int n = ibv_poll_cq(cq, 1, wc);
      if (n > 0) return checkWc(*wc, what);
      if (n < 0) return callError("ibv_poll_cq", EIO, dev_);
      GDR_RETURN_IF_ERROR(watch.check(what));
    }
  }

  // verbs_bandwidth.cc
  struct Stream;
  // Receive progress survives from the warm-up into the measured phase: a batch may hold
  // messages of both.
  struct RecvProgress {
    std::vector<uint64_t> received;
    std::vector<bool> final_seen;
  };
  Result<Measurement> runBandwidth(const RunSpec& rs);
  Status pump(Stream& st, Watch& watch, RecvProgress& rx);
  // pump()'s reaping, one batch of the CQ each. Sends: the signalled completion of a QP
  // completes every send up to its mark (marks[q], in post order). Receives: counted per QP,
  // the final marker noted, each receive re-posted; the end signal is not data (end_seen_).
  Status reapSends(Stream& st, std::vector<std::deque<uint64_t>>& marks,
                   std::vector<uint64_t>& completed);
  Status reapReceives(RecvProgress& rx);

  // The end signal (RunSpec::end_signal), verbs_endpoint.cc. Initiator: a zero-byte SEND with
  // immediate kEndImm on QP 0 after its last completion; a failure is not the measurement's
  // (the target's outcome tells whether the signal arrived). Target: waits for it, blocked
  // on the receive CQ's completion channel (abort() wakes it), unless the loop saw it already.
  static constexpr uint32_t kEndImm = 0xfffffffeu;
  static bool isEndSignal(const ibv_wc& wc) {
    return wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_IMM) &&
           ntohl(wc.imm_data) == kEndImm;
  }
  Status postEndReceive();
  void signalEnd(Watch& watch);
  Status awaitEnd(Watch& watch, double timeout_s);
  bool end_seen_ = false;  // the bandwidth loop reaped the end signal with its data

  // verbs_latency.cc
  Result<Measurement> runLatency(const RunSpec& rs);
  // Both sides' ping-pong; the initiator records one sample per measured iteration.
  Status pingPong(const RunSpec& rs, Watch& watch, std::vector<double>* samples);
  // pingPong's parts. Each timed loop stays whole: only a post and a poll between two stamps.
  // RDMA read: the initiator alone, one read at a time. Write with host memory on both sides:
  // syncCounterByte's exchange through the CQ fixes the byte the counter starts from, and the
  // initiator restores it afterwards. exchangeLoop: write, write_imm and send.
  struct LatencyStamps;
  Status readLoop(const RunSpec& rs, Watch& watch, SendRequest& req, LatencyStamps& stamps);
  Status syncCounterByte(const RunSpec& rs, Watch& watch, SendRequest& req, uint8_t* base);
  Status exchangeLoop(const RunSpec& rs, Watch& watch, SendRequest& req, bool poll_memory,
                      uint8_t base, LatencyStamps& stamps);
  Status restoreCounterByte(const RunSpec& rs, Watch& watch, SendRequest& req, uint8_t base);
  // The last byte of the message: the counter the host-memory write ping-pong polls.
  volatile uint8_t* counterByte(const RunSpec& rs) const {
    return static_cast<volatile uint8_t*>(buffer_.data()) + (rs.message_size - 1);
  }

  EndpointSpec spec_;
  Buffer& buffer_;
  MrRegistrar& registrar_;
  std::string sysfs_root_;
  uint32_t max_rd_atomic_ = 16;
  uint32_t qp_timeout_ = 14;           // VerbsOptions::qp_timeout (RTS), 0..31
  std::shared_ptr<CpuPlacer> placer_;  // null: not placed (never bound)
  CpuPlacer::Lease cpu_;               // this endpoint's CPU, counted while it lives
  // What this side publishes; its transport part is always a VerbsDesc (localNic()).
  EndpointDesc local_;
  EndpointDesc peer_;  // set by connect() once its part is known to be verbs

  VerbsDesc& localNic() { return std::get<VerbsDesc>(local_.fields); }
  // The peer's verbs part; valid from connect() on (it refuses any other part).
  const VerbsDesc& peerNic() const { return std::get<VerbsDesc>(peer_.fields); }

  std::string dev_;
  uint32_t port_ = 1;
  ibv_port_attr port_attr_{};
  ibv_device_attr dev_attr_{};
  bool roce_ = false;
  int gid_index_ = -1;
  std::vector<uint32_t> psns_;
  bool needs_recv_ = false;
  uint64_t recv_offset_ = 0;
  uint64_t recv_length_ = 0;
  uint32_t path_mtu_ = 0;
  uint32_t rd_atomic_ = 1;
  bool connected_ = false;
  bool broken_ = false;
  std::atomic<bool> aborted_{false};
  int abort_fd_ = -1;  // eventfd written by abort()

  // rdma_cm (use_rdma_cm): the event channel, the listening (target) or bound (initiator) ids,
  // and per QP the connection's id, which owns its QP (rdma_create_qp). vctx_ is the context
  // everything is allocated on: rdma_cm's for the bound id, ctx_ otherwise.
  EventChannelPtr cm_channel_;
  CmIdPtr cm_listen_;
  std::string cm_ip_;

  // Verbs objects. Destroyed in reverse order: MR (and dma-buf), QPs (rdma_cm: after a
  // disconnect, with their ids), CQs, PD, device; then the listening id and the channel.
  ContextPtr ctx_;
  ibv_context* vctx_ = nullptr;
  PdPtr pd_;
  CompChannelPtr recv_channel_;  // the receive CQ's events (the target's wait for the end)
  CqPtr send_cq_;
  CqPtr recv_cq_;
  std::vector<QpPtr> owned_qps_;
  std::vector<CmIdPtr> cm_ids_;
  std::vector<ibv_qp*> qps_;  // the QPs in use, in order (owned by owned_qps_ or cm_ids_)
  Registration reg_;
};

}  // namespace gdrmesh::verbs
