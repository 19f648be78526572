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

namespace {

// Rows of one plan index (a resumed or repeated test) are ordered by test id.
bool beforeInPlan(const JudgeRows& rows, const JudgeRow& x, const JudgeRow& y) {
  if (x.plan_index != y.plan_index) return x.plan_index < y.plan_index;
  return rows.testId(x) < rows.testId(y);
}

}  // namespace

// A sweep's plan indexes are dense (0 to the plan's size; -1 for a row without one): the rows
// are placed by counting them, then moved along the permutation's cycles. At 1,024 hosts a
// comparison sort into a second vector took 150 ms and 58 MB more at the end of the sweep
// (issue #19); the end's second call finds the rows sorted and returns.
void JudgeRows::sortByPlanIndex() {
  const size_t n = rows_.size();
  auto before = [this](const JudgeRow& x, const JudgeRow& y) { return beforeInPlan(*this, x, y); };
  if (std::is_sorted(rows_.begin(), rows_.end(), before)) return;
  const auto [lo, hi] = std::minmax_element(
      rows_.begin(), rows_.end(),
      [](const JudgeRow& x, const JudgeRow& y) { return x.plan_index < y.plan_index; });
  const int64_t first_index = lo->plan_index;
  const auto span = static_cast<size_t>(int64_t{hi->plan_index} - first_index + 1);
  std::vector<uint32_t> order(n);  // order[k]: the row that goes to position k
  if (span > 2 * n + 1024) {       // sparse indexes: not worth a table
    std::iota(order.begin(), order.end(), uint32_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return before(rows_[a], rows_[b]); });
  } else {
    std::vector<uint32_t> next(span + 1, 0);
    for (const JudgeRow& r : rows_) ++next[static_cast<size_t>(r.plan_index - first_index) + 1];
    std::partial_sum(next.begin(), next.end(), next.begin());
    for (size_t i = 0; i < n; ++i) {
      order[next[static_cast<size_t>(rows_[i].plan_index - first_index)]++] =
          static_cast<uint32_t>(i);
    }
    for (size_t b = 0, e = 0; b < n; b = e) {  // ties by test id
      for (e = b + 1; e < n && rows_[order[e]].plan_index == rows_[order[b]].plan_index;) ++e;
      if (e - b > 1) {
        std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(b),
                         order.begin() + static_cast<std::ptrdiff_t>(e),
                         [&](uint32_t x, uint32_t y) { return before(rows_[x], rows_[y]); });
      }
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (order[k] == k) continue;
    JudgeRow held = rows_[k];
    size_t j = k;
    for (;;) {
      const size_t from = order[j];
      order[j] = static_cast<uint32_t>(j);
      if (from == k) {
        rows_[j] = held;
        break;
      }
      rows_[j] = rows_[from];
      j = from;
    }
  }
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
