// VerbsEndpointImpl: the rdma_cm connection mode (EndpointSpec::use_rdma_cm, perftest -R).
// The target listens on the IPv4 address of its GID, the initiator resolves and connects one id
// per QP; the QPs are created on rdma_cm's ids (rdma_create_qp) and owned by them.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "worker/transport/verbs/verbs_endpoint.h"
#include "worker/transport/verbs/verbs_select.h"

namespace gdrmesh::verbs {
namespace {

constexpr int kCmResolveMs = 5000;        // rdma_resolve_addr/route timeouts
constexpr double kCmConnectSeconds = 60;  // connect(): the peer's side must show up by then

}  // namespace

// rdma_cm needs an IP address on the device: the IPv4 address of the selected GID (RoCE v2,
// ::ffff:a.b.c.d). The target binds and listens on it (port 0: the kernel picks one), the
// initiator binds one id per QP to it; both take rdma_cm's verbs context, on which the PD,
// CQs and MR are then created.
Status VerbsEndpointImpl::initCm() {
  if (!roce_ || gid_index_ < 0) {
    return unimplemented("rdma_cm mode on " + dev_ + " needs a RoCE port with an IPv4 GID",
                         "use the out-of-band exchange (use_rdma_cm off) on InfiniBand ports");
  }
  ibv_gid gid{};
  if (int rc = ibv_query_gid(ctx_.get(), static_cast<uint8_t>(port_), gid_index_, &gid)) {
    return callError("ibv_query_gid(" + std::to_string(gid_index_) + ")", rc, dev_);
  }
  std::array<uint8_t, 16> raw{};
  std::memcpy(raw.data(), gid.raw, 16);
  if (!isIpv4MappedGid(raw)) {
    return failedPrecondition(
        "rdma_cm mode: GID " + std::to_string(gid_index_) + " of " + dev_ + " (" + formatGid(raw) +
            ") is not an IPv4 address",
        "give the bound net device an IPv4 address (ip addr add ... dev <netdev>) or pick the "
        "IPv4-mapped GID index");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  std::memcpy(&addr.sin_addr, raw.data() + 12, 4);
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  cm_ip_ = ip;

  cm_channel_.reset(rdma_create_event_channel());
  if (!cm_channel_) return callError("rdma_create_event_channel", errno, dev_);
  // Non-blocking: nextCmEvent() polls with a deadline and watches abort().
  const int fl = fcntl(cm_channel_->fd, F_GETFL);
  if (fl < 0 || fcntl(cm_channel_->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    return callError("fcntl(O_NONBLOCK) on the rdma_cm channel", errno, dev_);
  }
  auto bound = [&](CmIdPtr* out) -> Status {
    rdma_cm_id* raw_id = nullptr;
    if (rdma_create_id(cm_channel_.get(), &raw_id, nullptr, RDMA_PS_TCP)) {
      return callError("rdma_create_id", errno, dev_);
    }
    out->reset(raw_id);
    if (rdma_bind_addr(raw_id, reinterpret_cast<sockaddr*>(&addr))) {
      return callError("rdma_bind_addr(" + cm_ip_ + ")", errno, dev_,
                       "the address must be configured on " + dev_ + "'s net device");
    }
    if (!raw_id->verbs || ibv_get_device_name(raw_id->verbs->device) != dev_) {
      return failedPrecondition(
          "rdma_cm bound " + cm_ip_ + " to " +
              (raw_id->verbs ? std::string(ibv_get_device_name(raw_id->verbs->device))
                             : std::string("no device")) +
              ", not " + dev_,
          "the address belongs to another RDMA device; check `rdma link` and `ip addr`");
    }
    vctx_ = raw_id->verbs;
    return Status();
  };
  if (spec_.role == Role::kTarget) {
    GDR_RETURN_IF_ERROR(bound(&cm_listen_));
    if (rdma_listen(cm_listen_.get(), static_cast<int>(spec_.num_qps) + 4)) {
      return callError("rdma_listen(" + cm_ip_ + ")", errno, dev_);
    }
  } else {
    for (uint32_t i = 0; i < spec_.num_qps; ++i) {
      CmIdPtr id;
      GDR_RETURN_IF_ERROR(bound(&id));
      cm_ids_.push_back(std::move(id));
    }
  }
  return Status();
}

Result<rdma_cm_event*> VerbsEndpointImpl::nextCmEvent(uint64_t deadline_ns, const char* what) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(cm_channel_.get(), &ev) == 0) return ev;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return callError("rdma_get_cm_event", errno, dev_);
    }
    if (aborted_.load()) {
      return Status(Code::kAborted, std::string("aborted while ") + what + " on " + dev_);
    }
    if (nowNs() > deadline_ns) {
      return Status(Code::kDeadlineExceeded, "rdma_cm on " + dev_ + ": timed out while " + what,
                    "check that the peer runs its side with use_rdma_cm and that " + cm_ip_ +
                        " reaches the peer's address");
    }
    pollfd pfd{cm_channel_->fd, POLLIN, 0};
    ::poll(&pfd, 1, 100);  // short slices: abort() is noticed within 100 ms
  }
}

// rdma_create_qp on the connection's id: the QP lives on rdma_cm's context with our PD and CQs
// and is in INIT afterwards, so receives go up before the connection is accepted/established.
Status VerbsEndpointImpl::createCmQp(rdma_cm_id* id, size_t q) {
  ibv_qp_init_attr attr = qpInitAttr();
  if (rdma_create_qp(id, pd_.get(), &attr)) {
    return callError("rdma_create_qp(RC, send_wr=" + std::to_string(spec_.tx_depth) +
                         ", recv_wr=" + std::to_string(spec_.rx_depth) + ")",
                     errno, dev_, "lower tx_depth/rx_depth or inline_size");
  }
  qps_[q] = id->qp;
  if (needs_recv_) {
    for (uint32_t i = 0; i < spec_.rx_depth; ++i) GDR_RETURN_IF_ERROR(postRecv(q));
  }
  return Status();
}

rdma_conn_param VerbsEndpointImpl::cmConnParam() const {
  rdma_conn_param param{};
  param.responder_resources = static_cast<uint8_t>(rd_atomic_);
  param.initiator_depth = static_cast<uint8_t>(rd_atomic_);
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  return param;
}

// Outstanding reads are negotiated through the connection parameters (min of both sides).
Status VerbsEndpointImpl::connectCm(const VerbsDesc& peer) {
  const uint64_t deadline = nowNs() + static_cast<uint64_t>(kCmConnectSeconds * 1e9);
  qps_.assign(spec_.num_qps, nullptr);
  GDR_RETURN_IF_ERROR(spec_.role == Role::kInitiator ? connectCmInitiator(peer, deadline)
                                                     : acceptCm(deadline));
  // The path MTU rdma_cm chose (from the route), for pathMtu().
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  if (ibv_query_qp(qps_[0], &qa, IBV_QP_PATH_MTU, &qi) == 0) {
    path_mtu_ = mtuEnumToBytes(qa.path_mtu);
  }
  return Status();
}

// Per QP: resolve address and route, create the QP, connect (private data: the QP index).
Status VerbsEndpointImpl::connectCmInitiator(const VerbsDesc& peer, uint64_t deadline) {
  const size_t nq = spec_.num_qps;
  // Waits for `want` on `id`; other events are errors.
  auto expect = [&](rdma_cm_id* id, rdma_cm_event_type want, const char* what) -> Status {
    GDR_ASSIGN_OR_RETURN(rdma_cm_event * ev, nextCmEvent(deadline, what));
    if (ev->event == want && ev->id == id) {
      rdma_ack_cm_event(ev);
      return Status();
    }
    const std::string got = rdma_event_str(ev->event);
    const int status = ev->status;
    rdma_ack_cm_event(ev);
    return unavailable("rdma_cm on " + dev_ + ": " + got + " (status " + std::to_string(status) +
                           ") while " + what + " with " + peer.cm_host + ":" +
                           std::to_string(peer.cm_port),
                       "check the peer's address and port, that it listens (use_rdma_cm on "
                       "both sides) and the route between the two (ip route get)");
  };
  rdma_conn_param param = cmConnParam();
  if (peer.cm_host.empty() || peer.cm_port == 0 || peer.cm_port > 65535) {
    return invalidArgument("peer " + peer.device + " published no rdma_cm address (" +
                               peer.cm_host + ":" + std::to_string(peer.cm_port) + ")",
                           "set use_rdma_cm on both sides");
  }
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(peer.cm_port));
  if (inet_pton(AF_INET, peer.cm_host.c_str(), &dst.sin_addr) != 1) {
    return invalidArgument("peer " + peer.device + " sent an unreadable rdma_cm address '" +
                           peer.cm_host + "'");
  }
  for (size_t q = 0; q < nq; ++q) {
    rdma_cm_id* id = cm_ids_[q].get();
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), kCmResolveMs)) {
      return callError("rdma_resolve_addr(" + peer.cm_host + ")", errno, dev_);
    }
    GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address"));
    if (id->verbs != vctx_) {
      return failedPrecondition("rdma_cm on " + dev_ + ": the route from " + cm_ip_ + " to " +
                                    peer.cm_host + " leaves through another RDMA device",
                                "check `ip route get " + peer.cm_host + " from " + cm_ip_ +
                                    "` (two devices in one namespace need policy routing)");
    }
    if (rdma_resolve_route(id, kCmResolveMs)) {
      return callError("rdma_resolve_route(" + peer.cm_host + ")", errno, dev_);
    }
    GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route"));
    GDR_RETURN_IF_ERROR(createCmQp(id, q));
    const uint32_t index = static_cast<uint32_t>(q);
    param.private_data = &index;
    param.private_data_len = sizeof(index);
    if (rdma_connect(id, &param)) {
      return callError("rdma_connect(" + peer.cm_host + ")", errno, dev_);
    }
    GDR_RETURN_IF_ERROR(expect(id, RDMA_CM_EVENT_ESTABLISHED, "connecting"));
  }
  return Status();
}

// Accepts num_qps connection requests, placing each at the QP index it carries.
Status VerbsEndpointImpl::acceptCm(uint64_t deadline) {
  const size_t nq = spec_.num_qps;
  const rdma_conn_param param = cmConnParam();
  // Requests and ESTABLISHED events interleave (the initiator connects one QP at a time).
  cm_ids_.resize(nq);
  size_t accepted = 0, established = 0;
  while (accepted < nq || established < nq) {
    GDR_ASSIGN_OR_RETURN(rdma_cm_event * ev,
                         nextCmEvent(deadline, "waiting for the initiator's connections"));
    if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
      rdma_ack_cm_event(ev);
      ++established;
      continue;
    }
    if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      const std::string got = rdma_event_str(ev->event);
      const int status = ev->status;
      rdma_ack_cm_event(ev);
      return unavailable("rdma_cm on " + dev_ + ": " + got + " (status " + std::to_string(status) +
                             ") while accepting connections on " + cm_ip_ + ":" +
                             std::to_string(localNic().cm_port),
                         "check the initiator's result and the route between the two");
    }
    rdma_cm_id* child = ev->id;
    uint32_t index = UINT32_MAX;
    if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(index)) {
      std::memcpy(&index, ev->param.conn.private_data, sizeof(index));
    }
    const uint8_t their_init = ev->param.conn.initiator_depth;
    const uint8_t their_resp = ev->param.conn.responder_resources;
    rdma_ack_cm_event(ev);
    if (index >= nq || cm_ids_[index]) {
      rdma_reject(child, nullptr, 0);
      rdma_destroy_id(child);
      return invalidArgument("rdma_cm on " + dev_ + ": connection request for QP index " +
                                 std::to_string(index) + " of " + std::to_string(nq),
                             "both sides must use the same num_qps");
    }
    cm_ids_[index].reset(child);
    GDR_RETURN_IF_ERROR(createCmQp(child, index));
    rdma_conn_param acc = param;
    acc.responder_resources = std::min<uint8_t>(param.responder_resources, their_init);
    acc.initiator_depth = std::min<uint8_t>(param.initiator_depth, their_resp);
    if (rdma_accept(child, &acc)) return callError("rdma_accept", errno, dev_);
    ++accepted;
  }
  return Status();
}

}  // namespace gdrmesh::verbs
