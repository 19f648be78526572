// A pair test's phases: the checks before it begins, then the lean or the classic protocol
// (pair_test.h describes both).
#include "coordinator/orchestrator/pair_test_run.h"

#include <sys/random.h>

#include <algorithm>
#include <string>

#include "common/sync/mutex.h"
#include "common/units.h"

namespace gdrmesh {
namespace pair_test_detail {
namespace {

// Whether `inv`'s worker signals the end of a run over `t`'s data path (and answers a finish
// sent with its prepare). Never assumed: a worker from before it says nothing.
bool signalsEnd(const Inventory& inv, TransportKind t) {
  for (const auto& c : inv.capabilities) {
    if (c.transport == t) return c.end_signal;
  }
  return false;
}

std::string noteFor(const Inventory& inv, const std::string& prefix) {
  for (const auto& n : inv.notes) {
    if (n.rfind(prefix, 0) == 0) return n;
  }
  return "";
}

// A pattern seed a worker cannot predict (sealed tests): from the kernel's CSPRNG, never 0.
uint64_t unpredictableSeed() {
  uint64_t s = 0;
  while (s == 0) {
    if (getrandom(&s, sizeof(s), 0) != static_cast<ssize_t>(sizeof(s))) s = newSeed();
  }
  return s;
}

}  // namespace

SideSpec PairTestRun::sideSpec(Role role) const {
  const EndpointSelector& s = role == Role::kInitiator ? spec_.initiator : spec_.target;
  SideSpec side;
  auto& e = side.endpoint;
  e.test_id = role == Role::kTarget ? tgt_sid_ : r_.test_id;
  e.role = role;
  e.op = spec_.op;
  e.mode = spec_.mode;
  e.buffer_size = spec_.message_size;
  e.num_qps = spec_.num_qps;
  e.tx_depth = spec_.tx_depth;
  e.inline_size = spec_.inline_size;
  e.device = s.device;
  e.gid_index = spec_.gid_index;
  e.use_rdma_cm = spec_.use_rdma_cm;
  side.transport = transport_;
  side.memory = s.memory;
  side.gpu = s.memory == MemoryKind::kCuda ? std::max(0, s.gpu) : -1;
  side.reg = s.memory == MemoryKind::kHost && s.reg == RegPath::kAuto ? RegPath::kHost : s.reg;
  side.seed = 0;
  if (sealed_) side.fill_seed = role == Role::kInitiator ? ini_fill_ : tgt_fill_;
  const bool dest = (role == Role::kInitiator) == spec_.initiatorIsDestination();
  if (dest) side.corrupt_bytes = spec_.fault.corrupt_bytes;
  if (role == Role::kTarget) side.invalidate_remote_key = spec_.fault.invalidate_remote_key;
  return side;
}

RunSpec PairTestRun::runSpec() const {
  RunSpec rs;
  rs.end_signal = end_signal_;
  rs.message_size = spec_.message_size;
  rs.iterations = spec_.iterations;
  rs.warmup_iterations = spec_.warmup_iterations;
  rs.duration_seconds = spec_.duration_seconds;
  rs.bidirectional = spec_.bidirectional;
  rs.cq_moderation = spec_.cq_moderation;
  rs.timeout_seconds = spec_.runTimeoutSeconds();
  return rs;
}

void PairTestRun::begin(std::string test_id, uint64_t seed) {
  ep_.initiator = orOffline(ep_.initiator, spec_.initiator.worker);
  ep_.target = orOffline(ep_.target, spec_.target.worker);
  {
    MutexLock lock(mu_);  // no command is out yet; the lock is for the analysis
    r_ = startedResult(spec_, ep_, std::move(test_id), clock_.unixMs());
    transport_ = r_.transport;
  }
  tgt_sid_ = spec_.initiator.worker == spec_.target.worker ? testId() + ".target" : testId();
  for (const WorkerStatus* w : {ep_.initiator.get(), ep_.target.get()}) {
    const bool is_ini = w == ep_.initiator.get();
    const auto& sel = is_ini ? spec_.initiator : spec_.target;
    const auto& ch = is_ini ? ep_.initiator_channel : ep_.target_channel;
    if (!ch || !w->online()) {
      return complete(TestStatus::kFailed,
                      "worker " + w->name + " is offline (last heartbeat " +
                          (w->last_heartbeat_ms > 0 ? formatRfc3339(w->last_heartbeat_ms)
                                                    : std::string("never")) +
                          ")",
                      true);
    }
    if (sel.memory == MemoryKind::kCuda && w->inventory.gpus.empty()) {
      std::string note = noteFor(w->inventory, "cuda");
      return complete(TestStatus::kSkipped,
                      std::string(is_ini ? "SRC (initiator)" : "DST (target)") +
                          " side: GPU memory requested (" + memoryText(sel.memory, sel.gpu) +
                          ") but worker " + w->name + " has no GPUs" +
                          (note.empty() ? "" : " (" + note + ")") +
                          "; run that side on a worker with a GPU, or give it host memory");
    }
    if (!hasTransport(w->inventory, transport_)) {
      std::string note = noteFor(w->inventory, toString(transport_));
      return complete(TestStatus::kSkipped, std::string("transport ") + toString(transport_) +
                                                " not available on worker " + w->name +
                                                (note.empty() ? "" : ": " + note));
    }
  }
  seed_ = seed;
  end_signal_ = signalsEnd(ep_.initiator->inventory, transport_) &&
                signalsEnd(ep_.target->inventory, transport_);
  sealed_ = !ep_.initiator->simulated && !ep_.target->simulated;
  if (sealed_) {
    ini_fill_ = unpredictableSeed();
    do {
      tgt_fill_ = unpredictableSeed();
    } while (tgt_fill_ == ini_fill_);
  }
  watchLoss();
  if (finished_.load()) return;  // a side was lost before the test began
  if (spec_.use_rdma_cm) return classicPrepare();

  mark("begin");
  // Lean 1: prepare the initiator.
  PrepareCommand c;
  c.side = sideSpec(Role::kInitiator);
  c.side.seed = seed_;
  Self self = shared_from_this();
  ini().prepare(c, cmdDeadline(), [self](Result<EndpointDesc> d) {
    if (!d.ok()) return self->fail("prepare", self->ep_.initiator->name, d.status());
    self->mark("initiator prepared");
    {
      MutexLock lock(self->mu_);
      self->recordPrepared(Role::kInitiator, *d);
    }
    self->leanPrepareTarget();
  });
}

void PairTestRun::leanPrepareTarget() {
  PrepareCommand c;
  c.side = sideSpec(Role::kTarget);
  c.side.seed = seed_;
  {
    MutexLock lock(mu_);
    c.peer = ini_desc_;
  }
  c.arm = runSpec();
  Self self = shared_from_this();
  auto prepared = [self](Result<EndpointDesc> d) {
    if (!d.ok()) return self->fail("prepare", self->ep_.target->name, d.status());
    self->mark("target prepared+armed");
    {
      MutexLock lock(self->mu_);
      self->recordPrepared(Role::kTarget, *d);
    }
    self->leanStart();
  };
  if (!end_signal_) return tgt().prepare(c, cmdDeadline(), std::move(prepared));
  // The armed run starts now and lasts the whole test: wait as long as the initiator may run.
  FinishCommand f = finishCommand(spec_.runTimeoutSeconds() + options_.command_timeout_seconds);
  c.finish = f;
  tgt().prepareFinishing(c, cmdDeadline(), std::move(prepared),
                         clock_.after(f.timeout_seconds + options_.command_timeout_seconds),
                         [self](Result<SideOutcome> o) { self->onFinished(std::move(o)); });
}

FinishCommand PairTestRun::finishCommand(double timeout_seconds) const {
  FinishCommand c;
  c.test_id = tgt_sid_;
  c.verify = !spec_.initiatorIsDestination();
  c.verify_length = spec_.message_size;
  c.timeout_seconds = timeout_seconds;
  return c;
}

void PairTestRun::leanStart() {
  setPhase("run");
  StartCommand c;
  c.test_id = testId();
  {
    MutexLock lock(mu_);
    c.peer = tgt_desc_;
  }
  c.run = runSpec();
  c.verify = spec_.initiatorIsDestination();
  c.verify_length = spec_.message_size;
  Self self = shared_from_this();
  if (end_signal_) {
    return ini().start(c, runDeadline(),
                       [self](Result<SideOutcome> o) { self->onStarted(std::move(o)); });
  }
  ini().start(c, runDeadline(), [self](Result<SideOutcome> o) {
    if (!o.ok()) return self->fail("run", self->ep_.initiator->name, o.status());
    self->mark("initiator ran");
    {
      MutexLock lock(self->mu_);

      self->ini_prepared_ = false;  // start releases the initiator
      self->addOutcome(Role::kInitiator, *o, self->spec_.initiatorIsDestination());
    }
    self->leanFinish();
  });
}

void PairTestRun::leanFinish() {
  setPhase("verify");
  const FinishCommand c = finishCommand(spec_.runTimeoutSeconds());
  Self self = shared_from_this();
  tgt().finish(c, runDeadline(), [self](Result<SideOutcome> o) {
    if (!o.ok()) return self->fail("verify", self->ep_.target->name, o.status());
    {
      MutexLock lock(self->mu_);
      self->tgt_prepared_ = false;  // finish releases the target
      self->addOutcome(Role::kTarget, *o, !self->spec_.initiatorIsDestination());
    }
    self->leanPassed();
  });
}

void PairTestRun::leanPassed() {
  Self self = shared_from_this();
  checkSealed([self] {
    UniqueLock lock(self->mu_);
    std::string why = self->r_.integrity.ok() ? self->impossibleFigures()
                                              : "data integrity: " + self->r_.integrity.toString();
    lock.unlock();
    self->complete(why.empty() ? TestStatus::kPassed : TestStatus::kFailed, why);
  });
}

void PairTestRun::onStarted(Result<SideOutcome> o) {
  // A failed run ends the test at once, as without the end signal: the target, still waiting
  // for the signal, is released (its finish then answers "aborted", heard by nobody).
  if (!o.ok()) return fail("run", ep_.initiator->name, o.status());
  mark("initiator ran");
  {
    MutexLock lock(mu_);
    ini_prepared_ = false;  // start releases the initiator
    started_ = std::move(o);
    if (!finished_reply_) {
      phase_ = "verify";
      return;
    }
  }
  leanJoined();
}

void PairTestRun::onFinished(Result<SideOutcome> o) {
  if (finished_.load()) return;  // e.g. the prepare's own error, or an abort after a failure
  {
    MutexLock lock(mu_);
    if (o.ok()) tgt_prepared_ = false;  // finish releases the target
    finished_reply_ = std::move(o);
    // The target's error waits for the initiator's reply: the initiator's account of a failed
    // transfer comes first, as without the end signal.
    if (!started_) return;
  }
  leanJoined();
}

void PairTestRun::leanJoined() {
  Result<SideOutcome> fin = Status(Code::kInternal, "unset");
  {
    MutexLock lock(mu_);
    fin = *finished_reply_;
    addOutcome(Role::kInitiator, started_->value(), spec_.initiatorIsDestination());
  }
  if (!fin.ok()) return fail("verify", ep_.target->name, fin.status());
  mark("target finished");
  {
    MutexLock lock(mu_);
    addOutcome(Role::kTarget, *fin, !spec_.initiatorIsDestination());
  }
  leanPassed();
}

// ------------------------------------------------------------------ classic protocol

void PairTestRun::recordPrepared(Role role, const EndpointDesc& d) {
  const bool is_ini = role == Role::kInitiator;
  (is_ini ? ini_desc_ : tgt_desc_) = d;
  (is_ini ? ini_prepared_ : tgt_prepared_) = true;
  record(role, d, is_ini ? &r_.initiator : &r_.target);
}

void PairTestRun::joinPhase(const char* phase, Role role, const Status& st,
                            void (PairTestRun::*next)()) {
  UniqueLock lock(mu_);
  if (!st.ok() && first_error_.ok()) {
    first_error_ = st;
    first_error_worker_ = role == Role::kInitiator ? ep_.initiator->name : ep_.target->name;
  }
  if (--pending_ > 0) return;
  Status err = first_error_;
  std::string who = first_error_worker_;
  lock.unlock();
  if (!err.ok()) return fail(phase, who, err);
  (this->*next)();
}

void PairTestRun::classicPrepare() {
  {
    MutexLock lock(mu_);
    pending_ = 2;
  }
  Self self = shared_from_this();
  for (Role role : {Role::kTarget, Role::kInitiator}) {
    PrepareCommand c;
    c.side = sideSpec(role);
    c.side.seed = seed_;
    auto& ch = role == Role::kInitiator ? ini() : tgt();
    ch.prepare(c, cmdDeadline(), [self, role](Result<EndpointDesc> d) {
      if (d.ok()) {
        MutexLock lock(self->mu_);
        self->recordPrepared(role, *d);
      }
      self->joinPhase("prepare", role, d.status(), &PairTestRun::classicConnect);
    });
  }
}

void PairTestRun::classicConnect() {
  EndpointDesc ini_desc, tgt_desc;
  {
    MutexLock lock(mu_);
    phase_ = "connect";
    pending_ = 2;
    ini_desc = ini_desc_;
    tgt_desc = tgt_desc_;
  }
  Self self = shared_from_this();
  auto on_reply = [self](Role role, Result<SideOutcome> o) {
    if (o.ok() && role == Role::kInitiator) {
      MutexLock lock(self->mu_);
      self->r_.path_mtu = static_cast<int>(o->path_mtu);
    }
    self->joinPhase("connect", role, o.status(), &PairTestRun::classicRun);
  };
  tgt().connect(tgt_sid_, ini_desc, cmdDeadline(),
                [on_reply](Result<SideOutcome> o) { on_reply(Role::kTarget, std::move(o)); });
  ini().connect(testId(), tgt_desc, cmdDeadline(),
                [on_reply](Result<SideOutcome> o) { on_reply(Role::kInitiator, std::move(o)); });
}

void PairTestRun::classicRun() {
  {
    MutexLock lock(mu_);
    phase_ = "run";
    pending_ = 2;
  }
  Self self = shared_from_this();
  auto on_reply = [self](Role role, Result<SideOutcome> o) {
    const bool is_ini = role == Role::kInitiator;
    bool abort_other = false;
    {
      MutexLock lock(self->mu_);
      if (o.ok()) {
        self->addOutcome(role, *o, false);  // a run verifies nothing
      } else {
        // The first side to fail aborts the other at once instead of waiting out its run.
        abort_other = self->first_error_.ok() && self->pending_ > 1;
      }
    }
    if (abort_other) {
      auto& other = is_ini ? self->tgt() : self->ini();
      other.release(is_ini ? self->tgt_sid_ : self->testId(), "peer failed", self->cmdDeadline(),
                    [](const Result<bool>&) {});
    }
    self->joinPhase("run", role, o.status(), &PairTestRun::classicVerify);
  };
  RunSpec rs = runSpec();
  tgt().run(tgt_sid_, rs, runDeadline(),
            [on_reply](Result<SideOutcome> o) { on_reply(Role::kTarget, std::move(o)); });
  ini().run(testId(), rs, runDeadline(),
            [on_reply](Result<SideOutcome> o) { on_reply(Role::kInitiator, std::move(o)); });
}

void PairTestRun::classicVerify() {
  setPhase("verify");
  const bool ini_dest = spec_.initiatorIsDestination();
  auto& dest = ini_dest ? ini() : tgt();
  const std::string who = ini_dest ? ep_.initiator->name : ep_.target->name;
  Self self = shared_from_this();
  dest.verify(ini_dest ? r_.test_id : tgt_sid_, spec_.message_size, 0, cmdDeadline(),
              [self, who, ini_dest](Result<SideOutcome> o) {
                if (!o.ok()) return self->fail("verify", who, o.status());
                {
                  MutexLock lock(self->mu_);
                  self->addOutcome(ini_dest ? Role::kInitiator : Role::kTarget, *o, true);
                }
                self->checkSealed([self] {
                  UniqueLock lock(self->mu_);
                  std::string why = self->r_.integrity.ok()
                                        ? self->impossibleFigures()
                                        : "data integrity: " + self->r_.integrity.toString();
                  lock.unlock();
                  self->releaseAll("done");
                  self->complete(why.empty() ? TestStatus::kPassed : TestStatus::kFailed, why);
                });
              });
}

}  // namespace pair_test_detail
}  // namespace gdrmesh
