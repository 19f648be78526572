// VerbsEndpointImpl: the RC queue pairs of the out-of-band mode and connect() (the peer's QP
// numbers, PSNs, GID and MTU come in its EndpointDesc): INIT, receives, RTR, RTS.
#include <array>
#include <cstring>
#include <random>

#include "worker/transport/verbs/verbs_endpoint.h"
#include "worker/transport/verbs/verbs_select.h"

namespace gdrmesh::verbs {

Status VerbsEndpointImpl::createQps() {
  std::random_device rd;
  std::mt19937 rng(rd());
  for (uint32_t i = 0; i < spec_.num_qps; ++i) {
    ibv_qp_init_attr attr = qpInitAttr();
    QpPtr qp(ibv_create_qp(pd_.get(), &attr));
    if (!qp) {
      return callError("ibv_create_qp(RC, send_wr=" + std::to_string(spec_.tx_depth) +
                           ", recv_wr=" + std::to_string(spec_.rx_depth) +
                           ", inline=" + std::to_string(spec_.inline_size) + ")",
                       errno, dev_,
                       "the device limits are max_qp_wr=" + std::to_string(dev_attr_.max_qp_wr) +
                           "; lower tx_depth/rx_depth or inline_size");
    }
    psns_.push_back(rng() & 0xffffff);
    localNic().qps.push_back(QpInfo{qp->qp_num, psns_.back()});
    qps_.push_back(qp.get());
    owned_qps_.push_back(std::move(qp));
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToInit(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(port_);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
  if (int rc = ibv_modify_qp(
          qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    return modifyQpError("INIT", rc, dev_, gid_index_, 0, peerNic().gid);
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToRtr(ibv_qp* qp, const QpInfo& remote, const ibv_gid& dgid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(mtuBytesToEnum(path_mtu_));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = static_cast<uint8_t>(rd_atomic_);
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = static_cast<uint16_t>(peerNic().lid);
  a.ah_attr.sl = 0;
  a.ah_attr.src_path_bits = 0;
  a.ah_attr.port_num = static_cast<uint8_t>(port_);
  if (roce_ || gid_index_ >= 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.flow_label = 0;
    a.ah_attr.grh.traffic_class = 0;
  }
  if (int rc =
          ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return modifyQpError("RTR", rc, dev_, gid_index_, path_mtu_, peerNic().gid);
  }
  return Status();
}

Status VerbsEndpointImpl::modifyToRts(ibv_qp* qp, uint32_t psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = static_cast<uint8_t>(qp_timeout_);
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn;
  a.max_rd_atomic = static_cast<uint8_t>(rd_atomic_);
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    return modifyQpError("RTS", rc, dev_, gid_index_, path_mtu_, peerNic().gid);
  }
  return Status();
}

Status VerbsEndpointImpl::connect(const EndpointDesc& peer_desc) {
  if (connected_) return failedPrecondition("connect() called twice on " + dev_);
  if (aborted_.load()) return Status(Code::kAborted, "aborted before connect on " + dev_);
  const VerbsDesc* nic = peer_desc.as<VerbsDesc>();
  if (nic == nullptr) {
    return invalidArgument(std::string("peer description is for the ") +
                           toString(peer_desc.transport()) + " transport, not verbs");
  }
  const VerbsDesc& peer = *nic;
  if (peer.max_rd_atomic > 0) rd_atomic_ = std::min(rd_atomic_, peer.max_rd_atomic);
  if (peer.qps.size() != spec_.num_qps) {
    return invalidArgument("peer " + peer.device + " has " + std::to_string(peer.qps.size()) +
                               " QPs, this side " + std::to_string(spec_.num_qps),
                           "both sides must use the same num_qps");
  }
  if ((peer.link_layer == "Ethernet") != roce_) {
    return invalidArgument("link layers differ: " + dev_ + " is " + localNic().link_layer +
                           ", peer " + peer.device + " is " + peer.link_layer);
  }
  peer_ = peer_desc;
  if (spec_.use_rdma_cm) {
    GDR_RETURN_IF_ERROR(fail(connectCm(peer)));
    broken_ = false;
    connected_ = true;
    return Status();
  }
  GDR_ASSIGN_OR_RETURN(path_mtu_,
                       negotiatePathMtu(localNic().active_mtu, peer.active_mtu, peer.device));
  ibv_gid dgid{};
  if (roce_ || gid_index_ >= 0) {
    std::array<uint8_t, 16> raw{};
    if (!parseGid(peer.gid, &raw)) {
      return invalidArgument("peer " + peer.device + " sent an unreadable GID '" + peer.gid + "'");
    }
    std::memcpy(dgid.raw, raw.data(), 16);
  }
  for (size_t q = 0; q < qps_.size(); ++q) {
    GDR_RETURN_IF_ERROR(fail(modifyToInit(qps_[q])));
    // Receives go up before RTR so that nothing the peer sends finds an empty queue.
    if (needs_recv_) {
      for (uint32_t i = 0; i < spec_.rx_depth; ++i) GDR_RETURN_IF_ERROR(fail(postRecv(q)));
    }
    GDR_RETURN_IF_ERROR(fail(modifyToRtr(qps_[q], peer.qps[q], dgid)));
    GDR_RETURN_IF_ERROR(fail(modifyToRts(qps_[q], psns_[q])));
  }
  broken_ = false;
  connected_ = true;
  return Status();
}

}  // namespace gdrmesh::verbs
