#include "worker/transport/emulated/frame.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace gdrmesh::emulated {
namespace {

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Waits until fd is ready for `events`, checking the abort flag and deadline every 50 ms.
Status waitReady(int fd, short events, Clock::time_point deadline, const std::atomic<bool>& aborted,
                 const char* what) {
  for (;;) {
    if (aborted.load(std::memory_order_relaxed)) {
      return Status(Code::kAborted, std::string(what) + ": aborted");
    }
    auto now = Clock::now();
    if (now >= deadline) {
      return Status(Code::kDeadlineExceeded, std::string(what) + ": timed out");
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 50)));
    if (rc > 0) return {};
    if (rc < 0 && errno != EINTR) {
      return unavailable(std::string(what) + ": poll: " + std::strerror(errno));
    }
  }
}

}  // namespace

void FrameHeader::encode(uint8_t out[kSize]) const {
  std::memset(out, 0, kSize);
  put32(out, magic);
  out[4] = static_cast<uint8_t>(type);
  put32(out + 8, key);
  put32(out + 12, error);
  put64(out + 16, offset);
  put64(out + 24, length);
  put64(out + 32, seq);
}

FrameHeader FrameHeader::decode(const uint8_t in[kSize]) {
  FrameHeader h;
  h.magic = get32(in);
  h.type = static_cast<FrameType>(in[4]);
  h.key = get32(in + 8);
  h.error = get32(in + 12);
  h.offset = get64(in + 16);
  h.length = get64(in + 24);
  h.seq = get64(in + 32);
  return h;
}

const char* remoteErrorText(RemoteError e) {
  switch (e) {
    case RemoteError::kNone:
      return "no error";
    case RemoteError::kBadKey:
      return "remote access error: the key was rejected by the target";
    case RemoteError::kOutOfRange:
      return "remote access error: the range is outside the target's registered region";
    case RemoteError::kBadFrame:
      return "protocol error: malformed frame";
  }
  return "unknown remote error";
}

Status readFull(int fd, void* buf, size_t len, Clock::time_point deadline,
                const std::atomic<bool>& aborted, const char* what) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (aborted.load(std::memory_order_relaxed)) {
      return Status(Code::kAborted, std::string(what) + ": aborted");
    }
    if (n == 0) return unavailable(std::string(what) + ": connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return unavailable(std::string(what) + ": recv: " + std::strerror(errno));
    }
    GDR_RETURN_IF_ERROR(waitReady(fd, POLLIN, deadline, aborted, what));
  }
  return {};
}

namespace {

// Copies n bytes with relaxed atomic stores: bytes up to 8-byte alignment, then words.
void storeRelaxed(uint8_t* dst, const uint8_t* src, size_t n) {
  for (; n > 0 && reinterpret_cast<uintptr_t>(dst) % 8 != 0; ++dst, ++src, --n) {
    __atomic_store_n(dst, *src, __ATOMIC_RELAXED);
  }
  for (; n >= 8; dst += 8, src += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, src, sizeof(word));
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), word, __ATOMIC_RELAXED);
  }
  for (; n > 0; ++dst, ++src, --n) __atomic_store_n(dst, *src, __ATOMIC_RELAXED);
}

}  // namespace

Status readIntoRegion(int fd, uint8_t* region, size_t len, Clock::time_point deadline,
                      const std::atomic<bool>& aborted, const char* what) {
  constexpr size_t kStaging = size_t{64} * 1024;
  thread_local std::vector<uint8_t> staging(kStaging);
  while (len > 0) {
    const size_t n = std::min(len, kStaging);
    GDR_RETURN_IF_ERROR(readFull(fd, staging.data(), n, deadline, aborted, what));
    storeRelaxed(region, staging.data(), n);
    region += n;
    len -= n;
  }
  return {};
}

Status writeFull(int fd, const void* buf, size_t len, Clock::time_point deadline,
                 const std::atomic<bool>& aborted, const char* what) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (aborted.load(std::memory_order_relaxed)) {
      return Status(Code::kAborted, std::string(what) + ": aborted");
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return unavailable(std::string(what) + ": send: " + std::strerror(errno));
    }
    GDR_RETURN_IF_ERROR(waitReady(fd, POLLOUT, deadline, aborted, what));
  }
  return {};
}

Status writeFrame(int fd, const FrameHeader& h, const void* payload, size_t len,
                  Clock::time_point deadline, const std::atomic<bool>& aborted) {
  uint8_t hdr[FrameHeader::kSize];
  h.encode(hdr);
  // Try header and payload in one sendmsg; finish whatever is left with writeFull.
  iovec iov[2] = {{hdr, sizeof(hdr)}, {const_cast<void*>(payload), len}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = len > 0 ? 2 : 1;
  ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0) {
    if (aborted.load(std::memory_order_relaxed)) return Status(Code::kAborted, "send: aborted");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return unavailable(std::string("send frame: ") + std::strerror(errno));
    }
    n = 0;
  }
  auto sent = static_cast<size_t>(n);
  if (sent < sizeof(hdr)) {
    GDR_RETURN_IF_ERROR(
        writeFull(fd, hdr + sent, sizeof(hdr) - sent, deadline, aborted, "send frame header"));
    sent = sizeof(hdr);
  }
  size_t payload_sent = sent - sizeof(hdr);
  if (payload_sent < len) {
    GDR_RETURN_IF_ERROR(writeFull(fd, static_cast<const uint8_t*>(payload) + payload_sent,
                                  len - payload_sent, deadline, aborted, "send payload"));
  }
  return {};
}

Status readHeader(int fd, FrameHeader* h, Clock::time_point deadline,
                  const std::atomic<bool>& aborted) {
  uint8_t hdr[FrameHeader::kSize];
  GDR_RETURN_IF_ERROR(readFull(fd, hdr, sizeof(hdr), deadline, aborted, "read frame header"));
  *h = FrameHeader::decode(hdr);
  if (h->magic != FrameHeader::kMagic) {
    return Status(Code::kDataLoss, "protocol error: bad frame magic (not a gdrmesh peer?)");
  }
  return {};
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace gdrmesh::emulated
