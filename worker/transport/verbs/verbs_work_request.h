// What the bandwidth and latency loops share: the clock, the deadline/abort watch, and the
// work-request builders (one send request over a local range aimed at a remote range; one
// receive). Header-only: these sit on the measured paths.
#pragma once

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

#include "common/status.h"
#include "common/types.h"

namespace gdrmesh::verbs {

inline uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline const char* opName(Op op) {
  switch (op) {
    case Op::kWrite:
      return "RDMA write";
    case Op::kRead:
      return "RDMA read";
    case Op::kSend:
      return "send";
    case Op::kWriteImm:
      return "RDMA write with immediate";
  }
  return "?";
}

inline ibv_wr_opcode opcodeFor(Op op) {
  switch (op) {
    case Op::kWrite:
      return IBV_WR_RDMA_WRITE;
    case Op::kRead:
      return IBV_WR_RDMA_READ;
    case Op::kSend:
      return IBV_WR_SEND;
    case Op::kWriteImm:
      return IBV_WR_RDMA_WRITE_WITH_IMM;
  }
  return IBV_WR_RDMA_WRITE;
}

// Deadline and abort checks for the busy-polling loops.
class Watch {
 public:
  Watch(const std::atomic<bool>& aborted, double timeout_s, std::string device)
      : aborted_(aborted), device_(std::move(device)), timeout_s_(timeout_s) {
    start_ = nowNs();
    deadline_ = timeout_s > 0 ? start_ + static_cast<uint64_t>(timeout_s * 1e9) : UINT64_MAX;
  }
  // Cheap enough for every spin: the clock is read once per 16384 calls (under emulation a
  // clock read is a system call plus an HPET access, microseconds: once per 256 spins it
  // showed in 2 B latencies; 16384 spins are still well under a millisecond).
  Status check(const char* what) {
    if (aborted_.load(std::memory_order_relaxed)) {
      return Status(Code::kAborted, std::string("aborted while ") + what + " on " + device_);
    }
    if ((++spins_ & 0x3fff) == 0 && nowNs() > deadline_) {
      char t[32];
      std::snprintf(t, sizeof(t), "%.1f", timeout_s_);
      return Status(Code::kDeadlineExceeded,
                    "run on " + device_ + " timed out after " + t + " s while " + what,
                    "the peer stopped (or never started) its side, or the path drops packets; "
                    "check the peer's result and the port state");
    }
    return Status();
  }

 private:
  const std::atomic<bool>& aborted_;
  std::string device_;
  double timeout_s_;
  uint64_t start_ = 0, deadline_ = 0;
  uint32_t spins_ = 0;
};

// One send work request: `length` bytes at `local_addr` (lkey) to `remote_addr` (rkey) of the
// peer, inline where asked. The loops change only the opcode, flags, immediate and wr_id per
// post. Not copyable: the request points at its own scatter/gather entry.
class SendRequest {
 public:
  SendRequest(uint64_t local_addr, uint32_t length, uint32_t lkey, uint64_t remote_addr,
              uint32_t rkey, bool use_inline)
      : inline_flag_(use_inline ? IBV_SEND_INLINE : 0) {
    sge_.addr = local_addr;
    sge_.length = length;
    sge_.lkey = lkey;
    wr_.sg_list = &sge_;
    wr_.num_sge = 1;
    wr_.wr.rdma.remote_addr = remote_addr;
    wr_.wr.rdma.rkey = rkey;
  }
  SendRequest(const SendRequest&) = delete;
  SendRequest& operator=(const SendRequest&) = delete;

  // IBV_SEND_INLINE when the payload goes inline, else 0.
  unsigned inlineFlag() const { return inline_flag_; }

  // Posts the request; `imm` (host order) rides along for the *_WITH_IMM opcodes. Returns
  // ibv_post_send's result (0 or an errno value).
  int post(ibv_qp* qp, ibv_wr_opcode opcode, unsigned flags, uint32_t imm, uint64_t wr_id = 0) {
    wr_.wr_id = wr_id;
    wr_.opcode = opcode;
    wr_.send_flags = flags;
    wr_.imm_data = htonl(imm);
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr_, &bad);
  }

 private:
  ibv_sge sge_{};
  ibv_send_wr wr_{};
  unsigned inline_flag_ = 0;
};

// Posts one receive of `length` bytes at `addr` (lkey) on `qp`; the completion carries wr_id.
inline int postReceive(ibv_qp* qp, uint64_t addr, uint32_t length, uint32_t lkey, uint64_t wr_id) {
  ibv_sge sge{};
  sge.addr = addr;
  sge.length = length;
  sge.lkey = lkey;
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

}  // namespace gdrmesh::verbs
