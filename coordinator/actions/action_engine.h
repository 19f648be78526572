// Acting on verdicts: at the end of each finished sweep, the hosts its suspects name are taken
// out of service through an Actuator (Slurm drain, Kubernetes taint), and hosts that gdrmesh
// took out are put back once a later sweep passes them. Never a node someone else took out:
// such a node is left alone, and a node whose mark changed hands since is forgotten.
//
//   - Which hosts: `host` suspects and the host of a `nic` suspect. `link` suspects name a
//     pair, not a host (either end may be at fault); a `threshold` suspect means the whole
//     fleet misses a rule, so the sweep acts on nobody. Cancelled or interrupted sweeps act on
//     nobody.
//   - Passed: a host of the sweep with a PASS verdict that no suspect names (a link suspect
//     names both of its ends).
//   - The circuit breaker: the nodes drained within the window (this sweep's included) may be
//     at most floor(max_share x the cluster's hosts: SweepEnding::cluster_hosts, every worker
//     the coordinator knows). A sweep whose drains would go beyond that
//     drains none of them (all refused, each recorded): a broken spine makes many suspects at
//     once, and draining an arbitrary half of them is no better. Resumes are never refused.
//   - Dry-run records and logs every decision with what would have run; its breaker counts
//     the dry-run drains, so it shows what "on" would have done.
//   - Every decision (taken, dry-run, refused, failed, skipped) is an ActionRecord in the
//     store, is logged, and is returned as a line for the sweep's notes (`gdrmesh sweep show`).
//
// Thread contract: onSweepEnd() is called from one thread at a time.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "coordinator/actions/action_options.h"
#include "coordinator/actions/actuator.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "coordinator/store/store.h"

namespace gdrmesh {

class ActionEngine {
 public:
  using Logger = std::function<void(const std::string& line)>;
  // `log` gets one line per decision (the coordinator's log, common/log.h, when empty).
  ActionEngine(ActionOptions options, Actuator& actuator, ActionStore& store, Clock& clock,
               Logger log = {});

  // Decides, acts and records; returns one line per decision, for the sweep's notes.
  std::vector<std::string> onSweepEnd(const SweepEnding& end);

  // The hosts of `end` to take out, in rank order, with the reason for each.
  struct Target {
    std::string node;
    std::string reason;
  };
  static std::vector<Target> targetsOf(const SweepEnding& end);
  // The hosts of `end` that passed (see above).
  static std::set<std::string> passedOf(const SweepEnding& end);

 private:
  // Whether gdrmesh holds `node` out, by its records (dry-run ones too in dry-run mode).
  Result<bool> held(const std::string& node);
  // Logs one line: to log_ when given, else to the coordinator's log with its fields.
  void say(LogLevel level, const std::string& line, LogFields fields) const;
  // Records, logs and returns the line.
  std::string record(const std::string& sweep_id, const std::string& node,
                     const std::string& action, const std::string& outcome,
                     const std::string& reason, const std::string& detail);
  // onSweepEnd's steps, each appending its decisions' lines to `lines`.
  // The drains the sweep's targets ask for: those nobody holds out yet (a node already out, or
  // one that cannot be read, is recorded instead).
  std::vector<MarkRequest> drainsToMark(const SweepEnding& end, std::vector<std::string>* lines);
  // The circuit breaker: why draining `to_mark` now is refused; "" when it is not.
  std::string breakerRefusal(const SweepEnding& end, const std::vector<MarkRequest>& to_mark);
  // Drains `to_mark` (dry-run: records what would run), or records each refused by the breaker.
  void drainAll(const SweepEnding& end, const std::vector<MarkRequest>& to_mark,
                std::vector<std::string>* lines);
  // Resumes the hosts that passed and that gdrmesh holds out.
  void resumePassed(const SweepEnding& end, std::vector<std::string>* lines);

  const ActionOptions options_;
  Actuator& actuator_;
  ActionStore& store_;
  Clock& clock_;
  Logger log_;
};

}  // namespace gdrmesh
