// Tests of the emulated transport beyond the shared contract: its wire format, its argument
// checks, and its behaviour against peers that are not well-behaved gdrmesh endpoints.
#include "worker/transport/emulated/emulated_transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "common/pattern.h"
#include "worker/transport/emulated/frame.h"

namespace gdrmesh {
namespace {

using emulated::Fd;
using emulated::FrameHeader;
using emulated::FrameType;
using emulated::RemoteError;
using std::chrono::steady_clock;

constexpr std::chrono::seconds kPrompt{10};

EndpointSpec spec(Role role, Op op = Op::kWrite, Mode mode = Mode::kBandwidth,
                  uint64_t size = 4096) {
  EndpointSpec s;
  s.test_id = "emulated";
  s.role = role;
  s.op = op;
  s.mode = mode;
  s.buffer_size = size;
  return s;
}

std::unique_ptr<HostBuffer> hostBuffer(size_t size) {
  auto b = HostBuffer::allocate(size);
  EXPECT_TRUE(b.ok()) << b.status().toString();
  return b.ok() ? std::move(b).value() : nullptr;
}

// --- Raw sockets for peers that are not gdrmesh endpoints. --------------------------------

Fd listenLoopback(uint16_t* port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(fd.get(), 4), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

Fd connectLoopback(uint32_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
      << std::strerror(errno);
  return fd;
}

bool readExactly(int fd, void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, 0);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool writeHeader(int fd, const FrameHeader& h) {
  uint8_t b[FrameHeader::kSize];
  h.encode(b);
  return ::send(fd, b, sizeof(b), MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(b));
}

// A peer that accepts one connection, optionally acknowledges the HELLO, and then never
// answers again; it drains what it gets until the other side closes or `stop` is set.
class SilentPeer {
 public:
  explicit SilentPeer(bool ack_hello) {
    listener_ = listenLoopback(&port_);
    thread_ = std::thread([this, ack_hello] { serve(ack_hello); });
  }
  ~SilentPeer() {
    stop_ = true;
    thread_.join();
  }
  EndpointDesc desc() const {
    EndpointDesc d;
    d.rkey = 1234567;
    d.length = 1 << 20;
    d.fields = EmulatedDesc{"127.0.0.1", port_};
    return d;
  }
  std::atomic<bool> got_hello{false};

 private:
  bool waitReadable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }
  void serve(bool ack_hello) {
    if (!waitReadable(listener_.get())) return;
    Fd c(::accept(listener_.get(), nullptr, nullptr));
    if (!c.valid()) return;
    uint8_t hdr[FrameHeader::kSize];
    if (!waitReadable(c.get()) || !readExactly(c.get(), hdr, sizeof(hdr))) return;
    got_hello = FrameHeader::decode(hdr).type == FrameType::kHello;
    if (ack_hello) {
      FrameHeader ack;
      ack.type = FrameType::kAck;
      (void)writeHeader(c.get(), ack);
    }
    uint8_t sink[65536];
    while (waitReadable(c.get())) {
      if (::recv(c.get(), sink, sizeof(sink), 0) <= 0) return;
    }
  }

  Fd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --- Wire format. --------------------------------------------------------------------------

TEST(EmulatedFrameTest, HeaderRoundTripsAndIsLittleEndian) {
  FrameHeader h;
  h.type = FrameType::kReadResp;
  h.key = 0xA1B2C3D4u;
  h.error = 2;
  h.offset = 0x0102030405060708ULL;
  h.length = 1ULL << 40;
  h.seq = ~0ULL;
  uint8_t b[FrameHeader::kSize];
  h.encode(b);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b), 4), "GDRE");
  EXPECT_EQ(b[4], static_cast<uint8_t>(FrameType::kReadResp));
  EXPECT_EQ(b[8], 0xD4);   // key, low byte first
  EXPECT_EQ(b[16], 0x08);  // offset, low byte first
  FrameHeader d = FrameHeader::decode(b);
  EXPECT_EQ(d.magic, FrameHeader::kMagic);
  EXPECT_EQ(d.type, FrameType::kReadResp);
  EXPECT_EQ(d.key, h.key);
  EXPECT_EQ(d.error, h.error);
  EXPECT_EQ(d.offset, h.offset);
  EXPECT_EQ(d.length, h.length);
  EXPECT_EQ(d.seq, h.seq);
}

TEST(EmulatedFrameTest, RemoteErrorsAreExplained) {
  EXPECT_NE(std::string(emulated::remoteErrorText(RemoteError::kBadKey)).find("key"),
            std::string::npos);
  EXPECT_NE(std::string(emulated::remoteErrorText(RemoteError::kOutOfRange)).find("range"),
            std::string::npos);
  EXPECT_NE(std::string(emulated::remoteErrorText(RemoteError::kBadFrame)).find("malformed"),
            std::string::npos);
  EXPECT_STREQ(emulated::remoteErrorText(static_cast<RemoteError>(99)), "unknown remote error");
}

// --- Argument checks. ----------------------------------------------------------------------

TEST(EmulatedTransportTest, IsViableAndLabelledEmulated) {
  EmulatedTransport t;
  EXPECT_TRUE(t.viable().ok());
  EXPECT_EQ(t.kind(), TransportKind::kEmulated);
}

TEST(EmulatedTransportTest, GpuRegistrationPathsOnHostMemoryAreRefused) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  for (RegPath reg : {RegPath::kDmabuf, RegPath::kPeermem, RegPath::kStaged}) {
    auto ep = t.createEndpoint(spec(Role::kTarget), *buf, reg);
    ASSERT_FALSE(ep.ok()) << toString(reg);
    EXPECT_EQ(ep.status().code(), Code::kInvalidArgument);
    EXPECT_NE(ep.status().message().find(toString(reg)), std::string::npos)
        << ep.status().toString();
  }
  EXPECT_TRUE(t.createEndpoint(spec(Role::kTarget), *buf, RegPath::kHost).ok());
}

TEST(EmulatedTransportTest, UnsupportedModesAreUnimplemented) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto lat =
      t.createEndpoint(spec(Role::kInitiator, Op::kWriteImm, Mode::kLatency), *buf, RegPath::kAuto);
  ASSERT_FALSE(lat.ok());
  EXPECT_EQ(lat.status().code(), Code::kUnimplemented);

  auto target = t.createEndpoint(spec(Role::kTarget), *buf, RegPath::kAuto);
  ASSERT_TRUE(target.ok());
  auto buf2 = hostBuffer(4096);
  auto init = t.createEndpoint(spec(Role::kInitiator), *buf2, RegPath::kAuto);
  ASSERT_TRUE(init.ok());
  ASSERT_TRUE((*init)->connect((*target)->local()).ok());
  RunSpec rs;
  rs.message_size = 64;
  rs.bidirectional = true;
  auto m = (*init)->run(rs);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kUnimplemented);
}

TEST(EmulatedTransportTest, PeerOfAnotherTransportIsRefused) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto init = t.createEndpoint(spec(Role::kInitiator), *buf, RegPath::kAuto);
  ASSERT_TRUE(init.ok());
  EndpointDesc verbs;
  verbs.fields = VerbsDesc{};
  Status st = (*init)->connect(verbs);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
}

TEST(EmulatedTransportTest, ConnectToAClosedPortFailsWithUnavailable) {
  uint16_t port = 0;
  { Fd l = listenLoopback(&port); }  // bound, then closed: nothing listens there now
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto init = t.createEndpoint(spec(Role::kInitiator), *buf, RegPath::kAuto);
  ASSERT_TRUE(init.ok());
  EndpointDesc d;
  d.fields = EmulatedDesc{"127.0.0.1", port};
  d.rkey = 1;
  auto done = std::async(std::launch::async, [&] { return (*init)->connect(d); });
  ASSERT_EQ(done.wait_for(kPrompt), std::future_status::ready);
  Status st = done.get();
  EXPECT_EQ(st.code(), Code::kUnavailable) << st.toString();
  EXPECT_NE(st.message().find(std::to_string(port)), std::string::npos) << st.toString();
}

// --- Peers that misbehave. -----------------------------------------------------------------

TEST(EmulatedTransportTest, AbortEndsAConnectToAPeerThatNeverAnswers) {
  SilentPeer peer(/*ack_hello=*/false);
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto init = t.createEndpoint(spec(Role::kInitiator), *buf, RegPath::kAuto);
  ASSERT_TRUE(init.ok());
  Endpoint& ep = **init;
  auto done = std::async(std::launch::async, [&] { return ep.connect(peer.desc()); });
  // Abort once the HELLO is out: connect() is then blocked on the answer.
  const auto end = steady_clock::now() + kPrompt;
  while (!peer.got_hello && steady_clock::now() < end) std::this_thread::yield();
  ASSERT_TRUE(peer.got_hello);
  ep.abort();
  ASSERT_EQ(done.wait_for(kPrompt), std::future_status::ready) << "connect ignores abort()";
  Status st = done.get();
  EXPECT_EQ(st.code(), Code::kAborted) << st.toString();
}

TEST(EmulatedTransportTest, RunAgainstAPeerThatStopsAnsweringHitsTheDeadline) {
  SilentPeer peer(/*ack_hello=*/true);
  EmulatedTransport t;
  auto buf = hostBuffer(1 << 20);
  auto init = t.createEndpoint(spec(Role::kInitiator, Op::kWrite, Mode::kBandwidth, 1 << 20), *buf,
                               RegPath::kAuto);
  ASSERT_TRUE(init.ok());
  ASSERT_TRUE((*init)->connect(peer.desc()).ok());
  RunSpec rs;
  rs.message_size = 1 << 20;
  rs.iterations = 100;
  rs.timeout_seconds = 0.5;
  const auto t0 = steady_clock::now();
  auto done = std::async(std::launch::async, [&] { return (*init)->run(rs); });
  ASSERT_EQ(done.wait_for(kPrompt), std::future_status::ready) << "timeout_seconds ignored";
  const double secs = std::chrono::duration<double>(steady_clock::now() - t0).count();
  auto m = done.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kDeadlineExceeded) << m.status().toString();
  EXPECT_GE(secs, 0.45);
  (*init)->abort();
}

TEST(EmulatedTransportTest, TargetChecksTheKeyOnTheWire) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto target = t.createEndpoint(spec(Role::kTarget), *buf, RegPath::kAuto);
  ASSERT_TRUE(target.ok());
  const EndpointDesc d = (*target)->local();
  Fd c = connectLoopback(d.as<EmulatedDesc>()->tcp_port);
  FrameHeader hello;
  hello.type = FrameType::kHello;
  hello.key = d.rkey + 2;  // rkey is odd, so this differs and is non-zero
  ASSERT_TRUE(writeHeader(c.get(), hello));
  uint8_t b[FrameHeader::kSize];
  ASSERT_TRUE(readExactly(c.get(), b, sizeof(b)));
  FrameHeader r = FrameHeader::decode(b);
  EXPECT_EQ(r.type, FrameType::kError);
  EXPECT_EQ(r.error, static_cast<uint32_t>(RemoteError::kBadKey));
}

TEST(EmulatedTransportTest, TargetRefusesAWriteBeyondItsRegionAndKeepsItsBuffer) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  ASSERT_TRUE(buf->fill(77, 0, 4096).ok());
  auto target = t.createEndpoint(spec(Role::kTarget), *buf, RegPath::kAuto);
  ASSERT_TRUE(target.ok());
  const EndpointDesc d = (*target)->local();
  Fd c = connectLoopback(d.as<EmulatedDesc>()->tcp_port);
  FrameHeader w;
  w.type = FrameType::kWrite;
  w.key = d.rkey;
  w.offset = 4000;
  w.length = 200;  // [4000, 4200) of a 4096 B region
  ASSERT_TRUE(writeHeader(c.get(), w));
  uint8_t b[FrameHeader::kSize];
  ASSERT_TRUE(readExactly(c.get(), b, sizeof(b)));
  FrameHeader r = FrameHeader::decode(b);
  EXPECT_EQ(r.type, FrameType::kError);
  EXPECT_EQ(r.error, static_cast<uint32_t>(RemoteError::kOutOfRange));
  auto v = buf->verify(77, 0, 4096);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok()) << v->toString();
}

TEST(EmulatedTransportTest, ANonGdrmeshPeerFailsTheTargetsRunPromptly) {
  EmulatedTransport t;
  auto buf = hostBuffer(4096);
  auto target = t.createEndpoint(spec(Role::kTarget, Op::kSend), *buf, RegPath::kAuto);
  ASSERT_TRUE(target.ok());
  Endpoint& ep = **target;
  RunSpec rs;
  rs.message_size = 64;
  rs.iterations = 10;
  rs.timeout_seconds = 30;
  auto run = std::async(std::launch::async, [&] { return ep.run(rs); });
  Fd c = connectLoopback(ep.local().as<EmulatedDesc>()->tcp_port);
  const char junk[FrameHeader::kSize] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(c.get(), junk, sizeof(junk), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(junk)));
  const bool returned = run.wait_for(kPrompt) == std::future_status::ready;
  if (!returned) ep.abort();
  ASSERT_TRUE(returned) << "a protocol error left the target waiting for its deadline";
  auto m = run.get();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kDataLoss) << m.status().toString();
}

}  // namespace
}  // namespace gdrmesh
