#include "coordinator/http/request_gate.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock_alarm.h"
#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

// "127.0.0.1" or "::1" of a peer (no port).
std::string numericHost(const sockaddr_storage& ss, socklen_t len) {
  char host[NI_MAXHOST] = {0};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof(host), nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return "?";
  }
  return host;
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Service Unavailable";
  }
}

// Answers `status` with the page's error shape ({"error", "parameter", "fix"}) and closes.
// What the client sent and the gate has not read is read first (a little of it): closing a
// socket with unread data resets the connection, and the client would see the reset instead of
// the answer.
void answerAndClose(int fd, int status, const std::string& error, const std::string& fix) {
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
  }
  const std::string body = "{\"error\":\"" + jsonEscape(error) +
                           "\",\"parameter\":null,\"fix\":\"" + jsonEscape(fix) + "\"}";
  const std::string msg =
      "HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" + body;
  (void)::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)::shutdown(fd, SHUT_WR);
  ::close(fd);
}

bool iequals(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

// What a complete head says about the body that follows.
struct BodyFraming {
  int error_status = 0;  // 400, 411 or 413: answer that instead
  std::string error;
  size_t length = 0;
};

BodyFraming bodyFraming(const std::string& head, size_t max_body) {
  BodyFraming f;
  bool have_length = false;
  size_t pos = head.find("\r\n");  // past the request line
  while (pos != std::string::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    pos = head.find("\r\n", start);
    const std::string line =
        head.substr(start, (pos == std::string::npos ? head.size() : pos) - start);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (iequals(name, "transfer-encoding")) {
      f.error_status = 411;
      f.error = "a chunked request body is not accepted";
      return f;
    }
    if (!iequals(name, "content-length")) continue;
    if (value.empty() || value.size() > 12 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      f.error_status = 400;
      f.error = "Content-Length '" + value + "' is not a number";
      return f;
    }
    const size_t n = std::stoull(value);
    if (have_length && n != f.length) {
      f.error_status = 400;
      f.error = "two different Content-Length headers";
      return f;
    }
    have_length = true;
    f.length = n;
  }
  if (f.length > max_body) {
    f.error_status = 413;
    f.error = "the request body of " + std::to_string(f.length) + " bytes is larger than " +
              std::to_string(max_body) + " bytes";
  }
  return f;
}

// The longest single poll(2): the clock's timer is what ends a wait on time; this only bounds
// a wait should the timer be lost.
constexpr int64_t kMaxPollMs = 60'000;
// The gate's poll set: the wake-up pipe, the listening socket, the clock's alarm, then one
// descriptor a connection.
constexpr size_t kGateFixedFds = 3;

}  // namespace

class RequestGate::Impl {
 public:
  Impl(RequestGateLimits limits, Clock& clock, Serve serve)
      : limits_(limits), clock_(clock), serve_(std::move(serve)) {
    limits_.workers = std::max<size_t>(limits_.workers, 1);
    limits_.max_connections = std::max<size_t>(limits_.max_connections, 1);
    limits_.max_per_source = std::max<size_t>(limits_.max_per_source, 1);
  }
  ~Impl() { stop(); }

  Result<int> start(const std::string& host, int port, const std::string& what) {
    if (loop_.joinable()) {
      return Status(Code::kFailedPrecondition, "the status page server is already started",
                    "call stop() first");
    }
    GDR_ASSIGN_OR_RETURN(int bound, listenOn(host, port, what));
    int pipefd[2];
    if (::pipe2(pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
      ::close(listen_fd_);
      listen_fd_ = -1;
      return internalError(what + ": cannot create the wake-up pipe: " + std::strerror(errno));
    }
    wake_read_ = pipefd[0];
    wake_write_ = pipefd[1];
    {
      MutexLock lock(mu_);
      stopping_ = false;
    }
    for (size_t i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { work(); });
    loop_ = std::thread([this] { run(); });
    return bound;
  }

  void stop() {
    if (!loop_.joinable()) return;
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    const char b = 1;
    (void)::write(wake_write_, &b, 1);
    loop_.join();  // closes the listening socket and the connections it reads
    std::deque<GatedRequest> unserved;
    {
      MutexLock lock(mu_);
      unserved.swap(queue_);
    }
    ready_.notify_all();
    for (auto& r : unserved) release(r.fd, r.peer);
    for (auto& t : workers_) t.join();
    workers_.clear();
    ::close(wake_read_);
    ::close(wake_write_);
    wake_read_ = wake_write_ = -1;
  }

  size_t connections() const {
    MutexLock lock(mu_);
    return total_;
  }

 private:
  // A connection whose request is still arriving.
  struct Conn {
    int fd = -1;
    std::string peer;
    std::string buf;
    Clock::TimePoint deadline;  // on clock_
    size_t head_end = 0;        // 0: the head is not complete yet
    size_t need = 0;            // head_end + Content-Length, once the head is complete
  };
  enum class Progress { kWaiting, kComplete, kGone };

  Result<int> listenOn(const std::string& host, int port, const std::string& what) {
    const Status cannot = unavailable(
        what +
            ": cannot listen there (the address is not local or does not resolve, or the "
            "port is in use)",
        "give a local address and a free port, e.g. --http 127.0.0.1:8080 (port 0 picks a free "
        "port)");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) {
      return cannot;
    }
    int fd = -1;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      // SO_REUSEADDR only (restart while old connections linger); not SO_REUSEPORT, which
      // would let a second server bind the same port without an error.
      int yes = 1;
      (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) break;
      ::close(fd);
      fd = -1;
    }
    ::freeaddrinfo(res);
    if (fd < 0) return cannot;
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
      ::close(fd);
      return cannot;
    }
    listen_fd_ = fd;
    if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }

  // The gate's thread: accepts, reads heads and bodies, enforces the deadlines. The deadlines
  // are on the injected clock: a timer at the earliest one wakes the poll (a ManualClock's
  // advance() in tests), and poll's own timeout is that deadline as the clock sees it now.
  void run() {
    std::vector<Conn> conns;
    std::vector<pollfd> fds;
    ClockAlarm alarm(clock_);
    for (;;) {
      fds.clear();
      fds.push_back({wake_read_, POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({alarm.fd(), POLLIN, 0});
      for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
      int timeout_ms = -1;
      if (!conns.empty()) {
        Clock::TimePoint earliest = conns.front().deadline;
        for (const auto& c : conns) earliest = std::min(earliest, c.deadline);
        alarm.set(earliest);  // first: a clock moved after this wakes the poll
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            std::max(earliest - clock_.now(), Clock::Duration(0)));
        timeout_ms = static_cast<int>(std::min<int64_t>(left.count(), kMaxPollMs));
      } else {
        alarm.clear();
      }
      const int n = ::poll(fds.data(), fds.size(), timeout_ms);
      if (n < 0 && errno != EINTR) break;
      {
        MutexLock lock(mu_);
        if (stopping_) break;
      }
      if (n > 0 && (fds[2].revents & POLLIN) != 0) alarm.drain();
      if (n > 0 && (fds[1].revents & POLLIN) != 0) acceptAll(conns);
      std::vector<bool> drop(conns.size(), false);
      for (size_t i = 0; i + kGateFixedFds < fds.size() && i < conns.size(); ++i) {
        if (fds[i + kGateFixedFds].revents == 0) continue;
        switch (readSome(conns[i])) {
          case Progress::kWaiting:
            break;
          case Progress::kComplete:
            dispatch(std::move(conns[i]));
            drop[i] = true;
            break;
          case Progress::kGone:
            drop[i] = true;
            break;
        }
      }
      const Clock::TimePoint after = clock_.now();
      for (size_t i = 0; i < conns.size(); ++i) {
        if (drop[i] || after < conns[i].deadline) continue;
        const bool head = conns[i].head_end == 0;
        const auto limit = head ? limits_.header_timeout : limits_.body_timeout;
        answer(conns[i], 408,
               std::string(head ? "the request head" : "the request body") +
                   " did not arrive within " + std::to_string(limit.count()) + " ms",
               "send the whole request at once; the status page does not wait for slow clients");
        drop[i] = true;
      }
      size_t kept = 0;
      for (size_t i = 0; i < conns.size(); ++i) {
        if (drop[i]) continue;
        if (kept != i) conns[kept] = std::move(conns[i]);  // never onto itself: that empties it
        ++kept;
      }
      conns.resize(kept);
    }
    for (auto& c : conns) release(c.fd, c.peer);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }

  void acceptAll(std::vector<Conn>& conns) {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of descriptors: try again at the next wake-up
      }
      Conn c;
      c.fd = fd;
      c.peer = numericHost(ss, len);
      c.deadline = clock_.now() + limits_.header_timeout;
      int refuse = 0;
      {
        MutexLock lock(mu_);
        size_t& mine = per_source_[c.peer];
        if (total_ >= limits_.max_connections) {
          refuse = 503;
        } else if (mine >= limits_.max_per_source) {
          refuse = 429;
        } else {
          ++total_;
          ++mine;
        }
        if (mine == 0) per_source_.erase(c.peer);
      }
      if (refuse == 503) {
        answerAndClose(fd, 503,
                       "the status page holds " + std::to_string(limits_.max_connections) +
                           " connections, its limit",
                       "try again shortly");
      } else if (refuse == 429) {
        answerAndClose(fd, 429,
                       c.peer + " has " + std::to_string(limits_.max_per_source) +
                           " connections open to the status page, its limit per address",
                       "close idle connections, or wait for those open to finish");
      } else {
        conns.push_back(std::move(c));
      }
    }
  }

  Progress readSome(Conn& c) {
    char tmp[4096];
    for (;;) {
      const ssize_t n = ::recv(c.fd, tmp, sizeof(tmp), 0);
      if (n == 0) {
        if (complete(c)) return Progress::kComplete;
        release(c.fd, c.peer);  // the client went away before its request was whole
        return Progress::kGone;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        release(c.fd, c.peer);
        return Progress::kGone;
      }
      c.buf.append(tmp, static_cast<size_t>(n));
      if (c.head_end == 0) {
        const size_t end = c.buf.find("\r\n\r\n");
        if (end == std::string::npos || end + 4 > limits_.max_header_bytes) {
          if (c.buf.size() > limits_.max_header_bytes) {
            answer(c, 431,
                   "the request head is larger than " + std::to_string(limits_.max_header_bytes) +
                       " bytes",
                   "send fewer or shorter headers (cookies?)");
            return Progress::kGone;
          }
          continue;
        }
        c.head_end = end + 4;
        BodyFraming f = bodyFraming(c.buf.substr(0, c.head_end), limits_.max_body_bytes);
        if (f.error_status != 0) {
          answer(c, f.error_status, f.error,
                 "the status page takes GET requests; send a body of at most " +
                     std::to_string(limits_.max_body_bytes) + " bytes with Content-Length");
          return Progress::kGone;
        }
        c.need = c.head_end + f.length;
        c.deadline = clock_.now() + limits_.body_timeout;
      }
      if (complete(c)) return Progress::kComplete;
    }
    return complete(c) ? Progress::kComplete : Progress::kWaiting;
  }

  static bool complete(Conn& c) {
    if (c.head_end == 0 || c.buf.size() < c.need) return false;
    c.buf.resize(c.need);  // one request per connection: what follows is not read
    return true;
  }

  void answer(Conn& c, int status, const std::string& error, const std::string& fix) {
    answerAndClose(c.fd, status, error, fix);
    forget(c.peer);
  }

  void dispatch(Conn&& c) {
    {
      MutexLock lock(mu_);
      queue_.push_back(GatedRequest{c.fd, std::move(c.buf), std::move(c.peer)});
    }
    ready_.notify_one();
  }

  void work() {
    for (;;) {
      GatedRequest r;
      {
        UniqueLock lock(mu_);
        ready_.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || !queue_.empty();
        });
        if (queue_.empty()) return;
        r = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        serve_(r);
      } catch (...) {
        // serve answers its own errors; a throw here leaves only the connection to close
      }
      release(r.fd, r.peer);
    }
  }

  // Closes a connection the gate counted.
  void release(int fd, const std::string& peer) {
    (void)::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    forget(peer);
  }

  void forget(const std::string& peer) {
    MutexLock lock(mu_);
    --total_;
    auto it = per_source_.find(peer);
    if (it != per_source_.end() && --it->second == 0) per_source_.erase(it);
  }

  RequestGateLimits limits_;
  Clock& clock_;
  const Serve serve_;
  int listen_fd_ = -1;
  int wake_read_ = -1;
  int wake_write_ = -1;
  std::thread loop_;
  std::vector<std::thread> workers_;

  mutable Mutex mu_;
  std::condition_variable ready_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<GatedRequest> queue_ ABSL_GUARDED_BY(mu_);  // complete, not yet served
  size_t total_ ABSL_GUARDED_BY(mu_) = 0;                // connections held, any phase
  std::map<std::string, size_t> per_source_ ABSL_GUARDED_BY(mu_);
};

ResponseWriter::ResponseWriter(int fd, Clock& clock, std::chrono::milliseconds write_timeout,
                               std::chrono::milliseconds response_timeout)
    : fd_(fd),
      clock_(clock),
      write_timeout_(write_timeout),
      deadline_(clock.now() + response_timeout) {}

ResponseWriter::~ResponseWriter() = default;

bool ResponseWriter::writable() {
  const Clock::TimePoint until = std::min(deadline_, clock_.now() + write_timeout_);
  pollfd p[2] = {{fd_, POLLOUT, 0}, {-1, POLLIN, 0}};
  if (clock_.now() >= deadline_) return false;
  if (::poll(p, 1, 0) > 0) return (p[0].revents & POLLOUT) != 0;
  // No room: wait for it, or for the clock to reach `until`.
  if (!alarm_) alarm_ = std::make_unique<ClockAlarm>(clock_);
  alarm_->set(until);  // first: a clock moved after this ends the poll
  for (;;) {
    const Clock::TimePoint now = clock_.now();
    if (now >= until) return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    p[0].revents = 0;
    p[1] = {alarm_->fd(), POLLIN, 0};
    const int n = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left, kMaxPollMs)));
    if (n < 0 && errno != EINTR) return false;
    if (n > 0 && p[0].revents != 0) return (p[0].revents & POLLOUT) != 0;
    if (n > 0 && p[1].revents != 0) alarm_->drain();
  }
}

ssize_t ResponseWriter::write(const char* data, size_t size) {
  for (;;) {
    if (!writable()) return -1;
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return n;
  }
}

RequestGate::RequestGate(RequestGateLimits limits, Clock& clock, Serve serve)
    : impl_(std::make_unique<Impl>(limits, clock, std::move(serve))) {}

RequestGate::~RequestGate() {
  stop();
}

Result<int> RequestGate::start(const std::string& host, int port, const std::string& what) {
  return impl_->start(host, port, what);
}

void RequestGate::stop() {
  impl_->stop();
}

size_t RequestGate::connections() const {
  return impl_->connections();
}

}  // namespace gdrmesh
