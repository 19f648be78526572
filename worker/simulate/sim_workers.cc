#include "worker/simulate/sim_workers.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <optional>

#include "common/sync/mutex.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "security/grpc_tls.h"
#include "worker/simulate/sim_model.h"

namespace gdrmesh {
namespace {

namespace pb = ::gdrmesh::v1;
using convert::fromProto;
using convert::toProto;

constexpr auto kMinBackoff = std::chrono::milliseconds(200);
constexpr auto kMaxBackoff = std::chrono::milliseconds(5000);

bool refusal(grpc::StatusCode c) {
  return c == grpc::StatusCode::ALREADY_EXISTS || c == grpc::StatusCode::INVALID_ARGUMENT ||
         c == grpc::StatusCode::PERMISSION_DENIED;
}

// Simulated workers have no InfiniBand port and no lldpd: fabric discovery and port counters
// are answered with that as their outcome (a result, not an error).
void answerSimFabricQuery(const std::string& worker, const pb::CoordinatorCommand& cmd,
                          pb::CommandReply* reply) {
  if (cmd.has_read_port_counters()) {
    toProto(unimplemented("simulated worker " + worker + " has no InfiniBand port",
                          "name a real worker on an InfiniBand host as fabric_reader"),
            reply->mutable_read_port_counters()->mutable_reading());
    return;
  }
  toProto(cmd.discover_fabric().lldp()
              ? unimplemented("simulated worker " + worker + " cannot ask lldpd",
                              "ask a real worker on a RoCE host")
              : unimplemented("simulated worker " + worker + " has no InfiniBand fabric",
                              "discover the fabric through a real worker on an InfiniBand host"),
          reply->mutable_discover_fabric()->mutable_discovery());
}

}  // namespace

class SimStream;

// Everything the workers of one SimulatedWorkers share. Outlives every stream: stop() waits
// until the last one has ended.
class SimulatedWorkers::Impl {
 public:
  class Worker;

  Impl(SimConfig c, Clock* injected)
      : config(std::move(c)),
        faults(config.faults, config.seed, config.noise, config.fabric),
        own_clock(injected == nullptr ? std::make_unique<SystemClock>() : nullptr),
        clock(injected == nullptr ? own_clock.get() : injected) {
    names = simWorkerNames(config);
  }

  Status start();
  void stop();
  // A stream is about to begin; false once stopping.
  bool streamStarting() {
    MutexLock lock(mu);
    if (stopping) return false;
    ++live_streams;
    return true;
  }
  void streamGone() {
    MutexLock lock(mu);
    --live_streams;
    cv.notify_all();
  }
  bool isStopping() {
    MutexLock lock(mu);
    return stopping;
  }

  const SimConfig config;
  const SimFaults faults;
  std::unique_ptr<SystemClock> own_clock;  // reset in stop(), after the last stream
  Clock* const clock;
  std::vector<std::string> names;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<pb::WorkerService::Stub>> stubs;
  std::vector<std::shared_ptr<Worker>> workers;

  std::atomic<uint64_t> commands{0}, replies{0}, unanswered{0}, heartbeats{0};

  // The simulated data path's end signal (RunSpec::end_signal): a target armed with a finish
  // waits here, keyed by its endpoint (worker name and key), for its initiator's run to end.
  using EndCallback = std::function<void(Clock::TimePoint)>;
  static std::string endKey(const std::string& worker, uint32_t rkey) {
    return worker + ":" + std::to_string(rkey);
  }
  void awaitEnd(const std::string& key, EndCallback on_end) {
    MutexLock lock(end_mu);
    end_waits[key] = std::move(on_end);
  }
  // The initiator's run on `key`'s endpoint ended at `at`: runs its target's callback.
  void signalEnd(const std::string& key, Clock::TimePoint at) {
    EndCallback cb;
    {
      MutexLock lock(end_mu);
      auto it = end_waits.find(key);
      if (it == end_waits.end()) return;
      cb = std::move(it->second);
      end_waits.erase(it);
    }
    cb(at);
  }
  // True when the wait was still there (neither signalled nor cancelled before).
  bool cancelEnd(const std::string& key) {
    MutexLock lock(end_mu);
    return end_waits.erase(key) > 0;
  }
  Mutex end_mu;
  std::map<std::string, EndCallback> end_waits ABSL_GUARDED_BY(end_mu);

  mutable Mutex mu;  // guards all below
  std::condition_variable cv;
  bool started ABSL_GUARDED_BY(mu) = false;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  int live_streams ABSL_GUARDED_BY(mu) = 0;
  int online ABSL_GUARDED_BY(mu) = 0;
  int ever_registered ABSL_GUARDED_BY(mu) = 0;
  int refused ABSL_GUARDED_BY(mu) = 0;
  int dropped ABSL_GUARDED_BY(mu) = 0;
  std::string last_error ABSL_GUARDED_BY(mu);
};

// One simulated worker: its model and its current stream. Lives as long as the Impl.
class SimulatedWorkers::Impl::Worker : public std::enable_shared_from_this<Worker> {
 public:
  Worker(Impl& impl, std::string name, int index, pb::WorkerService::Stub* stub)
      : impl_(impl),
        model_(impl.config, impl.faults, *impl.clock, std::move(name), index),
        stub_(stub) {}

  void dial();
  void cancel();
  // From the stream's OnDone.
  void streamEnded(const grpc::Status& st, bool registered, bool was_dropped);
  void registeredOnce();

  Impl& impl() { return impl_; }
  SimWorkerModel& model() { return model_; }
  pb::WorkerService::Stub* stub() { return stub_; }

 private:
  Impl& impl_;
  SimWorkerModel model_;
  pb::WorkerService::Stub* const stub_;
  Mutex mu_;  // guards all below
  std::weak_ptr<SimStream> current_ ABSL_GUARDED_BY(mu_);
  std::chrono::milliseconds backoff_ ABSL_GUARDED_BY(mu_) = kMinBackoff;
  bool ever_registered_ ABSL_GUARDED_BY(mu_) = false;
};

using Worker = SimulatedWorkers::Impl::Worker;

// One Connect stream of one worker: a callback reactor. Holds itself alive (self_) from
// begin() until OnDone. A hold keeps OnDone back until no write is outstanding, so writes
// queued from timers never race the end of the call.
class SimStream final : public grpc::ClientBidiReactor<pb::WorkerMessage, pb::CoordinatorMessage>,
                        public std::enable_shared_from_this<SimStream> {
 public:
  explicit SimStream(std::shared_ptr<Worker> w) : w_(std::move(w)), impl_(w_->impl()) {}

  void begin() {
    self_ = shared_from_this();
    w_->stub()->async()->Connect(&ctx_, this);
    AddHold();
    StartRead(&in_);
    pb::WorkerMessage reg;
    auto* r = reg.mutable_register_();
    r->set_name(w_->model().name());
    r->set_protocol_version(1);
    r->set_simulated(true);
    for (const auto& [k, v] : impl_.config.labels) (*r->mutable_labels())[k] = v;
    toProto(w_->model().inventory(), r->mutable_inventory());
    send(std::move(reg));
    StartCall();
  }

  void cancel() { ctx_.TryCancel(); }

  // Sends `m` at `at` on the injected clock (now when it is due already).
  void sendAt(pb::WorkerMessage m, Clock::TimePoint at) {
    if (at <= impl_.clock->now()) {
      send(std::move(m));
      return;
    }
    std::weak_ptr<SimStream> weak = weak_from_this();
    impl_.clock->schedule(at, [weak, msg = std::move(m)]() mutable {
      if (auto s = weak.lock()) s->send(std::move(msg));
    });
  }

  // Queues a message; writes it at once when no write is outstanding.
  void send(pb::WorkerMessage m) {
    const pb::WorkerMessage* next = nullptr;
    {
      MutexLock lock(mu_);
      if (closing_) return;
      out_.push_back(std::move(m));
      if (writing_) return;
      writing_ = true;
      next = &out_.front();  // deque: stays valid while later messages are pushed
    }
    StartWrite(next);
  }

  void OnWriteDone(bool ok) override {
    const pb::WorkerMessage* next = nullptr;
    bool release = false;
    {
      MutexLock lock(mu_);
      const pb::WorkerMessage& done = out_.front();
      if (ok && done.has_reply()) impl_.replies.fetch_add(1, std::memory_order_relaxed);
      if (ok && done.has_heartbeat()) impl_.heartbeats.fetch_add(1, std::memory_order_relaxed);
      out_.pop_front();
      if (!ok) {
        closing_ = true;
        out_.clear();
      }
      if (closing_ || out_.empty()) {
        writing_ = false;
        release = releaseHoldLocked();
      } else {
        next = &out_.front();
      }
    }
    if (!ok) ctx_.TryCancel();  // a broken stream: make the read side end too
    if (next != nullptr) StartWrite(next);
    if (release) RemoveHold();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      close();
      return;
    }
    if (in_.has_registered()) {
      onRegistered(in_.registered());
    } else if (in_.has_command()) {
      handle(in_.command());
    }
    if (drop_) {
      ctx_.TryCancel();
      close();
      return;
    }
    StartRead(&in_);
  }

  void OnDone(const grpc::Status& st) override {
    std::map<std::string, PendingFinish> finishes;
    {
      MutexLock lock(mu_);
      closing_ = true;
      if (hb_timer_ != 0) impl_.clock->cancel(hb_timer_);
      hb_timer_ = 0;
      finishes.swap(finishes_);
    }
    for (auto& [id, p] : finishes) {  // every test of this stream is gone: nobody to answer
      impl_.clock->cancel(p.timer);
      impl_.cancelEnd(p.key);
    }
    w_->model().abortAll();
    w_->streamEnded(st, registered_, drop_);
    SimulatedWorkers::Impl* impl = &impl_;
    self_.reset();  // `this` may be gone from here on
    impl->streamGone();
  }

 private:
  void onRegistered(const pb::Registered& r) {
    registered_ = true;
    hb_ms_ = r.heartbeat_interval_ms() > 0 ? static_cast<int>(r.heartbeat_interval_ms())
                                           : impl_.config.heartbeat_ms;
    w_->registeredOnce();
    scheduleHeartbeat();
  }

  void scheduleHeartbeat() {
    std::weak_ptr<SimStream> weak = weak_from_this();
    MutexLock lock(mu_);
    if (closing_) return;
    hb_timer_ = impl_.clock->schedule(impl_.clock->after(hb_ms_ / 1000.0), [weak] {
      if (auto s = weak.lock()) s->heartbeat();
    });
  }

  void heartbeat() {
    pb::WorkerMessage hb;
    hb.mutable_heartbeat()->set_unix_ms(impl_.clock->unixMs());
    hb.mutable_heartbeat()->set_active_tests(static_cast<uint32_t>(w_->model().activeTests()));
    send(std::move(hb));
    scheduleHeartbeat();
  }

  // Answers one command now or, for runs, when the simulated run is over.
  void handle(const pb::CoordinatorCommand& cmd) {
    impl_.commands.fetch_add(1, std::memory_order_relaxed);
    if (!answers(w_->model().nextCommand())) return;
    pb::WorkerMessage out;
    auto* reply = out.mutable_reply();
    reply->set_request_id(cmd.request_id());
    Clock::TimePoint at = impl_.clock->now();
    const Status st = answer(cmd, reply, &at);
    toProto(st, reply->mutable_status());
    sendAt(std::move(out), at);
  }

  // The model's fate for a command: true to answer it; a dropped one drops the stream, a mute
  // one is counted unanswered.
  bool answers(SimWorkerModel::Fate fate) {
    switch (fate) {
      case SimWorkerModel::Fate::kDrop:
        drop_ = true;
        return false;
      case SimWorkerModel::Fate::kMute:
        impl_.unanswered.fetch_add(1, std::memory_order_relaxed);
        return false;
      case SimWorkerModel::Fate::kAnswer:
        break;
    }
    return true;
  }

  // Runs the command on the model and fills the reply but its status, which it returns. *at:
  // when the answer is due (a run's end; now for the others).
  Status answer(const pb::CoordinatorCommand& cmd, pb::CommandReply* reply, Clock::TimePoint* at) {
    SimWorkerModel& m = w_->model();
    switch (cmd.command_case()) {
      case pb::CoordinatorCommand::kPrepare:
        return answerPrepare(cmd.prepare(), reply);
      case pb::CoordinatorCommand::kConnect: {
        auto r = m.connect(cmd.connect().test_id(), fromProto(cmd.connect().peer()));
        if (r.ok()) reply->mutable_connect()->set_path_mtu(*r);
        return r.status();
      }
      case pb::CoordinatorCommand::kRun: {
        auto a = m.run(cmd.run().test_id(), fromProto(cmd.run().spec()));
        if (a.value.ok()) toProto(*a.value, reply->mutable_run()->mutable_measurement());
        *at = a.at;
        return a.value.status();
      }
      case pb::CoordinatorCommand::kVerify: {
        auto r = m.verify(cmd.verify().test_id(), cmd.verify().length());
        if (r.ok()) toProto(*r, reply->mutable_verify()->mutable_integrity());
        return r.status();
      }
      case pb::CoordinatorCommand::kRelease:
        releaseFinish(cmd.release().test_id());
        m.release(cmd.release().test_id());
        reply->mutable_release();
        return {};
      case pb::CoordinatorCommand::kStart:
        return answerStart(cmd.start(), reply, at);
      case pb::CoordinatorCommand::kFinish: {
        const auto& f = cmd.finish();
        auto a = m.finish(f.test_id(), f.verify(), f.verify_length(), f.timeout_seconds());
        if (a.value.ok()) toProto(*a.value, reply->mutable_finish());
        *at = a.at;
        return a.value.status();
      }
      case pb::CoordinatorCommand::kDiscoverFabric:
      case pb::CoordinatorCommand::kReadPortCounters:
        answerSimFabricQuery(m.name(), cmd, reply);
        return {};
      default:
        return unimplemented("simulated worker " + m.name() + ": unknown command " +
                                 std::to_string(static_cast<int>(cmd.command_case())),
                             "update the simulated workers to the coordinator's version");
    }
  }

  // A prepare; a lean target's finish sent with it waits for its initiator's end signal.
  Status answerPrepare(const pb::PrepareRequest& p, pb::CommandReply* reply) {
    SimWorkerModel& m = w_->model();
    SideSpec spec = fromProto(p.spec());
    std::optional<RunSpec> arm;
    if (p.has_arm()) arm = fromProto(p.arm());
    auto r = p.has_peer() ? m.prepareArmed(spec, fromProto(p.peer()), arm) : m.prepare(spec);
    if (r.ok()) toProto(*r, reply->mutable_prepare()->mutable_local());
    if (r.ok() && arm && arm->end_signal && p.has_finish()) {
      awaitFinish(spec.endpoint.test_id, SimulatedWorkers::Impl::endKey(m.name(), r->rkey),
                  p.finish(), p.finish_request_id());
    }
    return r.status();
  }

  // A lean initiator's start; with an end signal, its target hears the run's end at *at.
  Status answerStart(const pb::StartRequest& s, pb::CommandReply* reply, Clock::TimePoint* at) {
    auto a = w_->model().start(s.test_id(), fromProto(s.peer()), fromProto(s.run()), s.verify(),
                               s.verify_length());
    if (a.value.ok()) toProto(*a.value, reply->mutable_start());
    *at = a.at;
    if (a.value.ok() && s.run().end_signal()) {
      // The initiator's run ends at `at`: its target hears it over the simulated data path.
      const EndpointDesc peer = fromProto(s.peer());
      if (const auto* sim = std::get_if<SimulatedDesc>(&peer.fields)) {
        impl_.signalEnd(SimulatedWorkers::Impl::endKey(sim->worker, peer.rkey), a.at);
      }
    }
    return a.value.status();
  }

  // Lean target whose prepare carried its finish: answered when the initiator's run ends (the
  // simulated end signal), when the test is released (aborted), or at its timeout.
  void awaitFinish(const std::string& test_id, const std::string& key, const pb::FinishRequest& f,
                   uint64_t request_id) {
    std::weak_ptr<SimStream> weak = weak_from_this();
    const double timeout =
        f.timeout_seconds() > 0 ? f.timeout_seconds() : kDefaultRunTimeoutSeconds;
    const Clock::TimerId timer =
        impl_.clock->schedule(impl_.clock->after(timeout), [weak, test_id, timeout] {
          auto s = weak.lock();
          if (!s) return;
          auto p = s->takeFinish(test_id);
          if (!p || !s->impl_.cancelEnd(p->key)) return;
          s->w_->model().release(test_id);
          s->reply(p->request_id, Status(Code::kDeadlineExceeded,
                                         "test " + test_id +
                                             ": the initiator did not signal the "
                                             "end of its run within " +
                                             std::to_string(static_cast<int>(timeout)) + " s"));
        });
    {
      MutexLock lock(mu_);
      finishes_[test_id] = PendingFinish{key, request_id, timer};
    }
    impl_.awaitEnd(key, [weak, test_id, f](Clock::TimePoint at) {
      if (auto s = weak.lock()) s->answerFinish(test_id, f, at);
    });
  }

  void answerFinish(const std::string& test_id, const pb::FinishRequest& f, Clock::TimePoint end) {
    auto p = takeFinish(test_id);
    if (!p) return;
    auto a = w_->model().finish(test_id, f.verify(), f.verify_length(), f.timeout_seconds());
    pb::WorkerMessage out;
    auto* reply = out.mutable_reply();
    reply->set_request_id(p->request_id);
    if (a.value.ok()) toProto(*a.value, reply->mutable_finish());
    toProto(a.value.status(), reply->mutable_status());
    const Clock::TimePoint at = std::max(a.at, end);
    sendAt(std::move(out), at);
  }

  // A release of a test whose finish is pending answers that finish as a real worker does.
  void releaseFinish(const std::string& test_id) {
    auto p = takeFinish(test_id);
    if (!p || !impl_.cancelEnd(p->key)) return;
    reply(p->request_id,
          Status(Code::kAborted, "test " + test_id + ": released while waiting for its end"));
  }

  struct PendingFinish {
    std::string key;
    uint64_t request_id = 0;
    Clock::TimerId timer = 0;
  };
  // Removes a pending finish (and its timeout).
  std::optional<PendingFinish> takeFinish(const std::string& test_id) {
    std::optional<PendingFinish> p;
    {
      MutexLock lock(mu_);
      auto it = finishes_.find(test_id);
      if (it == finishes_.end()) return p;
      p = std::move(it->second);
      finishes_.erase(it);
    }
    impl_.clock->cancel(p->timer);
    return p;
  }

  void reply(uint64_t request_id, const Status& st) {
    pb::WorkerMessage out;
    out.mutable_reply()->set_request_id(request_id);
    toProto(st, out.mutable_reply()->mutable_status());
    send(std::move(out));
  }

  // The read side is over (cancelled, dropped, or the coordinator ended the call).
  void close() {
    bool release = false;
    {
      MutexLock lock(mu_);
      closing_ = true;
      if (hb_timer_ != 0) impl_.clock->cancel(hb_timer_);
      hb_timer_ = 0;
      if (writing_) {
        out_.erase(out_.begin() + 1, out_.end());  // keep the one being written
      } else {
        out_.clear();
      }
      release = releaseHoldLocked();
    }
    if (release) RemoveHold();
  }

  // True once: when closing and no write is outstanding.
  bool releaseHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!closing_ || writing_ || hold_released_) return false;
    hold_released_ = true;
    return true;
  }

  std::shared_ptr<Worker> w_;
  SimulatedWorkers::Impl& impl_;
  grpc::ClientContext ctx_;
  pb::CoordinatorMessage in_;  // the one outstanding read
  // Reactor-thread state: reads are serialised, so only OnReadDone touches these.
  bool registered_ = false;
  bool drop_ = false;
  int hb_ms_ = 1000;
  Mutex mu_;  // guards all below
  std::deque<pb::WorkerMessage> out_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  Clock::TimerId hb_timer_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, PendingFinish> finishes_ ABSL_GUARDED_BY(mu_);  // by test id
  // Not guarded: set by begin() before the call starts, reset by OnDone, its last callback.
  std::shared_ptr<SimStream> self_;
};

void Worker::dial() {
  if (!impl_.streamStarting()) return;
  auto s = std::make_shared<SimStream>(shared_from_this());
  {
    MutexLock lock(mu_);
    current_ = s;
  }
  s->begin();
  // stop() may have looked for streams before current_ was set: cancel this one then.
  if (impl_.isStopping()) s->cancel();
}

void Worker::cancel() {
  std::shared_ptr<SimStream> s;
  {
    MutexLock lock(mu_);
    s = current_.lock();
  }
  if (s) s->cancel();
}

void Worker::registeredOnce() {
  bool first = false;
  {
    MutexLock lock(mu_);
    first = !ever_registered_;
    ever_registered_ = true;
    backoff_ = kMinBackoff;
  }
  MutexLock lock(impl_.mu);
  ++impl_.online;
  if (first) ++impl_.ever_registered;
  impl_.cv.notify_all();
}

void Worker::streamEnded(const grpc::Status& st, bool registered, bool was_dropped) {
  bool redial = false;
  std::chrono::milliseconds wait{};
  {
    MutexLock lock(impl_.mu);
    if (registered) --impl_.online;
    if (was_dropped) ++impl_.dropped;
    const bool was_refused = !registered && refusal(st.error_code());
    if (was_refused) ++impl_.refused;
    if (!impl_.stopping && !was_dropped) {
      impl_.last_error =
          model_.name() + ": " +
          (st.ok() ? std::string("stream closed by the coordinator") : st.error_message());
    }
    redial = !impl_.stopping && !was_dropped && !was_refused && impl_.config.reconnect;
    impl_.cv.notify_all();
  }
  if (!redial) return;
  {
    MutexLock lock(mu_);
    wait = backoff_;
    backoff_ =
        std::min(backoff_ * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxBackoff));
  }
  std::weak_ptr<Worker> weak = weak_from_this();
  impl_.clock->schedule(impl_.clock->now() + wait, [weak] {
    if (auto w = weak.lock()) w->dial();
  });
}

Status SimulatedWorkers::Impl::start() {
  GDR_RETURN_IF_ERROR(validateSimConfig(config));
  if (config.coordinator.empty()) {
    return invalidArgument("--coordinator: required for simulated workers (HOST:PORT)");
  }
  {
    MutexLock lock(mu);
    if (started) return failedPrecondition("simulated workers already started");
    started = true;
  }
  const int n_conn =
      config.connections > 0 ? std::min(config.connections, config.count) : config.count;
  for (int c = 0; c < n_conn; ++c) {
    grpc::ChannelArguments args;
    // A connection of its own per channel: separate hosts do not share one.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    channels.push_back(
        grpc::CreateCustomChannel(config.coordinator, channelCredentials(config.tls), args));
    stubs.push_back(pb::WorkerService::NewStub(channels.back()));
  }
  for (int i = 0; i < config.count; ++i) {
    workers.push_back(std::make_shared<Worker>(*this, names[static_cast<size_t>(i)], i,
                                               stubs[static_cast<size_t>(i % n_conn)].get()));
  }
  for (auto& w : workers) w->dial();
  return {};
}

void SimulatedWorkers::Impl::stop() {
  {
    MutexLock lock(mu);
    stopping = true;
  }
  for (auto& w : workers) w->cancel();
  UniqueLock lock(mu);
  cv.wait(lock.native(), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return live_streams == 0; });
}

SimulatedWorkers::SimulatedWorkers(SimConfig config, Clock* clock)
    : impl_(std::make_shared<Impl>(std::move(config), clock)) {}

SimulatedWorkers::~SimulatedWorkers() {
  stop();
  // The timer thread goes before the workers that its callbacks reach.
  impl_->own_clock.reset();
}

Status SimulatedWorkers::start() {
  return impl_->start();
}

void SimulatedWorkers::stop() {
  impl_->stop();
}

bool SimulatedWorkers::waitRegistered(int n, std::chrono::milliseconds timeout) {
  UniqueLock lock(impl_->mu);
  return impl_->cv.wait_for(lock.native(), timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
    return impl_->ever_registered >= n;
  });
}

bool SimulatedWorkers::waitDropped(int n, std::chrono::milliseconds timeout) {
  UniqueLock lock(impl_->mu);
  return impl_->cv.wait_for(lock.native(), timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
    return impl_->dropped >= n;
  });
}

SimStats SimulatedWorkers::stats() const {
  SimStats s;
  s.workers = impl_->config.count;
  s.commands = impl_->commands.load();
  s.replies = impl_->replies.load();
  s.unanswered = impl_->unanswered.load();
  s.heartbeats = impl_->heartbeats.load();
  MutexLock lock(impl_->mu);
  s.online = impl_->online;
  s.ever_registered = impl_->ever_registered;
  s.refused = impl_->refused;
  s.dropped = impl_->dropped;
  s.last_error = impl_->last_error;
  return s;
}

const std::vector<std::string>& SimulatedWorkers::names() const {
  return impl_->names;
}

}  // namespace gdrmesh
