#include "coordinator/orchestrator/sweep_summary.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/stats.h"

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

std::vector<FigureSummary> summariseFigures(const std::vector<PairVerdict>& verdicts, size_t keep) {
  using Key = std::tuple<int, int, uint64_t, std::string>;
  std::map<Key, std::vector<const PairVerdict*>> groups;
  for (const auto& v : verdicts) {
    if (v.retest || v.unit.empty()) continue;  // a retest re-examines; no figure: nothing to sum
    groups[{static_cast<int>(v.op), static_cast<int>(v.mode), v.message_size, v.unit}].push_back(
        &v);
  }
  std::vector<FigureSummary> out;
  out.reserve(groups.size());
  for (auto& [key, list] : groups) {
    FigureSummary s;
    s.op = static_cast<Op>(std::get<0>(key));
    s.mode = static_cast<Mode>(std::get<1>(key));
    s.message_size = std::get<2>(key);
    s.unit = std::get<3>(key);
    const bool higher_is_better = s.unit != "us";
    // Worse first; ties in plan order.
    auto worse = [higher_is_better](double a, double b) {
      return higher_is_better ? a < b : a > b;
    };
    std::stable_sort(list.begin(), list.end(), [&](const PairVerdict* a, const PairVerdict* b) {
      return worse(a->value, b->value);
    });
    std::vector<double> values;
    values.reserve(list.size());
    std::map<std::string, std::vector<double>> by_host;
    for (const auto* v : list) {
      values.push_back(v->value);
      const std::string a = workerOf(v->src), b = workerOf(v->dst);
      by_host[a].push_back(v->value);
      if (b != a) by_host[b].push_back(v->value);
    }
    s.pairs = static_cast<uint32_t>(values.size());
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    s.median = medianOf(values);
    for (size_t i = 0; i < list.size() && i < keep; ++i) {
      s.worst.push_back({list[i]->src, list[i]->dst, list[i]->value});
    }
    std::vector<FigureHost> hosts;
    hosts.reserve(by_host.size());
    for (auto& [host, vals] : by_host) {
      hosts.push_back({host, medianOf(vals), static_cast<uint32_t>(vals.size())});
    }
    std::stable_sort(hosts.begin(), hosts.end(), [&](const FigureHost& a, const FigureHost& b) {
      return worse(a.median, b.median);
    });
    if (hosts.size() > keep) hosts.resize(keep);
    s.worst_hosts = std::move(hosts);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gdrmesh
