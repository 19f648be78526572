// Fuzzes the emulated transport's frame decoding (worker/transport/emulated/frame.h): the bytes
// a peer sends are written into one end of a socketpair, and the other end is read the way
// the target's serving loop reads it (readHeader, then a payload bounded by its buffer) until
// the stream ends or is refused. Checks: no crash, decode(encode(h)) == h, and a header
// that readHeader accepts carries the magic.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "worker/transport/emulated/frame.h"

namespace {

namespace em = gdrmesh::emulated;

bool sameHeader(const em::FrameHeader& a, const em::FrameHeader& b) {
  return a.magic == b.magic && a.type == b.type && a.key == b.key && a.error == b.error &&
         a.offset == b.offset && a.length == b.length && a.seq == b.seq;
}

void checkRoundTrip(const em::FrameHeader& h) {
  uint8_t bytes[em::FrameHeader::kSize];
  h.encode(bytes);
  if (!sameHeader(em::FrameHeader::decode(bytes), h)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The pure decoder, on every 40-byte window start.
  for (size_t at = 0; at + em::FrameHeader::kSize <= size; at += em::FrameHeader::kSize) {
    checkRoundTrip(em::FrameHeader::decode(data + at));
  }

  // The socket path. A socketpair holds far more than libFuzzer's inputs (4 KiB by default);
  // larger inputs are cut so that the single-threaded write below never blocks.
  constexpr size_t kMaxStream = 64 << 10;
  if (size > kMaxStream) size = kMaxStream;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  em::Fd reader(fds[0]);
  em::Fd writer(fds[1]);
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(writer.get(), data + sent, size - sent, MSG_DONTWAIT);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(writer.get(), SHUT_WR);  // the peer is done: reads end with kUnavailable

  std::atomic<bool> aborted{false};
  const auto deadline = em::Clock::now() + std::chrono::seconds(5);
  std::vector<uint8_t> region(4096);  // the target's registered buffer
  for (;;) {
    em::FrameHeader h;
    if (!em::readHeader(reader.get(), &h, deadline, aborted).ok()) break;
    if (h.magic != em::FrameHeader::kMagic) std::abort();
    checkRoundTrip(h);
    (void)em::remoteErrorText(static_cast<em::RemoteError>(h.error));
    const bool has_payload = h.type == em::FrameType::kWrite || h.type == em::FrameType::kSend ||
                             h.type == em::FrameType::kReadResp;
    if (!has_payload) continue;
    // The serving loop's range check, then the payload read into the region.
    const uint64_t off = h.type == em::FrameType::kWrite ? h.offset : 0;
    if (off > region.size() || h.length > region.size() - off) break;
    if (!em::readFull(reader.get(), region.data() + off, h.length, deadline, aborted, "payload")
             .ok()) {
      break;
    }
  }
  return 0;
}
