#include "coordinator/orchestrator/pair_test.h"

#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "common/capabilities.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/pattern.h"
#include "common/units.h"

namespace gdrmesh {
namespace {

bool hasTransport(const Inventory& inv, TransportKind t) {
  return std::find(inv.transports.begin(), inv.transports.end(), toString(t)) !=
         inv.transports.end();
}

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

bool transientCode(Code c) {
  return c == Code::kUnavailable || c == Code::kDeadlineExceeded || c == Code::kAborted ||
         c == Code::kResourceExhausted;
}

// The state of one running pair test. Owned by the callbacks that are still pending.
class PairTestRun : public std::enable_shared_from_this<PairTestRun> {
 public:
  PairTestRun(PairTestSpec spec, PairEndpoints ep, Clock& clock, PairTestOptions options,
              std::function<void(PairTestOutcome)> done)
      : spec_(std::move(spec)),
        ep_(std::move(ep)),
        clock_(clock),
        options_(std::move(options)),
        done_(std::move(done)) {}

  void begin(std::string test_id, uint64_t seed);

 private:
  using Self = std::shared_ptr<PairTestRun>;
  WorkerChannel& ini() { return *ep_.initiator_channel; }
  WorkerChannel& tgt() { return *ep_.target_channel; }
  Clock::TimePoint cmdDeadline() { return clock_.after(options_.command_timeout_seconds); }
  Clock::TimePoint runDeadline() {
    return clock_.after(spec_.runTimeoutSeconds() + options_.command_timeout_seconds);
  }

  SideSpec sideSpec(Role role) const;
  RunSpec runSpec() const;
  // mu_ held: what a prepared endpoint says about itself, where it fits what was asked.
  void record(Role role, const EndpointDesc& d, EndpointRecord* e);
  const std::string& nameOf(Role role) const {
    return role == Role::kInitiator ? ep_.initiator->name : ep_.target->name;
  }

  // Lean protocol.
  void leanPrepareTarget();
  void leanStart();
  void leanFinish();
  // The target's finish: verify unless READ (the initiator is the destination then).
  FinishCommand finishCommand(double timeout_seconds) const;
  // Three commands (end_signal_): the target's finish rides with its prepare, and its reply
  // and the initiator's start reply may come in either order; the test ends when both have.
  void onStarted(Result<SideOutcome> o);
  void onFinished(Result<SideOutcome> o);
  void leanJoined();
  void leanPassed();
  // Classic protocol.
  void classicPrepare();
  void classicConnect();
  void classicRun();
  void classicVerify();

  // mu_ held: keeps a side's description for the peer and the record.
  void recordPrepared(Role role, const EndpointDesc& d);
  // Classic protocol: one side's reply to a phase sent to both. The last reply fails the test
  // with the first error, or moves on to `next`.
  void joinPhase(const char* phase, Role role, const Status& st, void (PairTestRun::*next)());
  void releaseAll(const std::string& why);
  void fail(const std::string& phase, const std::string& worker, const Status& st);
  void failNow(const std::string& phase, const std::string& worker, const Status& st);
  void complete(TestStatus status, std::string reason, bool transient = false);
  // Subscribes to both workers' loss: a lost worker fails the test at once, naming it, and
  // releases the other side (which may be blocked on the lost peer; a stopped peer keeps its
  // sockets open). Runs the loss inline when a side is lost already.
  void watchLoss();
  void onLost(const std::string& who);
  void setPhase(const char* phase) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = phase;
  }
  // mu_ held: one side's reply. Only what that side was asked counts: integrity from the
  // destination when `verify_asked`, figures from the side that measured (the initiator; the
  // target too in a bidirectional test, for its own direction). Anything else it claims is a
  // protocol violation.
  void addOutcome(Role role, const SideOutcome& o, bool verify_asked);
  // mu_ held: records a protocol violation by `role`'s worker; the test cannot pass.
  void violation(Role role, const std::string& what);
  // mu_ held: a result's reason, the violations (if any) first, then `why`.
  std::string withViolations(const std::string& why);
  // Sealed test: checks the destination's digest against the source's pattern; on a mismatch
  // reveals the seed to the destination so it counts and locates the wrong bytes. Then `then`.
  void checkSealed(const std::function<void()>& then);
  // Rejects figures no link could produce: not finite or negative (any transport); verbs: a
  // direction above the ports' rate (the expected rate of the host's class where the config
  // declares one, else the registered rate), or no rate to bound it by. "" when fine.
  std::string impossibleFigures() const;

  const PairTestSpec spec_;
  PairEndpoints ep_;
  Clock& clock_;
  const PairTestOptions options_;
  std::function<void(PairTestOutcome)> done_;
  std::atomic<bool> finished_{false};

  std::mutex mu_;  // guards everything below (callbacks of the two sides may race)
  TestResult r_;
  TransportKind transport_ = TransportKind::kEmulated;
  EndpointDesc ini_desc_, tgt_desc_;
  bool ini_prepared_ = false, tgt_prepared_ = false;
  double staging_ = 0;
  // Bidirectional test: the target's figures for its own direction (target -> initiator).
  std::optional<Measurement> reverse_;
  // Protocol violations, as "worker W: what"; reported through options_.on_violation.
  std::vector<std::pair<std::string, std::string>> violations_;
  int pending_ = 0;  // classic: replies still expected in the current phase
  Status first_error_;
  std::string first_error_worker_;
  std::string first_error_phase_;
  const char* phase_ = "prepare";  // the phase in flight, for onLost()
  // Held until the test ends; dropped (outside mu_) by complete(), so no loss is heard after.
  std::unique_ptr<LossSubscription> ini_loss_, tgt_loss_;
  // fail(): a transient error waiting lost_grace_seconds for a lost stream to show. A loss
  // heard meanwhile ends the test at once with this error (named after the lost worker).
  struct Grace {
    std::string phase, worker;
    Status status;
  };
  std::optional<Grace> grace_;
  uint64_t seed_ = 1;
  // Both workers signal the end over the data path: three commands per test (see above).
  bool end_signal_ = false;
  std::optional<Result<SideOutcome>> started_, finished_reply_;  // end_signal_: replies so far
  // Sealed test (neither side simulated): each side's own pattern, drawn here; a destination
  // never learns its source's seed before it has reported a digest of what landed.
  bool sealed_ = false;
  uint64_t ini_fill_ = 0, tgt_fill_ = 0;
  // The target's session id: the test id, or "<test id>.target" when both sides are on one
  // worker (a loopback test), since a worker keys its sessions by id.
  std::string tgt_sid_;
  // Phase timings, logged at debug (--log-level debug), or at info when GDRMESH_TRACE_PAIR is
  // set (diagnosis of slow tests).
  std::vector<std::pair<const char*, Clock::TimePoint>> trace_;
  void mark(const char* what) {
    std::lock_guard<std::mutex> lock(mu_);
    trace_.emplace_back(what, clock_.now());
  }
};

// An unknown worker (removed since the plan was made) is offline with no inventory.
std::shared_ptr<const WorkerStatus> orOffline(std::shared_ptr<const WorkerStatus> w,
                                              const std::string& name) {
  if (w) return w;
  auto off = std::make_shared<WorkerStatus>();
  off->name = name;
  off->state = "offline";
  return off;
}

void fillRecord(const WorkerStatus& w, const EndpointSelector& s, EndpointRecord* e) {
  e->worker = w.name;
  e->host = w.inventory.hostname;
  e->nic = s.device;
  e->memory = s.memory;
  e->gpu = s.memory == MemoryKind::kCuda ? std::max(0, s.gpu) : -1;
  if (e->gpu >= 0 && e->gpu < static_cast<int>(w.inventory.gpus.size())) {
    e->gpu_pci = w.inventory.gpus[static_cast<size_t>(e->gpu)].pci_bus_id;
  }
  e->reg_path = s.memory == MemoryKind::kHost && s.reg == RegPath::kAuto ? RegPath::kHost : s.reg;
}

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

void PairTestRun::record(Role role, const EndpointDesc& d, EndpointRecord* e) {
  // The record starts as asked (fillRecord). A side may only say which registration path its
  // worker picked where the request left it open (auto on GPU memory: dmabuf, peermem or
  // staged); memory, a named path and a named NIC are what was asked or a violation, and the
  // record keeps what was asked.
  const EndpointSelector& s = role == Role::kInitiator ? spec_.initiator : spec_.target;
  const RegPath asked =
      s.memory == MemoryKind::kHost && s.reg == RegPath::kAuto ? RegPath::kHost : s.reg;
  const RegPath got = d.reg_path == RegPath::kAuto ? RegPath::kHost : d.reg_path;
  const bool gpu_path =
      got == RegPath::kDmabuf || got == RegPath::kPeermem || got == RegPath::kStaged;
  if (d.memory != s.memory) {
    violation(role, std::string("memory: its endpoint reports ") + toString(d.memory) +
                        " memory, " + toString(s.memory) + " was asked");
  } else if (asked == RegPath::kAuto ? !gpu_path : got != asked) {
    violation(role, std::string("reg_path: its endpoint reports ") + toString(got) + ", " +
                        toString(asked) + " was asked");
  } else {
    e->reg_path = got;
  }
  if (const VerbsDesc* nic = d.nic()) {  // verbs, or the NIC a simulated worker plays
    if (!nic->device.empty()) {
      if (s.device.empty() || nic->device == s.device) {
        e->nic = nic->device;
      } else {
        violation(role, "nic: its endpoint reports " + cleanText(nic->device, 64) + ", " +
                            s.device + " was asked");
      }
    }
    e->port = static_cast<int>(nic->port);
    e->gid_index = nic->gid_index;
  }
  if (!d.topo_class.empty()) e->topo_class = d.topo_class;
  if (!d.gpu_pci.empty()) e->gpu_pci = d.gpu_pci;
  e->cpu_binding = d.cpu_binding;
}

void PairTestRun::begin(std::string test_id, uint64_t seed) {
  ep_.initiator = orOffline(ep_.initiator, spec_.initiator.worker);
  ep_.target = orOffline(ep_.target, spec_.target.worker);
  r_ = startedResult(spec_, ep_, std::move(test_id), clock_.unixMs());
  tgt_sid_ = spec_.initiator.worker == spec_.target.worker ? r_.test_id + ".target" : r_.test_id;
  transport_ = r_.transport;
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
      std::lock_guard<std::mutex> lock(self->mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    c.peer = ini_desc_;
  }
  c.arm = runSpec();
  Self self = shared_from_this();
  auto prepared = [self](Result<EndpointDesc> d) {
    if (!d.ok()) return self->fail("prepare", self->ep_.target->name, d.status());
    self->mark("target prepared+armed");
    {
      std::lock_guard<std::mutex> lock(self->mu_);
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
  c.test_id = r_.test_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
      std::lock_guard<std::mutex> lock(self->mu_);

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
      std::lock_guard<std::mutex> lock(self->mu_);
      self->tgt_prepared_ = false;  // finish releases the target
      self->addOutcome(Role::kTarget, *o, !self->spec_.initiatorIsDestination());
    }
    self->leanPassed();
  });
}

void PairTestRun::leanPassed() {
  Self self = shared_from_this();
  checkSealed([self] {
    std::unique_lock<std::mutex> lock(self->mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    fin = *finished_reply_;
    addOutcome(Role::kInitiator, started_->value(), spec_.initiatorIsDestination());
  }
  if (!fin.ok()) return fail("verify", ep_.target->name, fin.status());
  mark("target finished");
  {
    std::lock_guard<std::mutex> lock(mu_);
    addOutcome(Role::kTarget, *fin, !spec_.initiatorIsDestination());
  }
  leanPassed();
}

void PairTestRun::checkSealed(const std::function<void()>& then) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!sealed_) {
    // Simulated workers: nothing moved, nothing sealed; a digest proves nothing.
    if (r_.integrity.digested) r_.integrity = IntegrityReport{};
    lock.unlock();
    return then();
  }
  if (!r_.integrity.digested) {
    // The destination was never told what should land, so a check it claims to have made
    // (or none) proves nothing: only a digest counts.
    const bool claimed = r_.integrity.checked;
    r_.integrity = IntegrityReport{};
    lock.unlock();
    releaseAll("done");
    return complete(TestStatus::kFailed,
                    std::string("data integrity: the destination reported ") +
                        (claimed ? "a check it could not have made (its seed was withheld)"
                                 : "no digest of the landed data") +
                        "; the result is not trusted (is the worker a current gdrmesh?)");
  }
  const bool ini_dest = spec_.initiatorIsDestination();
  const uint64_t source_seed = ini_dest ? tgt_fill_ : ini_fill_;
  const uint64_t len = r_.integrity.bytes_checked;
  r_.integrity.checked = false;
  if (r_.integrity.digest == digestPattern(source_seed, len)) {
    r_.integrity.checked = true;
    r_.integrity.wrong_bytes = 0;
    r_.integrity.first_wrong_offset = -1;
    lock.unlock();
    return then();
  }
  // What landed is not what was sent: reveal the seed so the destination counts and locates.
  const std::string where = r_.integrity.where;
  lock.unlock();
  auto& dest = ini_dest ? ini() : tgt();
  const std::string sid = ini_dest ? r_.test_id : tgt_sid_;
  const std::string who = ini_dest ? ep_.initiator->name : ep_.target->name;
  Self self = shared_from_this();
  dest.verify(sid, len, source_seed, cmdDeadline(),
              [self, then, who, where, len](Result<SideOutcome> o) {
                {
                  std::lock_guard<std::mutex> guard(self->mu_);
                  IntegrityReport& ir = self->r_.integrity;
                  ir.checked = true;
                  ir.bytes_checked = len;
                  if (o.ok() && o->integrity.checked && o->integrity.wrong_bytes > 0) {
                    ir = o->integrity;
                  } else {
                    // The digest did not match, yet the worker finds nothing wrong (or cannot
                    // say): its digest cannot be trusted, and neither can the data.
                    ir.wrong_bytes = len;
                    ir.first_wrong_offset = 0;
                    ir.where = where + ", digest of " + who + " does not match the data sent" +
                               (o.ok() ? " (yet its check after the reveal found no wrong "
                                         "byte: forged or broken digest)"
                                       : " (reveal failed: " + o.status().message() + ")");
                  }
                }
                then();
              });
}

std::string PairTestRun::impossibleFigures() const {
  // mu_ held.
  char buf[400];
  std::vector<std::pair<const char*, const Measurement*>> dirs;
  if (r_.measurement.has_bandwidth) dirs.emplace_back("", &r_.measurement);
  if (reverse_) dirs.emplace_back(" (target -> initiator)", &*reverse_);
  for (const auto& [dir, m] : dirs) {
    const auto& bw = m->bw;
    for (double v : {bw.avg_gbps, bw.peak_gbps, bw.seconds, bw.msg_rate_mpps}) {
      if (!std::isfinite(v) || v < 0) {
        std::snprintf(buf, sizeof(buf),
                      "impossible figure rejected%s: bandwidth %g Gb/s (peak %g, %g s): a figure "
                      "is negative or not a number",
                      dir, bw.avg_gbps, bw.peak_gbps, bw.seconds);
        return buf;
      }
    }
  }
  if (r_.measurement.has_latency) {
    const auto& l = r_.measurement.lat;
    for (double v : {l.min_us, l.max_us, l.median_us, l.mean_us, l.stdev_us, l.p99_us, l.p999_us}) {
      if (!std::isfinite(v) || v < 0) {
        std::snprintf(buf, sizeof(buf),
                      "impossible figure rejected: latency median %g us (min %g, max %g): a "
                      "figure is negative or not a number",
                      l.median_us, l.min_us, l.max_us);
        return buf;
      }
    }
  }
  if (transport_ != TransportKind::kVerbs || dirs.empty()) return "";
  // The rate one side's NIC can carry: its registered ports' rate, capped by the rate its host
  // class expects (coordinator config). 0: nothing to bound by.
  auto port_rate = [](const WorkerStatus& w, const std::string& nic) {
    double rate = 0;
    bool found = false;
    for (const auto& n : w.inventory.nics) {
      if (!nic.empty() && n.name != nic) continue;
      found = true;
      for (const auto& p : n.ports) {
        if (std::isfinite(p.rate_gbps)) rate = std::max(rate, p.rate_gbps);
      }
    }
    if (w.expected_port_rate_gbps > 0) {
      rate =
          found && rate > 0 ? std::min(rate, w.expected_port_rate_gbps) : w.expected_port_rate_gbps;
    }
    return rate;
  };
  const double ini_rate = port_rate(*ep_.initiator, r_.initiator.nic);
  const double tgt_rate = port_rate(*ep_.target, r_.target.nic);
  const double link = std::min(ini_rate, tgt_rate);
  if (!(link > 0)) {
    const bool ini_unknown = !(ini_rate > 0);
    const WorkerStatus& w = ini_unknown ? *ep_.initiator : *ep_.target;
    const std::string& nic = ini_unknown ? r_.initiator.nic : r_.target.nic;
    return "impossible figure rejected: " + w.name + " registered no port rate for NIC " +
           (nic.empty() ? std::string("(any)") : cleanText(nic, 64)) +
           ", so no figure over it can be bounded (fix: declare the host class's nic_rate_gbps "
           "in the coordinator's config, or check the port with `ibstat`)";
  }
  for (const auto& [dir, m] : dirs) {
    if (m->bw.avg_gbps > link * 1.05) {
      std::snprintf(buf, sizeof(buf),
                    "impossible figure rejected%s: %.1f Gb/s reported, above the ports' rate "
                    "(%.0f Gb/s)",
                    dir, m->bw.avg_gbps, link);
      return buf;
    }
  }
  return "";
}

void PairTestRun::violation(Role role, const std::string& what) {
  // mu_ held.
  violations_.emplace_back(nameOf(role), what);
}

std::string PairTestRun::withViolations(const std::string& why) {
  // mu_ held.
  std::string out;
  for (const auto& [worker, what] : violations_) {
    out += (out.empty() ? "" : "; ") + ("protocol violation by worker " + worker + ": " + what);
  }
  if (out.empty()) return why;
  return why.empty() ? out : out + "; " + why;
}

void PairTestRun::addOutcome(Role role, const SideOutcome& o, bool verify_asked) {
  // mu_ held.
  const bool is_ini = role == Role::kInitiator;
  const Measurement& m = o.measurement;
  if (o.has_measurement && (m.has_bandwidth || m.has_latency)) {
    if (is_ini) {
      r_.measurement = m;
      if (spec_.duration_seconds > 0) r_.iterations = m.iterations;
    } else if (spec_.bidirectional && m.has_bandwidth && !m.has_latency) {
      reverse_ = m;  // its own direction
    } else {
      char buf[64] = "latency";
      if (m.has_bandwidth) std::snprintf(buf, sizeof(buf), "%.1f Gb/s", m.bw.avg_gbps);
      violation(role, std::string("measurement: the target sent figures (") + buf +
                          ") where only the initiator measures; the initiator's are kept");
    }
  }
  if (o.verified) {
    if (verify_asked) {
      r_.integrity = o.integrity;
    } else {
      violation(role,
                std::string("integrity: the ") + (is_ini ? "initiator" : "target") +
                    " sent an integrity report it was not asked for (" +
                    (is_ini == spec_.initiatorIsDestination() ? "its verification was not requested"
                                                              : "it is the source of this test") +
                    "); only the destination's requested report counts");
    }
  }
  if (o.path_mtu > 0 && (is_ini || r_.path_mtu == 0)) r_.path_mtu = static_cast<int>(o.path_mtu);
  // Each side's staging_seconds covers all of its GPU<->host copies (the channel folds a
  // classic run's measurement.staging_seconds into it). Time cannot run backwards.
  if (std::isfinite(o.staging_seconds) && o.staging_seconds >= 0) {
    staging_ += o.staging_seconds;
  } else {
    violation(role, "staging_seconds: " + std::to_string(o.staging_seconds) +
                        " is negative or not a number");
  }
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
  std::unique_lock<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
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
        std::lock_guard<std::mutex> lock(self->mu_);
        self->recordPrepared(role, *d);
      }
      self->joinPhase("prepare", role, d.status(), &PairTestRun::classicConnect);
    });
  }
}

void PairTestRun::classicConnect() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = "connect";
    pending_ = 2;
  }
  Self self = shared_from_this();
  auto on_reply = [self](Role role, Result<SideOutcome> o) {
    if (o.ok() && role == Role::kInitiator) {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->r_.path_mtu = static_cast<int>(o->path_mtu);
    }
    self->joinPhase("connect", role, o.status(), &PairTestRun::classicRun);
  };
  tgt().connect(tgt_sid_, ini_desc_, cmdDeadline(),
                [on_reply](Result<SideOutcome> o) { on_reply(Role::kTarget, std::move(o)); });
  ini().connect(r_.test_id, tgt_desc_, cmdDeadline(),
                [on_reply](Result<SideOutcome> o) { on_reply(Role::kInitiator, std::move(o)); });
}

void PairTestRun::classicRun() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = "run";
    pending_ = 2;
  }
  Self self = shared_from_this();
  auto on_reply = [self](Role role, Result<SideOutcome> o) {
    const bool is_ini = role == Role::kInitiator;
    bool abort_other = false;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      if (o.ok()) {
        self->addOutcome(role, *o, false);  // a run verifies nothing
      } else {
        // The first side to fail aborts the other at once instead of waiting out its run.
        abort_other = self->first_error_.ok() && self->pending_ > 1;
      }
    }
    if (abort_other) {
      auto& other = is_ini ? self->tgt() : self->ini();
      other.release(is_ini ? self->tgt_sid_ : self->r_.test_id, "peer failed", self->cmdDeadline(),
                    [](const Result<bool>&) {});
    }
    self->joinPhase("run", role, o.status(), &PairTestRun::classicVerify);
  };
  RunSpec rs = runSpec();
  tgt().run(tgt_sid_, rs, runDeadline(),
            [on_reply](Result<SideOutcome> o) { on_reply(Role::kTarget, std::move(o)); });
  ini().run(r_.test_id, rs, runDeadline(),
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
                  std::lock_guard<std::mutex> lock(self->mu_);
                  self->addOutcome(ini_dest ? Role::kInitiator : Role::kTarget, *o, true);
                }
                self->checkSealed([self] {
                  std::unique_lock<std::mutex> lock(self->mu_);
                  std::string why = self->r_.integrity.ok()
                                        ? self->impossibleFigures()
                                        : "data integrity: " + self->r_.integrity.toString();
                  lock.unlock();
                  self->releaseAll("done");
                  self->complete(why.empty() ? TestStatus::kPassed : TestStatus::kFailed, why);
                });
              });
}

// ------------------------------------------------------------------ endings

void PairTestRun::releaseAll(const std::string& why) {
  bool ini_p, tgt_p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ini_p = ini_prepared_;
    tgt_p = tgt_prepared_;
    ini_prepared_ = tgt_prepared_ = false;
  }
  // Fire and forget: the result does not wait for the releases.
  if (tgt_p) tgt().release(tgt_sid_, why, cmdDeadline(), [](const Result<bool>&) {});
  if (ini_p) ini().release(r_.test_id, why, cmdDeadline(), [](const Result<bool>&) {});
}

void PairTestRun::fail(const std::string& phase, const std::string& worker, const Status& st) {
  // A transport error is often the echo of a peer that died: give a lost stream a moment to
  // show, and name the lost worker first.
  if (transientCode(st.code()) && !ini().lost() && !tgt().lost() &&
      options_.lost_grace_seconds > 0) {
    releaseAll(phase + " failed");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!grace_) grace_ = Grace{phase, worker, st};
    }
    Self self = shared_from_this();
    clock_.schedule(clock_.after(options_.lost_grace_seconds),
                    [self, phase, worker, st] { self->failNow(phase, worker, st); });
    return;
  }
  failNow(phase, worker, st);
}

void PairTestRun::failNow(const std::string& phase, const std::string& worker, const Status& st) {
  releaseAll(phase + " failed");
  std::string reason;
  bool lost = false;
  for (const auto* ch : {&ep_.target_channel, &ep_.initiator_channel}) {
    if ((*ch)->lost()) {
      reason += "worker lost: " + (*ch)->worker() + " disconnected during " + phase + "; ";
      lost = true;
    }
  }
  reason += phase + " on " + worker + ": " + st.message();
  if (!st.fix().empty()) reason += " (fix: " + st.fix() + ")";
  TestStatus status =
      st.code() == Code::kUnimplemented ? TestStatus::kSkipped : TestStatus::kFailed;
  complete(status, reason, lost || transientCode(st.code()));
}

void PairTestRun::watchLoss() {
  std::weak_ptr<PairTestRun> weak = weak_from_this();
  auto subscribe = [&weak](WorkerChannel& ch) {
    return ch.onLost([weak, who = ch.worker()](const std::string&) {
      // The subscription holds no reference: a test that has ended (and dropped it) is gone.
      if (auto self = weak.lock()) self->onLost(who);
    });
  };
  auto ini_sub = subscribe(ini());
  auto tgt_sub = subscribe(tgt());
  std::unique_lock<std::mutex> lock(mu_);
  // complete() sets finished_ before it takes the subscriptions under mu_: either it finds
  // them here, or they are dropped now (outside the lock: an unsubscriber may wait).
  if (finished_.load()) {
    lock.unlock();
    return;
  }
  ini_loss_ = std::move(ini_sub);
  tgt_loss_ = std::move(tgt_sub);
}

void PairTestRun::onLost(const std::string& who) {
  if (finished_.load()) return;
  std::string phase;
  std::optional<Grace> grace;
  {
    std::lock_guard<std::mutex> lock(mu_);
    phase = phase_;
    grace = grace_;
  }
  // Waiting out a transient error's grace: that error, now that the loss has shown.
  if (grace) return failNow(grace->phase, grace->worker, grace->status);
  failNow(phase, who,
          unavailable("worker " + who + " stopped answering (stream closed or heartbeats missed)",
                      "check that worker's host and process (`gdrmesh workers`)"));
}

void PairTestRun::complete(TestStatus status, std::string reason, bool transient) {
  if (finished_.exchange(true)) return;
  PairTestOutcome out;
  std::unique_ptr<LossSubscription> ini_loss, tgt_loss;
  std::vector<std::pair<std::string, std::string>> violations;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ini_loss = std::move(ini_loss_);
    tgt_loss = std::move(tgt_loss_);
    violations = violations_;
    if (!violations_.empty()) {
      // A reply that claimed what it was not asked: the test cannot pass, whatever else it saw.
      if (status != TestStatus::kFailed && status != TestStatus::kError) {
        status = TestStatus::kFailed;
        transient = false;
      }
      reason = withViolations(reason);
    }
    if (reverse_ && r_.measurement.has_bandwidth) {
      // Bidirectional: both directions together, each as its sender measured it.
      auto& bw = r_.measurement.bw;
      const auto& rev = reverse_->bw;
      bw.bytes += rev.bytes;
      bw.messages += rev.messages;
      bw.seconds = std::max(bw.seconds, rev.seconds);
      bw.avg_gbps += rev.avg_gbps;
      bw.peak_gbps += rev.peak_gbps;
      bw.msg_rate_mpps += rev.msg_rate_mpps;
    }
    if (staging_ > 0 && r_.measurement.has_bandwidth) {
      // Staged path: the host<->GPU copies are part of the transfer time.
      r_.measurement.staging_seconds = staging_;
      auto& bw = r_.measurement.bw;
      bw = bandwidthFromTotals(bw.bytes, bw.messages, bw.seconds + staging_);
    }
    r_.status = status;
    r_.reason = std::move(reason);
    r_.finished_ms = clock_.unixMs();
    out.result = r_;
  }
  out.transient = transient;
  static const bool kTrace = std::getenv("GDRMESH_TRACE_PAIR") != nullptr;
  if (kTrace || logEnabled(LogLevel::kDebug)) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string line = "pair " + r_.test_id + ":";
    for (size_t i = 1; i < trace_.size(); ++i) {
      line += " " + std::string(trace_[i].first) + " +" +
              std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                 trace_[i].second - trace_[i - 1].second)
                                 .count()) +
              "us";
    }
    if (!trace_.empty()) {
      line += " end +" +
              std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                 clock_.now() - trace_.back().second)
                                 .count()) +
              "us";
    }
    ComponentLog("coordinator", &clock_)
        .at(kTrace ? LogLevel::kInfo : LogLevel::kDebug, line,
            {{"test", r_.test_id}, {"sweep", r_.run_id}});
  }
  // Unsubscribed before the result leaves: no loss is heard once the test has ended (a
  // callback running on another thread now is waited for; it finds finished_ set).
  ini_loss.reset();
  tgt_loss.reset();
  if (options_.on_violation) {
    for (const auto& [worker, what] : violations) options_.on_violation(worker, what);
  }
  auto done = std::move(done_);
  done(std::move(out));
}

}  // namespace

TestResult startedResult(const PairTestSpec& spec, const PairEndpoints& endpoints,
                         std::string test_id, int64_t started_ms) {
  TestResult r;
  r.test_id = std::move(test_id);
  r.run_id = spec.run_id;
  r.started_ms = started_ms;
  r.op = spec.op;
  r.mode = spec.mode;
  r.message_size = spec.message_size;
  r.iterations = spec.iterations;
  r.num_qps = spec.num_qps;
  const auto ini = orOffline(endpoints.initiator, spec.initiator.worker);
  const auto tgt = orOffline(endpoints.target, spec.target.worker);
  fillRecord(*ini, spec.initiator, &r.initiator);
  fillRecord(*tgt, spec.target, &r.target);
  r.transport = chooseTransport(spec, ini->inventory, tgt->inventory)
                    .value_or(spec.transport.value_or(TransportKind::kEmulated));
  return r;
}

Status checkPairAgainstInventory(const PairTestSpec& spec, const WorkerStatus& initiator,
                                 const WorkerStatus& target) {
  auto side = [&](const EndpointSelector& s, const WorkerStatus& w, const std::string& f) {
    if (!s.device.empty()) {
      std::string names;
      bool found = false;
      for (const auto& n : w.inventory.nics) {
        names += (names.empty() ? "" : ", ") + n.name;
        if (n.name == s.device) found = true;
      }
      if (!found && !w.simulated) {
        return notFound(f + ": worker '" + w.name + "' has no RDMA device '" + s.device +
                            "' (has: " + (names.empty() ? "none" : names) + ")",
                        "run `gdrmesh workers` to see each worker's NICs");
      }
    }
    if (s.memory == MemoryKind::kCuda) {
      const int n = static_cast<int>(w.inventory.gpus.size());
      // No GPU at all is a state of the host, reported as a SKIPPED result.
      if (n > 0 && s.gpu >= n) {
        return notFound(f + ": gpu " + std::to_string(s.gpu) + " not on worker '" + w.name +
                            "' (has 0.." + std::to_string(n - 1) + ")",
                        "pick a GPU index from `gdrmesh workers`");
      }
    }
    return Status();
  };
  GDR_RETURN_IF_ERROR(side(spec.initiator, initiator, "initiator"));
  GDR_RETURN_IF_ERROR(side(spec.target, target, "target"));
  // Capabilities before operations: a side no transport of its worker can serve is refused
  // here, before either worker is contacted.
  GDR_RETURN_IF_ERROR(checkCapabilities(spec, initiator, target));
  auto t = chooseTransport(spec, initiator.inventory, target.inventory);
  if (t) GDR_RETURN_IF_ERROR(checkTransportOptions(spec, *t));
  return {};
}

std::optional<TransportKind> chooseTransport(const PairTestSpec& spec, const Inventory& initiator,
                                             const Inventory& target) {
  if (spec.transport) return spec.transport;
  // The preferred transport that serves both sides (capabilities), else the preferred one both
  // have (the run then reports what it could not do).
  const auto a = transportsServing(initiator, spec, Role::kInitiator);
  const auto b = transportsServing(target, spec, Role::kTarget);
  for (TransportKind t : a) {
    if (std::find(b.begin(), b.end(), t) != b.end()) return t;
  }
  for (TransportKind t :
       {TransportKind::kVerbs, TransportKind::kSimulated, TransportKind::kEmulated}) {
    if (hasTransport(initiator, t) && hasTransport(target, t)) return t;
  }
  return std::nullopt;
}

void runPairTest(const PairTestSpec& spec, const PairEndpoints& endpoints, Clock& clock,
                 const PairTestOptions& options, std::string test_id, uint64_t seed,
                 std::function<void(PairTestOutcome)> done) {
  auto run = std::make_shared<PairTestRun>(spec, endpoints, clock, options, std::move(done));
  run->begin(std::move(test_id), seed);
}

std::string newTestId(int64_t unix_ms) {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  uint32_t r;
  {
    std::lock_guard<std::mutex> lock(mu);
    r = static_cast<uint32_t>(rng());
  }
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", r);
  std::string compact;
  for (char c : formatRfc3339(unix_ms).substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return "t-" + compact + "-" + buf;
}

uint64_t newSeed() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  uint64_t s = rng();
  return s == 0 ? 1 : s;
}

}  // namespace gdrmesh
