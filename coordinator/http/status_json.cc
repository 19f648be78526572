// The JSON forms and the Prometheus text the status page serves (declared in
// status_http_server.h): pure renderings of what the StatusSource returned.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/units.h"
#include "coordinator/encoding/sweep_json.h"
#include "coordinator/http/status_http_server.h"

namespace gdrmesh {
namespace {

using nlohmann::json;

// Which way the bytes of a result moved, for the summary.
const char* dataPathClass(const TestResult& r) {
  if (r.transport == TransportKind::kEmulated) return "emulated";
  if (r.transport == TransportKind::kSimulated) return "simulated";  // never RDMA
  if (r.gpudirect()) return "gpudirect";
  if (r.initiator.reg_path == RegPath::kStaged || r.target.reg_path == RegPath::kStaged) {
    return "staged";
  }
  return "rdma_host";
}

const char* statusKey(TestStatus s) {
  switch (s) {
    case TestStatus::kPassed:
      return "passed";
    case TestStatus::kFailed:
      return "failed";
    case TestStatus::kSkipped:
      return "skipped";
    case TestStatus::kError:
      return "error";
  }
  return "error";
}

json statusCounts() {
  return {{"passed", 0}, {"failed", 0}, {"skipped", 0}, {"error", 0}};
}

// One cell of the matrix: the verdicts of one (src, dst) pair over every size, reduced to the
// one that speaks for it: a FAIL if any, else a PASS, else a SKIP; among those, the largest
// message size (the bandwidth figure that matters).
struct Cell {
  const PairVerdict* rep = nullptr;
};

std::string joinReasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

// The reduced cells, keyed by (src, dst) in order.
std::map<std::pair<std::string, std::string>, const PairVerdict*> reduceCells(
    const std::vector<PairVerdict>& verdicts) {
  std::map<std::pair<std::string, std::string>, const PairVerdict*> cells;
  for (const auto& v : verdicts) {
    auto [it, inserted] = cells.try_emplace({v.src, v.dst}, &v);
    if (!inserted && speaksBetter(v, *it->second)) it->second = &v;
  }
  return cells;
}

// Prometheus label value: backslash, double quote and newline escaped.
std::string promLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string promNumber(double v) {
  if (!std::isfinite(v)) return v > 0 ? "+Inf" : (v < 0 ? "-Inf" : "NaN");
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

void promHeader(std::string& out, const char* name, const char* help, const char* type) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

using nlohmann::json;

json workersJson(const std::vector<WorkerSummary>& workers) {
  return toJson(workers);
}

json summaryJson(const std::vector<WorkerSummary>& workers, const std::vector<TestResult>& results,
                 uint32_t limit) {
  json j;
  j["generated"] = nowRfc3339();
  int online = 0;
  for (const auto& w : workers) online += w.state == "online" ? 1 : 0;
  j["workers"] = {{"total", workers.size()},
                  {"online", online},
                  {"offline", static_cast<int>(workers.size()) - online}};

  json by_status = statusCounts();
  json data_path{
      {"gpudirect", 0}, {"rdma_host", 0}, {"staged", 0}, {"emulated", 0}, {"simulated", 0}};
  // Every known worker is listed, with or without results.
  std::map<std::string, json> per_worker;
  for (const auto& w : workers) per_worker[w.name] = statusCounts();
  int64_t latest_ms = 0;
  for (const auto& r : results) {
    const char* key = statusKey(r.status);
    by_status[key] = by_status[key].get<int>() + 1;
    // SKIPPED and ERROR results moved no data: they have no data path.
    if (r.status == TestStatus::kPassed || r.status == TestStatus::kFailed) {
      const char* path = dataPathClass(r);
      data_path[path] = data_path[path].get<int>() + 1;
    }
    std::set<std::string> sides{r.initiator.worker, r.target.worker};
    for (const auto& name : sides) {
      if (name.empty()) continue;
      auto it = per_worker.try_emplace(name, statusCounts()).first;
      it->second[key] = it->second[key].get<int>() + 1;
    }
    latest_ms = std::max(latest_ms, r.started_ms);
  }
  j["results"] = {{"considered", results.size()}, {"limit", limit}, {"by_status", by_status}};
  j["latest_started"] = latest_ms ? formatRfc3339(latest_ms) : "";
  j["data_path"] = data_path;
  j["per_worker"] = json::array();
  for (auto& [name, counts] : per_worker) {
    json row = counts;
    row["worker"] = name;
    j["per_worker"].push_back(std::move(row));
  }
  return j;
}

json comparisonJson(const SweepComparison& c) {
  return json(toJson(c));
}

json sweepProgressJson(const SweepProgress& p) {
  return json(toJson(p));
}

json sweepMatrixJson(const std::vector<PairVerdict>& verdicts) {
  const auto cells = reduceCells(verdicts);
  std::set<std::string> host_set;
  for (const auto& [key, v] : cells) {
    host_set.insert(key.first);
    host_set.insert(key.second);
  }
  const std::vector<std::string> hosts(host_set.begin(), host_set.end());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < hosts.size(); ++i) index[hosts[i]] = i;
  json out_cells = json::array();
  json best = json::object();
  for (const auto& [key, v] : cells) {
    out_cells.push_back(json::array({index[key.first], index[key.second], toString(v->verdict),
                                     v->value, v->unit, joinReasons(v->reasons)}));
    if (v->verdict == VerdictKind::kSkip || v->unit.empty() || !(v->value > 0)) continue;
    // The best cell: the highest bandwidth, the lowest latency.
    const bool lower_is_better = v->unit == "us";
    auto it = best.find(v->unit);
    if (it == best.end() ||
        (lower_is_better ? v->value < it->get<double>() : v->value > it->get<double>())) {
      best[v->unit] = v->value;
    }
  }
  return {{"hosts", hosts}, {"cells", std::move(out_cells)}, {"best", std::move(best)}};
}

json sweepJson(const SweepReportData& report, VerdictFilter filter, VerdictPage page) {
  json j;
  j["progress"] = sweepProgressJson(report.progress);
  j["verdicts"] = json::array();
  VerdictCounts counts;
  std::vector<PairVerdict> shown;
  const uint64_t matching = selectVerdicts(report.verdicts, filter, page, &counts, &shown);
  for (const auto& v : shown) j["verdicts"].push_back(json(toJson(v)));
  const uint64_t end = page.offset + shown.size();
  j["verdicts_page"] = {{"offset", page.offset},
                        {"limit", page.limit},
                        {"total", matching},
                        {"next_offset", end < matching ? json(end) : json(nullptr)}};
  j["verdict_counts"] = json(toJson(counts));
  j["suspects"] = json::array();
  for (const auto& s : report.suspects) j["suspects"].push_back(json(toJson(s)));
  j["notes"] = report.notes;
  j["parts"] = json::array();
  for (const auto& part : report.parts) j["parts"].push_back(json(toJson(part)));
  j["figures"] = json::array();
  for (const auto& f : report.figures) j["figures"].push_back(json(toJson(f)));
  j["matrix"] = sweepMatrixJson(report.verdicts);
  return j;
}

std::string metricsText(const std::vector<WorkerSummary>& workers,
                        const std::optional<SweepReportData>& last) {
  std::string out;
  int online = 0;
  for (const auto& w : workers) online += w.state == "online" ? 1 : 0;
  promHeader(out, "gdrmesh_workers_up", "Workers connected to the coordinator now.", "gauge");
  out += "gdrmesh_workers_up " + std::to_string(online) + "\n";
  promHeader(out, "gdrmesh_workers_known", "Workers the coordinator knows, online or not.",
             "gauge");
  out += "gdrmesh_workers_known " + std::to_string(workers.size()) + "\n";
  if (!last) return out;

  const SweepProgress& p = last->progress;
  promHeader(out, "gdrmesh_last_sweep_info",
             "The newest ended sweep: its id, pattern, state and verdict (value 1).", "gauge");
  out += "gdrmesh_last_sweep_info{id=\"" + promLabel(p.id) + "\",pattern=\"" +
         promLabel(p.pattern) + "\",state=\"" + toString(p.state) + "\",verdict=\"" +
         promLabel(p.verdict) + "\"} 1\n";
  promHeader(out, "gdrmesh_last_sweep_timestamp_seconds",
             "When the newest ended sweep ended (Unix time).", "gauge");
  const int64_t end_ms = p.finished_ms > 0 ? p.finished_ms : p.started_ms;
  out += "gdrmesh_last_sweep_timestamp_seconds " +
         promNumber(static_cast<double>(end_ms) / 1000.0) + "\n";
  promHeader(out, "gdrmesh_last_sweep_duration_seconds", "How long the newest ended sweep ran.",
             "gauge");
  const double duration = p.finished_ms > p.started_ms && p.started_ms > 0
                              ? static_cast<double>(p.finished_ms - p.started_ms) / 1000.0
                              : p.elapsed_seconds;
  out += "gdrmesh_last_sweep_duration_seconds " + promNumber(duration) + "\n";
  promHeader(out, "gdrmesh_last_sweep_tests",
             "Tests of the newest ended sweep by status (failed counts FAILED and ERROR).",
             "gauge");
  const uint32_t bad = p.tests_failed + p.tests_skipped;
  const uint32_t passed = p.tests_done > bad ? p.tests_done - bad : 0;
  const uint32_t not_run = p.tests_total > p.tests_done ? p.tests_total - p.tests_done : 0;
  const std::vector<std::pair<const char*, uint32_t>> by_status{{"passed", passed},
                                                                {"failed", p.tests_failed},
                                                                {"skipped", p.tests_skipped},
                                                                {"not_run", not_run}};
  for (const auto& [status, n] : by_status) {
    out += std::string("gdrmesh_last_sweep_tests{status=\"") + status + "\"} " + std::to_string(n) +
           "\n";
  }

  const auto cells = reduceCells(last->verdicts);
  promHeader(out, "gdrmesh_link_bandwidth_gbps",
             "Bandwidth of each link in the newest ended sweep (Gb/s, largest size tested).",
             "gauge");
  for (const auto& [key, v] : cells) {
    if (v->verdict == VerdictKind::kSkip || v->unit != "Gb/s") continue;
    out += "gdrmesh_link_bandwidth_gbps{src=\"" + promLabel(key.first) + "\",dst=\"" +
           promLabel(key.second) + "\"} " + promNumber(v->value) + "\n";
  }
  promHeader(out, "gdrmesh_link_verdict",
             "Verdict of each link in the newest ended sweep: 1 pass, 0 fail (skips absent).",
             "gauge");
  for (const auto& [key, v] : cells) {
    if (v->verdict == VerdictKind::kSkip) continue;
    out += "gdrmesh_link_verdict{src=\"" + promLabel(key.first) + "\",dst=\"" +
           promLabel(key.second) + "\"} " + (v->verdict == VerdictKind::kPass ? "1" : "0") + "\n";
  }
  promHeader(out, "gdrmesh_suspect_score",
             "Localisation suspects of the newest ended sweep (higher: more likely at fault).",
             "gauge");
  for (const auto& s : last->suspects) {
    out += "gdrmesh_suspect_score{kind=\"" + promLabel(s.kind) + "\",name=\"" + promLabel(s.name) +
           "\"} " + promNumber(s.score) + "\n";
  }
  return out;
}

}  // namespace gdrmesh
