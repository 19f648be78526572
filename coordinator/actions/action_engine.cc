#include "coordinator/actions/action_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace gdrmesh {

const char* toString(MarkOwner o) {
  switch (o) {
    case MarkOwner::kNone:
      return "none";
    case MarkOwner::kGdrmesh:
      return "gdrmesh";
    case MarkOwner::kOther:
      return "other";
  }
  return "none";
}

std::string gdrmeshReason(const MarkRequest& request) {
  std::string r = std::string(kGdrmeshReasonPrefix) + " " + request.reason;
  if (!request.sweep_id.empty()) r += " (sweep " + request.sweep_id + ")";
  return r;
}

namespace {

// The host a suspect's name names: "h3" for a host, "h3" of "h3/mlx5_1" for a NIC.
std::string actionHostOf(const Suspect& s) {
  if (s.kind == "nic") return s.name.substr(0, s.name.find('/'));
  return s.name;
}

// Both hosts of a link suspect ("h1/mlx5_0<->h3/mlx5_0").
std::vector<std::string> actionLinkHosts(const std::string& name) {
  std::vector<std::string> out;
  const size_t arrow = name.find("<->");
  if (arrow == std::string::npos) return out;
  for (const std::string& end : {name.substr(0, arrow), name.substr(arrow + 3)}) {
    out.push_back(end.substr(0, end.find('/')));
  }
  return out;
}

std::string actionReasonOf(const Suspect& s) {
  std::string r = s.kind + " suspect";
  if (s.kind == "nic") r += " " + s.name.substr(s.name.find('/') + 1);
  if (!s.evidence.empty()) {
    std::string e = s.evidence.front();
    if (e.size() > 160) e = e.substr(0, 157) + "...";
    r += ": " + e;
  }
  return r;
}

}  // namespace

ActionEngine::ActionEngine(ActionOptions options, Actuator& actuator, ActionStore& store,
                           Clock& clock, Logger log)
    : options_(std::move(options)),
      actuator_(actuator),
      store_(store),
      clock_(clock),
      log_(std::move(log)) {}

void ActionEngine::say(LogLevel level, const std::string& line, LogFields fields) const {
  if (log_) {
    log_(line);
    return;
  }
  ComponentLog("coordinator", &clock_).at(level, line, std::move(fields));
}

std::vector<ActionEngine::Target> ActionEngine::targetsOf(const SweepEnding& end) {
  std::vector<Target> out;
  if (end.state != SweepState::kFinished) return out;
  for (const Suspect& s : end.suspects) {
    if (s.kind == "threshold") return {};
  }
  const std::set<std::string> hosts(end.hosts.begin(), end.hosts.end());
  std::set<std::string> seen;
  for (const Suspect& s : end.suspects) {
    if (s.kind != "host" && s.kind != "nic") continue;
    std::string node = actionHostOf(s);
    if (!hosts.count(node) || !seen.insert(node).second) continue;
    out.push_back({std::move(node), actionReasonOf(s)});
  }
  return out;
}

std::set<std::string> ActionEngine::passedOf(const SweepEnding& end) {
  std::set<std::string> out;
  if (end.state != SweepState::kFinished) return out;
  std::set<std::string> named;
  for (const Suspect& s : end.suspects) {
    if (s.kind == "threshold") return {};
    if (s.kind == "link") {
      for (auto& h : actionLinkHosts(s.name)) named.insert(std::move(h));
    } else {
      named.insert(actionHostOf(s));
    }
  }
  for (const std::string& h : end.hosts) {
    if (end.passing.count(h) && !named.count(h)) out.insert(h);
  }
  return out;
}

Result<bool> ActionEngine::held(const std::string& node) {
  ActionQuery q;
  q.node = node;
  q.limit = 500;
  GDR_ASSIGN_OR_RETURN(auto records, store_.listActions(q));
  const bool dry = options_.mode == ActionOptions::Mode::kDryRun;
  for (const ActionRecord& r : records) {  // newest first
    const bool counted = r.outcome == "taken" || (dry && r.outcome == "dry-run");
    if (r.action == "resume" && (counted || r.outcome == "skipped")) return false;
    if (r.action == "drain" && counted) return true;
  }
  return false;
}

std::string ActionEngine::record(const std::string& sweep_id, const std::string& node,
                                 const std::string& action, const std::string& outcome,
                                 const std::string& reason, const std::string& detail) {
  ActionRecord r;
  r.recorded_ms = clock_.unixMs();
  r.sweep_id = sweep_id;
  r.node = node;
  r.action = action;
  r.outcome = outcome;
  r.actuator = actuator_.name();
  r.reason = reason;
  r.detail = detail;
  std::string line = "action " + action + " " + node + ": " + outcome + " (" + actuator_.name() +
                     (detail.empty() ? "" : "; " + detail) + ")";
  auto stored = store_.recordAction(r);
  if (!stored.ok()) {
    line += " [not recorded: " + stored.status().toString() + "]";
  }
  const bool trouble = outcome == "failed" || outcome == "refused" || !stored.ok();
  say(trouble ? LogLevel::kWarn : LogLevel::kInfo, line,
      {{"sweep", sweep_id},
       {"host", node},
       {"action", action},
       {"outcome", outcome},
       {"actuator", actuator_.name()}});
  return line;
}

std::vector<std::string> ActionEngine::onSweepEnd(const SweepEnding& end) {
  std::vector<std::string> lines;
  if (options_.mode == ActionOptions::Mode::kOff) return lines;
  if (end.state != SweepState::kFinished) {
    say(LogLevel::kInfo,
        "actions: sweep " + end.sweep_id + " " + toString(end.state) + ": no action taken",
        {{"sweep", end.sweep_id}});
    return lines;
  }
  for (const Suspect& s : end.suspects) {
    if (s.kind == "threshold") {
      lines.push_back(
          "actions: none (a threshold suspect: the whole fleet misses a rule, not one host)");
      say(LogLevel::kInfo, lines.back(), {{"sweep", end.sweep_id}});
      return lines;
    }
  }
  const std::vector<MarkRequest> to_mark = drainsToMark(end, &lines);
  if (!to_mark.empty()) drainAll(end, to_mark, &lines);
  resumePassed(end, &lines);
  return lines;
}

std::vector<MarkRequest> ActionEngine::drainsToMark(const SweepEnding& end,
                                                    std::vector<std::string>* lines) {
  const bool dry = options_.mode == ActionOptions::Mode::kDryRun;
  // Drains: suspects that nobody holds out yet.
  std::vector<MarkRequest> to_mark;
  for (const Target& t : targetsOf(end)) {
    MarkRequest req{t.node, t.reason, end.sweep_id};
    const std::string reason = gdrmeshReason(req);
    auto mark = actuator_.inspect(t.node);
    if (!mark.ok()) {
      lines->push_back(record(end.sweep_id, t.node, "drain", "failed", reason,
                              "cannot read the node: " + mark.status().toString()));
      continue;
    }
    if (mark->owner == MarkOwner::kOther) {
      lines->push_back(
          record(end.sweep_id, t.node, "drain", "skipped", reason,
                 "already out of service by someone else, left alone: " + mark->detail));
      continue;
    }
    if (mark->owner == MarkOwner::kGdrmesh) continue;  // still drained by an earlier sweep
    if (dry) {
      auto h = held(t.node);
      if (h.ok() && *h) continue;  // its dry-run drain is on record already
    }
    to_mark.push_back(std::move(req));
  }
  return to_mark;
}

std::string ActionEngine::breakerRefusal(const SweepEnding& end,
                                         const std::vector<MarkRequest>& to_mark) {
  const bool dry = options_.mode == ActionOptions::Mode::kDryRun;
  const auto window_ms = static_cast<int64_t>(std::llround(options_.window_seconds * 1000));
  ActionQuery q;
  q.since_ms = clock_.unixMs() - window_ms;
  q.limit = 0;
  std::set<std::string> recent;
  auto records = store_.listActions(q);
  if (records.ok()) {
    for (const ActionRecord& r : *records) {
      if (r.action == "drain" && (r.outcome == "taken" || (dry && r.outcome == "dry-run"))) {
        recent.insert(r.node);
      }
    }
  }
  std::set<std::string> after = recent;
  for (const MarkRequest& m : to_mark) after.insert(m.node);
  // A share of the cluster: a sweep over a few of its hosts (one rack, one node's check) may
  // drain as many as a sweep over all of them.
  const size_t cluster = std::max(end.cluster_hosts, end.hosts.size());
  const auto limit =
      static_cast<size_t>(std::floor(options_.max_share * static_cast<double>(cluster) + 1e-9));
  std::string refused;
  if (!records.ok()) {
    refused = "circuit breaker: cannot read the recent actions (" + records.status().toString() +
              "), so none is taken";
  } else if (after.size() > limit) {
    char share[32];
    std::snprintf(share, sizeof(share), "%g %%", options_.max_share * 100);
    refused = "circuit breaker: " + std::to_string(after.size()) + " nodes drained within " +
              std::to_string(static_cast<long long>(options_.window_seconds)) +
              " s would exceed max_share " + share + " of the cluster's " +
              std::to_string(cluster) + " hosts (at most " + std::to_string(limit) + "; " +
              std::to_string(recent.size()) +
              " already); check the fabric (a spine or switch?) before draining by hand";
  }
  return refused;
}

void ActionEngine::drainAll(const SweepEnding& end, const std::vector<MarkRequest>& to_mark,
                            std::vector<std::string>* lines) {
  const bool dry = options_.mode == ActionOptions::Mode::kDryRun;
  const std::string taken = dry ? "dry-run" : "taken";
  // The circuit breaker.
  const std::string refused = breakerRefusal(end, to_mark);
  for (const MarkRequest& m : to_mark) {
    const std::string reason = gdrmeshReason(m);
    if (!refused.empty()) {
      lines->push_back(record(end.sweep_id, m.node, "drain", "refused", reason, refused));
      continue;
    }
    if (dry) {
      lines->push_back(record(end.sweep_id, m.node, "drain", taken, reason,
                              "would run: " + actuator_.describeMark(m)));
      continue;
    }
    Status st = actuator_.mark(m);
    lines->push_back(record(end.sweep_id, m.node, "drain", st.ok() ? "taken" : "failed", reason,
                            st.ok() ? actuator_.describeMark(m) : st.toString()));
  }
}

void ActionEngine::resumePassed(const SweepEnding& end, std::vector<std::string>* lines) {
  const bool dry = options_.mode == ActionOptions::Mode::kDryRun;
  const std::string taken = dry ? "dry-run" : "taken";
  // Resumes: hosts that passed and that gdrmesh holds out.
  for (const std::string& node : passedOf(end)) {
    auto h = held(node);
    if (!h.ok() || !*h) continue;
    auto mark = actuator_.inspect(node);
    if (!mark.ok()) {
      lines->push_back(record(end.sweep_id, node, "resume", "failed", "",
                              "cannot read the node: " + mark.status().toString()));
      continue;
    }
    if (mark->owner == MarkOwner::kOther) {
      lines->push_back(record(end.sweep_id, node, "resume", "skipped", "",
                              "out of service by someone else now, left alone: " + mark->detail));
      continue;
    }
    if (dry) {
      lines->push_back(record(end.sweep_id, node, "resume", taken, "",
                              "would run: " + actuator_.describeClear(node)));
      continue;
    }
    if (mark->owner == MarkOwner::kNone) {
      lines->push_back(record(end.sweep_id, node, "resume", "skipped", "",
                              "already back in service (resumed by someone): " + mark->detail));
      continue;
    }
    Status st = actuator_.clear(node);
    lines->push_back(record(end.sweep_id, node, "resume", st.ok() ? "taken" : "failed", "",
                            st.ok() ? actuator_.describeClear(node) : st.toString()));
  }
}

}  // namespace gdrmesh
