#include "worker/transport/verbs/verbs_errors.h"

#include <cerrno>
#include <cstring>

namespace gdrmesh::verbs {
namespace {

std::string strerr(int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer (may or may not use buf).
  const char* s = strerror_r(err, buf, sizeof(buf));
  return s ? std::string(s) : std::string("unknown error");
}

std::string errnoText(int err) {
  return strerr(err) + " (" + errnoName(err) + ")";
}

Code codeForErrno(int err) {
  switch (err) {
    case ENOMEM:
    case EAGAIN:
    case ENOSPC:
      return Code::kResourceExhausted;
    case EPERM:
    case EACCES:
      return Code::kPermissionDenied;
    case ENODEV:
    case ENOENT:
    case ENXIO:
      return Code::kNotFound;
    case EOPNOTSUPP:
    case EPROTONOSUPPORT:
    case ENOSYS:
      return Code::kUnimplemented;
    case ETIMEDOUT:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNREFUSED:
      return Code::kUnavailable;
    default:
      return Code::kFailedPrecondition;
  }
}

}  // namespace

std::string errnoName(int err) {
  switch (err) {
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EINTR:
      return "EINTR";
    case EIO:
      return "EIO";
    case ENXIO:
      return "ENXIO";
    case EAGAIN:
      return "EAGAIN";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EFAULT:
      return "EFAULT";
    case EBUSY:
      return "EBUSY";
    case ENODEV:
      return "ENODEV";
    case EINVAL:
      return "EINVAL";
    case ENOSPC:
      return "ENOSPC";
    case ENOSYS:
      return "ENOSYS";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EPROTONOSUPPORT:
      return "EPROTONOSUPPORT";
    case ENETUNREACH:
      return "ENETUNREACH";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    default:
      return "errno " + std::to_string(err);
  }
}

Status callError(const std::string& call, int err, const std::string& device,
                 const std::string& detail) {
  std::string msg =
      call + " on " + (device.empty() ? std::string("?") : device) + " failed: " + errnoText(err);
  if (!detail.empty()) msg += "; " + detail;
  std::string fix;
  switch (err) {
    case ENOMEM:
    case EAGAIN:
      fix =
          "out of device or pinned memory: raise the memlock limit (ulimit -l unlimited, "
          "LimitMEMLOCK=infinity for a systemd unit) or lower the queue depths";
      break;
    case EPERM:
    case EACCES:
      fix = "run as root or grant access to /dev/infiniband/uverbs* (group rdma)";
      break;
    case ENODEV:
    case ENXIO:
      fix = "the device disappeared or its driver is not loaded; check `rdma link show`";
      break;
    case EOPNOTSUPP:
    case EPROTONOSUPPORT:
      fix = "the device or its driver does not support this operation";
      break;
    default:
      break;
  }
  return Status(codeForErrno(err), msg, fix);
}

Status registrationError(RegPath path, int err, const std::string& device,
                         const std::string& buffer) {
  const char* call = path == RegPath::kDmabuf ? "ibv_reg_dmabuf_mr" : "ibv_reg_mr";
  std::string msg = std::string(call) + " (" + toString(path) + ") of " + buffer + " on " + device +
                    " failed: " + errnoText(err);
  const bool gpu = path == RegPath::kDmabuf || path == RegPath::kPeermem;
  std::string cause, fix;
  Code code = codeForErrno(err);
  if (err == ENOMEM || err == EAGAIN) {
    cause = "memlock limit too low";
    fix =
        "raise the locked-memory limit: ulimit -l unlimited (or LimitMEMLOCK=infinity in the "
        "systemd unit, memlock in /etc/security/limits.conf)";
    code = Code::kResourceExhausted;
  } else if (path == RegPath::kPeermem && (err == EFAULT || err == EINVAL)) {
    cause = "nvidia-peermem not loaded: the NIC driver cannot pin GPU memory";
    fix = "use dma-buf registration (--reg dmabuf) or load the module: modprobe nvidia-peermem";
    code = Code::kFailedPrecondition;
  } else if (path == RegPath::kDmabuf &&
             (err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == ENOSYS)) {
    cause = "kernel/driver lacks dma-buf support";
    fix =
        "dma-buf needs Linux >= 5.12, rdma-core >= 34, a NIC driver with dma-buf support and "
        "the NVIDIA open kernel modules (or driver >= 515 with CONFIG_DMABUF_MOVE_NOTIFY); "
        "otherwise use peermem (modprobe nvidia-peermem, --reg peermem)";
    code = Code::kUnimplemented;
  } else if (path == RegPath::kDmabuf && (err == EINVAL || err == EFAULT)) {
    cause = "the dma-buf range was rejected (offset/length not page aligned or not exported)";
    fix =
        "check the GPU driver's dma-buf support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) or use "
        "peermem";
    code = Code::kFailedPrecondition;
  } else if (err == EFAULT) {
    cause = gpu ? "the address is not pinnable memory" : "the address range is not mapped";
    code = Code::kInternal;
  } else if (err == EPERM || err == EACCES) {
    cause = "not permitted";
    fix = "run as root or raise the memlock limit (ulimit -l unlimited)";
  }
  if (!cause.empty()) msg += ": " + cause;
  return Status(code, msg, fix);
}

Status modifyQpError(const std::string& state, int err, const std::string& device, int gid_index,
                     uint32_t path_mtu, const std::string& peer_gid) {
  std::string msg = "ibv_modify_qp to " + state + " on " + device + " failed: " + errnoText(err);
  std::string fix;
  if (state == "RTR") {
    msg += " (sgid_index=" + std::to_string(gid_index) + ", path_mtu=" + std::to_string(path_mtu) +
           ", dgid=" + (peer_gid.empty() ? "-" : peer_gid) + ")";
    fix =
        "check the GID index (RoCE v2 IPv4-mapped GIDs on both sides, `show_gids` or "
        "/sys/class/infiniband/<dev>/ports/<n>/gids), the MTU on both ports, and that a route to "
        "the peer's address exists on the bound net device";
  } else if (state == "RTS") {
    fix = "check the QP timeout/retry settings and the device state";
  } else {
    fix = "check the port number and the port state (ibv_devinfo)";
  }
  return Status(Code::kFailedPrecondition, msg, fix);
}

// Long (issue #19): one switch over the error statuses of a work completion, a cause each.
Status completionError(ibv_wc_status status, uint32_t vendor_err, const std::string& what,
                       const std::string& device, uint32_t qpn) {
  std::string msg = what + " on " + device + " qp " + std::to_string(qpn) +
                    " completed with error: " + ibv_wc_status_str(status) + " (status " +
                    std::to_string(static_cast<int>(status)) + ", vendor_err 0x";
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (int shift = 28; shift >= 0; shift -= 4) {
    uint32_t nib = (vendor_err >> shift) & 0xf;
    if (!hex.empty() || nib != 0 || shift == 0) hex += kHex[nib];
  }
  msg += hex + ")";
  std::string cause, fix;
  Code code = Code::kFailedPrecondition;
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
      cause = "peer unreachable or port down (transport retries exhausted)";
      fix =
          "check that both ports are ACTIVE, the link and the switch path, the GID index and "
          "the route between the two addresses; the peer may have exited";
      code = Code::kUnavailable;
      break;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      cause = "receiver not ready: the peer posted no receive in time";
      fix = "the peer stopped receiving or its receive queue is too short (raise rx_depth)";
      code = Code::kUnavailable;
      break;
    case IBV_WC_REM_ACCESS_ERR:
      cause = "remote key/range invalid (peer deregistered?)";
      fix =
          "the peer's memory region was deregistered or is smaller than the access; check "
          "that the peer is still running and that message_size <= its buffer";
      break;
    case IBV_WC_REM_INV_REQ_ERR:
      cause =
          "the peer rejected the request (operation not enabled on its QP or MR, or the "
          "message is longer than its receive buffer)";
      fix = "check the access flags and the receive buffer size on the peer";
      break;
    case IBV_WC_REM_OP_ERR:
      cause =
          "the peer failed to complete the operation (rxe reports a send longer than the "
          "posted receive buffer this way)";
      fix =
          "check the peer's logs, its receive queue and that message_size <= its receive "
          "buffer";
      break;
    case IBV_WC_LOC_LEN_ERR:
      cause = "message longer than the posted receive buffer";
      fix = "make message_size <= the receiver's buffer size";
      code = Code::kInvalidArgument;
      break;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      cause = "local memory key or range invalid";
      fix = "the local buffer registration is wrong or was released";
      code = Code::kInternal;
      break;
    case IBV_WC_LOC_QP_OP_ERR:
      cause =
          "local QP operation error (the device could not execute the request: net device "
          "down, or a request beyond the QP capabilities such as the inline size)";
      fix = "check the port and net device state; lower inline_size";
      // Seen when the net device goes down under a running QP (rxe): the fabric, not a bug.
      code = Code::kUnavailable;
      break;
    case IBV_WC_WR_FLUSH_ERR:
      cause = "flushed: the QP had already entered the error state because of an earlier failure";
      fix = "see the first error of this QP";
      code = Code::kAborted;
      break;
    case IBV_WC_RESP_TIMEOUT_ERR:
      cause = "response timeout";
      fix = "check the path to the peer";
      code = Code::kUnavailable;
      break;
    case IBV_WC_FATAL_ERR:
    case IBV_WC_GENERAL_ERR:
      cause = "device error";
      fix = "check dmesg and the device firmware";
      break;
    default:
      break;
  }
  if (!cause.empty()) msg += ": " + cause;
  return Status(code, msg, fix);
}

const FailedCompletion* rootCompletion(const std::vector<FailedCompletion>& failed) {
  for (const FailedCompletion& f : failed) {
    if (f.wc.status != IBV_WC_SUCCESS && f.wc.status != IBV_WC_WR_FLUSH_ERR) return &f;
  }
  return failed.empty() ? nullptr : &failed.front();
}

}  // namespace gdrmesh::verbs
