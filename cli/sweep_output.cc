// The sweep commands' output: progress lines, reports, lists of sweeps and schedules,
// comparisons, node actions; tables and CSV from domain types, JSON from the shared encoding
// (coordinator/encoding/sweep_json.h).
#include "cli/sweep_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "cli/output.h"
#include "common/fabric/counters.h"
#include "common/fabric/fabric.h"
#include "common/limits.h"
#include "common/units.h"

namespace gdrmesh::cli {

std::string formatElapsed(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "-";
  auto total = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  if (total < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(total));
  } else if (total < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(total / 3600),
                  static_cast<long long>((total % 3600) / 60));
  }
  return buf;
}

std::string testCountsText(const SweepProgress& p) {
  const uint32_t verified = p.tests_done >= p.tests_failed + p.tests_skipped
                                ? p.tests_done - p.tests_failed - p.tests_skipped
                                : 0;
  return std::to_string(p.tests_done) + "/" + std::to_string(p.tests_total) +
         " ran: " + std::to_string(verified) + " data verified, " + std::to_string(p.tests_failed) +
         " not verified, " + std::to_string(p.tests_skipped) + " skipped";
}

std::string verdictCountsText(uint64_t pass, uint64_t fail, uint64_t skip) {
  return std::to_string(pass) + " PASS, " + std::to_string(fail) + " FAIL, " +
         std::to_string(skip) + " SKIP";
}

std::string progressLine(const SweepProgress& p) {
  std::string s = "sweep " + p.id + " " + toString(p.state) + "  " + std::to_string(p.tests_done) +
                  "/" + std::to_string(p.tests_total) + " ran  " + std::to_string(p.tests_failed) +
                  " not verified";
  if (p.tests_skipped > 0) s += "  " + std::to_string(p.tests_skipped) + " skipped";
  if (p.retests > 0) s += "  " + std::to_string(p.retests) + " retests";
  s += "  elapsed " + formatElapsed(p.elapsed_seconds);
  if ((p.state == SweepState::kRunning || p.state == SweepState::kQueued) && p.eta_seconds >= 0) {
    s += "  ETA " + formatElapsed(p.eta_seconds);
  }
  if (!p.verdict.empty()) s += "  verdict " + p.verdict;
  if (!p.reason.empty() && p.state != SweepState::kRunning) s += "  (" + p.reason + ")";
  return s;
}

bool ProgressThrottle::shouldPrint(const SweepProgress& p) {
  int bucket = p.tests_total == 0
                   ? 0
                   : static_cast<int>(uint64_t{p.tests_done} * 20 / uint64_t{p.tests_total});
  bool print = toString(p.state) != last_state_ || bucket > last_bucket_;
  last_state_ = toString(p.state);
  if (bucket > last_bucket_) last_bucket_ = bucket;
  return print;
}

namespace {

std::string sweepJoined(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string sweepWhen(int64_t ms) {
  return ms > 0 ? formatRfc3339(ms).substr(0, 19) + "Z" : "-";
}

std::string selectorText(const EndpointSelector& e) {
  if (e.memory != MemoryKind::kCuda) return "host";
  return "cuda gpu" + std::to_string(e.gpu < 0 ? 0 : e.gpu) + " (" + toString(e.reg) + ")";
}

std::string partTestText(const SweepSpec& s) {
  const auto& t = s.test;
  std::string sizes;
  for (uint64_t z : s.sizes) sizes += (sizes.empty() ? "" : ",") + formatSize(z);
  if (sizes.empty()) sizes = formatSize(t.message_size > 0 ? t.message_size : kDefaultMessageSize);
  return std::string(toString(t.op)) + " " + toString(t.mode) + (t.bidirectional ? " bidir" : "") +
         " " + sizes;
}

std::string partRunText(const PairTestSpec& t) {
  if (t.duration_seconds > 0) return fmt(t.duration_seconds, 1) + " s";
  return std::to_string(t.iterations > 0 ? t.iterations : kDefaultIterations) + " iters";
}

}  // namespace

std::string sweepPartsText(const SweepReportData& r) {
  // A plain sweep's one part is its own spec, which the summary already shows.
  if (r.parts.empty() || (r.parts.size() == 1 && !r.spec.pattern_from_config)) return "";
  std::vector<std::vector<std::string>> t{
      {"#", "PATTERN", "DIRECTION", "TEST", "RUN", "MEMORY", "TESTS"}};
  for (const auto& part : r.parts) {
    const auto& s = part.spec;
    t.push_back({std::to_string(part.index + 1), s.pattern_from_config ? "-" : toString(s.pattern),
                 toString(s.direction), partTestText(s), partRunText(s.test),
                 selectorText(s.test.initiator) + " -> " + selectorText(s.test.target),
                 part.planned_known ? std::to_string(part.planned) : "?"});
  }
  std::string out = "\nwhat ran: the config's " + std::to_string(r.parts.size()) + " sweeps\n";
  return out + renderTable(t);
}

std::string figureSummaryText(const SweepReportData& r) {
  if (r.figures.empty()) return "";
  std::vector<std::vector<std::string>> t{
      {"OP", "MODE", "SIZE", "PAIRS", "MIN", "MEDIAN", "MAX", "WORST PAIRS", "WORST HOSTS"}};
  for (const auto& f : r.figures) {
    const int digits = 2;
    std::string worst, hosts;
    for (const auto& w : f.worst) {
      worst += (worst.empty() ? "" : ", ") + w.src + "->" + w.dst + " " + fmt(w.value, digits);
    }
    for (const auto& h : f.worst_hosts) {
      hosts += (hosts.empty() ? "" : ", ") + h.host + " " + fmt(h.median, digits);
    }
    t.push_back({toString(f.op), toString(f.mode), formatSize(f.message_size),
                 std::to_string(f.pairs), fmt(f.min, digits) + " " + f.unit,
                 fmt(f.median, digits) + " " + f.unit, fmt(f.max, digits) + " " + f.unit,
                 worst.empty() ? "-" : worst, hosts.empty() ? "-" : hosts});
  }
  return "\nfigures over pairs (Gb/s: higher is better; us: median latency, lower is better; "
         "worst first)\n" +
         renderTable(t);
}

namespace {

// The links' verdicts of a sweep on a fabric: those that fail it always, the rest with `all`.
std::string linkVerdictsText(const SweepReportData& r, bool all) {
  if (r.links.empty()) return "";
  std::vector<const LinkVerdictRecord*> ranked;
  for (const auto& l : r.links) ranked.push_back(&l);
  // Worst first; the report keeps them by name, and so does each verdict here.
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
    return fabric::linkVerdictSeverity(a->verdict) > fabric::linkVerdictSeverity(b->verdict);
  });
  size_t failing = 0, not_covered = 0, ok = 0;
  std::vector<std::vector<std::string>> t{{"VERDICT", "LINK", "ENDS", "EVIDENCE"}};
  for (const auto* l : ranked) {
    const bool fails = fabric::linkVerdictFails(l->verdict);
    failing += fails ? 1 : 0;
    not_covered += l->verdict == fabric::kLinkNotCovered ? 1 : 0;
    ok += l->verdict == fabric::kLinkOk ? 1 : 0;
    if (!fails && !all) continue;
    t.push_back({l->verdict, l->link,
                 l->switch_name + " port " + std::to_string(l->port) + " (" +
                     fabric::guidHex(l->switch_guid) + ") <-> " + l->remote_name + " port " +
                     std::to_string(l->remote_port) + " (" + fabric::guidHex(l->remote_guid) + ")",
                 l->evidence.empty() ? "-" : sweepJoined(l->evidence, "; ")});
  }
  std::ostringstream o;
  o << "\nlinks (" << r.links.size() << ": " << failing << " not ok, " << ok << " ok, "
    << not_covered << " not covered; worst first)\n";
  if (t.size() > 1) o << renderTable(t);
  if (!all && failing < r.links.size()) {
    o << "(the " << (ok + not_covered) << " ok and not covered links: --verdicts all lists them)\n";
  }
  return o.str();
}

}  // namespace

std::string sweepReportText(const SweepReportData& r, const ReportOptions& opts) {
  const auto& p = r.progress;
  std::ostringstream o;
  o << "sweep     " << p.id << "  " << toString(p.state);
  if (!p.verdict.empty()) o << "  verdict " << p.verdict;
  o << "\n";
  if (!p.reason.empty()) o << "reason    " << p.reason << "\n";
  o << "pattern   " << (p.pattern.empty() ? "-" : p.pattern);
  if (!p.name.empty()) o << "  name " << p.name;
  o << "\n";
  o << "started   " << sweepWhen(p.started_ms) << "  finished " << sweepWhen(p.finished_ms)
    << "  elapsed " << formatElapsed(p.elapsed_seconds) << "\n";
  o << "tests     " << testCountsText(p);
  if (p.retests > 0) o << ", " << p.retests << " retests";
  if (p.rounds_total > 0) o << "  (" << p.rounds_total << " rounds)";
  o << "\n";
  // The counts cover every verdict when the report holds a page of them (a coordinator older
  // than paging sends none, and every verdict).
  const auto& c = r.verdict_counts;
  const bool counted = c.pass + c.fail + c.skip > 0;
  VerdictCounts n = c;
  if (!counted) {
    for (const auto& v : r.verdicts) n.add(v.verdict);
  }
  const uint64_t pass = n.pass, failing = n.fail, skip = n.skip;
  const uint64_t total = pass + failing + skip;
  if (total > 0 || !p.verdict.empty()) {
    o << "verdicts  " << verdictCountsText(pass, failing, skip);
    if (!p.verdict.empty()) o << ": verdict " << p.verdict;
    o << "\n";
  }
  for (const auto& note : r.notes) o << "note      " << note << "\n";
  o << sweepPartsText(r);
  o << figureSummaryText(r);

  std::vector<std::vector<std::string>> t{
      {"VERDICT", "SRC", "DST", "SIZE", "VALUE", "CLASS", "REASONS"}};
  for (const auto& v : r.verdicts) {
    if (!opts.all_verdicts && v.verdict != VerdictKind::kFail) continue;
    std::string value = v.unit.empty() ? "-" : fmt(v.value, 2) + " " + v.unit;
    t.push_back({std::string(toString(v.verdict)) + (v.retest ? " (retest)" : ""), v.src, v.dst,
                 formatSize(v.message_size), value, v.topo_class.empty() ? "-" : v.topo_class,
                 v.reasons.empty() ? "-" : sweepJoined(v.reasons, "; ")});
  }
  if (opts.all_verdicts) {
    o << "\nverdicts (" << total << ", " << failing << " failing)\n";
    o << (t.size() > 1 ? renderTable(t) : "no verdicts\n");
  } else if (failing > 0) {
    o << "\nfailing verdicts (" << failing << " of " << total << ")\n";
    // Fetched with --verdicts none: the counts without the rows.
    o << (t.size() > 1 ? renderTable(t) : "(not fetched: --verdicts failed or all)\n");
  }
  if (!r.suspects.empty()) {
    std::vector<const Suspect*> ranked;
    for (const auto& s : r.suspects) ranked.push_back(&s);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto* a, const auto* b) { return a->score > b->score; });
    o << "\nsuspects, most likely first\n";
    int rank = 0;
    for (const auto* s : ranked) {
      o << "  " << ++rank << ". " << s->kind << " " << s->name << "  score " << fmt(s->score, 2)
        << "\n";
      for (const auto& e : s->evidence) o << "       - " << e << "\n";
    }
  }
  o << linkVerdictsText(r, opts.all_verdicts);
  if (opts.results) o << "\n" << resultsTable(r.results);
  return o.str();
}

std::string sweepsTable(const std::vector<SweepProgress>& sweeps) {
  if (sweeps.empty()) return "no sweeps\n";
  std::vector<std::vector<std::string>> t{
      {"ID", "STATE", "VERDICT", "PATTERN", "NAME", "CREATED", "RAN", "NOT VERIFIED", "ELAPSED"}};
  for (const auto& p : sweeps) {
    // A sweep can FAIL on its thresholds with no failed test: its failing verdicts say how.
    std::string verdict = p.verdict.empty() ? "-" : p.verdict;
    const auto& vc = p.verdict_counts;
    if (vc.fail > 0) {
      verdict += " (" + std::to_string(vc.fail) + " of " +
                 std::to_string(vc.pass + vc.fail + vc.skip) + ")";
    }
    t.push_back({p.id, toString(p.state), verdict, p.pattern.empty() ? "-" : p.pattern,
                 p.name.empty() ? "-" : p.name, sweepWhen(p.created_ms),
                 std::to_string(p.tests_done) + "/" + std::to_string(p.tests_total),
                 std::to_string(p.tests_failed), formatElapsed(p.elapsed_seconds)});
  }
  return renderTable(t);
}

std::string formatLocalTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M %Z", &tm);
  return buf;
}

std::string schedulesTable(const std::vector<ScheduleSummary>& schedules, int64_t now_ms) {
  if (schedules.empty()) return "no schedules (add them under `schedules:` in the config)\n";
  std::vector<std::vector<std::string>> t{{"NAME", "CRON", "TZ", "NEXT RUN (LOCAL)",
                                           "NEXT RUN (UTC)", "LAST RUN", "LAST STATE", "LAST SWEEP",
                                           "MISSED", "REASON"}};
  for (const auto& s : schedules) {
    std::string next_local = formatLocalTime(s.next_run_ms);
    if (s.next_run_ms > now_ms && now_ms > 0) {
      next_local +=
          " (in " + formatElapsed(static_cast<double>(s.next_run_ms - now_ms) / 1e3) + ")";
    }
    // A started run shows its sweep's state (and verdict) until the sweep's end.
    std::string last_state = s.last_state.empty() ? "-" : s.last_state;
    if (!s.last_sweep_state.empty()) {
      last_state = s.last_sweep_state;
      if (!s.last_sweep_verdict.empty()) last_state += " " + s.last_sweep_verdict;
    }
    std::string reason = s.last_detail;
    if (s.catch_up_due_ms > 0) {
      reason = "catch-up of the run due " + sweepWhen(s.catch_up_due_ms) +
               " waits for its workers" + (reason.empty() ? "" : "; " + reason);
    }
    t.push_back({s.name, s.cron, s.timezone.empty() ? "-" : s.timezone, next_local,
                 sweepWhen(s.next_run_ms), sweepWhen(s.last_run_ms), last_state,
                 s.last_sweep_id.empty() ? "-" : s.last_sweep_id, std::to_string(s.missed),
                 reason.empty() ? "-" : reason});
  }
  return renderTable(t);
}

namespace {

std::string statusName(const std::optional<TestStatus>& s) {
  return s ? toString(*s) : "-";
}

}  // namespace

std::string compareSummary(const SweepComparison& c) {
  return "compare " + c.a + " -> " + c.b + " (tolerance " + fmt(c.tolerance_pct, 1) +
         "%): " + std::to_string(c.worse) + " worse, " + std::to_string(c.better) + " better, " +
         std::to_string(c.unchanged) + " unchanged, " + std::to_string(c.added) + " new, " +
         std::to_string(c.missing) + " missing\n";
}

std::string compareTable(const SweepComparison& c) {
  std::string out;
  if (c.rows.empty()) {
    out = "neither sweep has results\n";
  } else {
    std::vector<std::vector<std::string>> t{{"CHANGE", "SRC", "DST", "OP", "MODE", "SIZE", "A", "B",
                                             "CHANGE %", "STATUS A -> B", "REASON"}};
    for (const auto& r : c.rows) {
      const std::string unit = r.unit.empty() ? "" : " " + r.unit;
      t.push_back({toString(r.change), r.src, r.dst, toString(r.op), toString(r.mode),
                   formatSize(r.message_size), r.a ? fmt(*r.a, 2) + unit : "-",
                   r.b ? fmt(*r.b, 2) + unit : "-",
                   r.change_pct ? (*r.change_pct >= 0 ? "+" : "") + fmt(*r.change_pct, 1) : "-",
                   statusName(r.a_status) + " -> " + statusName(r.b_status),
                   r.reason.empty() ? "-" : r.reason});
    }
    out = renderTable(t);
  }
  return out + compareSummary(c);
}

std::string compareCsv(const SweepComparison& c) {
  std::vector<std::vector<std::string>> t{
      {"change", "src", "dst", "op", "mode", "message_size_bytes", "a", "b", "unit", "change_pct",
       "a_status", "b_status", "a_test_id", "b_test_id", "reason"}};
  for (const auto& r : c.rows) {
    t.push_back({toString(r.change), r.src, r.dst, toString(r.op), toString(r.mode),
                 std::to_string(r.message_size), r.a ? csvNumber(*r.a) : "",
                 r.b ? csvNumber(*r.b) : "", r.unit, r.change_pct ? csvNumber(*r.change_pct) : "",
                 r.a_status ? toString(*r.a_status) : "", r.b_status ? toString(*r.b_status) : "",
                 r.a_test_id, r.b_test_id, r.reason});
  }
  return csvRows(t);
}

std::string actionsTable(const std::vector<ActionRecord>& actions) {
  std::vector<std::vector<std::string>> rows = {
      {"TIME", "NODE", "ACTION", "OUTCOME", "ACTUATOR", "SWEEP", "DETAIL"}};
  for (const ActionRecord& a : actions) {
    std::string detail = a.detail;
    if (detail.size() > 100) detail = detail.substr(0, 97) + "...";
    rows.push_back({formatRfc3339(a.recorded_ms), a.node, a.action, a.outcome, a.actuator,
                    a.sweep_id.empty() ? "-" : a.sweep_id, detail});
  }
  return renderTable(rows);
}

std::string jsonText(const OrderedJson& j) {
  return j.dump(2);
}

std::string recordsCsv(const std::vector<OrderedJson>& records, const OrderedJson& prototype) {
  return csvRows(csvTable(records, prototype));
}

}  // namespace gdrmesh::cli
