#include "coordinator/orchestrator/judge.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "common/stats.h"

namespace gdrmesh {
namespace {

std::string compact(double v) {  // thresholds as written: 25, 0.9, 2.1
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Rows compared with each other: same size, op, mode and memory kinds.
using GroupKey = std::tuple<uint64_t, int, int, int, int>;
GroupKey groupOf(const JudgeRow& r) {
  return {r.message_size, static_cast<int>(r.op), static_cast<int>(r.mode),
          static_cast<int>(r.initiator.memory), static_cast<int>(r.target.memory)};
}

bool hasBw(const JudgeRow& r) {
  return r.status == TestStatus::kPassed && r.has_bandwidth;
}
bool hasLat(const JudgeRow& r) {
  return r.status == TestStatus::kPassed && r.has_latency;
}

// The best row of a group; ties go to the smaller test id so that row order does not matter.
struct Best {
  double value = 0;
  size_t row = 0;
};
void keepBest(std::optional<Best>& best, double value, const JudgeRows& rows, size_t i,
              bool higher_wins) {
  const bool better = !best || (higher_wins ? value > best->value : value < best->value) ||
                      (value == best->value && rows.testId(rows[i]) < rows.testId(rows[best->row]));
  if (better) best = Best{value, i};
}

// An endpoint by the ids of its worker and NIC.
using EndpointKey = std::pair<uint32_t, uint32_t>;
EndpointKey keyOf(const JudgeSide& s) {
  return {s.worker, s.nic};
}

// Host-memory rows on one unordered NIC pair: size, op, mode, the two endpoints in a fixed order.
using NicPairKey = std::tuple<uint64_t, int, int, EndpointKey, EndpointKey>;
NicPairKey nicPairOf(const JudgeRow& r) {
  EndpointKey a = keyOf(r.initiator), b = keyOf(r.target);
  if (b < a) std::swap(a, b);
  return {r.message_size, static_cast<int>(r.op), static_cast<int>(r.mode), a, b};
}

// A baseline row for the same directed pair and test shape (endpoints in the ids of the rows
// being judged).
using BaselineKey = std::tuple<EndpointKey, EndpointKey, uint64_t, int, int, int, int>;
BaselineKey baselineKey(const JudgeRow& r, EndpointKey initiator, EndpointKey target) {
  return {initiator,
          target,
          r.message_size,
          static_cast<int>(r.op),
          static_cast<int>(r.mode),
          static_cast<int>(r.initiator.memory),
          static_cast<int>(r.target.memory)};
}

const std::map<std::string, std::string>& labelsOf(const JudgeContext& ctx,
                                                   const std::string& worker) {
  static const std::map<std::string, std::string> kNone;
  auto it = ctx.labels.find(worker);
  return it == ctx.labels.end() ? kNone : it->second;
}

}  // namespace

double JudgeContext::portRate(const std::string& worker, const std::string& nic) const {
  if (nic.empty()) return 0;
  auto it = port_rate_gbps.find(worker + "/" + nic);
  return it == port_rate_gbps.end() ? 0 : it->second;
}

JudgeContext judgeContextFrom(const std::vector<WorkerStatus>& workers) {
  JudgeContext ctx;
  for (const auto& w : workers) {
    if (!w.labels.empty()) ctx.labels[w.name] = w.labels;
    for (const auto& nic : w.inventory.nics) {
      for (const auto& port : nic.ports) {
        if (port.state.find("ACTIVE") != std::string::npos && port.rate_gbps > 0) {
          ctx.port_rate_gbps[w.name + "/" + nic.name] = port.rate_gbps;
          break;
        }
      }
    }
  }
  return ctx;
}

Thresholds stricterOf(const Thresholds& a, const Thresholds& b) {
  auto pick = [](const std::optional<double>& x, const std::optional<double>& y, bool higher) {
    if (!x) return y;
    if (!y) return x;
    return std::optional<double>(higher ? std::max(*x, *y) : std::min(*x, *y));
  };
  Thresholds t;
  t.bandwidth_gbps_min = pick(a.bandwidth_gbps_min, b.bandwidth_gbps_min, true);
  t.latency_us_max = pick(a.latency_us_max, b.latency_us_max, false);
  t.line_rate_fraction_min = pick(a.line_rate_fraction_min, b.line_rate_fraction_min, true);
  t.best_pair_fraction_min = pick(a.best_pair_fraction_min, b.best_pair_fraction_min, true);
  t.lowest_latency_factor_max =
      pick(a.lowest_latency_factor_max, b.lowest_latency_factor_max, false);
  t.gpu_host_ratio_min = pick(a.gpu_host_ratio_min, b.gpu_host_ratio_min, true);
  t.regression_tolerance = pick(a.regression_tolerance, b.regression_tolerance, false);
  return t;
}

namespace {

// Figures of the whole sweep, each computed once: the best bandwidth and the lowest latency of
// each group, and the best host-memory bandwidth of each NIC pair (kept only when the sweep has
// GPU rows: a GPU row is compared with the host rows of its NICs).
struct JudgeBests {
  std::map<GroupKey, std::optional<Best>> bw, lat;
  std::map<NicPairKey, std::optional<Best>> host_bw;
};

JudgeBests judgeBestsOf(const JudgeRows& rows) {
  JudgeBests b;
  bool any_cuda = false;
  for (const auto& r : rows) any_cuda = any_cuda || r.usesCuda();
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (hasBw(r)) {
      keepBest(b.bw[groupOf(r)], r.bw_avg_gbps, rows, i, true);
      if (any_cuda && !r.usesCuda())
        keepBest(b.host_bw[nicPairOf(r)], r.bw_avg_gbps, rows, i, true);
    }
    if (hasLat(r)) keepBest(b.lat[groupOf(r)], r.lat_median_us, rows, i, false);
  }
  return b;
}

// The newest passed row of `baseline_rows` for each directed pair and test shape, keyed in the
// ids of `rows`; a baseline endpoint the sweep never tested matches no row.
std::map<BaselineKey, size_t> judgeBaselineIndex(const JudgeRows& rows,
                                                 const JudgeRows& baseline_rows) {
  std::vector<std::optional<uint32_t>> translated(baseline_rows.strings().size());
  for (size_t id = 0; id < translated.size(); ++id) {
    translated[id] = rows.strings().find(baseline_rows.str(static_cast<uint32_t>(id)));
  }
  auto translate = [&](const JudgeSide& s) -> std::optional<EndpointKey> {
    const auto w = translated[s.worker];
    const auto n = translated[s.nic];
    if (!w || !n) return std::nullopt;
    return EndpointKey{*w, *n};
  };
  std::map<BaselineKey, size_t> baseline;
  for (size_t i = 0; i < baseline_rows.size(); ++i) {
    const JudgeRow& b = baseline_rows[i];
    if (b.status != TestStatus::kPassed || !b.ran()) continue;
    const auto bi = translate(b.initiator);
    const auto bt = translate(b.target);
    if (!bi || !bt) continue;
    auto [it, inserted] = baseline.emplace(baselineKey(b, *bi, *bt), i);
    const JudgeRow& slot = baseline_rows[it->second];
    if (!inserted && std::make_pair(b.finished_ms, baseline_rows.testId(b)) >
                         std::make_pair(slot.finished_ms, baseline_rows.testId(slot))) {
      it->second = i;
    }
  }
  return baseline;
}

// The checks of one passed row's figures against its thresholds, the sweep's bests and its
// baseline row (`base`, when regression_tolerance is set and the baseline has the pair): each
// figure outside its bound adds a reason to `why`.
class JudgeFigureChecks {
 public:
  JudgeFigureChecks(const JudgeRows& rows, const JudgeContext& ctx, const JudgeBests& bests,
                    const JudgeRows& baseline_rows)
      : rows_(rows), ctx_(ctx), bests_(bests), baseline_rows_(baseline_rows) {}

  void bandwidth(const JudgeRow& r, const Thresholds& t, const JudgeRow* base,
                 std::vector<std::string>& why) const {
    const double bw = r.bw_avg_gbps;
    // Written only into a reason: formatted for each of half a million rows, it took a good
    // part of the judge's time at 1,024 hosts.
    const auto fig = [bw] { return "bandwidth " + formatFixed(bw, 1) + " Gb/s"; };
    if (t.bandwidth_gbps_min && bw < *t.bandwidth_gbps_min) {
      why.push_back(fig() + " < " + compact(*t.bandwidth_gbps_min) + " Gb/s (bandwidth_gbps_min)");
    }
    const double ra = portRate(r.initiator.worker, r.initiator.nic);
    const double rb = portRate(r.target.worker, r.target.nic);
    if (t.line_rate_fraction_min && ra > 0 && rb > 0) {
      const double rate = std::min(ra, rb);
      if (bw / rate < *t.line_rate_fraction_min) {
        why.push_back(fig() + " is " + formatFixed(bw / rate, 2) + " of line rate " +
                      compact(rate) + " Gb/s < " + compact(*t.line_rate_fraction_min) +
                      " (line_rate_fraction_min)");
      }
    }
    const auto best = bests_.bw.find(groupOf(r));
    if (t.best_pair_fraction_min && best != bests_.bw.end() && best->second &&
        best->second->value > 0 && bw / best->second->value < *t.best_pair_fraction_min) {
      why.push_back(fig() + " is " + formatFixed(bw / best->second->value, 2) +
                    " of the best pair's " + formatFixed(best->second->value, 1) + " Gb/s (" +
                    pairName(rows_[best->second->row]) + ") < " +
                    compact(*t.best_pair_fraction_min) + " (best_pair_fraction_min)");
    }
    if (t.gpu_host_ratio_min && r.usesCuda()) gpuHostRatio(r, *t.gpu_host_ratio_min, why);
    if (t.regression_tolerance && base && base->has_bandwidth && base->bw_avg_gbps > 0) {
      const double was = base->bw_avg_gbps;
      const double drop = 1.0 - bw / was;
      if (drop > *t.regression_tolerance) {
        why.push_back(fig() + " is " + formatPercent(drop) + " below baseline " +
                      formatFixed(was, 1) + " Gb/s (" + std::string(baseline_rows_.testId(*base)) +
                      ") > " + formatPercent(*t.regression_tolerance) + " (regression_tolerance)");
      }
    }
  }

  // The context's port rate of a row's (worker, NIC), looked up once per pair of interned
  // strings rather than by a joined string for every row.
  double portRate(uint32_t worker, uint32_t nic) const {
    const uint64_t key = (uint64_t{worker} << 32) | nic;
    auto it = rates_.find(key);
    if (it == rates_.end())
      it = rates_.emplace(key, ctx_.portRate(rows_.str(worker), rows_.str(nic))).first;
    return it->second;
  }

  void latency(const JudgeRow& r, const Thresholds& t, const JudgeRow* base,
               std::vector<std::string>& why) const {
    const double lat = r.lat_median_us;
    const auto fig = [lat] { return "latency " + formatFixed(lat, 2) + " us"; };
    if (t.latency_us_max && lat > *t.latency_us_max) {
      why.push_back(fig() + " > " + compact(*t.latency_us_max) + " us (latency_us_max)");
    }
    const auto lowest = bests_.lat.find(groupOf(r));
    if (t.lowest_latency_factor_max && lowest != bests_.lat.end() && lowest->second &&
        lowest->second->value > 0 && lat / lowest->second->value > *t.lowest_latency_factor_max) {
      why.push_back(fig() + " is " + formatFixed(lat / lowest->second->value, 2) + "x the lowest " +
                    formatFixed(lowest->second->value, 2) + " us (" +
                    pairName(rows_[lowest->second->row]) + ") > " +
                    compact(*t.lowest_latency_factor_max) + "x (lowest_latency_factor_max)");
    }
    if (t.regression_tolerance && base && base->has_latency && base->lat_median_us > 0) {
      const double was = base->lat_median_us;
      const double rise = lat / was - 1.0;
      if (rise > *t.regression_tolerance) {
        why.push_back(fig() + " is " + formatPercent(rise) + " above baseline " +
                      formatFixed(was, 2) + " us (" + std::string(baseline_rows_.testId(*base)) +
                      ") > " + formatPercent(*t.regression_tolerance) + " (regression_tolerance)");
      }
    }
  }

 private:
  std::string pairName(const JudgeRow& r) const {
    return rows_.endpointName(r.initiator) + "->" + rows_.endpointName(r.target);
  }

  // A GPU row against the best host-memory row on the same NICs.
  void gpuHostRatio(const JudgeRow& r, double min, std::vector<std::string>& why) const {
    auto host = bests_.host_bw.find(nicPairOf(r));
    if (host == bests_.host_bw.end() || !host->second || host->second->value <= 0) return;
    const double bw = r.bw_avg_gbps;
    const double ratio = bw / host->second->value;
    if (ratio >= min) return;
    const std::string topo = rows_.topologyOf(r);
    why.push_back("GPU " + formatFixed(bw, 1) + " Gb/s is " + formatFixed(ratio, 2) + " of host " +
                  formatFixed(host->second->value, 1) + " Gb/s on the same NICs (topology " +
                  (topo.empty() ? "unknown" : topo) + ") < " + compact(min) +
                  " (gpu_host_ratio_min)");
  }

  const JudgeRows& rows_;
  const JudgeContext& ctx_;
  const JudgeBests& bests_;
  const JudgeRows& baseline_rows_;
  mutable std::unordered_map<uint64_t, double> rates_;  // portRate()'s, by (worker, NIC)
};

}  // namespace

JudgeVerdicts judgeRows(const JudgeRows& rows, const ClusterConfig& config, const JudgeContext& ctx,
                        const JudgeRows& baseline_rows) {
  const JudgeBests bests = judgeBestsOf(rows);
  const std::map<BaselineKey, size_t> baseline = judgeBaselineIndex(rows, baseline_rows);
  const JudgeFigureChecks checks(rows, ctx, bests, baseline_rows);
  // Thresholds per worker, each looked up once.
  std::vector<std::optional<Thresholds>> thresholds(rows.strings().size());
  auto thresholds_of = [&](uint32_t worker) -> const Thresholds& {
    auto& t = thresholds[worker];
    if (!t) t = config.thresholdsFor(rows.str(worker), labelsOf(ctx, rows.str(worker)));
    return *t;
  };

  JudgeVerdicts out;
  out.kind.reserve(rows.size());
  out.reasons_of.reserve(rows.size());
  std::vector<std::string> why;
  auto push = [&out, &why](VerdictKind k) {
    out.kind.push_back(k);
    if (why.empty()) {
      out.reasons_of.push_back(0);
    } else {
      out.reasons.push_back(std::move(why));
      out.reasons_of.push_back(static_cast<uint32_t>(out.reasons.size()));
    }
    why.clear();
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const JudgeRow& r = rows[i];
    if (r.status != TestStatus::kPassed) {
      const std::string& reason = rows.str(r.reason);
      why.push_back(std::string("status ") + toString(r.status) +
                    (reason.empty() ? "" : ": " + reason));
      push(r.status == TestStatus::kSkipped ? VerdictKind::kSkip : VerdictKind::kFail);
      continue;
    }
    if (!r.ran()) {
      why.push_back("no figures to judge (status PASSED without bandwidth or latency)");
      push(VerdictKind::kSkip);
      continue;
    }
    const Thresholds t =
        stricterOf(thresholds_of(r.initiator.worker), thresholds_of(r.target.worker));
    if (r.integrity_checked && r.wrong_bytes > 0) {
      why.push_back("integrity: " + std::to_string(r.wrong_bytes) + " wrong bytes of " +
                    std::to_string(r.bytes_checked) + " checked");
    }
    const JudgeRow* base = nullptr;
    if (t.regression_tolerance && !baseline.empty()) {
      const auto it = baseline.find(baselineKey(r, keyOf(r.initiator), keyOf(r.target)));
      if (it != baseline.end()) base = &baseline_rows[it->second];
    }
    if (r.has_bandwidth) checks.bandwidth(r, t, base, why);
    if (r.has_latency) checks.latency(r, t, base, why);
    push(why.empty() ? VerdictKind::kPass : VerdictKind::kFail);
  }
  return out;
}

std::vector<PairVerdict> judgeResults(const std::vector<TestResult>& results,
                                      const ClusterConfig& config, const JudgeContext& ctx) {
  JudgeRows rows;
  rows.reserve(results.size());
  for (const auto& r : results) rows.add(r, ctx.retests.count(r.test_id) > 0);
  JudgeRows baseline;
  baseline.reserve(ctx.baseline.size());
  for (const auto& b : ctx.baseline) baseline.add(b);
  return verdictsOf(rows, judgeRows(rows, config, ctx, baseline));
}

}  // namespace gdrmesh
