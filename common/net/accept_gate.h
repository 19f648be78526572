// The front door of a TCP server that must keep accepting whatever its peers do (issue #23):
// the gate owns the listening sockets, accepts every connection itself and hands a connection
// on (to gRPC, through its external-connection acceptor) only once the peer has sent its first
// bytes (a TLS ClientHello or an HTTP/2 preface: the client always speaks first).
//
// - Out of file descriptors (EMFILE/ENFILE), it never gives up: it closes its oldest pending
//   connection, or (none pending) closes a reserve descriptor, accepts and closes the waiting
//   connection, and reopens the reserve; a rate-limited log line says so. gRPC 1.51's own
//   accept loop stops for good on EMFILE (`Failed accept4: Too many open files`).
// - A connection that sends nothing within `first_bytes_deadline` is closed. Pending
//   connections are bounded in total and per source address (its IP); over a bound, the oldest
//   pending one (of that source) is closed first, after the ones that have spoken are handed on.
// - A self-check every `self_check_interval` connects to the listening address and expects the
//   gate to accept that connection within `self_check_timeout`; if it does not, the listener
//   is recreated on the same address and port, and logged.
//
// Time is injected (Clock): deadlines and self-checks run on the clock's timers, which only
// wake the gate's thread. Thread contract: open(), start(), stop() and stats() from any one
// owner thread; the handoff and the logger run on the gate's own thread and must not block
// long. The handoff owns the descriptor it is given.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/lifeline.h"
#include "common/status.h"
#include "common/sync/mutex.h"

namespace gdrmesh {

struct AcceptGateOptions {
  // HOST:PORT, [IPV6]:PORT, or a name (localhost: every address it has); port 0: any free port
  // (the same one on every address). 0.0.0.0 and [::] serve every interface ([::] also IPv4).
  std::string listen;
  // How the log lines begin ("gdrmesh coordinator: gRPC port"); the address follows.
  std::string name = "gdrmesh: port";
  std::chrono::milliseconds first_bytes_deadline{5000};
  // 0: derived from the open-file limit (pendingBoundFor()).
  size_t max_pending = 0;
  size_t max_pending_per_source = 0;
  // 0: no self-check.
  std::chrono::milliseconds self_check_interval{10000};
  std::chrono::milliseconds self_check_timeout{5000};
  // Log lines of one kind at most once per this interval (the rest are counted in the next).
  std::chrono::milliseconds log_interval{10000};
  int backlog = 1024;
};

struct AcceptGateStats {
  uint64_t accepted = 0;       // connections accepted (the self-check's not counted)
  uint64_t handed_off = 0;     // passed on after their first bytes
  uint64_t closed_silent = 0;  // sent nothing before the deadline
  uint64_t closed_eof = 0;     // the peer closed before sending anything
  uint64_t evicted = 0;        // closed to stay within a bound (total, per source, or fds)
  uint64_t dropped_no_fd = 0;  // accepted and closed at once: no descriptor left
  uint64_t self_checks_ok = 0;
  uint64_t self_checks_failed = 0;
  uint64_t listeners_recreated = 0;
  size_t pending = 0;
};

// The pending bounds for an open-file limit: total a quarter of it (16 to 4096), per source a
// quarter of the total (at least 4). The rest of the descriptors stay for the server itself.
struct PendingBounds {
  size_t total;
  size_t per_source;
};
PendingBounds pendingBoundsFor(uint64_t open_file_limit);

class AcceptGate {
 public:
  // Takes ownership of `fd` (non-blocking, close-on-exec, its first bytes still unread).
  using Handoff = std::function<void(int listener_fd, int fd)>;
  using Logger = std::function<void(const std::string& line)>;

  AcceptGate(AcceptGateOptions options, Clock& clock, Handoff handoff, Logger log = {});
  ~AcceptGate();
  AcceptGate(const AcceptGate&) = delete;
  AcceptGate& operator=(const AcceptGate&) = delete;

  // Binds and listens on every address of options.listen (connections queue in the kernel
  // from here on); returns the port. The address in use is kUnavailable naming it.
  Result<int> open();
  // Starts accepting (after open(), once whatever the handoff feeds is ready).
  void start();
  // Stops accepting and closes every pending connection and the listeners. Idempotent.
  void stop();

  AcceptGateStats stats() const;
  // For tests: the listening descriptors (to break one behind the gate's back).
  std::vector<int> listenerFdsForTesting() const;

 private:
  struct Listener {
    sockaddr_storage addr{};  // as bound (the port filled in)
    socklen_t len = 0;
    int fd = -1;
    Clock::TimePoint paused_until{};  // backing off after ENOBUFS/ENOMEM or no descriptor
  };
  struct Pending {
    int fd;
    int listener_fd;
    std::string source;
    Clock::TimePoint deadline;
  };

  // Binds every address on one port (the first one's, or the one the first got for port 0):
  // true with listeners_ and port_ set; false with every descriptor closed and *why the error.
  bool bindAllOnce(const std::vector<sockaddr_storage>& addrs, Status* why);
  void loop();
  void acceptFrom(Listener& l, Clock::TimePoint now, bool& harvested);
  bool outOfDescriptors(Listener& l, Clock::TimePoint now, int accept_errno);
  void admit(int fd, int listener_fd, const sockaddr_storage& peer, Clock::TimePoint now,
             bool& harvested);
  // Hands on every pending connection that has spoken, closes those the peer closed.
  void harvest();
  // Reads a pending connection's state: true when it is gone from the pending list.
  bool settle(std::list<Pending>::iterator it);
  void close(std::list<Pending>::iterator it, std::atomic<uint64_t>& counter);
  void evictOldest(const std::string* source);
  void startSelfCheck(Clock::TimePoint now);
  void finishSelfCheck(bool accepted, const std::string& connect_error);
  void recreate(Listener& l, const std::string& why);
  Clock::TimePoint nextDue(Clock::TimePoint now) const;
  void arm(Clock::TimePoint when);
  void wake();
  void log(const std::string& kind, const std::string& line);
  std::string where() const;  // the bound address, for log lines

  const AcceptGateOptions options_;
  Clock& clock_;
  const Handoff handoff_;
  const Logger logger_;
  size_t max_pending_ = 0;
  size_t max_per_source_ = 0;
  int port_ = 0;
  mutable Mutex listeners_mu_;  // guards Listener::fd written by the gate's thread
  std::vector<Listener> listeners_;
  int wake_fd_ = -1;
  int reserve_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;

  // The gate's thread only:
  std::list<Pending> pending_;  // oldest first (all share one deadline length)
  std::map<std::string, size_t> per_source_;
  Clock::TimerId timer_ = 0;
  Clock::TimePoint armed_for_{};
  bool armed_ = false;
  Clock::TimePoint next_check_{};
  int probe_fd_ = -1;
  size_t probe_listener_ = 0;
  bool probe_connected_ = false;
  sockaddr_storage probe_local_{};
  Clock::TimePoint probe_deadline_{};
  struct LogState {
    Clock::TimePoint last{};
    uint64_t suppressed = 0;
    bool ever = false;
  };
  std::map<std::string, LogState> log_state_;

  struct Counters {
    std::atomic<uint64_t> accepted{0}, handed_off{0}, closed_silent{0}, closed_eof{0}, evicted{0},
        dropped_no_fd{0}, self_checks_ok{0}, self_checks_failed{0}, listeners_recreated{0};
    std::atomic<size_t> pending{0};
  } counters_;
  Lifeline lifeline_;  // last: timers reach the gate only while it lives
};

// Raises this process's soft RLIMIT_NOFILE to its hard limit. Returns {soft before, hard}.
struct FileLimit {
  uint64_t soft_before = 0;
  uint64_t soft = 0;
  uint64_t hard = 0;
};
Result<FileLimit> raiseOpenFileLimit();

}  // namespace gdrmesh
