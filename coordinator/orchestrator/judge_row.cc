#include "coordinator/orchestrator/judge_row.h"

#include <algorithm>
#include <numeric>

namespace gdrmesh {

StringTable::StringTable() {
  intern("");
}

StringTable::StringTable(const StringTable& other) : StringTable() {
  for (size_t i = 1; i < other.strings_.size(); ++i) intern(other.strings_[i]);
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) {
    StringTable copy(other);
    *this = std::move(copy);
  }
  return *this;
}

uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

std::optional<uint32_t> StringTable::find(std::string_view s) const {
  auto it = ids_.find(s);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

size_t JudgeRows::add(const TestResult& r, bool retest) {
  auto side = [this](const EndpointRecord& e) {
    JudgeSide s;
    s.worker = strings_.intern(e.worker);
    s.nic = strings_.intern(e.nic);
    s.topo_class = strings_.intern(e.topo_class);
    s.gpu = e.gpu;
    s.memory = e.memory;
    s.reg_path = e.reg_path;
    return s;
  };
  JudgeRow row;
  row.test_id = static_cast<uint32_t>(ids_.size());
  row.test_id_size = static_cast<uint16_t>(std::min<size_t>(r.test_id.size(), UINT16_MAX));
  ids_.append(r.test_id, 0, row.test_id_size);
  row.reason = strings_.intern(r.reason);
  row.plan_index = r.plan_index;
  row.op = r.op;
  row.mode = r.mode;
  row.status = r.status;
  row.has_bandwidth = r.measurement.has_bandwidth;
  row.has_latency = r.measurement.has_latency;
  row.integrity_checked = r.integrity.checked;
  row.retest = retest;
  row.finished_ms = r.finished_ms;
  row.message_size = r.message_size;
  row.bw_avg_gbps = r.measurement.bw.avg_gbps;
  row.lat_median_us = r.measurement.lat.median_us;
  row.bytes_checked = r.integrity.bytes_checked;
  row.wrong_bytes = r.integrity.wrong_bytes;
  row.initiator = side(r.initiator);
  row.target = side(r.target);
  rows_.push_back(row);
  return rows_.size() - 1;
}

void JudgeRows::reserve(size_t n) {
  rows_.reserve(n);
}

std::string JudgeRows::endpointName(const JudgeSide& s) const {
  const std::string& w = str(s.worker);
  return s.nic == 0 ? w : w + "/" + str(s.nic);
}

std::string JudgeRows::topologyOf(const JudgeRow& r) const {
  std::string out;
  uint32_t first = 0;
  for (const JudgeSide* e : {&r.initiator, &r.target}) {
    if (e->memory != MemoryKind::kCuda || e->topo_class == 0 || e->topo_class == first) continue;
    out += (out.empty() ? "" : "/") + str(e->topo_class);
    if (first == 0) first = e->topo_class;
  }
  return out;
}

void JudgeRows::sortByPlanIndex() {
  std::vector<size_t> order(rows_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    const JudgeRow& x = rows_[a];
    const JudgeRow& y = rows_[b];
    if (x.plan_index != y.plan_index) return x.plan_index < y.plan_index;
    return testId(x) < testId(y);
  });
  std::vector<JudgeRow> sorted;
  sorted.reserve(rows_.size());
  for (size_t i : order) sorted.push_back(rows_[i]);
  rows_ = std::move(sorted);
}

const std::string& JudgeVerdicts::firstReason(size_t row) const {
  static const std::string kNone;
  const uint32_t k = reasons_of[row];
  return k == 0 || reasons[k - 1].empty() ? kNone : reasons[k - 1].front();
}

PairVerdict verdictOf(const JudgeRows& rows, const JudgeVerdicts& verdicts, size_t i) {
  const JudgeRow& r = rows[i];
  PairVerdict v;
  v.test_id = std::string(rows.testId(r));
  v.src = rows.endpointName(r.initiator);
  v.dst = rows.endpointName(r.target);
  v.message_size = r.message_size;
  v.op = r.op;
  v.mode = r.mode;
  v.verdict = verdicts.kind[i];
  if (verdicts.reasons_of[i] != 0) v.reasons = verdicts.reasons[verdicts.reasons_of[i] - 1];
  const bool latency_figure = r.has_latency && (r.mode == Mode::kLatency || !r.has_bandwidth);
  if (latency_figure) {
    v.value = r.lat_median_us;
    v.unit = "us";
  } else if (r.has_bandwidth) {
    v.value = r.bw_avg_gbps;
    v.unit = "Gb/s";
  }
  v.topo_class = rows.topologyOf(r);
  v.retest = r.retest;
  return v;
}

std::vector<PairVerdict> verdictsOf(const JudgeRows& rows, const JudgeVerdicts& verdicts) {
  std::vector<PairVerdict> out;
  out.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out.push_back(verdictOf(rows, verdicts, i));
  return out;
}

std::set<std::string> passingWorkers(const JudgeRows& rows, const JudgeVerdicts& verdicts) {
  std::set<std::string> out;
  for (size_t i = 0; i < rows.size() && i < verdicts.size(); ++i) {
    if (verdicts.kind[i] != VerdictKind::kPass) continue;
    out.insert(rows.str(rows[i].initiator.worker));
    out.insert(rows.str(rows[i].target.worker));
  }
  return out;
}

}  // namespace gdrmesh
