// What a pair test takes from each reply: an endpoint's record, the figures and the integrity
// report as asked, a sealed test's digest, and the protocol violations (docs/results-trust.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/limits.h"
#include "common/pattern.h"
#include "common/sync/mutex.h"
#include "coordinator/orchestrator/pair_test_run.h"

namespace gdrmesh {
namespace pair_test_detail {

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

void PairTestRun::checkSealed(const std::function<void()>& then) {
  UniqueLock lock(mu_);
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
                  MutexLock guard(self->mu_);
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

}  // namespace pair_test_detail
}  // namespace gdrmesh
