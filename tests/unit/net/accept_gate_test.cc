// The accept gate (common/net/accept_gate.h) on real loopback sockets with a manual clock:
// a connection goes on once it speaks, a silent one is closed at its deadline, pending ones are
// bounded per source and in total (oldest first), running out of file descriptors never stops
// it, and a listener that dies is found by the self-check and recreated.
#include "common/net/accept_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace gdrmesh {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Bounded wait for a condition (real time: the gate runs on its own thread).
bool eventually(const std::function<bool()>& cond, milliseconds limit = milliseconds(10000)) {
  const auto end = steady_clock::now() + limit;
  while (steady_clock::now() < end) {
    if (cond()) return true;
    ::poll(nullptr, 0, 2);
  }
  return cond();
}

// What the gate hands on, kept for the test (descriptors closed at the end).
class Received {
 public:
  AcceptGate::Handoff handoff() {
    return [this](int, int fd) {
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      cv_.notify_all();
    };
  }
  // The next handed-on descriptor, or -1 after `limit`.
  int next(milliseconds limit = milliseconds(10000)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, limit, [&] { return !fds_.empty(); })) return -1;
    int fd = fds_.front();
    fds_.pop_front();
    taken_.push_back(fd);
    return fd;
  }
  size_t waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.size();
  }
  ~Received() {
    for (int fd : fds_) ::close(fd);
    for (int fd : taken_) ::close(fd);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> fds_;
  std::vector<int> taken_;
};

// A client socket connected to 127.0.0.1:port, from `source` (any 127/8 address).
int dial(int port, const char* source = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
    ::close(fd);
    return -1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True once the server side closed the connection (EOF or reset), within `limit`.
bool closedByServer(int fd, milliseconds limit = milliseconds(10000)) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
  char b = 0;
  ssize_t r = ::recv(fd, &b, 1, MSG_DONTWAIT);
  return r == 0 || (r < 0 && errno == ECONNRESET);
}

// Still open from the server's side right now (nothing to read, no EOF).
bool stillOpen(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool sendByte(int fd) {
  char b = 0x16;  // a TLS handshake record starts so
  return ::send(fd, &b, 1, MSG_NOSIGNAL) == 1;
}

AcceptGateOptions loopback() {
  AcceptGateOptions o;
  o.listen = "127.0.0.1:0";
  o.self_check_interval = milliseconds(0);
  o.max_pending = 64;
  o.max_pending_per_source = 64;
  return o;
}

struct Fds {
  std::vector<int> v;
  ~Fds() {
    for (int fd : v) ::close(fd);
  }
  int add(int fd) {
    v.push_back(fd);
    return fd;
  }
};

TEST(AcceptGate, HandsAConnectionOnOnceItHasSentItsFirstBytesUnread) {
  ManualClock clock;
  Received got;
  AcceptGate gate(loopback(), clock, got.handoff(), [](const std::string&) {});
  auto port = gate.open();
  ASSERT_TRUE(port.ok()) << port.status().toString();
  ASSERT_GT(*port, 0);
  gate.start();
  Fds fds;
  int c = fds.add(dial(*port));
  ASSERT_GE(c, 0);
  ASSERT_TRUE(eventually([&] { return gate.stats().pending == 1; }));
  EXPECT_EQ(got.waiting(), 0u) << "handed on before it spoke";
  ASSERT_TRUE(sendByte(c));
  int s = got.next();
  ASSERT_GE(s, 0) << "a connection that spoke was not handed on";
  char b = 0;
  EXPECT_EQ(::recv(s, &b, 1, 0), 1) << "the first bytes must stay for the receiver";
  EXPECT_EQ(b, 0x16);
  EXPECT_EQ(::fcntl(s, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
  int nodelay = 0;
  socklen_t len = sizeof(nodelay);
  ASSERT_EQ(::getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0) << "small RPCs would wait for Nagle";
  EXPECT_TRUE(
      eventually([&] { return gate.stats().pending == 0 && gate.stats().handed_off == 1; }));
}

TEST(AcceptGate, ClosesAConnectionThatSendsNothingBeforeItsDeadline) {
  ManualClock clock;
  Received got;
  AcceptGateOptions o = loopback();
  o.first_bytes_deadline = milliseconds(5000);
  AcceptGate gate(o, clock, got.handoff(), [](const std::string&) {});
  auto port = gate.open();
  ASSERT_TRUE(port.ok());
  gate.start();
  Fds fds;
  int c = fds.add(dial(*port));
  ASSERT_TRUE(eventually([&] { return gate.stats().pending == 1; }));
  clock.advance(milliseconds(4900));
  EXPECT_TRUE(stillOpen(c));
  EXPECT_EQ(gate.stats().closed_silent, 0u);
  clock.advance(milliseconds(200));
  EXPECT_TRUE(closedByServer(c)) << "a silent connection outlived its deadline";
  EXPECT_TRUE(
      eventually([&] { return gate.stats().closed_silent == 1 && gate.stats().pending == 0; }));
  EXPECT_EQ(got.waiting(), 0u);
}

TEST(AcceptGate, BoundsSilentConnectionsPerSourceClosingThatSourcesOldestFirst) {
  ManualClock clock;
  Received got;
  AcceptGateOptions o = loopback();
  o.max_pending_per_source = 3;
  o.max_pending = 5;
  AcceptGate gate(o, clock, got.handoff(), [](const std::string&) {});
  auto port = gate.open();
  ASSERT_TRUE(port.ok());
  gate.start();
  Fds fds;
  std::vector<int> a;
  for (int i = 0; i < 3; ++i) {
    a.push_back(fds.add(dial(*port, "127.0.0.1")));
    ASSERT_TRUE(eventually([&] { return gate.stats().accepted == a.size(); }));
  }
  int b1 = fds.add(dial(*port, "127.0.0.2"));
  ASSERT_TRUE(eventually([&] { return gate.stats().accepted == 4; }));
  // A fourth from 127.0.0.1: that source's oldest goes, not 127.0.0.2's.
  int a4 = fds.add(dial(*port, "127.0.0.1"));
  EXPECT_TRUE(closedByServer(a[0]));
  ASSERT_TRUE(eventually([&] { return gate.stats().accepted == 5; }));
  EXPECT_TRUE(stillOpen(a[1]));
  EXPECT_TRUE(stillOpen(b1));
  EXPECT_TRUE(stillOpen(a4));
  // (The counters follow the close a moment later, on the gate's thread.)
  EXPECT_TRUE(eventually([&] { return gate.stats().evicted == 1 && gate.stats().pending == 4; }));
  // Over the total (5): the oldest of all goes, whatever its source.
  int c1 = fds.add(dial(*port, "127.0.0.3"));
  ASSERT_TRUE(eventually([&] { return gate.stats().accepted == 6; }));
  int c2 = fds.add(dial(*port, "127.0.0.3"));
  EXPECT_TRUE(closedByServer(a[1]));
  ASSERT_TRUE(eventually([&] { return gate.stats().accepted == 7; }));
  EXPECT_TRUE(stillOpen(b1));
  EXPECT_TRUE(stillOpen(c1));
  EXPECT_TRUE(stillOpen(c2));
  EXPECT_TRUE(eventually([&] { return gate.stats().evicted == 2 && gate.stats().pending == 5; }));
  // One that has spoken is handed on, never evicted.
  ASSERT_TRUE(sendByte(b1));
  EXPECT_GE(got.next(), 0);
}

// Lowers this process's soft open-file limit for a scope and fills every descriptor below it.
class FdExhaustion {
 public:
  explicit FdExhaustion(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = soft;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &low) == 0;
    for (;;) {
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fillers_.push_back(fd);
    }
  }
  ~FdExhaustion() {
    for (int fd : fillers_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  bool ok() const { return ok_ && !fillers_.empty(); }
  // Frees one descriptor (for the test's own client socket).
  void release(size_t n = 1) {
    for (size_t i = 0; i < n && !fillers_.empty(); ++i) {
      ::close(fillers_.back());
      fillers_.pop_back();
    }
  }

 private:
  rlimit saved_{};
  bool ok_ = false;
  std::vector<int> fillers_;
};

rlim_t highestOpenFdPlus(int extra) {
  int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // lowest free descriptor
  ::close(probe);
  int highest = probe;
  for (int fd = probe; fd < probe + 4096; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) highest = fd;
  }
  return static_cast<rlim_t>(highest + extra);
}

TEST(AcceptGate, OutOfFileDescriptorsItDropsTheNewConnectionAndKeepsAccepting) {
  ManualClock clock;
  Received got;
  std::vector<std::string> lines;
  std::mutex lines_mu;
  AcceptGate gate(loopback(), clock, got.handoff(), [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(l);
  });
  auto port = gate.open();
  ASSERT_TRUE(port.ok());
  gate.start();
  Fds fds;
  {
    FdExhaustion full(highestOpenFdPlus(32));
    ASSERT_TRUE(full.ok());
    full.release();
    int c = fds.add(dial(*port));  // takes the last descriptor; the gate has none to accept
    ASSERT_GE(c, 0);
    EXPECT_TRUE(closedByServer(c)) << "with no descriptor left the gate must still drain";
    EXPECT_TRUE(eventually([&] { return gate.stats().dropped_no_fd == 1; }));
    // And again: it never gave up.
    ::close(c);
    fds.v.clear();
    int d = fds.add(dial(*port));
    ASSERT_GE(d, 0);
    EXPECT_TRUE(closedByServer(d));
    EXPECT_TRUE(eventually([&] { return gate.stats().dropped_no_fd == 2; }));
  }
  // Descriptors back: a client is served as before.
  int e = fds.add(dial(*port));
  ASSERT_TRUE(sendByte(e));
  EXPECT_GE(got.next(), 0) << "the gate did not recover once descriptors were free";
  std::lock_guard<std::mutex> lock(lines_mu);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("out of file descriptors"), std::string::npos) << lines[0];
  // Rate-limited: two drops within the log interval make one line.
  EXPECT_EQ(lines.size(), 1u);
}

TEST(AcceptGate, OutOfFileDescriptorsItClosesTheOldestSilentConnectionForANewOne) {
  ManualClock clock;
  Received got;
  AcceptGate gate(loopback(), clock, got.handoff(), [](const std::string&) {});
  auto port = gate.open();
  ASSERT_TRUE(port.ok());
  gate.start();
  Fds fds;
  int old = fds.add(dial(*port));
  ASSERT_TRUE(eventually([&] { return gate.stats().pending == 1; }));
  {
    FdExhaustion full(highestOpenFdPlus(32));
    ASSERT_TRUE(full.ok());
    full.release();
    int fresh = fds.add(dial(*port));
    ASSERT_GE(fresh, 0);
    EXPECT_TRUE(closedByServer(old)) << "the oldest silent connection should make room";
    ASSERT_TRUE(eventually([&] { return gate.stats().accepted == 2; }));
    EXPECT_TRUE(eventually([&] { return gate.stats().evicted == 1; }));
    EXPECT_EQ(gate.stats().dropped_no_fd, 0u);
    ASSERT_TRUE(sendByte(fresh));
    EXPECT_GE(got.next(), 0) << "the new connection was not served";
  }
}

TEST(AcceptGate, ASelfCheckFindsADeadListenerAndRecreatesItOnTheSamePort) {
  ManualClock clock;
  Received got;
  std::vector<std::string> lines;
  std::mutex lines_mu;
  AcceptGateOptions o = loopback();
  o.self_check_interval = milliseconds(10000);
  o.self_check_timeout = milliseconds(5000);
  AcceptGate gate(o, clock, got.handoff(), [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(l);
  });
  auto port = gate.open();
  ASSERT_TRUE(port.ok());
  gate.start();
  // A healthy check passes.
  clock.advance(milliseconds(10000));
  ASSERT_TRUE(eventually([&] { return gate.stats().self_checks_ok == 1; }));
  EXPECT_EQ(gate.stats().accepted, 0u) << "the self-check is no client";
  // The listening socket dies behind the gate's back: its descriptor now holds something that
  // never becomes readable, and nothing listens on the port.
  Fds fds;
  int waker = fds.add(dial(*port));
  ASSERT_TRUE(eventually([&] { return gate.stats().pending == 1; }));
  auto listeners = gate.listenerFdsForTesting();
  ASSERT_EQ(listeners.size(), 1u);
  int dud = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(::dup2(dud, listeners[0]), 0);
  ::close(dud);
  // The gate's poll holds the old socket until it wakes: a pending client speaks to wake it.
  ASSERT_TRUE(sendByte(waker));
  ASSERT_GE(got.next(), 0);
  EXPECT_LT(dial(*port), 0) << "the port should refuse while nothing listens";
  clock.advance(milliseconds(10000));
  ASSERT_TRUE(eventually([&] { return gate.stats().listeners_recreated == 1; }));
  EXPECT_EQ(gate.stats().self_checks_failed, 1u);
  int c = fds.add(dial(*port));
  ASSERT_GE(c, 0) << "the recreated listener does not accept on port " << *port;
  ASSERT_TRUE(sendByte(c));
  EXPECT_GE(got.next(), 0);
  std::lock_guard<std::mutex> lock(lines_mu);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("recreated"), std::string::npos) << lines.back();
}

TEST(AcceptGate, ASecondGateOnTheSamePortIsRefused) {
  ManualClock clock;
  Received got;
  AcceptGate first(loopback(), clock, got.handoff(), [](const std::string&) {});
  auto port = first.open();
  ASSERT_TRUE(port.ok());
  AcceptGateOptions o = loopback();
  o.listen = "127.0.0.1:" + std::to_string(*port);
  AcceptGate second(o, clock, got.handoff(), [](const std::string&) {});
  auto again = second.open();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kUnavailable);
  EXPECT_NE(again.status().message().find("in use"), std::string::npos) << again.status().message();
}

TEST(AcceptGate, ListensOnIpv6Loopback) {
  int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6 on this host";
  ::close(probe);
  ManualClock clock;
  Received got;
  AcceptGateOptions o = loopback();
  o.listen = "[::1]:0";
  AcceptGate gate(o, clock, got.handoff(), [](const std::string&) {});
  auto port = gate.open();
  if (!port.ok()) GTEST_SKIP() << "cannot bind [::1]: " << port.status().message();
  gate.start();
  int c = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 to{};
  to.sin6_family = AF_INET6;
  to.sin6_port = htons(static_cast<uint16_t>(*port));
  to.sin6_addr = in6addr_loopback;
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  ASSERT_TRUE(sendByte(c));
  EXPECT_GE(got.next(), 0);
  ::close(c);
}

TEST(AcceptGate, RejectsAListenAddressThatIsNotHostPort) {
  ManualClock clock;
  Received got;
  for (const char* bad : {"7070", "::1:7070", "127.0.0.1:", "127.0.0.1:99999", "[::1]7070"}) {
    AcceptGateOptions o = loopback();
    o.listen = bad;
    AcceptGate gate(o, clock, got.handoff(), [](const std::string&) {});
    auto port = gate.open();
    ASSERT_FALSE(port.ok()) << bad;
    EXPECT_EQ(port.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(AcceptGate, PendingBoundsFollowTheOpenFileLimit) {
  EXPECT_EQ(pendingBoundsFor(256).total, 64u);
  EXPECT_EQ(pendingBoundsFor(256).per_source, 16u);
  EXPECT_EQ(pendingBoundsFor(20).total, 16u);
  EXPECT_EQ(pendingBoundsFor(1u << 20).total, 4096u);
  EXPECT_EQ(pendingBoundsFor(1u << 20).per_source, 1024u);
}

}  // namespace
}  // namespace gdrmesh
