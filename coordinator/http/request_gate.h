// The front gate of the status page (issue #23, item 4): it owns the listening socket and reads
// each request's head and body itself, in one thread, under a total deadline, before any
// worker thread sees the connection. A client that sends its head a byte at a time (a
// slow-loris) holds a file descriptor until its deadline, never a worker: the workers only
// ever serve complete requests, so the page answers while any number of slow clients wait.
//
// What the gate answers itself (and then closes the connection):
//   408  the head did not arrive within `header_timeout` of the accept, or the body within
//        `body_timeout` of the head;
//   431  the head is larger than `max_header_bytes`;
//   413  Content-Length is larger than `max_body_bytes`;  411  a chunked request body;
//   429  the source address already has `max_per_source` connections open (in any phase);
//   503  the gate holds `max_connections` connections (in any phase).
// One request per connection: `serve` answers with "Connection: close".
// The deadlines are on an injected gdrmesh::Clock: a timer at the earliest one wakes the gate's
// poll(2), so a ManualClock moves them in tests and no real time is needed.
//
// Thread contract: start() and stop() from one owner thread. `serve` runs on one of
// `workers` threads, concurrently; it must not close the descriptor (the gate does).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/clock_alarm.h"
#include "common/status.h"

namespace gdrmesh {

struct RequestGateLimits {
  std::chrono::milliseconds header_timeout{5000};
  std::chrono::milliseconds body_timeout{10000};
  size_t max_header_bytes = size_t{16} * 1024;
  size_t max_body_bytes = size_t{64} * 1024;
  // Per address: a dashboard host, a proxy or a script legitimately opens dozens at once
  // (tests/fault/load has 40 readers on one address); a slow client costs the gate one
  // descriptor and at most one head's buffer, never a worker.
  size_t max_per_source = 64;
  size_t max_connections = 512;
  size_t workers = 8;
  // Writing the answer (the server's side, status_http_server.cc): one write may wait this
  // long for the client to read; the whole answer gets `response_timeout`.
  std::chrono::milliseconds write_timeout{5000};
  std::chrono::milliseconds response_timeout{60000};
};

// One complete request as the gate read it.
struct GatedRequest {
  int fd = -1;        // the client's socket (non-blocking); the gate closes it after serve
  std::string bytes;  // the head and exactly Content-Length bytes of body
  std::string peer;   // the source address ("127.0.0.1", "::1")
};

// Writes an answer to a client's non-blocking socket (the server's side of `write_timeout` and
// `response_timeout`): a write waits for room at most `write_timeout`, and no write is started
// past `response_timeout` from the writer's construction. Both deadlines are on `clock`; a
// wait for room is a poll(2) on the socket and a ClockAlarm (common/clock_alarm.h), so a
// ManualClock's advance() ends it.
//
// Thread contract: one thread at a time (the worker serving the request).
class ResponseWriter {
 public:
  ResponseWriter(int fd, Clock& clock, std::chrono::milliseconds write_timeout,
                 std::chrono::milliseconds response_timeout);
  ~ResponseWriter();
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  // True when the socket takes bytes now or before the deadlines; false once a deadline has
  // passed or the socket is closed or failed.
  bool writable();
  // send(2) of up to `size` bytes once writable(); -1 when it is not (or send failed).
  ssize_t write(const char* data, size_t size);

 private:
  const int fd_;
  Clock& clock_;
  const std::chrono::milliseconds write_timeout_;
  const Clock::TimePoint deadline_;
  std::unique_ptr<ClockAlarm> alarm_;  // made at the first wait
};

class RequestGate {
 public:
  using Serve = std::function<void(const GatedRequest&)>;
  // The deadlines run on `clock` (the coordinator's; a ManualClock in tests), which must
  // outlive the gate.
  RequestGate(RequestGateLimits limits, Clock& clock, Serve serve);
  ~RequestGate();
  RequestGate(const RequestGate&) = delete;
  RequestGate& operator=(const RequestGate&) = delete;

  // Binds `host` (a numeric IPv4 or IPv6 address, or a name that resolves to a local one)
  // port `port` (0: any free port) and starts the gate's thread and its workers. Returns the
  // bound port. `what` names the flag in errors ("--http 127.0.0.1:8080").
  Result<int> start(const std::string& host, int port, const std::string& what);
  // Closes the listening socket and every connection not yet served, lets the requests being
  // served finish, and joins the threads. Idempotent.
  void stop();

  // For tests: connections the gate holds now (reading, queued or being served).
  size_t connections() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gdrmesh
