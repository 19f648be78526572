// The cluster config parser's reader of YAML nodes: shared by config_yaml.cc (the top level,
// sweeps, thresholds) and config_sections.cc (host classes, schedules, actions, hooks,
// retention, log, outliers, fabric). Internal to gdrmesh_cluster_config.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/units.h"
#include "coordinator/orchestrator/cluster_config.h"

namespace gdrmesh::config_yaml {

// Parsing state: the origin for messages. Every error reads
// "ORIGIN:LINE: PATH: what is wrong" with the fix beside it.
class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  Status error(const YAML::Node& node, const std::string& path, const std::string& what,
               const std::string& fix = {}) const {
    std::string where = origin_;
    if (node.IsDefined() && node.Mark().line >= 0) {
      where += ":" + std::to_string(node.Mark().line + 1);
    }
    return invalidArgument(where + ": " + path + ": " + what, fix);
  }

  // A Status from a shared parser whose message is "FIELD: what": placed at `path`.FIELD, or at
  // `path` when FIELD is `path` itself.
  Status rebase(const YAML::Node& node, const std::string& path, const Status& st,
                const std::string& fallback_fix) const {
    const std::string& m = st.message();
    const size_t colon = m.find(": ");
    std::string field = colon == std::string::npos ? "" : m.substr(0, colon);
    const std::string what = colon == std::string::npos ? m : m.substr(colon + 2);
    const std::string at = field == path || field.empty() ? path : path + "." + field;
    return error(node, at, what, st.fix().empty() ? fallback_fix : st.fix());
  }

  // A mapping whose keys are all in `valid`.
  Status checkMap(const YAML::Node& node, const std::string& path,
                  const std::vector<std::string>& valid) const {
    if (!node.IsMap()) return error(node, path, "must be a mapping (KEY: VALUE lines)");
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
        std::string list;
        for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
        return error(kv.first, join(path, key), "unknown key", "valid keys here: " + list);
      }
    }
    return Status::okStatus();
  }

  Result<std::string> string(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) return error(node, path, "must be a single value");
    return node.Scalar();
  }

  Result<double> number(const YAML::Node& node, const std::string& path) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
      return error(node, path, "'" + text + "' is not a number");
    }
    return v;
  }

  Result<uint64_t> count(const YAML::Node& node, const std::string& path, uint64_t min,
                         uint64_t max) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0) {
      return error(node, path, "'" + text + "' is not a whole number");
    }
    if (v < min || v > max) {
      return error(node, path,
                   text + " is out of range " + std::to_string(min) + ".." + std::to_string(max));
    }
    return static_cast<uint64_t>(v);
  }

  Result<uint64_t> size(const YAML::Node& node, const std::string& path) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    auto v = parseSize(text, path);
    if (!v.ok()) return rebase(node, path, v.status(), "e.g. 4096, 64KiB, 1MiB");
    if (*v == 0) return error(node, path, "must be > 0", "e.g. 64KiB");
    return v;
  }

  Result<bool> boolean(const YAML::Node& node, const std::string& path) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    if (text == "true") return true;
    if (text == "false") return false;
    return error(node, path, "'" + text + "' is not true or false");
  }

  Result<double> seconds(const YAML::Node& node, const std::string& path) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    auto v = parseDurationSeconds(text, path);
    if (!v.ok()) return rebase(node, path, v.status(), "e.g. 30s, 5m, 250ms");
    return v;
  }

  template <typename E>
  Result<E> oneOf(const YAML::Node& node, const std::string& path,
                  const std::function<std::optional<E>(const std::string&)>& parse,
                  const std::string& valid) const {
    GDR_ASSIGN_OR_RETURN(std::string text, string(node, path));
    auto v = parse(text);
    if (!v) return error(node, path, "'" + text + "' is not one of: " + valid);
    return *v;
  }

  Result<std::vector<std::string>> strings(const YAML::Node& node, const std::string& path) const {
    if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
    if (!node.IsSequence()) return error(node, path, "must be a list of names");
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) {
      GDR_ASSIGN_OR_RETURN(std::string s, string(node[i], index(path, i)));
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<std::map<std::string, std::string>> labels(const YAML::Node& node,
                                                    const std::string& path) const {
    if (!node.IsMap()) return error(node, path, "must be a mapping of KEY: VALUE labels");
    std::map<std::string, std::string> out;
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      GDR_ASSIGN_OR_RETURN(out[key], string(kv.second, join(path, key)));
    }
    return out;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  // The top level's lists: sweeps, host_classes, schedules and hooks.
  Status lists(const YAML::Node& root, ClusterConfig& config) const;
  Status thresholds(const YAML::Node& node, const std::string& path, Thresholds& t) const;
  Status sweep(const YAML::Node& node, const std::string& path, SweepSpec& s) const;
  // A sweep's test: sizes, iterations, op, mode, memory, transport, QPs, duration, timeout.
  Status sweepTest(const YAML::Node& node, const std::string& path, SweepSpec& s) const;
  // memory, src_memory, dst_memory, gpu, reg, src_reg, dst_reg: one rule (common/pair_spec.h).
  Status sweepMemory(const YAML::Node& node, const std::string& path, PairTestSpec& t) const;
  // A sweep's plan: pattern, direction, rounds, seed, hosts, pairs, concurrency, retries.
  Status sweepPlan(const YAML::Node& node, const std::string& path, SweepSpec& s) const;
  Status sweepPairs(const YAML::Node& node, const std::string& path, SweepSpec& s) const;
  Status hostClass(const YAML::Node& node, const std::string& path, HostClass& c) const;
  Status schedule(const YAML::Node& node, const std::string& path, ScheduleConfig& c) const;
  Status actions(const YAML::Node& n, const std::string& path, ActionOptions& a) const;
  Status hook(const YAML::Node& n, const std::string& path, HookOptions& h) const;
  Status retention(const YAML::Node& r, ClusterConfig& config) const;
  Status log(const YAML::Node& n, ClusterConfig& config) const;
  Status outliers(const YAML::Node& n, OutlierOptions& o) const;
  // fabric, fabric_hosts, fabric_ca_order, fabric_reader, fabric_counters_reset and
  // fabric_thresholds.
  Status fabric(const YAML::Node& root, ClusterConfig& config) const;
  Status fabricThresholds(const YAML::Node& n, ClusterConfig& config) const;

 private:
  std::string origin_;
};

}  // namespace gdrmesh::config_yaml
