// grpc_floor: what gRPC and protobuf alone cost the coordinator per pair test (issue #7's
// capacity target), with nothing of gdrmesh's logic in between: no registry, no executor, no
// store, no judge. One process is the coordinator side (a callback WorkerService, as
// coordinator_server.cc), a forked child holds N worker streams (one channel and TCP connection
// each, as `gdrmesh worker --simulate N`). The coordinator side drives N/2 fixed pairs through
// the lean protocol's messages, each pair test with no transfer time:
//   pair:  initiator prepare -> reply; target prepare (peer, arm, finish) -> reply;
//          initiator start -> reply, and the target's finish reply (3 commands, 4 replies)
//   four:  the same with the target's finish as its own command (4 commands, 4 replies)
//   echo:  one command, one reply per stream (a plain round trip)
// Messages carry what gdrmesh's do (endpoint descriptions with the v1 flat fields and
// transport_fields, run specs, figures), built once and copied per send as the coordinator does.
// Prints the coordinator side's CPU per pair test (getrusage of this process; the child is
// measured apart) and pair tests per coordinator CPU-second: the ceiling on this machine for
// any coordinator that uses this protocol over gRPC's callback API.
//
//   grpc_floor [--streams N=256] [--tests T=200 per pair] [--pattern pair|four|echo]
//              [--cq-threads K: the completion-queue API polled by K threads instead]
//              [--small-messages 1: nearly empty descriptions, to tell size from count]
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace pb = ::gdrmesh::v1;

namespace {

bool g_small = false;  // --small-messages: descriptions and specs nearly empty

double cpuSeconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// An endpoint description as a simulated worker fills it (v1: flat fields and transport_fields).
void fillDesc(pb::EndpointDesc* d, int worker) {
  if (g_small) {
    d->set_rkey(1);
    return;
  }
  d->set_transport(pb::TRANSPORT_SIMULATED);
  d->set_addr(0x7f1234560000ULL + static_cast<uint64_t>(worker) * 4096);
  d->set_length(65536);
  d->set_rkey(0x1000u + static_cast<uint32_t>(worker));
  d->set_memory(pb::MEMORY_KIND_HOST);
  d->set_reg_path(pb::REG_PATH_HOST);
  const std::string name = "sim-" + std::to_string(worker);
  d->set_tcp_host(name);
  d->set_device("mlx5_0");
  d->set_port(1);
  d->set_link_layer("InfiniBand");
  d->set_lid(static_cast<uint32_t>(worker) + 1);
  d->set_gid("fe80:0000:0000:0000:0000:0000:0000:0001");
  d->set_gid_index(3);
  d->set_active_mtu(4096);
  auto* q = d->add_qps();
  q->set_qpn(0x100u + static_cast<uint32_t>(worker));
  q->set_psn(0x4242);
  d->set_buffer("host:numa0");
  d->set_gpu(-1);
  d->set_topo_class("PIX");
  d->set_max_rd_atomic(16);
  auto* s = d->mutable_simulated();
  s->set_worker(name);
  auto* n = s->mutable_nic();
  n->set_device("mlx5_0");
  n->set_port(1);
  n->set_link_layer("InfiniBand");
  n->set_lid(static_cast<uint32_t>(worker) + 1);
  n->set_gid("fe80:0000:0000:0000:0000:0000:0000:0001");
  n->set_gid_index(3);
  n->set_active_mtu(4096);
  n->set_max_rd_atomic(16);
  *n->add_qps() = *q;
}

void fillSpec(pb::EndpointSpec* s, pb::Role role) {
  if (g_small) {
    s->set_role(role);
    return;
  }
  s->set_test_id("t-20261126T142417-0123456789abcdef");
  s->set_role(role);
  s->set_op(pb::OP_WRITE);
  s->set_mode(pb::MODE_BANDWIDTH);
  s->set_buffer_size(65536);
  s->set_num_qps(1);
  s->set_tx_depth(128);
  s->set_rx_depth(512);
  s->set_device("mlx5_0");
  s->set_port(1);
  s->set_gid_index(-1);
  s->set_transport(pb::TRANSPORT_SIMULATED);
  s->set_memory(pb::MEMORY_KIND_HOST);
  s->set_gpu(-1);
  s->set_reg_path(pb::REG_PATH_AUTO);
  s->set_fill_seed(0x1234567890abcdefULL);
  s->set_expect_seed(0);
}

void fillRun(pb::RunSpec* r) {
  r->set_message_size(65536);
  r->set_iterations(50);
  r->set_warmup_iterations(5);
  r->set_cq_moderation(16);
  r->set_timeout_seconds(30);
  r->set_end_signal(true);
}

void fillOutcome(pb::SideOutcome* o, bool measured) {
  if (measured) {
    auto* m = o->mutable_measurement();
    m->set_message_size(65536);
    m->set_iterations(50);
    m->set_warmup_iterations(5);
    auto* bw = m->mutable_bw();
    bw->set_bytes(65536ULL * 50);
    bw->set_messages(50);
    bw->set_seconds(0.01);
    bw->set_avg_gbps(92.5);
    bw->set_peak_gbps(97.1);
    bw->set_msg_rate_mpps(0.17);
  } else {
    auto* i = o->mutable_integrity();
    i->set_checked(true);
    i->set_bytes_checked(65536ULL * 50);
    i->set_first_wrong_offset(-1);
    i->set_where("host");
  }
  o->set_path_mtu(4096);
}

// One write at a time per stream (gRPC's rule): the queued messages and the one to start next.
template <typename M>
class WriteQueue {
 public:
  // Queues `m`; returns the message to start writing when no write is in flight, else null.
  const M* push(M m) {
    std::lock_guard<std::mutex> lock(mu_);
    out_.push_back(std::move(m));
    if (writing_) return nullptr;
    writing_ = true;
    return &out_.front();  // deque: stays valid while later messages are pushed
  }
  // The write in flight is done; returns the next message to start, or null.
  const M* pop(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    out_.pop_front();
    if (!ok || out_.empty()) {
      writing_ = false;
      return nullptr;
    }
    return &out_.front();
  }

 private:
  std::mutex mu_;
  std::deque<M> out_;
  bool writing_ = false;
};

// ---------------------------------------------------------------- coordinator side

enum class Pattern { kPair, kFour, kEcho };

class Floor;

// One worker stream as the pair logic sees it.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void send(pb::CoordinatorMessage m) = 0;  // moved into the stream's queue
  int index = -1;
};

// The callback API (as coordinator_server.cc).
class Stream final : public grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>,
                     public Sink {
 public:
  explicit Stream(Floor& f) : floor_(f) { StartRead(&in_); }
  void send(pb::CoordinatorMessage m) override {
    if (const auto* next = out_.push(std::move(m))) StartWrite(next);
  }

 private:
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override {
    if (const auto* next = out_.pop(ok)) StartWrite(next);
  }
  void OnDone() override { delete this; }

  Floor& floor_;
  pb::WorkerMessage in_;
  WriteQueue<pb::CoordinatorMessage> out_;
};

class Floor final : public pb::WorkerService::CallbackService {
 public:
  Floor(int streams, int tests, Pattern p) : n_(streams), tests_(tests), pattern_(p) {
    streams_.resize(static_cast<size_t>(n_), nullptr);
    pairs_ = std::make_unique<Pair[]>(static_cast<size_t>(n_ / 2));
    pb::CoordinatorMessage m;
    auto* c = m.mutable_command();
    fillSpec(c->mutable_prepare()->mutable_spec(), pb::ROLE_INITIATOR);
    prep_ini_ = m;
    m.Clear();
    c = m.mutable_command();
    auto* tp = c->mutable_prepare();
    fillSpec(tp->mutable_spec(), pb::ROLE_TARGET);
    fillDesc(tp->mutable_peer(), 0);
    fillRun(tp->mutable_arm());
    if (pattern_ == Pattern::kPair) {
      tp->mutable_finish()->set_test_id("t-20261126T142417-0123456789abcdef");
      tp->mutable_finish()->set_verify(true);
      tp->mutable_finish()->set_verify_length(65536);
      tp->mutable_finish()->set_timeout_seconds(40);
    }
    prep_tgt_ = m;
    m.Clear();
    auto* s = m.mutable_command()->mutable_start();
    s->set_test_id("t-20261126T142417-0123456789abcdef");
    fillDesc(s->mutable_peer(), 1);
    fillRun(s->mutable_run());
    start_ = m;
    m.Clear();
    auto* f = m.mutable_command()->mutable_finish();
    f->set_test_id("t-20261126T142417-0123456789abcdef");
    f->set_verify(true);
    f->set_verify_length(65536);
    f->set_timeout_seconds(40);
    finish_ = m;
  }

  using pb::WorkerService::CallbackService::Connect;
  grpc::ServerBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext*) override {
    return new Stream(*this);
  }

  void onMessage(Sink* s, const pb::WorkerMessage& m) {
    if (m.has_register_()) {
      const int i = std::atoi(m.register_().name().c_str() + 4);
      s->index = i;
      std::lock_guard<std::mutex> lock(mu_);
      streams_[static_cast<size_t>(i)] = s;
      if (++registered_ == n_) cv_.notify_all();
      return;
    }
    if (!m.has_reply()) return;
    const auto& r = m.reply();
    if (!r.status().ok()) {
      std::fprintf(stderr, "grpc_floor: a worker reply failed: %s\n", r.status().message().c_str());
      std::abort();
    }
    if (pattern_ == Pattern::kEcho) {
      onEcho(s->index);
      return;
    }
    const int pi = s->index / 2;
    const bool initiator = s->index % 2 == 0;
    Pair& p = pairs_[static_cast<size_t>(pi)];
    bool next = false;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      if (initiator && r.has_prepare()) {
        p.peer_desc = r.prepare().local();  // the target's prepare carries it, as the real one
        p.phase = 1;
      } else if (!initiator && r.has_prepare()) {
        p.phase = 2;
      } else if (initiator && r.has_start()) {
        p.started = true;
      } else if (!initiator && r.has_finish()) {
        p.finished = true;
      }
      if (p.phase == 3 && p.started && p.finished) next = true;
    }
    if (pattern_ == Pattern::kFour && initiator && r.has_start()) {
      send(pi * 2 + 1, finish_);
      return;
    }
    if (r.has_prepare()) {
      if (initiator) {
        pb::CoordinatorMessage m2 = prep_tgt_;
        *m2.mutable_command()->mutable_prepare()->mutable_peer() = p.peer_desc;
        send(pi * 2 + 1, std::move(m2));
      } else {
        {
          std::lock_guard<std::mutex> lock(p.mu);
          p.phase = 3;  // the test ends when the start's and the finish's replies are both in
        }
        send(pi * 2, start_);
      }
      return;
    }
    if (next) testDone(pi);
  }

  // Waits for every stream, drives the pattern, returns the coordinator side's figures.
  void run() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return registered_ == n_; });
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpuSeconds(RUSAGE_SELF);
    if (pattern_ == Pattern::kEcho) {
      for (int i = 0; i < n_; ++i) send(i, prep_ini_);
    } else {
      for (int pi = 0; pi < n_ / 2; ++pi) begin(pi);
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return done_ == (pattern_ == Pattern::kEcho ? n_ : n_ / 2); });
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpuSeconds(RUSAGE_SELF) - c0;
    const double units = pattern_ == Pattern::kEcho ? static_cast<double>(n_) * tests_
                                                    : static_cast<double>(pairs()) * tests_;
    const char* what = pattern_ == Pattern::kEcho ? "round trips" : "pair tests";
    std::printf("grpc_floor: pattern %s, %d streams, %.0f %s in %.2f s (%.0f /s)\n",
                pattern_ == Pattern::kPair   ? "pair (3 commands, 4 replies)"
                : pattern_ == Pattern::kFour ? "four (4 commands, 4 replies)"
                                             : "echo (1 command, 1 reply)",
                n_, units, what, wall, units / wall);
    std::printf("grpc_floor: coordinator side CPU %.2f s: %.1f us per %s, %.0f %s per CPU-second\n",
                cpu, cpu / units * 1e6, pattern_ == Pattern::kEcho ? "round trip" : "pair test",
                units / cpu, what);
  }

 private:
  int pairs() const { return n_ / 2; }
  struct Pair {
    std::mutex mu;
    int phase = 0;
    bool started = false;
    bool finished = false;
    int done = 0;
    pb::EndpointDesc peer_desc;
  };

  // Each command is a copy of its template (made by the call), as the coordinator makes each
  // from the test's spec, with its own request id.
  void send(int i, pb::CoordinatorMessage m) {
    m.mutable_command()->set_request_id(++ids_);
    streams_[static_cast<size_t>(i)]->send(std::move(m));
  }
  void begin(int pi) {
    Pair& p = pairs_[static_cast<size_t>(pi)];
    {
      std::lock_guard<std::mutex> lock(p.mu);
      p.phase = 0;
      p.started = false;
      p.finished = false;
    }
    send(pi * 2, prep_ini_);
  }
  void testDone(int pi) {
    Pair& p = pairs_[static_cast<size_t>(pi)];
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      done = ++p.done;
    }
    if (done < tests_) {
      begin(pi);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    cv_.notify_all();
  }
  void onEcho(int i) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = ++echoes_[i];
    }
    if (done < tests_) {
      send(i, prep_ini_);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    cv_.notify_all();
  }

  const int n_;
  const int tests_;
  const Pattern pattern_;
  pb::CoordinatorMessage prep_ini_, prep_tgt_, start_, finish_;
  std::vector<Sink*> streams_;
  std::unique_ptr<Pair[]> pairs_;
  std::atomic<uint64_t> ids_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int registered_ = 0;
  int done_ = 0;
  std::map<int, int> echoes_;
};

void Stream::OnReadDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status::OK);
    return;
  }
  floor_.onMessage(this, in_);
  StartRead(&in_);
}

// The completion-queue API: one queue, `threads` threads polling it, no callback executor.
class AsyncServer {
 public:
  AsyncServer(Floor& f, grpc::ServerBuilder& b, int threads) : floor_(f), threads_(threads) {
    b.RegisterService(&service_);
    cq_ = b.AddCompletionQueue();
  }
  void start() {
    accept();
    for (int i = 0; i < threads_; ++i) pollers_.emplace_back([this] { poll(); });
    for (auto& t : pollers_) t.detach();  // ended with the process
  }

 private:
  struct AStream;
  enum class Kind { kAccept, kRead, kWrite };
  struct Tag {
    AStream* s;
    Kind kind;
  };
  struct AStream final : Sink {
    explicit AStream(AsyncServer& srv) : server(srv) {}
    void send(pb::CoordinatorMessage m) override {
      if (const auto* next = out.push(std::move(m))) rw.Write(*next, &write_tag);
    }
    AsyncServer& server;
    grpc::ServerContext ctx;
    grpc::ServerAsyncReaderWriter<pb::CoordinatorMessage, pb::WorkerMessage> rw{&ctx};
    pb::WorkerMessage in;
    WriteQueue<pb::CoordinatorMessage> out;
    Tag accept_tag{this, Kind::kAccept};
    Tag read_tag{this, Kind::kRead};
    Tag write_tag{this, Kind::kWrite};
  };

  void accept() {
    auto* s = new AStream(*this);  // kept until the process ends
    service_.RequestConnect(&s->ctx, &s->rw, cq_.get(), cq_.get(), &s->accept_tag);
  }
  void poll() {
    void* t = nullptr;
    bool ok = false;
    while (cq_->Next(&t, &ok)) {
      auto* tag = static_cast<Tag*>(t);
      AStream* s = tag->s;
      if (!ok) continue;  // a stream that ended: the benchmark is over
      switch (tag->kind) {
        case Kind::kAccept:
          accept();
          s->rw.Read(&s->in, &s->read_tag);
          break;
        case Kind::kRead:
          onRead(s);
          break;
        case Kind::kWrite:
          if (const auto* next = s->out.pop(true)) s->rw.Write(*next, &s->write_tag);
          break;
      }
    }
  }
  void onRead(AStream* s);

  Floor& floor_;
  const int threads_;
  pb::WorkerService::AsyncService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::vector<std::thread> pollers_;
};

void AsyncServer::onRead(AStream* s) {
  floor_.onMessage(s, s->in);
  s->rw.Read(&s->in, &s->read_tag);
}

// ---------------------------------------------------------------- worker side (child)

class Worker final : public grpc::ClientBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage> {
 public:
  Worker(const std::string& target, int index) : index_(index) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    stub_ = pb::WorkerService::NewStub(channel_);
    fillDesc(prepare_.mutable_prepare()->mutable_local(), index);
    fillOutcome(start_.mutable_start(), true);
    fillOutcome(finish_.mutable_finish(), false);
  }
  void begin() {
    stub_->async()->Connect(&ctx_, this);
    StartRead(&in_);
    pb::WorkerMessage reg;
    reg.mutable_register_()->set_name("sim-" + std::to_string(index_));
    reg.mutable_register_()->set_protocol_version(1);
    send(std::move(reg));
    StartCall();
  }

 private:
  void send(pb::WorkerMessage m) {
    if (const auto* next = out_.push(std::move(m))) StartWrite(next);
  }
  void reply(uint64_t id, const pb::CommandReply& r) {
    pb::WorkerMessage m;
    *m.mutable_reply() = r;
    m.mutable_reply()->set_request_id(id);
    m.mutable_reply()->mutable_status()->set_ok(true);
    send(std::move(m));
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    const auto& c = in_.command();
    if (c.has_prepare()) {
      reply(c.request_id(), prepare_);
      if (c.prepare().has_finish()) reply(c.prepare().finish_request_id(), finish_);
    } else if (c.has_start()) {
      reply(c.request_id(), start_);
    } else if (c.has_finish()) {
      reply(c.request_id(), finish_);
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    if (const auto* next = out_.pop(ok)) StartWrite(next);
  }
  void OnDone(const grpc::Status&) override {}

  const int index_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::WorkerService::Stub> stub_;
  grpc::ClientContext ctx_;
  pb::CoordinatorMessage in_;
  pb::CommandReply prepare_, start_, finish_;
  WriteQueue<pb::WorkerMessage> out_;
};

[[noreturn]] void runWorkers(const std::string& target, int n) {
  std::vector<std::unique_ptr<Worker>> workers;
  workers.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    workers.push_back(std::make_unique<Worker>(target, i));
    workers.back()->begin();
  }
  pause();  // until the parent ends us
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int streams = 256;
  int tests = 200;
  Pattern pattern = Pattern::kPair;
  int cq_threads = 0;  // 0: the callback API
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--streams") {
      streams = std::atoi(v.c_str());
    } else if (k == "--tests") {
      tests = std::atoi(v.c_str());
    } else if (k == "--small-messages") {
      g_small = v == "1";
    } else if (k == "--cq-threads") {
      cq_threads = std::atoi(v.c_str());
    } else if (k == "--pattern") {
      pattern = v == "echo" ? Pattern::kEcho : v == "four" ? Pattern::kFour : Pattern::kPair;
    } else {
      std::fprintf(stderr,
                   "usage: grpc_floor [--streams N] [--tests T] [--pattern pair|four|echo] "
                   "[--cq-threads K]\n"
                   "                  [--small-messages 0|1]\n");
      return 2;
    }
  }
  if (streams < 2 || streams % 2 != 0 || tests < 1) {
    std::fprintf(stderr, "grpc_floor: --streams must be even and >= 2, --tests >= 1\n");
    return 2;
  }
  // The child forks before this process starts any gRPC thread; it learns the port by a pipe.
  int fds[2];
  if (pipe(fds) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[1]);
    int port = 0;
    if (read(fds[0], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) std::_Exit(1);
    runWorkers("127.0.0.1:" + std::to_string(port), streams);
  }
  close(fds[0]);
  Floor floor(streams, tests, pattern);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<AsyncServer> async;
  if (cq_threads > 0) {
    async = std::make_unique<AsyncServer>(floor, builder, cq_threads);
  } else {
    builder.RegisterService(&floor);
  }
  auto server = builder.BuildAndStart();
  if (!server || port == 0 ||
      write(fds[1], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) {
    std::fprintf(stderr, "grpc_floor: cannot listen on 127.0.0.1\n");
    kill(child, SIGKILL);
    return 1;
  }
  if (async) async->start();
  std::printf(
      "grpc_floor: server API: %s\n",
      cq_threads > 0
          ? ("completion queue polled by " + std::to_string(cq_threads) + " threads").c_str()
          : "callback");
  floor.run();
  kill(child, SIGKILL);
  int st = 0;
  waitpid(child, &st, 0);
  std::printf("grpc_floor: worker side (child) CPU %.2f s in all\n", cpuSeconds(RUSAGE_CHILDREN));
  std::fflush(stdout);
  std::_Exit(0);  // the streams' reactors are still held by gRPC: no orderly teardown needed
}
