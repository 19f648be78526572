#include "coordinator/encoding/sweep_json.h"

#include <algorithm>
#include <utility>

#include "common/fabric/fabric.h"
#include "common/json.h"
#include "common/units.h"
#include "coordinator/orchestrator/figure_json.h"

namespace gdrmesh {
namespace {

// "" until then: a time that has not happened yet has no RFC 3339 form.
std::string sweepJsonTime(int64_t ms) {
  return ms > 0 ? formatRfc3339(ms) : std::string();
}

OrderedJson sweepJsonStrings(const std::vector<std::string>& items) {
  OrderedJson a = OrderedJson::array();
  for (const auto& i : items) a.push_back(i);
  return a;
}

OrderedJson sweepJsonOptional(const std::optional<double>& v) {
  return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

// Flattens one value into (column, text) pairs: objects as parent.child, arrays of scalars
// joined with "; ".
void sweepJsonFlatten(const OrderedJson& j, const std::string& prefix,
                      std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      sweepJsonFlatten(v, prefix.empty() ? k : prefix + "." + k, out);
    }
    return;
  }
  std::string text;
  if (j.is_string()) {
    text = j.get<std::string>();
  } else if (j.is_array()) {
    for (const auto& item : j) {
      text +=
          (text.empty() ? "" : "; ") + (item.is_string() ? item.get<std::string>() : item.dump());
    }
  } else if (!j.is_null()) {
    text = j.dump();
  }
  out->emplace_back(prefix, text);
}

}  // namespace

OrderedJson toJson(const VerdictCounts& c) {
  return {{"pass", c.pass}, {"fail", c.fail}, {"skip", c.skip}};
}

OrderedJson toJson(const SweepProgress& p) {
  return {{"id", p.id},
          {"state", toString(p.state)},
          {"pattern", p.pattern},
          {"name", p.name},
          {"created", sweepJsonTime(p.created_ms)},
          {"created_ms", p.created_ms},
          {"started", sweepJsonTime(p.started_ms)},
          {"started_ms", p.started_ms},
          {"finished", sweepJsonTime(p.finished_ms)},
          {"finished_ms", p.finished_ms},
          {"tests_total", p.tests_total},
          {"tests_done", p.tests_done},
          {"tests_failed", p.tests_failed},
          {"tests_skipped", p.tests_skipped},
          {"tests_running", p.tests_running},
          {"rounds_total", p.rounds_total},
          {"retests", p.retests},
          {"elapsed_seconds", p.elapsed_seconds},
          {"eta_seconds", p.eta_seconds},
          {"reason", p.reason},
          {"verdict", p.verdict},
          {"verdict_counts", toJson(p.verdict_counts)},
          {"report_pending", p.report_pending}};
}

OrderedJson toJson(const PairVerdict& v) {
  return {{"test_id", v.test_id},
          {"src", v.src},
          {"dst", v.dst},
          {"message_size", v.message_size},
          {"verdict", toString(v.verdict)},
          {"reasons", sweepJsonStrings(v.reasons)},
          {"value", v.value},
          {"unit", v.unit},
          {"topo_class", v.topo_class},
          {"retest", v.retest},
          {"op", toString(v.op)},
          {"mode", toString(v.mode)}};
}

OrderedJson toJson(const Suspect& s) {
  return {{"kind", s.kind},
          {"name", s.name},
          {"score", s.score},
          {"evidence", sweepJsonStrings(s.evidence)}};
}

OrderedJson toJson(const LinkVerdictRecord& l) {
  return {{"link", l.link},
          {"switch_name", l.switch_name},
          {"switch_guid", fabric::guidHex(l.switch_guid)},
          {"port", l.port},
          {"remote_name", l.remote_name},
          {"remote_guid", fabric::guidHex(l.remote_guid)},
          {"remote_port", l.remote_port},
          {"verdict", l.verdict},
          {"evidence", sweepJsonStrings(l.evidence)}};
}

OrderedJson toJson(const FigureSummary& f) {
  return figureJson(f);
}

OrderedJson toJson(const SweepPart& part) {
  const SweepSpec& s = part.spec;
  OrderedJson sizes = OrderedJson::array();
  for (uint64_t b : s.sizes.empty() ? std::vector<uint64_t>{s.test.message_size} : s.sizes) {
    sizes.push_back(b);
  }
  return {{"index", part.index},
          {"pattern", s.pattern_from_config ? "" : toString(s.pattern)},
          {"direction", toString(s.direction)},
          {"op", toString(s.test.op)},
          {"mode", toString(s.test.mode)},
          {"sizes", std::move(sizes)},
          {"iterations", s.test.iterations},
          {"duration_seconds", s.test.duration_seconds},
          {"initiator", toJson(s.test.initiator)},
          {"target", toJson(s.test.target)},
          {"plan_begin", part.plan_begin},
          {"planned", part.planned_known ? OrderedJson(part.planned) : OrderedJson(nullptr)},
          {"spec", toJson(s)}};
}

OrderedJson toJson(const SweepReportData& r) {
  OrderedJson results = OrderedJson::array();
  for (const auto& x : r.results) results.push_back(OrderedJson(gdrmesh::toJson(x)));
  OrderedJson verdicts = OrderedJson::array();
  for (const auto& x : r.verdicts) verdicts.push_back(toJson(x));
  OrderedJson suspects = OrderedJson::array();
  for (const auto& x : r.suspects) suspects.push_back(toJson(x));
  OrderedJson parts = OrderedJson::array();
  for (const auto& x : r.parts) parts.push_back(toJson(x));
  OrderedJson figures = OrderedJson::array();
  for (const auto& x : r.figures) figures.push_back(toJson(x));
  OrderedJson links = OrderedJson::array();
  for (const auto& x : r.links) links.push_back(toJson(x));
  return {{"progress", toJson(r.progress)},
          {"spec", toJson(r.spec)},
          {"results", std::move(results)},
          {"verdicts", std::move(verdicts)},
          {"suspects", std::move(suspects)},
          {"notes", sweepJsonStrings(r.notes)},
          {"verdict_counts", toJson(r.verdict_counts)},
          {"verdicts_matching", r.verdicts_matching},
          {"results_next", r.results_next},
          {"parts", std::move(parts)},
          {"figures", std::move(figures)},
          {"links", std::move(links)}};
}

OrderedJson toJson(const ComparisonRow& r) {
  auto status = [](const std::optional<TestStatus>& s) {
    return s ? OrderedJson(toString(*s)) : OrderedJson(nullptr);
  };
  return {{"src", r.src},
          {"dst", r.dst},
          {"op", toString(r.op)},
          {"mode", toString(r.mode)},
          {"message_size_bytes", r.message_size},
          {"change", toString(r.change)},
          {"a", sweepJsonOptional(r.a)},
          {"b", sweepJsonOptional(r.b)},
          {"unit", r.unit},
          {"change_pct", sweepJsonOptional(r.change_pct)},
          {"a_status", status(r.a_status)},
          {"b_status", status(r.b_status)},
          {"a_test_id", r.a_test_id},
          {"b_test_id", r.b_test_id},
          {"reason", r.reason}};
}

OrderedJson toJson(const SweepComparison& c) {
  OrderedJson rows = OrderedJson::array();
  for (const ComparisonRow& r : c.rows) rows.push_back(toJson(r));
  return {{"a", c.a},
          {"b", c.b},
          {"tolerance_pct", c.tolerance_pct},
          {"summary",
           {{"worse", c.worse},
            {"better", c.better},
            {"unchanged", c.unchanged},
            {"new", c.added},
            {"missing", c.missing}}},
          {"rows", std::move(rows)}};
}

OrderedJson toJson(const ScheduleSummary& s) {
  return {{"name", s.name},
          {"cron", s.cron},
          {"timezone", s.timezone},
          {"next_run", sweepJsonTime(s.next_run_ms)},
          {"next_run_ms", s.next_run_ms},
          {"last_run", sweepJsonTime(s.last_run_ms)},
          {"last_run_ms", s.last_run_ms},
          {"last_sweep_id", s.last_sweep_id},
          {"last_state", s.last_state},
          {"missed", s.missed},
          {"last_detail", s.last_detail},
          {"last_sweep_state", s.last_sweep_state},
          {"last_sweep_verdict", s.last_sweep_verdict},
          {"catch_up_due", sweepJsonTime(s.catch_up_due_ms)},
          {"catch_up_due_ms", s.catch_up_due_ms}};
}

OrderedJson toJson(const ActionRecord& a) {
  return {{"id", a.id},
          {"recorded", sweepJsonTime(a.recorded_ms)},
          {"recorded_ms", a.recorded_ms},
          {"sweep_id", a.sweep_id},
          {"node", a.node},
          {"action", a.action},
          {"outcome", a.outcome},
          {"actuator", a.actuator},
          {"reason", a.reason},
          {"detail", a.detail}};
}

std::vector<std::vector<std::string>> csvTable(const std::vector<OrderedJson>& records,
                                               const OrderedJson& prototype) {
  std::vector<std::string> header;
  std::vector<std::vector<std::pair<std::string, std::string>>> flat;
  auto add_columns = [&header](const std::vector<std::pair<std::string, std::string>>& fields) {
    for (const auto& f : fields) {
      if (std::find(header.begin(), header.end(), f.first) == header.end()) {
        header.push_back(f.first);
      }
    }
  };
  {
    std::vector<std::pair<std::string, std::string>> fields;
    sweepJsonFlatten(prototype, "", &fields);
    add_columns(fields);
  }
  for (const auto& r : records) {
    std::vector<std::pair<std::string, std::string>> fields;
    sweepJsonFlatten(r, "", &fields);
    add_columns(fields);
    flat.push_back(std::move(fields));
  }
  std::vector<std::vector<std::string>> t{header};
  for (const auto& fields : flat) {
    std::vector<std::string> row(header.size());
    for (const auto& f : fields) {
      row[static_cast<size_t>(std::find(header.begin(), header.end(), f.first) - header.begin())] =
          f.second;
    }
    t.push_back(std::move(row));
  }
  return t;
}

}  // namespace gdrmesh
