// Translation of verbs failures into Status values with a cause and a fix. Pure functions: no
// device is touched, so every branch is unit-tested on hosts without RDMA hardware.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/types.h"

namespace gdrmesh::verbs {

// "ENOMEM", "EFAULT", ...; "errno 123" for the rest.
std::string errnoName(int err);

// A failed verbs/librdmacm call: "<call> on <device>: <strerror> (ENAME)" plus a fix where one
// is known for that errno.
Status callError(const std::string& call, int err, const std::string& device,
                 const std::string& detail = {});

// A failed memory registration on `path` (kHost/kPeermem: ibv_reg_mr, kDmabuf:
// ibv_reg_dmabuf_mr or the dma-buf export). Names the buffer, the errno and the likely cause.
Status registrationError(RegPath path, int err, const std::string& device,
                         const std::string& buffer);

// A failed ibv_modify_qp to `state` ("INIT", "RTR", "RTS"). RTR failures point at the GID index,
// the MTU and the route to the peer.
Status modifyQpError(const std::string& state, int err, const std::string& device, int gid_index,
                     uint32_t path_mtu, const std::string& peer_gid);

// A work completion that did not succeed: the status string (ibv_wc_status_str), vendor error,
// what was being done, and the cause/fix for the common statuses.
Status completionError(ibv_wc_status status, uint32_t vendor_err, const std::string& what,
                       const std::string& device, uint32_t qpn);

// A failed work completion and the queue it came from (the opcode of a failed completion is not
// defined by the verbs API, so the CQ tells a receive from a send).
struct FailedCompletion {
  ibv_wc wc{};
  bool receive = false;
};

// Of the failed completions of one QP, in the order they were reaped, the one that explains the
// failure: the first that is not a flush. A QP in the error state flushes every outstanding work
// request of both its queues (IBV_WC_WR_FLUSH_ERR); the error that put it there can sit on the
// other CQ, behind the flush the loop happened to reap first (a bidirectional run polls both).
// nullptr when `failed` is empty; the first entry when all are flushes.
const FailedCompletion* rootCompletion(const std::vector<FailedCompletion>& failed);

}  // namespace gdrmesh::verbs
