#include "tests/support/fake_worker_channel.h"

#include "common/pattern.h"

namespace gdrmesh::testing {
namespace {

// The fabric the fakes share: each test's source patterns (sealed tests), by test id (a
// loopback target's ".target" suffix dropped), so a fake destination can digest what "landed".
struct FakeFabric {
  std::mutex mu;
  std::map<std::string, std::pair<uint64_t, uint64_t>> fills;  // id -> {initiator, target}
  // End signals (RunSpec::end_signal): a target prepared with its finish waits here, by test
  // id, for its initiator's run to end.
  std::map<std::string, std::function<void()>> ends;
};
FakeFabric& fabric() {
  static FakeFabric f;
  return f;
}
std::string baseId(const std::string& id) {
  const std::string suffix = ".target";
  if (id.size() > suffix.size() &&
      id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return id.substr(0, id.size() - suffix.size());
  }
  return id;
}

}  // namespace

IntegrityReport FakeWorkerChannel::landed(const std::string& id, uint64_t len,
                                          const FakeBehaviour& b) {
  IntegrityReport ir;
  ir.bytes_checked = len;
  ir.where = "host";
  Role role = Role::kInitiator;
  uint64_t expect = 0, fill = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sides_.find(id);
    if (it != sides_.end()) {
      role = it->second.endpoint.role;
      expect = it->second.expect_seed;
      fill = it->second.fill_seed;
    }
  }
  if (fill == 0 || expect != 0 || b.claim_check) {
    ir.checked = true;
    ir.wrong_bytes = b.forge_digest ? 0 : b.wrong_bytes;
    ir.first_wrong_offset = ir.wrong_bytes > 0 ? 0 : -1;
    return ir;
  }
  uint64_t source = 0;
  {
    std::lock_guard<std::mutex> lock(fabric().mu);
    auto it = fabric().fills.find(baseId(id));
    if (it != fabric().fills.end()) {
      source = role == Role::kInitiator ? it->second.second : it->second.first;
    }
  }
  ir.digested = true;
  // A forger never saw the data: it can only guess (here: its own pattern's digest).
  ir.digest = b.forge_digest ? digestPattern(fill, len)
                             : digestPattern(source, len) + (b.wrong_bytes > 0 ? 1 : 0);
  std::lock_guard<std::mutex> lock(mu_);
  kept_[id] = source;
  return ir;
}

void FakeWorkerChannel::claim(const std::string& id, uint64_t len, const FakeBehaviour& b,
                              SideOutcome* o) {
  if (b.claim_integrity && !o->verified) {
    uint64_t fill = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sides_.find(id);
      if (it != sides_.end()) fill = it->second.fill_seed;
    }
    o->verified = true;
    o->integrity.bytes_checked = len;
    o->integrity.where = "gpu:0";
    o->integrity.digested = true;
    o->integrity.digest = digestPattern(fill, len);
  }
  if (b.claim_gbps > 0) {
    o->has_measurement = true;
    o->measurement.has_bandwidth = true;
    o->measurement.message_size = len;
    o->measurement.bw.avg_gbps = b.claim_gbps;
    o->measurement.bw.peak_gbps = b.claim_gbps;
    o->measurement.bw.seconds = b.run_seconds;
  }
}

void FakeWorkerChannel::signalEnd(const std::string& test_id) {
  std::function<void()> end;
  {
    std::lock_guard<std::mutex> lock(fabric().mu);
    auto it = fabric().ends.find(baseId(test_id));
    if (it == fabric().ends.end()) return;
    end = std::move(it->second);
    fabric().ends.erase(it);
  }
  end();
}

int FakeWorkerChannel::reveals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reveals_;
}

int FakeWorkerChannel::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(sessions_.size());
}

int FakeWorkerChannel::maxInFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_in_flight_;
}

void FakeWorkerChannel::note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  log_.push_back(line);
}

std::vector<std::string> FakeWorkerChannel::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

void FakeWorkerChannel::open(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.insert(id);
  max_in_flight_ = std::max(max_in_flight_, static_cast<int>(sessions_.size()));
}

void FakeWorkerChannel::close(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.erase(id);
  armed_.erase(id);
}

uint64_t FakeWorkerChannel::track(std::function<void(const Status&)> fail) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  const uint64_t key = next_call_++;
  calls_[key] = std::move(fail);
  return key;
}

void FakeWorkerChannel::untrack(uint64_t key) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  calls_.erase(key);
}

void FakeWorkerChannel::lose(const std::string& reason) {
  lost_ = true;
  std::map<uint64_t, std::function<void(const Status&)>> calls;
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    calls.swap(calls_);
  }
  const Status st = unavailable("worker lost: " + name_ + " " + reason);
  for (auto& [key, fail] : calls) fail(st);
  lost_signal_.fire(reason);
}

template <typename T>
void FakeWorkerChannel::reply(const char* command, double after_seconds, Deadline deadline,
                              Done<T> done, std::function<Result<T>()> f) {
  if (lost_) {
    done(unavailable("worker lost: " + name_ + " (fake)"));
    return;
  }
  // The call's one answer: its reply, its deadline or the worker's loss, whichever comes first.
  struct Call {
    Done<T> done;
    std::atomic<bool> fired{false};
  };
  auto call = std::make_shared<Call>();
  call->done = std::move(done);
  auto fire = [call](Result<T> r) {
    if (call->fired.exchange(true)) return;
    call->done(std::move(r));
    call->done = nullptr;
  };
  // Tracked weakly: the timers own the call, so a call still pending when the test ends does
  // not keep its callback (and what it holds, e.g. a pair test holding this channel) alive.
  const uint64_t key = track([weak = std::weak_ptr<Call>(call)](const Status& st) {
    if (auto c = weak.lock()) {
      if (c->fired.exchange(true)) return;
      c->done(st);
      c->done = nullptr;
    }
  });
  if (behaviour.ignore_deadlines && (behaviour.mute || behaviour.hold.count(command) > 0)) {
    untrack(key);
    return;
  }
  auto timer = clock_.schedule(deadline, [fire, key, this] {
    untrack(key);
    fire(Status(Code::kDeadlineExceeded, "worker " + name_ + " did not answer (fake)"));
  });
  if (behaviour.mute || behaviour.hold.count(command) > 0) return;
  clock_.schedule(clock_.after(after_seconds), [call, fire, f, timer, key, this] {
    if (call->fired.load()) return;
    untrack(key);
    clock_.cancel(timer);
    fire(f());
  });
}

SideOutcome FakeWorkerChannel::measured(const RunSpec& spec) const {
  SideOutcome o;
  o.has_measurement = true;
  auto& m = o.measurement;
  m.message_size = spec.message_size;
  m.iterations = spec.iterations;
  m.has_bandwidth = true;
  m.bw.bytes = spec.message_size * spec.iterations;
  m.bw.messages = spec.iterations;
  m.bw.avg_gbps = behaviour.bandwidth_gbps;
  m.bw.peak_gbps = behaviour.bandwidth_gbps;
  m.bw.seconds = behaviour.run_seconds;
  m.has_latency = false;
  return o;
}

void FakeWorkerChannel::prepareFinishing(const PrepareCommand& c, Deadline deadline,
                                         Done<EndpointDesc> done, Deadline finish_deadline,
                                         Done<SideOutcome> finished) {
  const std::string id = c.side.endpoint.test_id;
  const FinishCommand fin = c.finish.value_or(FinishCommand{});
  const FakeBehaviour b = behaviour;
  // The finish's one answer: its reply, its deadline, a release, or the prepare's error.
  struct Pending {
    Done<SideOutcome> finished;
    bool fired = false;
    Clock::TimerId timer = 0;
    uint64_t call = 0;  // track()'s key: the worker's loss ends the finish too
  };
  auto pending = std::make_shared<Pending>();
  pending->finished = std::move(finished);
  // Every way out forgets the test's waits: the fabric is process-wide, and what its entry
  // holds (the pair test, through `finished`) must not outlive the answer.
  auto answer = [pending, id, this](Result<SideOutcome> r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending->fired) return;
      pending->fired = true;
      aborts_.erase(id);
    }
    {
      std::lock_guard<std::mutex> lock(fabric().mu);
      fabric().ends.erase(baseId(id));
    }
    clock_.cancel(pending->timer);
    untrack(pending->call);
    pending->finished(std::move(r));
    pending->finished = nullptr;
  };
  if (lost_) {
    done(unavailable("worker lost: " + name_ + " (fake)"));
    answer(unavailable("worker lost: " + name_ + " (fake)"));
    return;
  }
  // Tracked weakly, as reply()'s calls are: the finish's timer and waits own `pending`.
  pending->call = track([weak = std::weak_ptr<Pending>(pending), id, this](const Status& st) {
    auto p = weak.lock();
    if (!p) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (p->fired) return;
      p->fired = true;
      aborts_.erase(id);
    }
    {
      std::lock_guard<std::mutex> lock(fabric().mu);
      fabric().ends.erase(baseId(id));
    }
    clock_.cancel(p->timer);
    p->finished(st);
    p->finished = nullptr;
  });
  pending->timer = clock_.schedule(finish_deadline, [answer, this] {
    answer(Status(Code::kDeadlineExceeded, "worker " + name_ + " did not answer (fake)"));
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborts_[id] = [answer, id] {
      answer(Status(Code::kAborted, "test " + id + ": released while waiting for its end (fake)"));
    };
  }
  if (b.hold.count("finish") == 0) {
    std::lock_guard<std::mutex> fabric_lock(fabric().mu);
    fabric().ends[baseId(id)] = [answer, fin, b, this] {
      clock_.schedule(clock_.after(b.command_seconds), [answer, fin, b, this] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          aborts_.erase(fin.test_id);
        }
        close(fin.test_id);
        SideOutcome o;
        if (fin.verify) {
          o.verified = true;
          o.integrity = landed(fin.test_id, fin.verify_length, b);
        }
        claim(fin.test_id, fin.verify_length, b, &o);
        answer(o);
      });
    };
  }
  prepare(c, deadline, [done = std::move(done), answer](Result<EndpointDesc> d) {
    if (!d.ok()) {
      done(d.status());
      answer(d.status());
      return;
    }
    done(std::move(d));
  });
  note("finish " + fin.test_id + (fin.verify ? " +verify" : "") + " (with prepare)");
}

void FakeWorkerChannel::prepare(const PrepareCommand& c, Deadline deadline,
                                Done<EndpointDesc> done) {
  note("prepare " + c.side.endpoint.test_id + (c.peer ? " +peer" : "") + (c.arm ? " +arm" : ""));
  const std::string id = c.side.endpoint.test_id;
  open(id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    sides_[id] = c.side;
    if (c.arm) armed_[id] = *c.arm;
  }
  if (c.side.fill_seed != 0) {
    std::lock_guard<std::mutex> lock(fabric().mu);
    auto& f = fabric().fills[baseId(id)];
    (c.side.endpoint.role == Role::kInitiator ? f.first : f.second) = c.side.fill_seed;
  }
  SideSpec side = c.side;
  FakeBehaviour b = behaviour;
  reply<EndpointDesc>("prepare", b.command_seconds, deadline, std::move(done),
                      [side, b, this]() -> Result<EndpointDesc> {
                        if (!b.fail_prepare.ok()) {
                          close(side.endpoint.test_id);
                          return b.fail_prepare;
                        }
                        EndpointDesc d;
                        d.memory = b.claim_memory.value_or(side.memory);
                        // auto: a GPU side registers through dma-buf, a host side as host.
                        d.reg_path = b.claim_reg.value_or(side.reg != RegPath::kAuto ? side.reg
                                                          : side.memory == MemoryKind::kCuda
                                                              ? RegPath::kDmabuf
                                                              : RegPath::kHost);
                        VerbsDesc nic;
                        nic.device = side.endpoint.device.empty() ? "mlx5_0" : side.endpoint.device;
                        nic.port = 1;
                        switch (side.transport) {
                          case TransportKind::kVerbs:
                            d.fields = std::move(nic);
                            break;
                          case TransportKind::kSimulated:
                            d.fields = SimulatedDesc{"fake", std::move(nic)};
                            break;
                          case TransportKind::kEmulated:
                            d.fields = EmulatedDesc{"127.0.0.1", 1};
                            break;
                        }
                        return d;
                      });
}

void FakeWorkerChannel::connect(const std::string& test_id, const EndpointDesc&, Deadline deadline,
                                Done<SideOutcome> done) {
  note("connect " + test_id);
  reply<SideOutcome>("connect", behaviour.command_seconds, deadline, std::move(done), [] {
    SideOutcome o;
    o.path_mtu = 4096;
    return Result<SideOutcome>(o);
  });
}

void FakeWorkerChannel::run(const std::string& test_id, const RunSpec& spec, Deadline deadline,
                            Done<SideOutcome> done) {
  note("run " + test_id);
  FakeBehaviour b = behaviour;
  Role role = Role::kInitiator;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sides_.find(test_id);
    if (it != sides_.end()) role = it->second.endpoint.role;
  }
  reply<SideOutcome>("run", b.run_seconds, deadline, std::move(done),
                     [b, spec, role, this]() -> Result<SideOutcome> {
                       if (!b.fail_run.ok()) return b.fail_run;
                       // As a worker: the initiator measures; the target only its own
                       // direction of a bidirectional run.
                       if (role == Role::kTarget && !spec.bidirectional) return SideOutcome{};
                       return measured(spec);
                     });
}

void FakeWorkerChannel::verify(const std::string& test_id, uint64_t length, uint64_t reveal_seed,
                               Deadline deadline, Done<SideOutcome> done) {
  note("verify " + test_id + (reveal_seed != 0 ? " +reveal" : ""));
  FakeBehaviour b = behaviour;
  reply<SideOutcome>("verify", b.command_seconds, deadline, std::move(done),
                     [b, length, reveal_seed, test_id, this]() -> Result<SideOutcome> {
                       SideOutcome o;
                       o.verified = true;
                       if (reveal_seed == 0) {
                         o.integrity = landed(test_id, length, b);
                         return o;
                       }
                       std::lock_guard<std::mutex> lock(mu_);
                       ++reveals_;
                       auto it = kept_.find(test_id);
                       if (it == kept_.end()) return notFound("no landed data kept (fake)");
                       if (it->second != reveal_seed) return invalidArgument("wrong seed (fake)");
                       kept_.erase(it);
                       o.integrity.checked = true;
                       o.integrity.bytes_checked = length;
                       // A forger finds nothing wrong with data it never received.
                       o.integrity.wrong_bytes = b.forge_digest ? 0 : b.wrong_bytes;
                       o.integrity.first_wrong_offset = o.integrity.wrong_bytes > 0 ? 0 : -1;
                       o.integrity.where = "host";
                       return o;
                     });
}

void FakeWorkerChannel::release(const std::string& test_id, const std::string&, Deadline deadline,
                                Done<bool> done) {
  note("release " + test_id);
  close(test_id);
  std::function<void()> abort_finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = aborts_.find(test_id);
    if (it != aborts_.end()) {
      abort_finish = std::move(it->second);
      aborts_.erase(it);
    }
  }
  if (abort_finish) {
    std::lock_guard<std::mutex> lock(fabric().mu);
    fabric().ends.erase(baseId(test_id));
  }
  if (abort_finish) abort_finish();
  reply<bool>("release", behaviour.command_seconds, deadline, std::move(done),
              [] { return Result<bool>(true); });
}

void FakeWorkerChannel::discoverFabric(const fabric::DiscoverRequest& request, Deadline deadline,
                                       Done<fabric::DiscoverOutcome> done) {
  note("discover_fabric " + request.ca);
  auto discover = behaviour.discover;
  const std::string name = name_;
  reply<fabric::DiscoverOutcome>(
      "discover_fabric", behaviour.command_seconds, deadline, std::move(done),
      [discover, request, name]() -> Result<fabric::DiscoverOutcome> {
        fabric::DiscoverOutcome o;
        if (discover) o = discover(request);
        o.asked_lldp = request.lldp;  // as the gRPC channel marks it
        if (discover) return o;
        o.status =
            failedPrecondition("no InfiniBand device with a umad interface (fake " + name + ")",
                               "run discovery on a host with an InfiniBand HCA");
        return o;
      });
}

void FakeWorkerChannel::readPortCounters(const fabric::CounterReadRequest& request,
                                         Deadline deadline, Done<fabric::CounterReadOutcome> done) {
  note("read_port_counters " + std::to_string(request.ports.size()));
  auto read = behaviour.read_counters;
  const std::string name = name_;
  reply<fabric::CounterReadOutcome>(
      "read_port_counters", behaviour.command_seconds, deadline, std::move(done),
      [read, request, name]() -> Result<fabric::CounterReadOutcome> {
        if (read) return read(request);
        fabric::CounterReadOutcome o;
        o.status =
            failedPrecondition("no InfiniBand device with a umad interface (fake " + name + ")",
                               "read the counters on a host with an InfiniBand HCA");
        return o;
      });
}

void FakeWorkerChannel::start(const StartCommand& c, Deadline deadline, Done<SideOutcome> done) {
  note("start " + c.test_id + (c.verify ? " +verify" : ""));
  FakeBehaviour b = behaviour;
  StartCommand cmd = c;
  reply<SideOutcome>("start", b.run_seconds, deadline, std::move(done),
                     [b, cmd, this]() -> Result<SideOutcome> {
                       close(cmd.test_id);
                       if (!b.fail_run.ok()) return b.fail_run;
                       if (cmd.run.end_signal) signalEnd(cmd.test_id);
                       SideOutcome o = measured(cmd.run);
                       o.path_mtu = 4096;
                       if (cmd.verify) {
                         o.verified = true;
                         o.integrity = landed(cmd.test_id, cmd.verify_length, b);
                       }
                       FakeBehaviour rogue = b;
                       rogue.claim_gbps = 0;  // an initiator's figures are its own to report
                       claim(cmd.test_id, cmd.verify_length, rogue, &o);
                       return o;
                     });
}

void FakeWorkerChannel::finish(const FinishCommand& c, Deadline deadline, Done<SideOutcome> done) {
  note("finish " + c.test_id + (c.verify ? " +verify" : ""));
  FakeBehaviour b = behaviour;
  FinishCommand cmd = c;
  reply<SideOutcome>("finish", b.command_seconds, deadline, std::move(done),
                     [b, cmd, this]() -> Result<SideOutcome> {
                       close(cmd.test_id);
                       SideOutcome o;
                       if (cmd.verify) {
                         o.verified = true;
                         o.integrity = landed(cmd.test_id, cmd.verify_length, b);
                       }
                       claim(cmd.test_id, cmd.verify_length, b, &o);
                       return o;
                     });
}

FakeWorkerChannel& FakeDirectory::add(const std::string& name, int nics) {
  std::shared_ptr<FakeWorkerChannel> ch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto st = std::make_shared<WorkerStatus>();
    st->name = name;
    st->state = "online";
    st->inventory.hostname = name;
    st->inventory.transports = {"emulated"};
    for (int i = 0; i < nics; ++i) {
      Nic n;
      n.name = "mlx5_" + std::to_string(i);
      NicPort p;
      p.state = "ACTIVE";
      p.rate_gbps = 200;
      n.ports.push_back(p);
      st->inventory.nics.push_back(n);
    }
    status_[name] = st;
    ch = std::make_shared<FakeWorkerChannel>(name, clock_);
    channels_[name] = ch;
  }
  changed(name);  // a registration, as the registry announces it
  return *ch;
}

void FakeDirectory::edit(const std::string& name, const std::function<void(WorkerStatus&)>& f) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto st = std::make_shared<WorkerStatus>(*status_.at(name));
    f(*st);
    status_[name] = st;
  }
  changed(name);
}

void FakeDirectory::setState(const std::string& name, const char* state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto st = std::make_shared<WorkerStatus>(*status_.at(name));
    st->state = state;
    status_[name] = st;
  }
  changed(name);
}

void FakeDirectory::setOffline(const std::string& name) {
  setState(name, "offline");
}

void FakeDirectory::setOnline(const std::string& name) {
  setState(name, "online");
}

void FakeDirectory::setTransports(const std::string& name, std::vector<std::string> transports) {
  std::lock_guard<std::mutex> lock(mu_);
  auto st = std::make_shared<WorkerStatus>(*status_.at(name));
  st->inventory.transports = std::move(transports);
  status_[name] = st;
}

std::vector<WorkerStatus> FakeDirectory::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerStatus> out;
  for (const auto& [n, s] : status_) out.push_back(*s);
  return out;
}

std::shared_ptr<const WorkerStatus> FakeDirectory::get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = status_.find(name);
  return it == status_.end() ? nullptr : it->second;
}

std::shared_ptr<WorkerChannel> FakeDirectory::channel(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(name);
  if (it == channels_.end() || status_.at(name)->state != "online") return nullptr;
  return it->second;
}

}  // namespace gdrmesh::testing
