// The status page's front gate (coordinator/http/request_gate.h) on real loopback sockets: a
// request reaches a worker only once it is whole; a slow head is answered 408 without ever
// taking a worker; oversized heads and bodies, chunked bodies, and connections beyond the
// bounds per address and in all are answered by the gate itself. The gate's deadlines run on a
// ManualClock: they pass when the test moves it, never on real time (issue #19).
#include "coordinator/http/request_gate.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace gdrmesh {
namespace {

using namespace std::chrono_literals;

class Client {
 public:
  Client(int port, const char* source = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &src.sin_addr);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src)) == 0 &&
          ::connect(fd_, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0;
  }
  ~Client() { ::close(fd_); }
  bool ok() const { return ok_; }
  // True when the server has sent something (or closed) by now; does not wait.
  bool answered() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  // Whether the server sends something (or closes) within `ms` of real time.
  bool answersWithin(int ms) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }
  void send(const std::string& s) { (void)::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  // Everything the server sends until it closes (bounded: 20 s).
  std::string answer() {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return got;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return got;
      got.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

int statusOf(const std::string& answer) {
  return answer.size() >= 12 ? std::atoi(answer.substr(9, 3).c_str()) : 0;
}

class RequestGateTest : public ::testing::Test {
 protected:
  void start(RequestGateLimits limits) {
    gate_ = std::make_unique<RequestGate>(limits, clock_, [this](const GatedRequest& r) {
      served_.fetch_add(1);
      const std::string body = "served " + std::to_string(r.bytes.size()) + " from " + r.peer;
      const std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
      (void)::send(r.fd, out.data(), out.size(), MSG_NOSIGNAL);
    });
    auto port = gate_->start("127.0.0.1", 0, "--http 127.0.0.1:0");
    ASSERT_TRUE(port.ok()) << port.status().toString();
    port_ = *port;
  }
  // Waits (bounded) until the gate holds `n` connections.
  bool holds(size_t n) {
    for (int i = 0; i < 2000; ++i) {
      if (gate_->connections() == n) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  // Moves the clock by `step` until `c` is answered: for a deadline the gate takes at a moment
  // the test cannot see (a body's, from when the gate read the head). Bounded by 20 s of real
  // time (a safety net, not a timing).
  bool advanceUntilAnswered(const Client& c, std::chrono::hours step) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < give_up) {
      clock_.advance(step);
      if (c.answersWithin(10)) return true;
    }
    return false;
  }
  ManualClock clock_;  // declared before the gate: it outlives it
  std::unique_ptr<RequestGate> gate_;
  std::atomic<int> served_{0};
  int port_ = 0;
};

TEST_F(RequestGateTest, AWholeRequestIsServedWithExactlyItsBody) {
  start({});
  Client c(port_);
  ASSERT_TRUE(c.ok());
  const std::string head = "POST /x HTTP/1.1\r\nHost: t\r\ncontent-length: 5\r\n\r\n";
  c.send(head + "hello" + "GET /next HTTP/1.1\r\n\r\n");  // what follows is not read
  const std::string a = c.answer();
  EXPECT_EQ(statusOf(a), 200) << a;
  EXPECT_NE(a.find("served " + std::to_string(head.size() + 5) + " from 127.0.0.1"),
            std::string::npos)
      << a;
  EXPECT_EQ(served_.load(), 1);
  EXPECT_TRUE(holds(0));
}

TEST_F(RequestGateTest, ASlowHeadNeverTakesAWorkerAndIsAnswered408) {
  RequestGateLimits l;
  l.workers = 1;
  l.header_timeout = 1h;  // on the ManualClock: an hour passes only when the test says so
  start(l);
  Client slow(port_);
  ASSERT_TRUE(slow.ok());
  slow.send("GET /healthz HTTP/1.1\r\nX-Slow: 1\r\n");
  ASSERT_TRUE(holds(1));
  // The head's window advances with the clock only: a millisecond before its end the gate
  // still waits (the quick client's request runs the gate's loop after the move).
  clock_.advance(1h - 1ms);
  // The one worker serves another client while the slow head is still arriving.
  Client quick(port_);
  quick.send("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(statusOf(quick.answer()), 200);
  EXPECT_FALSE(slow.answered());
  EXPECT_TRUE(holds(1));
  clock_.advance(1ms);
  const std::string a = slow.answer();
  EXPECT_EQ(statusOf(a), 408) << a;
  EXPECT_NE(a.find("the request head did not arrive within 3600000 ms"), std::string::npos) << a;
  EXPECT_NE(a.find("\"fix\""), std::string::npos) << a;
  EXPECT_EQ(served_.load(), 1);
  EXPECT_TRUE(holds(0));
}

TEST_F(RequestGateTest, ASlowBodyIsAnswered408WhenTheClockPassesItsDeadline) {
  RequestGateLimits l;
  l.header_timeout = 10000h;
  l.body_timeout = 1h;
  start(l);
  Client c(port_);
  c.send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  ASSERT_TRUE(holds(1));
  EXPECT_FALSE(c.answered());
  ASSERT_TRUE(advanceUntilAnswered(c, 1h));
  const std::string a = c.answer();
  EXPECT_EQ(statusOf(a), 408) << a;
  EXPECT_NE(a.find("the request body did not arrive"), std::string::npos) << a;
  EXPECT_EQ(served_.load(), 0);
}

TEST_F(RequestGateTest, OversizedOrUnframedRequestsAreAnsweredByTheGate) {
  RequestGateLimits l;
  l.max_header_bytes = 1024;
  l.max_body_bytes = 100;
  start(l);
  {
    Client c(port_);
    c.send("GET / HTTP/1.1\r\nCookie: " + std::string(2000, 'c') + "\r\n\r\n");
    EXPECT_EQ(statusOf(c.answer()), 431);
  }
  {
    Client c(port_);
    c.send("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n");
    const std::string a = c.answer();
    EXPECT_EQ(statusOf(a), 413) << a;
    EXPECT_NE(a.find("101 bytes is larger than 100 bytes"), std::string::npos) << a;
  }
  {
    Client c(port_);
    c.send("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    EXPECT_EQ(statusOf(c.answer()), 411);
  }
  {
    Client c(port_);
    c.send("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
    EXPECT_EQ(statusOf(c.answer()), 400);
  }
  EXPECT_EQ(served_.load(), 0);
  EXPECT_TRUE(holds(0));
}

TEST_F(RequestGateTest, ConnectionsAreBoundedPerAddressAndInAll) {
  RequestGateLimits l;
  l.max_per_source = 2;
  l.max_connections = 3;
  start(l);
  Client a1(port_, "127.0.0.1");
  Client a2(port_, "127.0.0.1");
  a1.send("GET / HTTP/1.1\r\n");
  a2.send("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(holds(2));
  Client a3(port_, "127.0.0.1");
  const std::string refused = a3.answer();
  EXPECT_EQ(statusOf(refused), 429) << refused;
  EXPECT_NE(refused.find("127.0.0.1 has 2 connections open"), std::string::npos) << refused;
  Client b1(port_, "127.0.0.2");
  ASSERT_TRUE(b1.ok());
  b1.send("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(holds(3));
  Client c1(port_, "127.0.0.3");
  EXPECT_EQ(statusOf(c1.answer()), 503);
  // A held connection that completes its request is served and frees its place.
  a1.send("\r\n");
  EXPECT_EQ(statusOf(a1.answer()), 200);
  ASSERT_TRUE(holds(2));
  Client a4(port_, "127.0.0.1");
  a4.send("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(statusOf(a4.answer()), 200);
}

TEST_F(RequestGateTest, StopClosesHeldConnectionsAndIsIdempotent) {
  start({});
  Client c(port_);
  c.send("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(holds(1));
  gate_->stop();
  EXPECT_EQ(c.answer(), "");  // closed, unanswered
  gate_->stop();
  EXPECT_EQ(gate_->connections(), 0u);
  Client after(port_);
  EXPECT_FALSE(after.ok());
}

// The server's side of an answer (status_http_server.cc writes through it): a write waits for a
// client that does not read only until the ManualClock passes `write_timeout`, and nothing is
// written once it passes `response_timeout`; no real second goes by.
TEST(ResponseWriterTest, WritesWaitForRoomOnlyUntilTheClockPassesTheirDeadlines) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  ManualClock clock;
  ResponseWriter w(sv[0], clock, 1h, 10h);
  char block[4096] = {};
  while (::send(sv[0], block, sizeof(block), MSG_NOSIGNAL) > 0) {
  }  // the client reads nothing: no room left
  ssize_t wrote = 0;
  std::thread writer([&] { wrote = w.write(block, sizeof(block)); });
  // The wait's end is a timer on the clock from when the write found no room.
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (clock.pendingTimers() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(clock.pendingTimers(), 1u);
  clock.advance(1h);
  writer.join();
  EXPECT_EQ(wrote, -1);
  // The client reads: there is room again, and the answer's deadline is still ahead.
  while (::recv(sv[1], block, sizeof(block), MSG_DONTWAIT) > 0) {
  }
  EXPECT_EQ(w.write(block, 16), 16);
  // Past the answer's deadline nothing more is written, room or not.
  clock.advance(9h);
  EXPECT_FALSE(w.writable());
  EXPECT_EQ(w.write(block, 16), -1);
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace gdrmesh
