#include "worker/transport/emulated/emulated_transport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/sync/mutex.h"
#include "worker/transport/emulated/frame.h"
#include "worker/transport/fault_injection.h"

namespace gdrmesh {
namespace {

using emulated::Clock;
using emulated::Fd;
using emulated::FrameHeader;
using emulated::FrameType;
using emulated::RemoteError;

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

Clock::time_point deadlineAfter(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

void setNoDelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int buf = 4 << 20;
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

Result<Fd> listenOn(const std::string& host, uint16_t* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &res);
  if (rc != 0) {
    return invalidArgument("data address '" + host + "': " + ::gai_strerror(rc),
                           "pass --data-host with an address of this host");
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
  Fd fd(::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol));
  if (!fd.valid()) return unavailable(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0) {
    return unavailable("bind " + host + ": " + std::strerror(errno),
                       "pass --data-host with an address of this host");
  }
  if (::listen(fd.get(), 4) != 0)
    return unavailable(std::string("listen: ") + std::strerror(errno));
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  *port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

Result<Fd> connectTo(const std::string& host, uint32_t port, Clock::time_point deadline,
                     const std::atomic<bool>& aborted) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0) return unavailable("peer data address '" + host + "': " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
  Fd fd(
      ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, res->ai_protocol));
  if (!fd.valid()) return unavailable(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) != 0 && errno != EINPROGRESS) {
    return unavailable("connect to " + host + ":" + port_s + ": " + std::strerror(errno),
                       "check that the peer worker's --data-host is reachable from here");
  }
  for (;;) {
    if (aborted.load()) return Status(Code::kAborted, "connect: aborted");
    if (Clock::now() >= deadline) {
      return Status(Code::kDeadlineExceeded, "connect to " + host + ":" + port_s + ": timed out");
    }
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, 50) > 0) break;
  }
  int err = 0;
  socklen_t elen = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) {
    return unavailable("connect to " + host + ":" + port_s + ": " + std::strerror(err),
                       "check that the peer worker's --data-host is reachable from here");
  }
  setNoDelay(fd.get());
  return fd;
}

class EmulatedEndpoint final : public Endpoint, public FaultInjectable {
 public:
  EmulatedEndpoint(EndpointSpec spec, Buffer& buffer) : spec_(std::move(spec)), buffer_(buffer) {}

  ~EmulatedEndpoint() override {
    abort();
    if (server_.joinable()) server_.join();
  }

  Status init() {
    desc_.addr = 0;
    desc_.length = buffer_.size();
    desc_.memory = MemoryKind::kHost;
    desc_.reg_path = RegPath::kHost;
    std::random_device rd;
    desc_.rkey = static_cast<uint32_t>(rd()) | 1u;  // never 0
    key_.store(desc_.rkey);
    if (spec_.role == Role::kTarget) {
      uint16_t port = 0;
      GDR_ASSIGN_OR_RETURN(listener_, listenOn(spec_.listen_host, &port));
      desc_.fields = EmulatedDesc{spec_.listen_host, port};
      server_ = std::thread([this] { serve(); });
    }
    return {};
  }

  const EndpointDesc& local() const override { return desc_; }

  Status connect(const EndpointDesc& peer) override {
    const auto* where = peer.as<EmulatedDesc>();
    if (where == nullptr) {
      return invalidArgument(std::string("peer endpoint is not an emulated endpoint (it is ") +
                             toString(peer.transport()) + ")");
    }
    peer_ = peer;
    if (spec_.role == Role::kTarget) return {};
    GDR_ASSIGN_OR_RETURN(Fd conn,
                         connectTo(where->tcp_host, where->tcp_port, deadlineAfter(30), aborted_));
    {
      // abort() on another thread shuts the connection down: it must see all of it or none.
      MutexLock lock(mu_);
      conn_ = std::move(conn);
    }
    // HELLO carries the key; the target answers ACK or ERROR.
    FrameHeader h;
    h.type = FrameType::kHello;
    h.key = peer.rkey;
    auto deadline = deadlineAfter(30);
    GDR_RETURN_IF_ERROR(emulated::writeFrame(conn_.get(), h, nullptr, 0, deadline, aborted_));
    FrameHeader r;
    GDR_RETURN_IF_ERROR(emulated::readHeader(conn_.get(), &r, deadline, aborted_));
    if (r.type == FrameType::kError) {
      return Status(Code::kFailedPrecondition,
                    emulated::remoteErrorText(static_cast<RemoteError>(r.error)));
    }
    return {};
  }

  Result<Measurement> run(const RunSpec& spec) override {
    if (spec.message_size == 0 || spec.message_size > buffer_.size()) {
      return invalidArgument("message size " + std::to_string(spec.message_size) +
                             " B: must be in 1.." + std::to_string(buffer_.size()));
    }
    if (spec.bidirectional) {
      return unimplemented("bidirectional tests are not supported by the emulated transport",
                           "use the verbs transport");
    }
    Measurement m;
    m.message_size = spec.message_size;
    m.iterations = spec.iterations;
    m.warmup_iterations = spec.warmup_iterations;
    auto deadline = deadlineAfter(spec.timeout_seconds);
    if (spec_.role == Role::kTarget) return runTarget(spec, deadline, m);
    auto r = spec_.mode == Mode::kLatency ? runLatency(spec, deadline, m)
                                          : runBandwidth(spec, deadline, m);
    if (r.ok() && spec.end_signal) GDR_RETURN_IF_ERROR(signalEnd(deadline));
    return r;
  }

  Status invalidateRemoteAccess() override {
    key_.store(key_.load() ^ 0x5A5A5A5Au);  // the key the peer holds no longer opens the region
    return {};
  }

  void abort() override {
    aborted_.store(true);
    MutexLock lock(mu_);
    if (conn_.valid()) ::shutdown(conn_.get(), SHUT_RDWR);
    if (server_conn_ >= 0) ::shutdown(server_conn_, SHUT_RDWR);
    cv_.notify_all();
  }

 private:
  FrameType requestType() const {
    switch (spec_.op) {
      case Op::kRead:
        return FrameType::kReadReq;
      case Op::kSend:
        return FrameType::kSend;
      case Op::kWrite:
      case Op::kWriteImm:
        return FrameType::kWrite;
    }
    return FrameType::kWrite;
  }

  // Sends request `seq`; the payload for writes/sends is [0, size) of the local buffer.
  Status post(uint64_t seq, uint64_t size, Clock::time_point deadline) {
    FrameHeader h;
    h.type = requestType();
    h.key = peer_.rkey;
    h.offset = 0;
    h.length = size;
    h.seq = seq;
    const void* payload = h.type == FrameType::kReadReq ? nullptr : buffer_.data();
    size_t len = h.type == FrameType::kReadReq ? 0 : size;
    return emulated::writeFrame(conn_.get(), h, payload, len, deadline, aborted_);
  }

  // Waits for the completion of one request.
  Status complete(Clock::time_point deadline) {
    FrameHeader r;
    GDR_RETURN_IF_ERROR(emulated::readHeader(conn_.get(), &r, deadline, aborted_));
    if (r.type == FrameType::kError) {
      return Status(Code::kFailedPrecondition,
                    emulated::remoteErrorText(static_cast<RemoteError>(r.error)),
                    "check the key and range handed over by the coordinator");
    }
    if (r.type == FrameType::kReadResp) {
      if (r.length > buffer_.size()) return Status(Code::kDataLoss, "read response too long");
      return emulated::readIntoRegion(conn_.get(), static_cast<uint8_t*>(buffer_.data()), r.length,
                                      deadline, aborted_, "read response payload");
    }
    if (r.type != FrameType::kAck) return Status(Code::kDataLoss, "unexpected frame type");
    return {};
  }

  // Initiator, after its last completion: END on the data connection, acknowledged by the
  // target's server thread before the target's run returns.
  Status signalEnd(Clock::time_point deadline) {
    FrameHeader h;
    h.type = FrameType::kEnd;
    h.key = peer_.rkey;
    GDR_RETURN_IF_ERROR(emulated::writeFrame(conn_.get(), h, nullptr, 0, deadline, aborted_));
    return complete(deadline);
  }

  Result<Measurement> runBandwidth(const RunSpec& spec, Clock::time_point deadline,
                                   Measurement& m) {
    const uint64_t depth = std::max<uint32_t>(1, spec_.tx_depth);
    // Warm-up: not measured.
    for (uint64_t i = 0; i < spec.warmup_iterations; ++i) {
      GDR_RETURN_IF_ERROR(post(i, spec.message_size, deadline));
      GDR_RETURN_IF_ERROR(complete(deadline));
    }
    const bool timed = spec.duration_seconds > 0;
    const auto stop_at = deadlineAfter(spec.duration_seconds);
    uint64_t n = timed ? UINT64_MAX : spec.iterations;
    // Per-message timestamps for the peak figure, for the first kMaxSamples messages only, so
    // that very long runs cost bounded memory; the average always covers every message.
    constexpr uint64_t kMaxSamples = 1 << 22;
    std::vector<uint64_t> posted, completed;
    posted.reserve(std::min(n, kMaxSamples));
    completed.reserve(std::min(n, kMaxSamples));
    const uint64_t first_post = nowNs();
    uint64_t last_completion = first_post;
    uint64_t issued = 0, done = 0;
    while (done < n) {
      while (issued < n && issued - done < depth) {
        if (timed && Clock::now() >= stop_at) {
          n = issued;
          break;
        }
        if (issued < kMaxSamples) posted.push_back(nowNs());
        GDR_RETURN_IF_ERROR(post(issued, spec.message_size, deadline));
        ++issued;
      }
      if (done < issued) {
        GDR_RETURN_IF_ERROR(complete(deadline));
        last_completion = nowNs();
        if (done < kMaxSamples) completed.push_back(last_completion);
        ++done;
      }
    }
    m.iterations = done;
    m.has_bandwidth = true;
    if (done <= kMaxSamples) {
      m.bw = computeBandwidth(spec.message_size, posted, completed, depth);
    } else {
      const double peak = computeBandwidth(spec.message_size, posted, completed, depth).peak_gbps;
      m.bw = bandwidthFromTotals(spec.message_size * done, done,
                                 static_cast<double>(last_completion - first_post) / 1e9);
      m.bw.peak_gbps = std::max(peak, m.bw.avg_gbps);
    }
    return m;
  }

  Result<Measurement> runLatency(const RunSpec& spec, Clock::time_point deadline, Measurement& m) {
    for (uint64_t i = 0; i < spec.warmup_iterations; ++i) {
      GDR_RETURN_IF_ERROR(post(i, spec.message_size, deadline));
      GDR_RETURN_IF_ERROR(complete(deadline));
    }
    // Write and send report RTT/2; read reports the full round trip (as perftest).
    const double div = spec_.op == Op::kRead ? 1.0 : 2.0;
    std::vector<double> samples;
    samples.reserve(spec.iterations);
    for (uint64_t i = 0; i < spec.iterations; ++i) {
      uint64_t t0 = nowNs();
      GDR_RETURN_IF_ERROR(post(i, spec.message_size, deadline));
      GDR_RETURN_IF_ERROR(complete(deadline));
      samples.push_back(static_cast<double>(nowNs() - t0) / 1e3 / div);
    }
    m.has_latency = true;
    m.lat = computeLatency(std::move(samples));
    return m;
  }

  // Target's share: SEND needs its receives counted; everything else is served by the server
  // thread without the target's involvement, as one-sided RDMA is. With end_signal, the run
  // then lasts until the initiator's END.
  Result<Measurement> runTarget(const RunSpec& spec, Clock::time_point deadline, Measurement& m) {
    if (spec_.op == Op::kSend && spec.duration_seconds <= 0) {
      GDR_RETURN_IF_ERROR(awaitReceives(spec, deadline));
    }
    if (spec.end_signal) GDR_RETURN_IF_ERROR(awaitEnd(deadline));
    return m;
  }

  Status awaitEnd(Clock::time_point deadline) {
    UniqueLock lock(mu_);
    while (ends_ == ends_base_) {
      if (aborted_.load()) return Status(Code::kAborted, "waiting for the end of the run: aborted");
      if (!server_error_.ok()) return server_error_;
      if (peer_gone_) {
        return unavailable("the initiator disconnected before it signalled the end of its run",
                           "see the initiator's error for this test");
      }
      if (cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout &&
          ends_ == ends_base_) {
        return Status(Code::kDeadlineExceeded,
                      "the initiator did not signal the end of its run before the timeout");
      }
    }
    ++ends_base_;
    return {};
  }

  Status awaitReceives(const RunSpec& spec, Clock::time_point deadline) {
    const uint64_t want = spec.warmup_iterations + spec.iterations;
    UniqueLock lock(mu_);
    while (received_ - received_base_ < want) {
      if (aborted_.load()) return Status(Code::kAborted, "receive: aborted");
      if (!server_error_.ok()) return server_error_;
      if (peer_gone_) {
        return unavailable("receive: the initiator disconnected after " +
                           std::to_string(received_ - received_base_) + " of " +
                           std::to_string(want) + " messages");
      }
      if (cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout &&
          received_ - received_base_ < want) {
        return Status(Code::kDeadlineExceeded,
                      "receive: " + std::to_string(received_ - received_base_) + " of " +
                          std::to_string(want) + " messages arrived before the timeout");
      }
    }
    received_base_ += want;
    return {};
  }

  void serve() {
    const auto forever = Clock::now() + std::chrono::hours(24 * 365);
    // Accept one connection.
    for (;;) {
      if (aborted_.load()) return;
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) break;
    }
    int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    setNoDelay(c);
    {
      MutexLock lock(mu_);
      server_conn_ = c;
      if (aborted_.load()) ::shutdown(c, SHUT_RDWR);
    }
    Status st = serveConnection(c, forever);
    MutexLock lock(mu_);
    if (!st.ok() && st.code() != Code::kUnavailable && st.code() != Code::kAborted) {
      server_error_ = st;
    }
    peer_gone_ = true;
    ::close(c);
    server_conn_ = -1;
    cv_.notify_all();
  }

  Status reject(int c, RemoteError e, uint64_t seq, Clock::time_point deadline) {
    FrameHeader r;
    r.type = FrameType::kError;
    r.error = static_cast<uint32_t>(e);
    r.seq = seq;
    (void)emulated::writeFrame(c, r, nullptr, 0, deadline, aborted_);
    // Like a QP in the error state: no more completions. Close our side gracefully and drain
    // what the initiator already pipelined, so that it reads the error frame instead of a
    // connection reset.
    ::shutdown(c, SHUT_WR);
    std::vector<uint8_t> sink(64 << 10);
    const auto drain_until = Clock::now() + std::chrono::seconds(2);
    while (!aborted_.load() && Clock::now() < drain_until) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      if (::recv(c, sink.data(), sink.size(), MSG_DONTWAIT) <= 0) break;
    }
    return Status(Code::kFailedPrecondition, emulated::remoteErrorText(e));
  }

  Status serveConnection(int c, Clock::time_point deadline) {
    auto* base = static_cast<uint8_t*>(buffer_.data());
    const uint64_t size = buffer_.size();
    for (;;) {
      FrameHeader h;
      GDR_RETURN_IF_ERROR(emulated::readHeader(c, &h, deadline, aborted_));
      if (h.key != key_.load()) return reject(c, RemoteError::kBadKey, h.seq, deadline);
      FrameHeader ack;
      ack.type = FrameType::kAck;
      ack.seq = h.seq;
      switch (h.type) {
        case FrameType::kHello:
          break;
        case FrameType::kWrite:
        case FrameType::kSend: {
          uint64_t off = h.type == FrameType::kSend ? 0 : h.offset;
          if (off > size || h.length > size - off) {
            return reject(c, RemoteError::kOutOfRange, h.seq, deadline);
          }
          GDR_RETURN_IF_ERROR(
              emulated::readIntoRegion(c, base + off, h.length, deadline, aborted_, "payload"));
          if (h.type == FrameType::kSend) {
            MutexLock lock(mu_);
            ++received_;
            cv_.notify_all();
          }
          break;
        }
        case FrameType::kEnd: {
          // Acknowledged first: once the target's run returns, its session may close this
          // connection, and the initiator must have its ACK by then.
          GDR_RETURN_IF_ERROR(emulated::writeFrame(c, ack, nullptr, 0, deadline, aborted_));
          MutexLock lock(mu_);
          ++ends_;
          cv_.notify_all();
          continue;
        }
        case FrameType::kReadReq: {
          if (h.offset > size || h.length > size - h.offset) {
            return reject(c, RemoteError::kOutOfRange, h.seq, deadline);
          }
          ack.type = FrameType::kReadResp;
          ack.length = h.length;
          GDR_RETURN_IF_ERROR(
              emulated::writeFrame(c, ack, base + h.offset, h.length, deadline, aborted_));
          continue;
        }
        default:
          return reject(c, RemoteError::kBadFrame, h.seq, deadline);
      }
      GDR_RETURN_IF_ERROR(emulated::writeFrame(c, ack, nullptr, 0, deadline, aborted_));
    }
  }

  const EndpointSpec spec_;
  Buffer& buffer_;
  EndpointDesc desc_;
  EndpointDesc peer_;
  std::atomic<bool> aborted_{false};
  std::atomic<uint32_t> key_{0};  // the key that opens the region (the server thread reads it)
  Fd listener_;
  // Initiator: connection to the target. Set under mu_ (abort() reads it from other threads);
  // read without it on the thread that connects and runs.
  Fd conn_;
  std::thread server_;

  Mutex mu_;  // and conn_'s writes
  std::condition_variable cv_;
  int server_conn_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t received_base_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ends_ ABSL_GUARDED_BY(mu_) = 0;  // END frames received, and those a run has consumed
  uint64_t ends_base_ ABSL_GUARDED_BY(mu_) = 0;
  Status server_error_ ABSL_GUARDED_BY(mu_);
  bool peer_gone_ ABSL_GUARDED_BY(mu_) = false;  // the initiator's connection ended
};

}  // namespace

Result<std::unique_ptr<Endpoint>> EmulatedTransport::createEndpoint(const EndpointSpec& spec,
                                                                    Buffer& buffer, RegPath reg) {
  if (buffer.kind() != MemoryKind::kHost) {
    return unimplemented(
        "the emulated transport moves host memory only; GPU memory needs registration path "
        "'staged' on it",
        "pass --reg staged, or use the verbs transport for GPUDirect");
  }
  if (reg != RegPath::kHost && reg != RegPath::kAuto) {
    return invalidArgument(std::string("registration path '") + toString(reg) +
                               "' does not apply to the emulated transport",
                           "use --reg host (or staged for GPU memory)");
  }
  if (spec.op == Op::kWriteImm && spec.mode == Mode::kLatency) {
    return unimplemented("write_imm latency is only measured on the verbs transport");
  }
  auto ep = std::make_unique<EmulatedEndpoint>(spec, buffer);
  GDR_RETURN_IF_ERROR(ep->init());
  return std::unique_ptr<Endpoint>(std::move(ep));
}

}  // namespace gdrmesh
