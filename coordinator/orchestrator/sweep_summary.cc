#include "coordinator/orchestrator/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "common/stats.h"
#include "coordinator/orchestrator/figure_json.h"

namespace gdrmesh {

std::vector<SweepSpec> partSpecs(const SweepSpec& spec,
                                 const std::vector<SweepSpec>& config_sweeps) {
  if (!spec.pattern_from_config) return {spec};
  std::vector<SweepSpec> parts;
  parts.reserve(config_sweeps.size());
  for (SweepSpec s : config_sweeps) {
    if (s.hosts.empty()) s.hosts = spec.hosts;
    if (s.exclude.empty()) s.exclude = spec.exclude;
    if (s.select.empty()) s.select = spec.select;
    parts.push_back(std::move(s));
  }
  return parts;
}

std::vector<SweepPart> sweepParts(const SweepSpec& spec,
                                  const std::vector<SweepSpec>& config_sweeps,
                                  const std::vector<uint64_t>& planned) {
  std::vector<SweepPart> out;
  std::vector<SweepSpec> specs = partSpecs(spec, config_sweeps);
  const bool known = planned.size() == specs.size();
  uint64_t begin = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    SweepPart p;
    p.index = static_cast<uint32_t>(i);
    p.spec = std::move(specs[i]);
    p.spec.config_yaml.clear();  // the run's spec holds it once
    if (known) {
      p.plan_begin = begin;
      p.planned = planned[i];
      p.planned_known = true;
      begin += planned[i];
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

std::string workerOf(const std::string& endpoint) {
  return endpoint.substr(0, endpoint.find('/'));
}

}  // namespace

void FigureAccumulator::add(const PairVerdict& v) {
  if (v.retest || v.unit.empty()) return;  // a retest re-examines; no figure: nothing to sum
  auto& list = groups_[{static_cast<int>(v.op), static_cast<int>(v.mode), v.message_size, v.unit}];
  list.push_back({v.value, idOf(v.src), idOf(v.dst)});
}

void FigureAccumulator::add(Op op, Mode mode, uint64_t message_size, const std::string& unit,
                            double value, uint32_t src, uint32_t dst) {
  // Rows of one group come in runs (plan order): its list is looked up once a run.
  GroupKey key{static_cast<int>(op), static_cast<int>(mode), message_size, unit};
  if (last_ == nullptr || key != last_key_) {
    last_ = &groups_[key];
    last_key_ = std::move(key);
  }
  last_->push_back({value, src, dst});
}

std::vector<FigureSummary> reportFigures(const JudgeRows& rows) {
  FigureAccumulator acc;
  // Endpoint ids by (worker, nic) string ids: a name is made once per endpoint, not per row.
  std::unordered_map<uint64_t, uint32_t> ids;
  auto id = [&](const JudgeSide& s) {
    const uint64_t key = (static_cast<uint64_t>(s.worker) << 32) | s.nic;
    auto it = ids.find(key);
    if (it == ids.end()) it = ids.emplace(key, acc.endpointId(rows.endpointName(s))).first;
    return it->second;
  };
  const std::string us = "us", gbps = "Gb/s";
  for (const JudgeRow& r : rows) {
    // verdictOf's figure: the latency where the test measured latency (or only that).
    if (r.retest) continue;
    const bool latency_figure = r.has_latency && (r.mode == Mode::kLatency || !r.has_bandwidth);
    if (!latency_figure && !r.has_bandwidth) continue;  // no unit: no figure
    double value = latency_figure ? r.lat_median_us : r.bw_avg_gbps;
    if (!std::isfinite(value)) value = 0.0;
    acc.add(r.op, r.mode, r.message_size, latency_figure ? us : gbps, value, id(r.initiator),
            id(r.target));
  }
  return acc.result();
}

uint32_t FigureAccumulator::idOf(const std::string& endpoint) {
  auto [it, added] = ids_.emplace(endpoint, static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(endpoint);
  return it->second;
}

std::vector<FigureSummary> FigureAccumulator::result(size_t keep) const {
  // Each endpoint's worker, once (at 1,024 hosts: 1,024 names for half a million entries).
  std::vector<uint32_t> worker_of(names_.size());
  std::vector<std::string> workers;
  {
    std::map<std::string, uint32_t> ids;
    for (size_t i = 0; i < names_.size(); ++i) {
      auto [it, added] = ids.emplace(workerOf(names_[i]), static_cast<uint32_t>(workers.size()));
      if (added) workers.push_back(it->first);
      worker_of[i] = it->second;
    }
  }
  std::vector<FigureSummary> out;
  out.reserve(groups_.size());
  for (const auto& [key, entries] : groups_) {
    const std::vector<Entry>& list = entries;  // a plain reference: the lambdas below use it
    FigureSummary s;
    s.op = static_cast<Op>(std::get<0>(key));
    s.mode = static_cast<Mode>(std::get<1>(key));
    s.message_size = std::get<2>(key);
    s.unit = std::get<3>(key);
    const bool higher_is_better = s.unit != "us";
    auto worse = [higher_is_better](double a, double b) {
      return higher_is_better ? a < b : a > b;
    };
    std::vector<double> values;
    values.reserve(list.size());
    std::vector<std::vector<double>> by_worker(workers.size());
    for (const Entry& e : list) {
      values.push_back(e.value);
      const uint32_t a = worker_of[e.src], b = worker_of[e.dst];
      by_worker[a].push_back(e.value);
      if (b != a) by_worker[b].push_back(e.value);
    }
    s.pairs = static_cast<uint32_t>(values.size());
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    s.median = medianOf(values);
    // The `keep` worst pairs, worse first; ties in plan order (the order they were added).
    std::vector<uint32_t> order(list.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    const size_t n_worst = std::min(keep, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_worst),
                      order.end(), [&](uint32_t x, uint32_t y) {
                        if (worse(list[x].value, list[y].value)) return true;
                        if (worse(list[y].value, list[x].value)) return false;
                        return x < y;
                      });
    for (size_t i = 0; i < n_worst; ++i) {
      const Entry& e = list[order[i]];
      s.worst.push_back({names_[e.src], names_[e.dst], e.value});
    }
    std::vector<FigureHost> hosts;
    hosts.reserve(workers.size());
    for (size_t w = 0; w < workers.size(); ++w) {
      if (by_worker[w].empty()) continue;
      const auto n = static_cast<uint32_t>(by_worker[w].size());
      hosts.push_back({workers[w], medianOf(std::move(by_worker[w])), n});
    }
    // Worse first; ties by host name.
    std::sort(hosts.begin(), hosts.end(), [&](const FigureHost& x, const FigureHost& y) {
      if (worse(x.median, y.median)) return true;
      if (worse(y.median, x.median)) return false;
      return x.host < y.host;
    });
    if (hosts.size() > keep) hosts.resize(keep);
    s.worst_hosts = std::move(hosts);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<FigureSummary> summariseFigures(const std::vector<PairVerdict>& verdicts, size_t keep) {
  FigureAccumulator acc;
  for (const auto& v : verdicts) acc.add(v);
  return acc.result(keep);
}

nlohmann::ordered_json figureJson(const FigureSummary& f) {
  nlohmann::ordered_json worst = nlohmann::ordered_json::array();
  for (const auto& w : f.worst)
    worst.push_back({{"src", w.src}, {"dst", w.dst}, {"value", w.value}});
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const auto& h : f.worst_hosts) {
    hosts.push_back({{"host", h.host}, {"median", h.median}, {"pairs", h.pairs}});
  }
  return {{"op", toString(f.op)},
          {"mode", toString(f.mode)},
          {"message_size", f.message_size},
          {"unit", f.unit},
          {"pairs", f.pairs},
          {"min", f.min},
          {"median", f.median},
          {"max", f.max},
          {"worst", std::move(worst)},
          {"worst_hosts", std::move(hosts)}};
}

std::string figuresJson(const std::vector<FigureSummary>& figures) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FigureSummary& f : figures) out.push_back(figureJson(f));
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// A number of figuresJson ("null" only for a figure that was not finite).
double figureNumber(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

// One of worst[]: {src, dst, value}, or [src, dst, value] as rows stored before the shared
// encoding have it; false for anything else.
bool figurePairFromJson(const nlohmann::json& p, FigurePair* out) {
  if (p.is_object() && p.value("src", nlohmann::json()).is_string() &&
      p.value("dst", nlohmann::json()).is_string()) {
    *out = {p["src"].get<std::string>(), p["dst"].get<std::string>(),
            figureNumber(p.value("value", nlohmann::json()))};
    return true;
  }
  if (p.is_array() && p.size() == 3 && p[0].is_string() && p[1].is_string()) {
    *out = {p[0].get<std::string>(), p[1].get<std::string>(), figureNumber(p[2])};
    return true;
  }
  return false;
}

// One of worst_hosts[]: {host, median, pairs}, or [host, median, pairs] as older rows have it.
bool figureHostFromJson(const nlohmann::json& h, FigureHost* out) {
  if (h.is_object() && h.value("host", nlohmann::json()).is_string() &&
      h.value("pairs", nlohmann::json()).is_number_unsigned()) {
    *out = {h["host"].get<std::string>(), figureNumber(h.value("median", nlohmann::json())),
            h["pairs"].get<uint32_t>()};
    return true;
  }
  if (h.is_array() && h.size() == 3 && h[0].is_string() && h[2].is_number_unsigned()) {
    *out = {h[0].get<std::string>(), figureNumber(h[1]), h[2].get<uint32_t>()};
    return true;
  }
  return false;
}

// The shared encoding (figureJson), or the compact form reports were stored in before it
// ("size" for message_size, worst pairs and hosts as arrays): both read the same.
FigureSummary figureFromJson(const nlohmann::json& f) {
  FigureSummary s;
  s.op = parseOp(f.value("op", "")).value_or(Op::kWrite);
  s.mode = parseMode(f.value("mode", "")).value_or(Mode::kBandwidth);
  s.message_size = f.contains("message_size") ? f.value("message_size", uint64_t{0})
                                              : f.value("size", uint64_t{0});
  s.unit = f.value("unit", "");
  s.pairs = f.value("pairs", uint32_t{0});
  s.min = figureNumber(f.value("min", nlohmann::json()));
  s.median = figureNumber(f.value("median", nlohmann::json()));
  s.max = figureNumber(f.value("max", nlohmann::json()));
  for (const auto& p : f.value("worst", nlohmann::json::array())) {
    FigurePair pair;
    if (figurePairFromJson(p, &pair)) s.worst.push_back(std::move(pair));
  }
  for (const auto& h : f.value("worst_hosts", nlohmann::json::array())) {
    FigureHost host;
    if (figureHostFromJson(h, &host)) s.worst_hosts.push_back(std::move(host));
  }
  return s;
}

}  // namespace

std::optional<std::vector<FigureSummary>> figuresFromJson(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  std::vector<FigureSummary> out;
  for (const auto& f : j) {
    if (!f.is_object()) return std::nullopt;
    try {
      out.push_back(figureFromJson(f));
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;  // a field of another type: not ours
    }
  }
  return out;
}

}  // namespace gdrmesh
