// Frames of the emulated transport, and socket helpers that honour a deadline and an abort flag.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "common/status.h"

namespace gdrmesh::emulated {

enum class FrameType : uint8_t {
  kHello = 1,     // initiator -> target: key
  kWrite = 2,     // + payload: write [offset, offset+length)
  kReadReq = 3,   // read [offset, offset+length)
  kReadResp = 4,  // + payload
  kSend = 5,      // + payload: lands at offset 0 of the receive buffer
  kAck = 6,       // completion of kWrite/kSend/kHello
  kError = 7,     // remote access error; the connection is closed after it
  kEnd = 8,       // initiator -> target: the run is over (RunSpec::end_signal); acked
};

enum class RemoteError : uint32_t { kNone = 0, kBadKey = 1, kOutOfRange = 2, kBadFrame = 3 };

struct FrameHeader {
  static constexpr uint32_t kMagic = 0x45524447;  // "GDRE"
  static constexpr size_t kSize = 40;
  uint32_t magic = kMagic;
  FrameType type = FrameType::kAck;
  uint32_t key = 0;
  uint32_t error = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t seq = 0;

  void encode(uint8_t out[kSize]) const;
  static FrameHeader decode(const uint8_t in[kSize]);
};

const char* remoteErrorText(RemoteError e);

using Clock = std::chrono::steady_clock;

// Reads/writes exactly len bytes. Returns kDeadlineExceeded, kAborted or kUnavailable (peer
// closed, socket error) with `what` in the message.
Status readFull(int fd, void* buf, size_t len, Clock::time_point deadline,
                const std::atomic<bool>& aborted, const char* what);
Status writeFull(int fd, const void* buf, size_t len, Clock::time_point deadline,
                 const std::atomic<bool>& aborted, const char* what);
// Reads exactly len bytes of payload into registered memory as a NIC's DMA lands there: the
// bytes are received into a staging buffer and stored into `region` with relaxed atomic stores,
// so that the host may read the region while a transfer lands (RDMA allows it: a target may
// poll its memory for a pattern or a flag) without a data race on our side.
Status readIntoRegion(int fd, uint8_t* region, size_t len, Clock::time_point deadline,
                      const std::atomic<bool>& aborted, const char* what);
// Header + payload in one call where possible.
Status writeFrame(int fd, const FrameHeader& h, const void* payload, size_t len,
                  Clock::time_point deadline, const std::atomic<bool>& aborted);
Status readHeader(int fd, FrameHeader* h, Clock::time_point deadline,
                  const std::atomic<bool>& aborted);

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

}  // namespace gdrmesh::emulated
