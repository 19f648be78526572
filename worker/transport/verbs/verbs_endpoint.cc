// VerbsEndpointImpl: resources (device, GID, PD, MR, CQs; the QPs come from
// verbs_connection.cc or verbs_cm.cc), the checks run() makes before a loop starts, and the
// failed work completions.
#include "worker/transport/verbs/verbs_endpoint.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "worker/transport/verbs/verbs_device.h"
#include "worker/transport/verbs/verbs_select.h"

namespace gdrmesh::verbs {

Status VerbsEndpointImpl::init(RegPath reg) {
  GDR_RETURN_IF_ERROR(checkInitSpec());
  ibv_gid gid{};
  GDR_RETURN_IF_ERROR(openPort(&gid));
  if (spec_.use_rdma_cm) GDR_RETURN_IF_ERROR(initCm());
  pd_.reset(ibv_alloc_pd(vctx_));
  if (!pd_) return callError("ibv_alloc_pd", errno, dev_);
  GDR_ASSIGN_OR_RETURN(reg_, registerBuffer(registrar_, pd_.get(), buffer_, reg, dev_));
  GDR_RETURN_IF_ERROR(createCqs());
  if (spec_.use_rdma_cm) {
    // The QPs come with the connections (rdma_create_qp in connect()); the count is what the
    // peer checks.
    localNic().qps.assign(spec_.num_qps, QpInfo{});
  } else {
    GDR_RETURN_IF_ERROR(createQps());
  }
  rd_atomic_ = std::max<uint32_t>(
      1, std::min<uint32_t>({max_rd_atomic_, static_cast<uint32_t>(dev_attr_.max_qp_rd_atom),
                             static_cast<uint32_t>(dev_attr_.max_qp_init_rd_atom)}));
  localNic().max_rd_atomic = rd_atomic_;  // the peer negotiates down to this (perftest's "OUT")

  // Receives: send and write_imm consume them, latency uses them for the first exchange.
  needs_recv_ = spec_.op == Op::kSend || spec_.op == Op::kWriteImm || spec_.mode == Mode::kLatency;
  if (spec_.role == Role::kInitiator && spec_.mode == Mode::kBandwidth) {
    // Only the reverse direction of a bidirectional run lands here.
    recv_offset_ = spec_.buffer_size / 2;
    recv_length_ = spec_.buffer_size - recv_offset_;
  } else {
    recv_offset_ = 0;
    recv_length_ = spec_.buffer_size;
  }
  describeLocal(gid);
  return Status();
}

Status VerbsEndpointImpl::checkInitSpec() const {
  if (spec_.num_qps == 0) return invalidArgument("num_qps must be >= 1");
  if (spec_.tx_depth == 0 || spec_.rx_depth == 0) {
    return invalidArgument("tx_depth and rx_depth must be >= 1");
  }
  if (spec_.buffer_size == 0 || spec_.buffer_size > buffer_.size()) {
    return invalidArgument("buffer_size " + std::to_string(spec_.buffer_size) + " must be in 1.." +
                           std::to_string(buffer_.size()) + " (the buffer " + buffer_.describe() +
                           ")");
  }
  return Status();
}

Status VerbsEndpointImpl::openPort(ibv_gid* gid) {
  GDR_ASSIGN_OR_RETURN(OpenDevice d, openDevice(spec_.device, spec_.port));
  ctx_ = std::move(d.ctx);
  vctx_ = ctx_.get();
  dev_ = d.name;
  port_ = d.port;
  port_attr_ = d.port_attr;
  if (int rc = ibv_query_device(ctx_.get(), &dev_attr_)) {
    return callError("ibv_query_device", rc, dev_);
  }
  roce_ = port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;
  if (placer_) {
    cpu_ = placer_->place(dev_);
    local_.cpu_binding = cpu_.placement().describe();
  }

  if (roce_ || spec_.gid_index >= 0) {
    auto table = readGidTable(ctx_.get(), dev_, port_, port_attr_.gid_tbl_len, sysfs_root_);
    GDR_ASSIGN_OR_RETURN(gid_index_, selectGidIndex(table, roce_, spec_.gid_index, dev_, port_));
    if (int rc = ibv_query_gid(ctx_.get(), static_cast<uint8_t>(port_), gid_index_, gid)) {
      return callError("ibv_query_gid(" + std::to_string(gid_index_) + ")", rc, dev_);
    }
  }
  return Status();
}

Status VerbsEndpointImpl::createCqs() {
  const int send_cqe = static_cast<int>(spec_.tx_depth * spec_.num_qps + 16);
  const int recv_cqe = static_cast<int>(spec_.rx_depth * spec_.num_qps + 16);
  send_cq_.reset(ibv_create_cq(vctx_, send_cqe, nullptr, nullptr, 0));
  if (!send_cq_) {
    return callError("ibv_create_cq(" + std::to_string(send_cqe) + ")", errno, dev_,
                     "lower tx_depth or num_qps");
  }
  recv_channel_.reset(ibv_create_comp_channel(vctx_));
  if (!recv_channel_) return callError("ibv_create_comp_channel", errno, dev_);
  abort_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (abort_fd_ < 0) return callError("eventfd", errno, dev_);
  recv_cq_.reset(ibv_create_cq(vctx_, recv_cqe, nullptr, recv_channel_.get(), 0));
  if (!recv_cq_) {
    return callError("ibv_create_cq(" + std::to_string(recv_cqe) + ")", errno, dev_,
                     "lower rx_depth or num_qps");
  }
  return Status();
}

void VerbsEndpointImpl::describeLocal(const ibv_gid& gid) {
  local_.addr = reinterpret_cast<uintptr_t>(buffer_.data());
  local_.length = buffer_.size();
  local_.rkey = reg_.mr->rkey;
  local_.memory = buffer_.kind();
  local_.reg_path = reg_.path;
  VerbsDesc& nic = localNic();
  nic.device = dev_;
  nic.port = port_;
  nic.link_layer = roce_ ? "Ethernet" : "InfiniBand";
  nic.lid = port_attr_.lid;
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), gid.raw, 16);
  nic.gid = gid_index_ >= 0 ? formatGid(raw) : std::string();
  nic.gid_index = gid_index_;
  nic.active_mtu = mtuEnumToBytes(port_attr_.active_mtu);
  if (spec_.use_rdma_cm) {
    // rdma_cm's own fields: the target's listening address and port, the initiator's bound
    // address (port 0).
    nic.cm_host = cm_ip_;
    nic.cm_port = cm_listen_ ? ntohs(rdma_get_src_port(cm_listen_.get())) : 0;
  }
}

ibv_qp_init_attr VerbsEndpointImpl::qpInitAttr() const {
  ibv_qp_init_attr attr{};
  attr.send_cq = send_cq_.get();
  attr.recv_cq = recv_cq_.get();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = spec_.tx_depth;
  attr.cap.max_recv_wr = spec_.rx_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = spec_.inline_size;
  return attr;
}

// The MR goes now; the QPs, CQs and PD stay (the PD is deallocated after the QPs at
// destruction, with no MR left on it). A failed deregistration keeps the MR owned, so that
// destruction tries again.
Status VerbsEndpointImpl::deregisterMr() {
  if (!reg_.mr) return Status();
  ibv_mr* mr = reg_.mr.release();
  if (int rc = registrar_.deregMr(mr)) {
    reg_.mr.reset(mr);
    return callError("ibv_dereg_mr", rc, dev_, "fault injection: the MR stays registered");
  }
  return Status();
}

Status VerbsEndpointImpl::completionFailure(const ibv_wc& wc, const char* what) {
  std::vector<FailedCompletion> failed{{wc, false}};
  if (wc.status == IBV_WC_WR_FLUSH_ERR) drainFailures(wc.qp_num, failed);
  const FailedCompletion& root = *rootCompletion(failed);
  Status cause;
  if (&root == &failed.front()) {
    cause = completionError(wc.status, wc.vendor_err, what, dev_, wc.qp_num);
  } else {
    // The flush reaped first is only the consequence: report the error that broke the QP.
    cause = completionError(root.wc.status, root.wc.vendor_err,
                            root.receive ? "receive" : opName(spec_.op), dev_, root.wc.qp_num)
                .withContext(std::string("the QP's first error (") + what + " flushed after it)");
  }
  // A port that went down explains most errors better than the completion status does. The
  // QP's error can arrive before the port's state changes: after a local QP or transport
  // error, wait for the port event.
  return explainPortDown(
      ctx_.get(), port_, dev_, cause,
      root.wc.status == IBV_WC_LOC_QP_OP_ERR || root.wc.status == IBV_WC_RETRY_EXC_ERR);
}

void VerbsEndpointImpl::drainFailures(uint32_t qpn, std::vector<FailedCompletion>& failed) {
  for (ibv_cq* cq : {send_cq_.get(), recv_cq_.get()}) {
    ibv_wc wc[16];
    // Bounded: at most what the CQ holds (the QP is in error, nothing new is posted).
    for (int left = cq->cqe + 16; left > 0;) {
      const int n = ibv_poll_cq(cq, 16, wc);
      if (n <= 0) break;
      left -= n;
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS && wc[i].qp_num == qpn) {
          failed.push_back({wc[i], cq == recv_cq_.get()});
        }
      }
    }
  }
}

Result<Measurement> VerbsEndpointImpl::run(const RunSpec& rs) {
  if (!connected_) return failedPrecondition("run() before connect() on " + dev_);
  if (aborted_.load()) return Status(Code::kAborted, "endpoint on " + dev_ + " was aborted");
  if (broken_) {
    return failedPrecondition("endpoint on " + dev_ + " failed earlier; create a new one");
  }
  // After the fault injection only a target runs (its peer's accesses are what must fail).
  if (!reg_.mr && spec_.role != Role::kTarget) {
    return failedPrecondition("memory region on " + dev_ + " was deregistered (fault injection)",
                              "create a new endpoint");
  }
  if (rs.message_size == 0 || rs.message_size > spec_.buffer_size ||
      rs.message_size > peer_.length || rs.message_size > 0xffffffffull) {
    return invalidArgument("message_size " + std::to_string(rs.message_size) + " must be in 1.." +
                           std::to_string(std::min<uint64_t>(spec_.buffer_size, peer_.length)) +
                           " (this buffer and the peer's)");
  }
  if (rs.bidirectional && spec_.mode == Mode::kLatency) {
    return invalidArgument("bidirectional applies to bandwidth runs only");
  }
  if (rs.bidirectional && rs.message_size > spec_.buffer_size / 2) {
    return invalidArgument(
        "bidirectional runs need message_size <= buffer_size / 2 (the reverse "
        "direction uses the upper half)",
        "allocate buffer_size >= 2 * message_size");
  }
  if (spec_.mode == Mode::kLatency && rs.duration_seconds > 0) {
    return invalidArgument("latency runs take a fixed iteration count, not duration_seconds");
  }
  if (rs.duration_seconds <= 0 && rs.iterations == 0) {
    return invalidArgument("iterations must be >= 1 (or duration_seconds > 0)");
  }
  // The thread that posts and polls runs on the endpoint's CPU for the run (cpu_placement.h).
  ScopedCpuBinding binding;
  GDR_RETURN_IF_ERROR(binding.bind(cpu_.placement().cpu));
  const auto before = readCounterSnapshot(sysfs_root_, dev_, port_);
  const bool target = spec_.role == Role::kTarget;
  if (rs.end_signal && target && !needs_recv_) GDR_RETURN_IF_ERROR(fail(postEndReceive()));
  end_seen_ = false;
  Result<Measurement> r = spec_.mode == Mode::kBandwidth ? runBandwidth(rs) : runLatency(rs);
  if (r.ok() && rs.end_signal) {
    Watch watch(aborted_, rs.timeout_seconds, dev_);
    if (target) {
      Status st = fail(awaitEnd(watch, rs.timeout_seconds));
      if (!st.ok()) r = st;
    } else {
      signalEnd(watch);
    }
  }
  if (!r.ok() && r.status().code() == Code::kDeadlineExceeded) {
    // A link that went down can leave the QP retrying silently (rxe does when the net device is
    // down): the port state, not the timeout, is the cause to report.
    return explainPortDown(ctx_.get(), port_, dev_, r.status(), false);
  }
  if (!r.ok()) return r;
  const auto after = readCounterSnapshot(sysfs_root_, dev_, port_);
  r->counters = counterDelta(before, after);
  return r;
}

// A receive for the end signal where the run posts none of its own (write/read bandwidth): no
// scatter entry, so it needs no memory key (the fault injection may have deregistered the MR).
Status VerbsEndpointImpl::postEndReceive() {
  ibv_recv_wr wr{};
  wr.wr_id = 0;
  wr.num_sge = 0;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qps_[0], &wr, &bad)) {
    return callError("ibv_post_recv (end signal)", rc, dev_);
  }
  return Status();
}

void VerbsEndpointImpl::signalEnd(Watch& watch) {
  ibv_send_wr wr{};
  wr.wr_id = UINT64_MAX;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(kEndImm);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qps_[0], &wr, &bad) != 0) return;
  // Every earlier signalled send was reaped by the loop: this completion is the end's. Waited
  // for so that the QP is not destroyed with the signal still queued; its error (the target
  // tore its QP down before acknowledging) leaves the figures as they are.
  ibv_wc wc{};
  (void)pollOne(send_cq_.get(), &wc, watch, "signalling the end of the run");
}

Status VerbsEndpointImpl::awaitEnd(Watch& watch, double timeout_s) {
  if (end_seen_) return Status();
  const uint64_t deadline =
      timeout_s > 0 ? nowNs() + static_cast<uint64_t>(timeout_s * 1e9) : UINT64_MAX;
  ibv_wc wc[16];
  for (;;) {
    // Armed before the poll: a completion that lands after the poll raises an event.
    if (int rc = ibv_req_notify_cq(recv_cq_.get(), 0)) {
      return callError("ibv_req_notify_cq", rc, dev_);
    }
    const int n = ibv_poll_cq(recv_cq_.get(), 16, wc);
    if (n < 0) return callError("ibv_poll_cq", EIO, dev_);
    for (int i = 0; i < n; ++i) {
      GDR_RETURN_IF_ERROR(checkWc(wc[i], "waiting for the end of the run"));
      if (isEndSignal(wc[i])) return Status();
    }
    if (n > 0) continue;
    GDR_RETURN_IF_ERROR(watch.check("waiting for the initiator's end signal"));
    const uint64_t now = nowNs();
    if (now >= deadline) {
      char t[32];
      std::snprintf(t, sizeof(t), "%.1f", timeout_s);
      return Status(
          Code::kDeadlineExceeded,
          "the initiator did not signal the end of its run on " + dev_ + " within " + t + " s",
          "see the initiator's result for this test");
    }
    pollfd fds[2] = {{recv_channel_->fd, POLLIN, 0}, {abort_fd_, POLLIN, 0}};
    const uint64_t left_ms = std::min<uint64_t>((deadline - now) / 1000000 + 1, 60000);
    const int pr = ::poll(fds, 2, static_cast<int>(left_ms));
    if (pr < 0 && errno != EINTR) return callError("poll (completion channel)", errno, dev_);
    if (aborted_.load()) {
      return Status(Code::kAborted, "aborted while waiting for the end of the run on " + dev_);
    }
    if (pr > 0 && (fds[0].revents & POLLIN)) {
      ibv_cq* cq = nullptr;
      void* ctx = nullptr;
      if (ibv_get_cq_event(recv_channel_.get(), &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
    }
  }
}

}  // namespace gdrmesh::verbs
