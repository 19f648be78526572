#include "coordinator/orchestrator/judge.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <tuple>

namespace gdrmesh {
namespace {

std::string fixed1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}
std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
std::string compact(double v) {  // thresholds as written: 25, 0.9, 2.1
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string percent(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100.0);
  return buf;
}

std::string endpointName(const EndpointRecord& e) {
  return e.nic.empty() ? e.worker : e.worker + "/" + e.nic;
}
std::string pairName(const TestResult& r) {
  return endpointName(r.initiator) + "->" + endpointName(r.target);
}

bool usesCuda(const TestResult& r) {
  return r.initiator.memory == MemoryKind::kCuda || r.target.memory == MemoryKind::kCuda;
}

// The GPU-NIC path classes of the cuda sides ("SYS", or "PIX/SYS" when they differ).
std::string topologyOf(const TestResult& r) {
  std::vector<std::string> classes;
  for (const auto* e : {&r.initiator, &r.target}) {
    if (e->memory == MemoryKind::kCuda && !e->topo_class.empty() &&
        std::find(classes.begin(), classes.end(), e->topo_class) == classes.end()) {
      classes.push_back(e->topo_class);
    }
  }
  std::string out;
  for (const auto& c : classes) out += (out.empty() ? "" : "/") + c;
  return out;
}

bool hasBw(const TestResult& r) {
  return r.status == TestStatus::kPassed && r.measurement.has_bandwidth;
}
bool hasLat(const TestResult& r) {
  return r.status == TestStatus::kPassed && r.measurement.has_latency;
}

// Rows compared with each other: same size, op, mode and memory kinds.
using GroupKey = std::tuple<uint64_t, int, int, int, int>;
GroupKey groupOf(const TestResult& r) {
  return {r.message_size, static_cast<int>(r.op), static_cast<int>(r.mode),
          static_cast<int>(r.initiator.memory), static_cast<int>(r.target.memory)};
}

// The best row of a group; ties go to the smaller test id so that row order does not matter.
struct Best {
  double value = 0;
  std::string pair;
  std::string test_id;
};
void keepBest(std::optional<Best>& best, double value, const TestResult& r, bool higher_wins) {
  const bool better = !best || (higher_wins ? value > best->value : value < best->value) ||
                      (value == best->value && r.test_id < best->test_id);
  if (better) best = Best{value, pairName(r), r.test_id};
}

// Host-memory rows on one unordered NIC pair: size, op, mode, the two endpoints in order.
using NicPairKey = std::tuple<uint64_t, int, int, std::string, std::string>;
NicPairKey nicPairOf(const TestResult& r) {
  std::string a = endpointName(r.initiator), b = endpointName(r.target);
  if (b < a) std::swap(a, b);
  return {r.message_size, static_cast<int>(r.op), static_cast<int>(r.mode), a, b};
}

// A baseline row for the same directed pair and test shape.
using BaselineKey = std::tuple<std::string, std::string, uint64_t, int, int, int, int>;
BaselineKey baselineOf(const TestResult& r) {
  return {endpointName(r.initiator),
          endpointName(r.target),
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

std::vector<PairVerdict> judgeResults(const std::vector<TestResult>& results,
                                      const ClusterConfig& config, const JudgeContext& ctx) {
  // Figures of the whole sweep, each computed once.
  std::map<GroupKey, std::optional<Best>> best_bw, lowest_lat;
  std::map<NicPairKey, std::optional<Best>> host_bw;
  for (const auto& r : results) {
    if (hasBw(r)) {
      keepBest(best_bw[groupOf(r)], r.measurement.bw.avg_gbps, r, true);
      if (!usesCuda(r)) keepBest(host_bw[nicPairOf(r)], r.measurement.bw.avg_gbps, r, true);
    }
    if (hasLat(r)) keepBest(lowest_lat[groupOf(r)], r.measurement.lat.median_us, r, false);
  }
  std::map<BaselineKey, const TestResult*> baseline;
  for (const auto& b : ctx.baseline) {
    if (b.status != TestStatus::kPassed || !b.ran()) continue;
    const TestResult*& slot = baseline[baselineOf(b)];
    if (!slot || std::tie(b.finished_ms, b.test_id) > std::tie(slot->finished_ms, slot->test_id)) {
      slot = &b;
    }
  }

  std::vector<PairVerdict> verdicts;
  verdicts.reserve(results.size());
  for (const auto& r : results) {
    PairVerdict v;
    v.test_id = r.test_id;
    v.src = endpointName(r.initiator);
    v.dst = endpointName(r.target);
    v.message_size = r.message_size;
    v.topo_class = topologyOf(r);
    v.retest = ctx.retests.count(r.test_id) > 0;
    const Measurement& m = r.measurement;
    const bool latency_figure = m.has_latency && (r.mode == Mode::kLatency || !m.has_bandwidth);
    if (latency_figure) {
      v.value = m.lat.median_us;
      v.unit = "us";
    } else if (m.has_bandwidth) {
      v.value = m.bw.avg_gbps;
      v.unit = "Gb/s";
    }

    if (r.status != TestStatus::kPassed) {
      v.verdict = r.status == TestStatus::kSkipped ? VerdictKind::kSkip : VerdictKind::kFail;
      v.reasons.push_back(std::string("status ") + toString(r.status) +
                          (r.reason.empty() ? "" : ": " + r.reason));
      verdicts.push_back(std::move(v));
      continue;
    }
    if (!r.ran()) {
      v.verdict = VerdictKind::kSkip;
      v.reasons.push_back("no figures to judge (status PASSED without bandwidth or latency)");
      verdicts.push_back(std::move(v));
      continue;
    }

    const Thresholds t =
        stricterOf(config.thresholdsFor(r.initiator.worker, labelsOf(ctx, r.initiator.worker)),
                   config.thresholdsFor(r.target.worker, labelsOf(ctx, r.target.worker)));
    std::vector<std::string>& why = v.reasons;

    if (r.integrity.checked && r.integrity.wrong_bytes > 0) {
      why.push_back("integrity: " + std::to_string(r.integrity.wrong_bytes) + " wrong bytes of " +
                    std::to_string(r.integrity.bytes_checked) + " checked");
    }
    const auto base_it = baseline.find(baselineOf(r));
    const TestResult* base = base_it == baseline.end() ? nullptr : base_it->second;

    if (m.has_bandwidth) {
      const double bw = m.bw.avg_gbps;
      const std::string fig = "bandwidth " + fixed1(bw) + " Gb/s";
      if (t.bandwidth_gbps_min && bw < *t.bandwidth_gbps_min) {
        why.push_back(fig + " < " + compact(*t.bandwidth_gbps_min) + " Gb/s (bandwidth_gbps_min)");
      }
      const double ra = ctx.portRate(r.initiator.worker, r.initiator.nic);
      const double rb = ctx.portRate(r.target.worker, r.target.nic);
      if (t.line_rate_fraction_min && ra > 0 && rb > 0) {
        const double rate = std::min(ra, rb);
        if (bw / rate < *t.line_rate_fraction_min) {
          why.push_back(fig + " is " + fixed2(bw / rate) + " of line rate " + compact(rate) +
                        " Gb/s < " + compact(*t.line_rate_fraction_min) +
                        " (line_rate_fraction_min)");
        }
      }
      const auto& best = best_bw[groupOf(r)];
      if (t.best_pair_fraction_min && best && best->value > 0 &&
          bw / best->value < *t.best_pair_fraction_min) {
        why.push_back(fig + " is " + fixed2(bw / best->value) + " of the best pair's " +
                      fixed1(best->value) + " Gb/s (" + best->pair + ") < " +
                      compact(*t.best_pair_fraction_min) + " (best_pair_fraction_min)");
      }
      if (t.gpu_host_ratio_min && usesCuda(r)) {
        auto host = host_bw.find(nicPairOf(r));
        if (host != host_bw.end() && host->second && host->second->value > 0) {
          const double ratio = bw / host->second->value;
          if (ratio < *t.gpu_host_ratio_min) {
            const std::string topo = topologyOf(r);
            why.push_back("GPU " + fixed1(bw) + " Gb/s is " + fixed2(ratio) + " of host " +
                          fixed1(host->second->value) + " Gb/s on the same NICs (topology " +
                          (topo.empty() ? "unknown" : topo) + ") < " +
                          compact(*t.gpu_host_ratio_min) + " (gpu_host_ratio_min)");
          }
        }
      }
      if (t.regression_tolerance && base && base->measurement.has_bandwidth &&
          base->measurement.bw.avg_gbps > 0) {
        const double was = base->measurement.bw.avg_gbps;
        const double drop = 1.0 - bw / was;
        if (drop > *t.regression_tolerance) {
          why.push_back(fig + " is " + percent(drop) + " below baseline " + fixed1(was) +
                        " Gb/s (" + base->test_id + ") > " + percent(*t.regression_tolerance) +
                        " (regression_tolerance)");
        }
      }
    }

    if (m.has_latency) {
      const double lat = m.lat.median_us;
      const std::string fig = "latency " + fixed2(lat) + " us";
      if (t.latency_us_max && lat > *t.latency_us_max) {
        why.push_back(fig + " > " + compact(*t.latency_us_max) + " us (latency_us_max)");
      }
      const auto& lowest = lowest_lat[groupOf(r)];
      if (t.lowest_latency_factor_max && lowest && lowest->value > 0 &&
          lat / lowest->value > *t.lowest_latency_factor_max) {
        why.push_back(fig + " is " + fixed2(lat / lowest->value) + "x the lowest " +
                      fixed2(lowest->value) + " us (" + lowest->pair + ") > " +
                      compact(*t.lowest_latency_factor_max) + "x (lowest_latency_factor_max)");
      }
      if (t.regression_tolerance && base && base->measurement.has_latency &&
          base->measurement.lat.median_us > 0) {
        const double was = base->measurement.lat.median_us;
        const double rise = lat / was - 1.0;
        if (rise > *t.regression_tolerance) {
          why.push_back(fig + " is " + percent(rise) + " above baseline " + fixed2(was) + " us (" +
                        base->test_id + ") > " + percent(*t.regression_tolerance) +
                        " (regression_tolerance)");
        }
      }
    }
    v.verdict = why.empty() ? VerdictKind::kPass : VerdictKind::kFail;
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

}  // namespace gdrmesh
