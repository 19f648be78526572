#include "common/net/accept_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/sync/mutex.h"

namespace gdrmesh {
namespace {

std::string errnoText(int err) {
  return std::strerror(err);
}

// HOST and PORT of "HOST:PORT" or "[V6]:PORT".
Status splitHostPort(const std::string& listen, std::string* host, std::string* port) {
  Status bad = invalidArgument(
      "listen address '" + listen + "' is not HOST:PORT",
      "write it as 127.0.0.1:7070, 0.0.0.0:7070, [::1]:7070 or [::]:7070 (port 0: any free "
      "port)");
  if (!listen.empty() && listen[0] == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return bad;
    }
    *host = listen.substr(1, close - 1);
    *port = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return bad;
    *host = listen.substr(0, colon);
    *port = listen.substr(colon + 1);
    if (host->find(':') != std::string::npos) return bad;  // an IPv6 address needs brackets
  }
  if (port->empty() ||
      !std::all_of(port->begin(), port->end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      port->size() > 5 || std::stoi(*port) > 65535) {
    return bad;
  }
  return {};
}

bool isWildcard(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (a.ss_family == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
  }
  return false;
}

int portOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
}

void setPort(sockaddr_storage& a, int port) {
  if (a.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(a).sin_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in6&>(a).sin6_port = htons(static_cast<uint16_t>(port));
  }
}

// The IP of an address, as text (an IPv4-mapped IPv6 address as IPv4).
std::string ipOf(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof(buf));
    return buf;
  }
  if (a.ss_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      inet_ntop(AF_INET, &v6.s6_addr[12], buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6, &v6, buf, sizeof(buf));
    }
    return buf;
  }
  return "unknown";
}

std::string describe(const sockaddr_storage& a) {
  const std::string ip = ipOf(a);
  const std::string port = std::to_string(portOf(a));
  return a.ss_family == AF_INET6 ? "[" + ip + "]:" + port : ip + ":" + port;
}

bool sameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

socklen_t lengthOf(const sockaddr_storage& a) {
  return a.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

// A non-blocking listening socket bound to `addr` (no SO_REUSEPORT: a second server on the same
// port must fail, not share it). [::] also serves IPv4.
// Every IP address of options.listen ("HOST:PORT", "[V6]:PORT"), each endpoint once; an empty
// HOST is every interface, as gRPC reads it.
Result<std::vector<sockaddr_storage>> resolveListenAddrs(const std::string& listen) {
  std::string host;
  std::string port;
  if (Status st = splitHostPort(listen, &host, &port); !st.ok()) return st;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const bool any = host.empty();
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(any ? "::" : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 && any) rc = ::getaddrinfo("0.0.0.0", port.c_str(), &hints, &res);
  if (rc != 0) {
    return invalidArgument("listen address '" + listen + "': " + gai_strerror(rc),
                           "give a local address or a name that resolves to one");
  }
  std::vector<sockaddr_storage> addrs;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    sockaddr_storage a{};
    std::memcpy(&a, ai->ai_addr, ai->ai_addrlen);
    bool dup = false;
    for (const auto& b : addrs) dup = dup || sameEndpoint(a, b);
    if (!dup) addrs.push_back(a);
  }
  ::freeaddrinfo(res);
  if (addrs.empty()) {
    return invalidArgument("listen address '" + listen + "' has no IP address");
  }
  return addrs;
}

Result<int> bindListener(const sockaddr_storage& addr, int backlog) {
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable("socket: " + errnoText(errno));
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Accepted sockets inherit it: small RPCs must not wait for Nagle (gRPC's own listener sets it).
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (addr.ss_family == AF_INET6) {
    int v6only = isWildcard(addr) ? 0 : 1;
    (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), lengthOf(addr)) != 0) {
    int err = errno;
    ::close(fd);
    return Status(Code::kUnavailable, "bind " + describe(addr) + ": " + errnoText(err));
  }
  if (::listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    return Status(Code::kUnavailable, "listen " + describe(addr) + ": " + errnoText(err));
  }
  return fd;
}

uint64_t softOpenFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1u << 20;
  return rl.rlim_cur;
}

std::string seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

}  // namespace

PendingBounds pendingBoundsFor(uint64_t open_file_limit) {
  const size_t total = static_cast<size_t>(std::clamp<uint64_t>(open_file_limit / 4, 16, 4096));
  return {total, std::max<size_t>(4, total / 4)};
}

Result<FileLimit> raiseOpenFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    return internalError("getrlimit(RLIMIT_NOFILE): " + errnoText(errno));
  }
  FileLimit out;
  out.soft_before = rl.rlim_cur;
  out.hard = rl.rlim_max;
  if (rl.rlim_cur != rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) != 0 && rl.rlim_max == RLIM_INFINITY) {
      want.rlim_cur = 1u << 20;  // the kernel's default fs.nr_open
      (void)::setrlimit(RLIMIT_NOFILE, &want);
    }
  }
  (void)::getrlimit(RLIMIT_NOFILE, &rl);
  out.soft = rl.rlim_cur;
  return out;
}

AcceptGate::AcceptGate(AcceptGateOptions options, Clock& clock, Handoff handoff, Logger log)
    : options_(std::move(options)),
      clock_(clock),
      handoff_(std::move(handoff)),
      logger_(log ? std::move(log) : Logger([](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      })) {}

AcceptGate::~AcceptGate() {
  stop();
}

Result<int> AcceptGate::open() {
  GDR_ASSIGN_OR_RETURN(const std::vector<sockaddr_storage> addrs,
                       resolveListenAddrs(options_.listen));
  // Port 0 on several addresses: the port the first one got, on all (tried a few times).
  Status last;
  for (int attempt = 0; attempt < 5 && listeners_.empty(); ++attempt) {
    if (bindAllOnce(addrs, &last)) break;
    if (portOf(addrs[0]) != 0) break;  // a fixed port: trying again changes nothing
  }
  if (listeners_.empty()) {
    return Status(Code::kUnavailable,
                  "cannot listen on " + options_.listen + ": " + last.message());
  }
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (wake_fd_ < 0) {
    return internalError("eventfd: " + errnoText(errno));
  }
  PendingBounds b = pendingBoundsFor(softOpenFileLimit());
  max_pending_ = options_.max_pending > 0 ? options_.max_pending : b.total;
  max_per_source_ =
      options_.max_pending_per_source > 0 ? options_.max_pending_per_source : b.per_source;
  max_per_source_ = std::min(max_per_source_, max_pending_);
  return port_;
}

bool AcceptGate::bindAllOnce(const std::vector<sockaddr_storage>& addrs, Status* why) {
  int chosen = portOf(addrs[0]);
  std::vector<Listener> bound;
  *why = Status();
  for (const auto& a : addrs) {
    Listener l;
    l.addr = a;
    if (chosen != 0) setPort(l.addr, chosen);
    l.len = lengthOf(l.addr);
    auto fd = bindListener(l.addr, options_.backlog);
    if (!fd.ok()) {
      // An address family this host lacks (no IPv6 for localhost) is skipped if another binds.
      if (fd.status().message().find(errnoText(EADDRNOTAVAIL)) != std::string::npos ||
          fd.status().message().find(errnoText(EAFNOSUPPORT)) != std::string::npos) {
        if (why->ok()) *why = fd.status();
        continue;
      }
      *why = fd.status();
      bound.push_back(l);  // marks the failure below
      bound.back().fd = -1;
      break;
    }
    l.fd = *fd;
    sockaddr_storage got{};
    socklen_t len = sizeof(got);
    ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&got), &len);
    chosen = portOf(got);
    setPort(l.addr, chosen);
    bound.push_back(l);
  }
  const bool failed = bound.empty() || std::any_of(bound.begin(), bound.end(),
                                                   [](const Listener& l) { return l.fd < 0; });
  if (!failed) {
    listeners_ = std::move(bound);
    port_ = chosen;
    return true;
  }
  for (auto& l : bound) {
    if (l.fd >= 0) ::close(l.fd);
  }
  return false;
}

void AcceptGate::start() {
  if (started_ || listeners_.empty()) return;
  started_ = true;
  next_check_ = clock_.now() + options_.self_check_interval;
  thread_ = std::thread([this] { loop(); });
}

void AcceptGate::stop() {
  if (stopping_.exchange(true)) return;
  wake();
  if (thread_.joinable()) thread_.join();
  lifeline_.close();
  if (armed_) clock_.cancel(timer_);
  armed_ = false;
  for (auto& p : pending_) ::close(p.fd);
  pending_.clear();
  per_source_.clear();
  counters_.pending = 0;
  {
    MutexLock lock(listeners_mu_);
    for (auto& l : listeners_) {
      if (l.fd >= 0) ::close(l.fd);
      l.fd = -1;
    }
  }
  if (probe_fd_ >= 0) ::close(probe_fd_);
  probe_fd_ = -1;
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  reserve_fd_ = -1;
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

AcceptGateStats AcceptGate::stats() const {
  AcceptGateStats s;
  s.accepted = counters_.accepted;
  s.handed_off = counters_.handed_off;
  s.closed_silent = counters_.closed_silent;
  s.closed_eof = counters_.closed_eof;
  s.evicted = counters_.evicted;
  s.dropped_no_fd = counters_.dropped_no_fd;
  s.self_checks_ok = counters_.self_checks_ok;
  s.self_checks_failed = counters_.self_checks_failed;
  s.listeners_recreated = counters_.listeners_recreated;
  s.pending = counters_.pending;
  return s;
}

std::vector<int> AcceptGate::listenerFdsForTesting() const {
  MutexLock lock(listeners_mu_);
  std::vector<int> out;
  for (const auto& l : listeners_) out.push_back(l.fd);
  return out;
}

void AcceptGate::wake() {
  if (wake_fd_ < 0) return;
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void AcceptGate::loop() {
  std::vector<pollfd> fds;
  std::vector<std::list<Pending>::iterator> its;
  while (!stopping_) {
    Clock::TimePoint now = clock_.now();
    fds.clear();
    its.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const auto& l : listeners_) {
      fds.push_back({l.fd >= 0 && now >= l.paused_until ? l.fd : -1, POLLIN, 0});
    }
    // The self-check's connection, until the kernel has answered it: a refusal shows at once.
    fds.push_back({probe_fd_ >= 0 && !probe_connected_ ? probe_fd_ : -1, POLLOUT, 0});
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      fds.push_back({it->fd, POLLIN | POLLRDHUP, 0});
      its.push_back(it);
    }
    // Armed before the clock is read again: a clock that moved past `due` meanwhile either
    // fires the timer or is seen here (a manual clock fires only timers it already holds).
    const Clock::TimePoint due = nextDue(now);
    arm(due);
    int n = ::poll(fds.data(), fds.size(), due <= clock_.now() ? 0 : -1);
    if (stopping_) break;
    if (n < 0) {
      if (errno != EINTR)
        log("poll", options_.name + " " + where() + ": poll: " + errnoText(errno));
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t v = 0;
      ssize_t r = ::read(wake_fd_, &v, sizeof(v));
      (void)r;
    }
    now = clock_.now();
    const pollfd& probe = fds[1 + listeners_.size()];
    if (probe.fd >= 0 && probe.revents != 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(probe.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (probe.revents & (POLLERR | POLLHUP)) != 0) {
        finishSelfCheck(false, err != 0 ? errnoText(err) : "error or hang-up");
      } else {
        probe_connected_ = true;  // queued in the kernel: the gate must now accept it
      }
    }
    // Pending connections first: those that spoke go on, and make room.
    const size_t first_pending = 2 + listeners_.size();
    for (size_t i = 0; i < its.size(); ++i) {
      if (fds[first_pending + i].revents != 0) settle(its[i]);
    }
    bool harvested = false;
    for (size_t i = 0; i < listeners_.size(); ++i) {
      const pollfd& p = fds[1 + i];
      if (p.fd < 0 || p.revents == 0) continue;
      if ((p.revents & POLLIN) == 0) {
        recreate(listeners_[i], "failed (poll: " +
                                    std::string((p.revents & POLLNVAL) ? "not an open descriptor"
                                                                       : "error or hang-up") +
                                    ")");
        continue;
      }
      acceptFrom(listeners_[i], now, harvested);
    }
    for (auto& l : listeners_) {
      if (l.fd < 0 && now >= l.paused_until) recreate(l, "was lost");
    }
    while (!pending_.empty() && pending_.front().deadline <= now) {
      auto it = pending_.begin();
      if (!settle(it)) close(it, counters_.closed_silent);
    }
    if (options_.self_check_interval.count() > 0) {
      if (probe_fd_ >= 0 && now >= probe_deadline_) finishSelfCheck(false, "");
      if (probe_fd_ < 0 && now >= next_check_) startSelfCheck(now);
    }
  }
}

void AcceptGate::acceptFrom(Listener& l, Clock::TimePoint now, bool& harvested) {
  // A bounded batch, so that pending connections and deadlines are seen between batches.
  for (int i = 0; i < 512 && l.fd >= 0; ++i) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    int fd =
        ::accept4(l.fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      admit(fd, l.fd, peer, now, harvested);
      continue;
    }
    const int err = errno;
    switch (err) {
      case EINTR:
        continue;
      case EAGAIN:
        return;
      // That one connection's own failure (accept(2): treat like EAGAIN, retry).
      case ECONNABORTED:
      case EPROTO:
      case ENETDOWN:
      case ENOPROTOOPT:
      case EHOSTDOWN:
      case ENONET:
      case EHOSTUNREACH:
      case EOPNOTSUPP:
      case ENETUNREACH:
      case EPERM:
        continue;
      case EMFILE:
      case ENFILE:
        if (!outOfDescriptors(l, now, err)) return;
        continue;
      case ENOBUFS:
      case ENOMEM:
        log("nomem", options_.name + " " + describe(l.addr) + ": accept4: " + errnoText(err) +
                         "; accepting again in 100 ms");
        l.paused_until = now + std::chrono::milliseconds(100);
        return;
      default:
        recreate(l, "failed (accept4: " + errnoText(err) + ")");
        return;
    }
  }
}

bool AcceptGate::outOfDescriptors(Listener& l, Clock::TimePoint now, int accept_errno) {
  // accept4 wants a free descriptor before it looks at the queue: EMFILE does not say that a
  // connection is waiting. Only one that is gets room made for it.
  pollfd waiting{l.fd, POLLIN, 0};
  if (::poll(&waiting, 1, 0) <= 0 || (waiting.revents & POLLIN) == 0) return false;
  const std::string head = options_.name + " " + describe(l.addr) +
                           ": out of file descriptors (accept4: " + errnoText(accept_errno) +
                           ", open-file limit " + std::to_string(softOpenFileLimit()) + "): ";
  if (!pending_.empty()) {
    log("fd-evict", head + "closed the oldest connection that had sent nothing yet");
    close(pending_.begin(), counters_.evicted);
    return true;
  }
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  reserve_fd_ = -1;
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  int fd = ::accept4(l.fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    if (probe_fd_ >= 0 && sameEndpoint(peer, probe_local_)) {
      finishSelfCheck(true, "");
    } else {
      ++counters_.dropped_no_fd;
    }
  }
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    log("fd-drop", head +
                       "closed a new connection unaccepted (the server's own connections "
                       "hold the descriptors; raise LimitNOFILE)");
    return true;
  }
  if (err == EAGAIN) return false;
  // Not even the reserve helped (another thread took the descriptor): wait a little.
  log("fd-stuck", head + "cannot accept at all; trying again in 100 ms");
  l.paused_until = now + std::chrono::milliseconds(100);
  return false;
}

void AcceptGate::admit(int fd, int listener_fd, const sockaddr_storage& peer, Clock::TimePoint now,
                       bool& harvested) {
  if (probe_fd_ >= 0 && sameEndpoint(peer, probe_local_)) {
    ::close(fd);
    finishSelfCheck(true, "");
    return;
  }
  ++counters_.accepted;
  pending_.push_back({fd, listener_fd, ipOf(peer), now + options_.first_bytes_deadline});
  auto it = std::prev(pending_.end());
  ++per_source_[it->source];
  counters_.pending = pending_.size();
  if (settle(it)) return;  // it spoke already (or is gone)
  const std::string source = it->source;
  auto from_source = [&] {
    auto s = per_source_.find(source);
    return s == per_source_.end() ? size_t{0} : s->second;
  };
  auto over = [&] { return from_source() > max_per_source_ || pending_.size() > max_pending_; };
  if (over() && !harvested) {
    harvested = true;
    harvest();
  }
  if (from_source() > max_per_source_) {
    log("evict-source", options_.name + " " + where() + ": more than " +
                            std::to_string(max_per_source_) + " connections from " + source +
                            " have sent nothing yet; closed the oldest");
    evictOldest(&source);
  }
  if (pending_.size() > max_pending_) {
    log("evict-total", options_.name + " " + where() + ": more than " +
                           std::to_string(max_pending_) +
                           " connections have sent nothing yet; closed the oldest");
    evictOldest(nullptr);
  }
}

void AcceptGate::harvest() {
  std::vector<pollfd> fds;
  std::vector<std::list<Pending>::iterator> its;
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    fds.push_back({it->fd, POLLIN | POLLRDHUP, 0});
    its.push_back(it);
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
  for (size_t i = 0; i < its.size(); ++i) {
    if (fds[i].revents != 0) settle(its[i]);
  }
}

bool AcceptGate::settle(std::list<Pending>::iterator it) {
  char b = 0;
  ssize_t r = ::recv(it->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r > 0) {
    const int fd = it->fd;
    const int listener_fd = it->listener_fd;
    auto s = per_source_.find(it->source);
    if (s != per_source_.end() && --s->second == 0) per_source_.erase(s);
    pending_.erase(it);
    counters_.pending = pending_.size();
    ++counters_.handed_off;
    handoff_(listener_fd, fd);
    return true;
  }
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  close(it, counters_.closed_eof);  // closed by the peer (or reset) before a byte
  return true;
}

void AcceptGate::close(std::list<Pending>::iterator it, std::atomic<uint64_t>& counter) {
  ::close(it->fd);
  auto s = per_source_.find(it->source);
  if (s != per_source_.end() && --s->second == 0) per_source_.erase(s);
  pending_.erase(it);
  counters_.pending = pending_.size();
  ++counter;
}

void AcceptGate::evictOldest(const std::string* source) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (source == nullptr || it->source == *source) {
      close(it, counters_.evicted);
      return;
    }
  }
}

void AcceptGate::startSelfCheck(Clock::TimePoint now) {
  next_check_ = now + options_.self_check_interval;
  probe_listener_ = (probe_listener_ + 1) % listeners_.size();
  Listener& l = listeners_[probe_listener_];
  if (l.fd < 0) return;  // being recreated
  sockaddr_storage target = l.addr;
  if (isWildcard(target)) {
    if (target.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in&>(target).sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
      reinterpret_cast<sockaddr_in6&>(target).sin6_addr = in6addr_loopback;
    }
  }
  int fd = ::socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    log("check-socket", options_.name + " " + describe(l.addr) +
                            ": cannot self-check now (socket: " + errnoText(errno) + ")");
    return;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), lengthOf(target)) != 0 &&
      errno != EINPROGRESS) {
    const int err = errno;
    ::close(fd);
    if (err == ECONNREFUSED) {
      ++counters_.self_checks_failed;
      recreate(l, "refused its self-check connection");
    } else {
      log("check-connect", options_.name + " " + describe(l.addr) +
                               ": cannot self-check now (connect: " + errnoText(err) + ")");
    }
    return;
  }
  socklen_t len = sizeof(probe_local_);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&probe_local_), &len);
  probe_fd_ = fd;
  probe_connected_ = false;
  probe_deadline_ = now + options_.self_check_timeout;
}

void AcceptGate::finishSelfCheck(bool accepted, const std::string& connect_error) {
  if (probe_fd_ >= 0) ::close(probe_fd_);
  probe_fd_ = -1;
  probe_connected_ = false;
  if (accepted) {
    ++counters_.self_checks_ok;
    return;
  }
  ++counters_.self_checks_failed;
  recreate(listeners_[probe_listener_],
           connect_error.empty() ? "did not accept its self-check connection within " +
                                       seconds(options_.self_check_timeout)
                                 : "refused its self-check connection (" + connect_error + ")");
}

void AcceptGate::recreate(Listener& l, const std::string& why) {
  {
    MutexLock lock(listeners_mu_);
    if (l.fd >= 0) ::close(l.fd);
    l.fd = -1;
  }
  auto fd = bindListener(l.addr, options_.backlog);
  if (!fd.ok()) {
    l.paused_until = clock_.now() + std::chrono::seconds(1);
    log("recreate-failed", options_.name + " " + describe(l.addr) + ": listener " + why +
                               "; recreating it failed (" + fd.status().message() +
                               "); trying again in 1 s");
    return;
  }
  {
    MutexLock lock(listeners_mu_);
    l.fd = *fd;
  }
  l.paused_until = {};
  ++counters_.listeners_recreated;
  log("recreate", options_.name + " " + describe(l.addr) + ": listener " + why + "; recreated it");
}

Clock::TimePoint AcceptGate::nextDue(Clock::TimePoint now) const {
  Clock::TimePoint due = Clock::TimePoint::max();
  if (!pending_.empty()) due = std::min(due, pending_.front().deadline);
  if (options_.self_check_interval.count() > 0) {
    due = std::min(due, probe_fd_ >= 0 ? probe_deadline_ : next_check_);
  }
  for (const auto& l : listeners_) {
    if (l.paused_until > now) due = std::min(due, l.paused_until);
  }
  return due;
}

void AcceptGate::arm(Clock::TimePoint when) {
  if (when == Clock::TimePoint::max()) return;
  if (armed_ && armed_for_ == when) return;
  if (armed_) clock_.cancel(timer_);
  timer_ = clock_.schedule(when, [ref = lifeline_.ref(), this] { ref.run([this] { wake(); }); });
  armed_for_ = when;
  armed_ = true;
}

std::string AcceptGate::where() const {
  return listeners_.empty() ? options_.listen : describe(listeners_[0].addr);
}

void AcceptGate::log(const std::string& kind, const std::string& line) {
  const Clock::TimePoint now = clock_.now();
  LogState& s = log_state_[kind];
  if (s.ever && now - s.last < options_.log_interval) {
    ++s.suppressed;
    return;
  }
  std::string out = line;
  if (s.suppressed > 0) {
    out += " (" + std::to_string(s.suppressed) + " more like it since the last such line)";
  }
  s.ever = true;
  s.last = now;
  s.suppressed = 0;
  logger_(out);
}

}  // namespace gdrmesh
