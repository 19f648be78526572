#include "coordinator/config/config_yaml.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

#include "common/pair_spec.h"
#include "common/units.h"
#include "coordinator/config/config_keys.h"
#include "coordinator/config/config_parser.h"

namespace gdrmesh {
namespace config_yaml {

Status Parser::lists(const YAML::Node& root, ClusterConfig& config) const {
  auto list = [&](const char* key) -> Result<YAML::Node> {
    YAML::Node n = root[key];
    if (n && !n.IsSequence()) {
      return error(n, key, "must be a list (lines starting with '- ')");
    }
    return n;
  };
  GDR_ASSIGN_OR_RETURN(YAML::Node sweeps, list("sweeps"));
  for (size_t i = 0; sweeps && i < sweeps.size(); ++i) {
    SweepSpec s;
    GDR_RETURN_IF_ERROR(sweep(sweeps[i], Parser::index("sweeps", i), s));
    config.sweeps.push_back(std::move(s));
  }
  GDR_ASSIGN_OR_RETURN(YAML::Node classes, list("host_classes"));
  std::set<std::string> class_names;
  for (size_t i = 0; classes && i < classes.size(); ++i) {
    HostClass c;
    const std::string path = Parser::index("host_classes", i);
    GDR_RETURN_IF_ERROR(hostClass(classes[i], path, c));
    if (!class_names.insert(c.name).second) {
      return error(classes[i]["name"], path + ".name", "class '" + c.name + "' is defined twice",
                   "give each class its own name");
    }
    config.host_classes.push_back(std::move(c));
  }
  GDR_ASSIGN_OR_RETURN(YAML::Node schedules, list("schedules"));
  std::set<std::string> schedule_names;
  for (size_t i = 0; schedules && i < schedules.size(); ++i) {
    ScheduleConfig c;
    const std::string path = Parser::index("schedules", i);
    GDR_RETURN_IF_ERROR(schedule(schedules[i], path, c));
    if (!schedule_names.insert(c.name).second) {
      return error(schedules[i]["name"], path + ".name",
                   "schedule '" + c.name + "' is defined twice", "give each schedule its own name");
    }
    config.schedules.push_back(std::move(c));
  }
  GDR_ASSIGN_OR_RETURN(YAML::Node hooks, list("hooks"));
  for (size_t i = 0; hooks && i < hooks.size(); ++i) {
    HookOptions h;
    GDR_RETURN_IF_ERROR(hook(hooks[i], Parser::index("hooks", i), h));
    config.hooks.push_back(std::move(h));
  }
  return Status::okStatus();
}

Status Parser::thresholds(const YAML::Node& node, const std::string& path, Thresholds& t) const {
  struct Field {
    const char* name;
    std::optional<double> Thresholds::*member;
    double min, max;
    bool min_open;  // the minimum itself is not allowed
    const char* meaning;
  };
  static const Field kFields[] = {
      {"bandwidth_gbps_min", &Thresholds::bandwidth_gbps_min, 0, 1e6, true, "Gb/s"},
      {"latency_us_max", &Thresholds::latency_us_max, 0, 1e9, true, "microseconds"},
      {"line_rate_fraction_min", &Thresholds::line_rate_fraction_min, 0, 1, true,
       "a fraction (0.9 = 90 % of the port rate)"},
      {"best_pair_fraction_min", &Thresholds::best_pair_fraction_min, 0, 1, true,
       "a fraction (0.93 = 93 % of the best pair)"},
      {"lowest_latency_factor_max", &Thresholds::lowest_latency_factor_max, 1, 1e6, false,
       "a factor (2.1 = 2.1 times the lowest latency)"},
      {"gpu_host_ratio_min", &Thresholds::gpu_host_ratio_min, 0, 1, true,
       "a fraction (0.8 = GPU memory at 80 % of host memory)"},
      {"regression_tolerance", &Thresholds::regression_tolerance, 0, 1, false,
       "a fraction (0.1 = 10 % worse than the baseline)"},
  };
  GDR_RETURN_IF_ERROR(checkMap(node, path, clusterConfigKeysOf("thresholds")));
  for (const auto& f : kFields) {
    const YAML::Node v = node[f.name];
    if (!v) continue;
    const std::string p = join(path, f.name);
    GDR_ASSIGN_OR_RETURN(double x, number(v, p));
    if (x < f.min || x > f.max || (f.min_open && x == f.min)) {
      std::ostringstream range;
      range << (f.min_open ? "(" : "[") << f.min << ", " << f.max << "]";
      return error(v, p, std::to_string(x) + " is outside " + range.str(),
                   std::string("give ") + f.meaning);
    }
    t.*(f.member) = x;
  }
  return Status::okStatus();
}

Status Parser::sweep(const YAML::Node& node, const std::string& path, SweepSpec& s) const {
  GDR_RETURN_IF_ERROR(checkMap(node, path, clusterConfigKeysOf("sweeps[]")));
  if (node["name"]) {
    GDR_ASSIGN_OR_RETURN(s.name, string(node["name"], join(path, "name")));
  }
  GDR_RETURN_IF_ERROR(sweepTest(node, path, s));
  GDR_RETURN_IF_ERROR(sweepPlan(node, path, s));
  const PairTestLimits limits;
  const PairTestSpec& t = s.test;
  if (s.pattern == SweepPattern::kPairs && s.pairs.empty()) {
    return error(node, join(path, "pairs"), "the pairs pattern needs a list of pairs",
                 "pairs: [a/mlx5_0:b/mlx5_0, ...]");
  }
  // The rules shared with the CLI (combinations, limits), on the template with stand-in workers.
  PairTestSpec check = t;
  check.initiator.worker = check.target.worker = "-";
  for (uint64_t sz : s.sizes.empty() ? std::vector<uint64_t>{t.message_size} : s.sizes) {
    check.message_size = sz;
    Status st = validatePairTestSpec(check, limits);
    if (!st.ok()) return rebase(node, path, st, "");
  }
  return Status::okStatus();
}

Status Parser::sweepTest(const YAML::Node& node, const std::string& path, SweepSpec& s) const {
  PairTestSpec& t = s.test;
  if (node["size"] && node["sizes"]) {
    return error(node["sizes"], join(path, "sizes"), "give size or sizes, not both",
                 "size: 64KiB for one size, sizes: [4KiB, 64KiB, 1MiB] for several");
  }
  if (node["size"]) {
    GDR_ASSIGN_OR_RETURN(t.message_size, size(node["size"], join(path, "size")));
  }
  if (node["sizes"]) {
    const YAML::Node list = node["sizes"];
    const std::string p = join(path, "sizes");
    if (!list.IsSequence() || list.size() == 0) {
      return error(list, p, "must be a non-empty list of sizes", "sizes: [4KiB, 64KiB, 1MiB]");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      GDR_ASSIGN_OR_RETURN(uint64_t v, size(list[i], index(p, i)));
      s.sizes.push_back(v);
    }
    t.message_size = s.sizes.front();
  }
  const PairTestLimits limits;
  if (node["iters"]) {
    GDR_ASSIGN_OR_RETURN(t.iterations,
                         count(node["iters"], join(path, "iters"), 1, limits.max_iterations));
  }
  if (node["warmup"]) {
    GDR_ASSIGN_OR_RETURN(t.warmup_iterations, count(node["warmup"], join(path, "warmup"), 0,
                                                    limits.max_warmup_iterations));
  }
  if (node["op"]) {
    GDR_ASSIGN_OR_RETURN(
        t.op, oneOf<Op>(node["op"], join(path, "op"), parseOp, "write, read, send, write_imm"));
  }
  if (node["mode"]) {
    GDR_ASSIGN_OR_RETURN(t.mode,
                         oneOf<Mode>(node["mode"], join(path, "mode"), parseMode, "bw, lat"));
  }
  GDR_RETURN_IF_ERROR(sweepMemory(node, path, t));
  if (node["transport"]) {
    GDR_ASSIGN_OR_RETURN(TransportKind k,
                         oneOf<TransportKind>(node["transport"], join(path, "transport"),
                                              parseTransportKind, "emulated, verbs, simulated"));
    t.transport = k;
  }
  if (node["qps"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t q, count(node["qps"], join(path, "qps"), 1, limits.max_qps));
    t.num_qps = static_cast<uint32_t>(q);
  }
  if (node["duration"]) {
    GDR_ASSIGN_OR_RETURN(t.duration_seconds, seconds(node["duration"], join(path, "duration")));
  }
  if (node["timeout"]) {
    GDR_ASSIGN_OR_RETURN(t.timeout_seconds, seconds(node["timeout"], join(path, "timeout")));
  }
  return Status::okStatus();
}

Status Parser::sweepMemory(const YAML::Node& node, const std::string& path, PairTestSpec& t) const {
  MemoryOptions mem;
  const char* first = nullptr;  // the first memory key given, for the line number
  for (auto [key, out] : {std::pair<const char*, std::string*>{"memory", &mem.both},
                          {"src_memory", &mem.src},
                          {"dst_memory", &mem.dst},
                          {"reg", &mem.reg},
                          {"src_reg", &mem.src_reg},
                          {"dst_reg", &mem.dst_reg}}) {
    if (!node[key]) continue;
    GDR_ASSIGN_OR_RETURN(*out, string(node[key], join(path, key)));
    if (first == nullptr) first = key;
  }
  if (node["gpu"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t g, count(node["gpu"], join(path, "gpu"), 0, 1023));
    mem.gpu = static_cast<int>(g);
    if (first == nullptr) first = "gpu";
  }
  const Status st = applyMemoryOptions(mem,
                                       MemoryOptionNames{"memory", "src_memory", "dst_memory",
                                                         "gpu", "reg", ": ", "src_reg", "dst_reg"},
                                       &t);
  // (A YAML::Node is a reference: assigning one to another would rewrite the document.)
  if (!st.ok()) return rebase(first != nullptr ? node[first] : node, path, st, "");
  return Status::okStatus();
}

Status Parser::sweepPlan(const YAML::Node& node, const std::string& path, SweepSpec& s) const {
  if (node["pattern"]) {
    GDR_ASSIGN_OR_RETURN(
        s.pattern, oneOf<SweepPattern>(node["pattern"], join(path, "pattern"), parseSweepPattern,
                                       "pairs, all-pairs, rails, loopback, random, cover, "
                                       "bisection"));
  }
  if (node["direction"]) {
    GDR_ASSIGN_OR_RETURN(s.direction,
                         oneOf<SweepDirection>(node["direction"], join(path, "direction"),
                                               parseSweepDirection, "one, both, bidir"));
  }
  if (node["rounds"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t r, count(node["rounds"], join(path, "rounds"), 1, 100000));
    s.random_rounds = static_cast<uint32_t>(r);
  }
  if (node["seed"]) {
    GDR_ASSIGN_OR_RETURN(s.seed, count(node["seed"], join(path, "seed"), 0, UINT64_MAX));
  }
  if (node["hosts"]) {
    GDR_ASSIGN_OR_RETURN(s.hosts, strings(node["hosts"], join(path, "hosts")));
  }
  if (node["exclude"]) {
    GDR_ASSIGN_OR_RETURN(s.exclude, strings(node["exclude"], join(path, "exclude")));
  }
  if (node["select"]) {
    GDR_ASSIGN_OR_RETURN(s.select, labels(node["select"], join(path, "select")));
  }
  if (node["pairs"]) GDR_RETURN_IF_ERROR(sweepPairs(node, path, s));
  if (node["max_concurrency"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t m,
                         count(node["max_concurrency"], join(path, "max_concurrency"), 0, 1000000));
    s.max_concurrency = static_cast<uint32_t>(m);
  }
  if (node["retries"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t r, count(node["retries"], join(path, "retries"), 0, 10));
    s.retries = static_cast<uint32_t>(r);
  }
  return Status::okStatus();
}

Status Parser::sweepPairs(const YAML::Node& node, const std::string& path, SweepSpec& s) const {
  GDR_ASSIGN_OR_RETURN(std::vector<std::string> pairs, strings(node["pairs"], join(path, "pairs")));
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string& text = pairs[i];
    const size_t colon = text.find(':');
    auto side_of = [](const std::string& part) {
      EndpointSelector e;
      const size_t slash = part.find('/');
      e.worker = part.substr(0, slash);
      if (slash != std::string::npos) e.device = part.substr(slash + 1);
      return e;
    };
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
      return error(node["pairs"], index(join(path, "pairs"), i),
                   "'" + text + "' is not INITIATOR[/NIC]:TARGET[/NIC]",
                   "e.g. gpu-a1/mlx5_0:gpu-a2/mlx5_0");
    }
    s.pairs.emplace_back(side_of(text.substr(0, colon)), side_of(text.substr(colon + 1)));
  }
  return Status::okStatus();
}

}  // namespace config_yaml

Result<ClusterConfig> parseClusterConfig(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return invalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                               std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg,
                           "check the indentation and quoting near that line");
  }
  ClusterConfig config;
  config.source = yaml_text;
  if (root.IsNull()) return config;  // an empty file: no sweeps, no thresholds
  const config_yaml::Parser p(origin);
  try {
    GDR_RETURN_IF_ERROR(p.checkMap(root, "(top level)", clusterConfigKeysOf("(top level)")));
    GDR_RETURN_IF_ERROR(p.lists(root, config));
    if (root["thresholds"]) {
      GDR_RETURN_IF_ERROR(p.thresholds(root["thresholds"], "thresholds", config.thresholds));
    }
    if (YAML::Node r = root["retention"]) GDR_RETURN_IF_ERROR(p.retention(r, config));
    if (YAML::Node n = root["log"]) GDR_RETURN_IF_ERROR(p.log(n, config));
    if (YAML::Node n = root["outliers"]) GDR_RETURN_IF_ERROR(p.outliers(n, config.outliers));
    if (YAML::Node n = root["actions"])
      GDR_RETURN_IF_ERROR(p.actions(n, "actions", config.actions));
    GDR_RETURN_IF_ERROR(p.fabric(root, config));
  } catch (const YAML::Exception& e) {
    return invalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg,
                           "check the structure near that line against docs/config.md");
  }
  return config;
}

}  // namespace gdrmesh
