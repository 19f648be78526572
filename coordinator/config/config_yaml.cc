#include "coordinator/config/config_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>

#include "common/fabric/counters.h"
#include "common/pair_spec.h"
#include "common/units.h"
#include "coordinator/config/config_keys.h"

namespace gdrmesh {
namespace {

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

  Status thresholds(const YAML::Node& node, const std::string& path, Thresholds& t) const;
  Status sweep(const YAML::Node& node, const std::string& path, SweepSpec& s) const;
  Status hostClass(const YAML::Node& node, const std::string& path, HostClass& c) const;
  Status schedule(const YAML::Node& node, const std::string& path, ScheduleConfig& c) const;
  Status actions(const YAML::Node& node, const std::string& path, ActionOptions& a) const;
  Status hook(const YAML::Node& node, const std::string& path, HookOptions& h) const;

 private:
  std::string origin_;
};

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
  PairTestSpec& t = s.test;
  if (node["name"]) {
    GDR_ASSIGN_OR_RETURN(s.name, string(node["name"], join(path, "name")));
  }
  if (node["pattern"]) {
    GDR_ASSIGN_OR_RETURN(
        s.pattern, oneOf<SweepPattern>(node["pattern"], join(path, "pattern"), parseSweepPattern,
                                       "pairs, all-pairs, rails, loopback, random, cover, "
                                       "bisection"));
  }
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
  {
    // One rule for memory, gpu and reg (common/pair_spec.h), spelled as the keys are here.
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
    const Status st =
        applyMemoryOptions(mem,
                           MemoryOptionNames{"memory", "src_memory", "dst_memory", "gpu", "reg",
                                             ": ", "src_reg", "dst_reg"},
                           &t);
    // (A YAML::Node is a reference: assigning one to another would rewrite the document.)
    if (!st.ok()) return rebase(first != nullptr ? node[first] : node, path, st, "");
  }
  if (node["transport"]) {
    GDR_ASSIGN_OR_RETURN(TransportKind k,
                         oneOf<TransportKind>(node["transport"], join(path, "transport"),
                                              parseTransportKind, "emulated, verbs, simulated"));
    t.transport = k;
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
  if (node["pairs"]) {
    GDR_ASSIGN_OR_RETURN(std::vector<std::string> pairs,
                         strings(node["pairs"], join(path, "pairs")));
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
  if (node["max_concurrency"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t m,
                         count(node["max_concurrency"], join(path, "max_concurrency"), 0, 1000000));
    s.max_concurrency = static_cast<uint32_t>(m);
  }
  if (node["retries"]) {
    GDR_ASSIGN_OR_RETURN(uint64_t r, count(node["retries"], join(path, "retries"), 0, 10));
    s.retries = static_cast<uint32_t>(r);
  }
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

Status Parser::hostClass(const YAML::Node& node, const std::string& path, HostClass& c) const {
  GDR_RETURN_IF_ERROR(checkMap(node, path, clusterConfigKeysOf("host_classes[]")));
  if (!node["name"]) return error(node, join(path, "name"), "missing", "name the class");
  GDR_ASSIGN_OR_RETURN(c.name, string(node["name"], join(path, "name")));
  if (node["match"]) {
    GDR_ASSIGN_OR_RETURN(c.match, string(node["match"], join(path, "match")));
  }
  if (node["labels"]) {
    GDR_ASSIGN_OR_RETURN(c.labels, labels(node["labels"], join(path, "labels")));
  }
  if (node["thresholds"]) {
    GDR_RETURN_IF_ERROR(thresholds(node["thresholds"], join(path, "thresholds"), c.thresholds));
  }
  if (node["expect"]) {
    const YAML::Node e = node["expect"];
    const std::string p = join(path, "expect");
    GDR_RETURN_IF_ERROR(checkMap(e, p, clusterConfigKeysOf("host_classes[].expect")));
    if (e["gpus"]) {
      GDR_ASSIGN_OR_RETURN(uint64_t g, count(e["gpus"], join(p, "gpus"), 0, 1024));
      c.expect.gpus = static_cast<int>(g);
    }
    if (e["nics"]) {
      GDR_ASSIGN_OR_RETURN(uint64_t n, count(e["nics"], join(p, "nics"), 0, 1024));
      c.expect.nics = static_cast<int>(n);
    }
    if (e["nic_rate_gbps"]) {
      GDR_ASSIGN_OR_RETURN(double r, number(e["nic_rate_gbps"], join(p, "nic_rate_gbps")));
      if (r <= 0) return error(e["nic_rate_gbps"], join(p, "nic_rate_gbps"), "must be > 0");
      c.expect.nic_rate_gbps = r;
    }
    if (e["transports"]) {
      GDR_ASSIGN_OR_RETURN(c.expect.transports, strings(e["transports"], join(p, "transports")));
      for (size_t i = 0; i < c.expect.transports.size(); ++i) {
        if (!parseTransportKind(c.expect.transports[i])) {
          return error(
              e["transports"], index(join(p, "transports"), i),
              "'" + c.expect.transports[i] + "' is not one of: emulated, verbs, simulated");
        }
      }
    }
  }
  return Status::okStatus();
}

Status Parser::schedule(const YAML::Node& node, const std::string& path, ScheduleConfig& c) const {
  GDR_RETURN_IF_ERROR(checkMap(node, path, clusterConfigKeysOf("schedules[]")));
  for (const char* required : {"name", "cron", "sweep"}) {
    if (!node[required]) {
      return error(node, join(path, required), "missing",
                   "a schedule needs name, cron and sweep (timezone is optional)");
    }
  }
  GDR_ASSIGN_OR_RETURN(c.name, string(node["name"], join(path, "name")));
  GDR_ASSIGN_OR_RETURN(c.cron, string(node["cron"], join(path, "cron")));
  std::istringstream fields(c.cron);
  std::string field;
  int n = 0;
  while (fields >> field) ++n;
  if (n != 5) {
    return error(node["cron"], join(path, "cron"),
                 "'" + c.cron + "' has " + std::to_string(n) + " fields, not 5",
                 "minute hour day-of-month month day-of-week, e.g. \"0 2 * * *\" for 02:00 daily");
  }
  if (node["timezone"]) {
    GDR_ASSIGN_OR_RETURN(c.timezone, string(node["timezone"], join(path, "timezone")));
  }
  if (node["catch_up"]) {
    GDR_ASSIGN_OR_RETURN(c.catch_up, boolean(node["catch_up"], join(path, "catch_up")));
  }
  if (node["grace"]) {
    GDR_ASSIGN_OR_RETURN(c.catch_up_grace_seconds, seconds(node["grace"], join(path, "grace")));
    if (!(c.catch_up_grace_seconds >= 1 && c.catch_up_grace_seconds <= 86400.0)) {
      return error(node["grace"], join(path, "grace"), "is out of range 1s..24h",
                   "how long a catch-up run waits for its workers after a restart, e.g. 10m");
    }
    if (!c.catch_up) {
      return error(node["grace"], join(path, "grace"), "is used only with catch_up: true",
                   "add catch_up: true, or drop grace");
    }
  }
  GDR_RETURN_IF_ERROR(sweep(node["sweep"], join(path, "sweep"), c.sweep));
  if (c.sweep.name.empty()) c.sweep.name = c.name;
  return Status::okStatus();
}

}  // namespace

Status Parser::actions(const YAML::Node& n, const std::string& path, ActionOptions& a) const {
  GDR_RETURN_IF_ERROR(checkMap(n, path, clusterConfigKeysOf("actions")));
  if (n["mode"]) {
    GDR_ASSIGN_OR_RETURN(const std::string m, string(n["mode"], join(path, "mode")));
    if (m == "off") {
      a.mode = ActionOptions::Mode::kOff;
    } else if (m == "dry-run") {
      a.mode = ActionOptions::Mode::kDryRun;
    } else if (m == "on") {
      a.mode = ActionOptions::Mode::kOn;
    } else {
      return error(n["mode"], join(path, "mode"), "'" + m + "' is not one of: off, dry-run, on",
                   "start with dry-run, read `gdrmesh sweep show`, then turn it on");
    }
  }
  if (n["actuator"]) {
    GDR_ASSIGN_OR_RETURN(a.actuator, string(n["actuator"], join(path, "actuator")));
    if (a.actuator != "slurm" && a.actuator != "kubernetes") {
      return error(n["actuator"], join(path, "actuator"),
                   "'" + a.actuator + "' is not one of: slurm, kubernetes");
    }
  }
  if (n["max_share"]) {
    GDR_ASSIGN_OR_RETURN(a.max_share, number(n["max_share"], join(path, "max_share")));
    if (!(a.max_share > 0 && a.max_share <= 1)) {
      return error(n["max_share"], join(path, "max_share"), "is outside (0, 1]",
                   "give the share of the sweep's hosts, e.g. 0.5");
    }
  }
  if (n["window"]) {
    GDR_ASSIGN_OR_RETURN(a.window_seconds, seconds(n["window"], join(path, "window")));
    if (!(a.window_seconds >= 1 && a.window_seconds <= 7 * 86400.0)) {
      return error(n["window"], join(path, "window"), "is out of range 1s..7 days", "e.g. 5m");
    }
  }
  if (n["scontrol"]) {
    GDR_ASSIGN_OR_RETURN(a.scontrol, string(n["scontrol"], join(path, "scontrol")));
  }
  if (n["command_timeout"]) {
    GDR_ASSIGN_OR_RETURN(a.command_timeout_seconds,
                         seconds(n["command_timeout"], join(path, "command_timeout")));
    if (!(a.command_timeout_seconds >= 0.1 && a.command_timeout_seconds <= 600)) {
      return error(n["command_timeout"], join(path, "command_timeout"),
                   "is out of range 100ms..10m", "e.g. 10s");
    }
  }
  if (YAML::Node k = n["kubernetes"]) {
    const std::string kp = join(path, "kubernetes");
    GDR_RETURN_IF_ERROR(checkMap(k, kp, clusterConfigKeysOf("actions.kubernetes")));
    if (k["api"]) {
      GDR_ASSIGN_OR_RETURN(a.kubernetes_api, string(k["api"], join(kp, "api")));
    }
    if (k["token_file"]) {
      GDR_ASSIGN_OR_RETURN(a.kubernetes_token_file,
                           string(k["token_file"], join(kp, "token_file")));
    }
    if (k["ca_file"]) {
      GDR_ASSIGN_OR_RETURN(a.kubernetes_ca_file, string(k["ca_file"], join(kp, "ca_file")));
    }
  }
  if (a.mode != ActionOptions::Mode::kOff && a.actuator == "kubernetes" &&
      a.kubernetes_api.empty()) {
    return error(n, join(path, "kubernetes.api"), "is required with actuator: kubernetes",
                 "e.g. https://kubernetes.default.svc");
  }
  return Status::okStatus();
}

Status Parser::hook(const YAML::Node& n, const std::string& path, HookOptions& h) const {
  GDR_RETURN_IF_ERROR(checkMap(n, path, clusterConfigKeysOf("hooks[]")));
  if (n["command"]) {
    if (!n["command"].IsSequence()) {
      return error(n["command"], join(path, "command"), "must be a list (the argv, no shell)",
                   "e.g. command: [/usr/local/bin/notify, --channel, fabric]");
    }
    GDR_ASSIGN_OR_RETURN(h.command, strings(n["command"], join(path, "command")));
  }
  if (n["url"]) {
    GDR_ASSIGN_OR_RETURN(h.url, string(n["url"], join(path, "url")));
    if (h.url.rfind("http://", 0) != 0 && h.url.rfind("https://", 0) != 0) {
      return error(n["url"], join(path, "url"), "'" + h.url + "' is not an http(s) URL",
                   "e.g. https://alerts.example.com/gdrmesh");
    }
  }
  if (h.command.empty() == h.url.empty()) {
    return error(n, path, "needs exactly one of command and url", "give one of them per hook");
  }
  if (n["token_file"]) {
    GDR_ASSIGN_OR_RETURN(h.token_file, string(n["token_file"], join(path, "token_file")));
  }
  if (n["attempts"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t v, count(n["attempts"], join(path, "attempts"), 1, 20));
    h.attempts = static_cast<int>(v);
  }
  if (n["timeout"]) {
    GDR_ASSIGN_OR_RETURN(h.timeout_seconds, seconds(n["timeout"], join(path, "timeout")));
    if (!(h.timeout_seconds >= 0.1 && h.timeout_seconds <= 600)) {
      return error(n["timeout"], join(path, "timeout"), "is out of range 100ms..10m", "e.g. 10s");
    }
  }
  if (n["backoff"]) {
    GDR_ASSIGN_OR_RETURN(h.backoff_seconds, seconds(n["backoff"], join(path, "backoff")));
    if (!(h.backoff_seconds >= 0 && h.backoff_seconds <= 3600)) {
      return error(n["backoff"], join(path, "backoff"), "is out of range 0..1h", "e.g. 1s");
    }
  }
  if (n["queue_limit"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t v,
                         count(n["queue_limit"], join(path, "queue_limit"), 1, 100000));
    h.queue_limit = static_cast<int>(v);
  }
  return Status::okStatus();
}

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
  const Parser p(origin);
  try {
    GDR_RETURN_IF_ERROR(p.checkMap(root, "(top level)", clusterConfigKeysOf("(top level)")));
    auto list = [&](const char* key) -> Result<YAML::Node> {
      YAML::Node n = root[key];
      if (n && !n.IsSequence()) {
        return p.error(n, key, "must be a list (lines starting with '- ')");
      }
      return n;
    };
    GDR_ASSIGN_OR_RETURN(YAML::Node sweeps, list("sweeps"));
    for (size_t i = 0; sweeps && i < sweeps.size(); ++i) {
      SweepSpec s;
      GDR_RETURN_IF_ERROR(p.sweep(sweeps[i], Parser::index("sweeps", i), s));
      config.sweeps.push_back(std::move(s));
    }
    if (root["thresholds"]) {
      GDR_RETURN_IF_ERROR(p.thresholds(root["thresholds"], "thresholds", config.thresholds));
    }
    GDR_ASSIGN_OR_RETURN(YAML::Node classes, list("host_classes"));
    std::set<std::string> class_names;
    for (size_t i = 0; classes && i < classes.size(); ++i) {
      HostClass c;
      const std::string path = Parser::index("host_classes", i);
      GDR_RETURN_IF_ERROR(p.hostClass(classes[i], path, c));
      if (!class_names.insert(c.name).second) {
        return p.error(classes[i]["name"], path + ".name",
                       "class '" + c.name + "' is defined twice", "give each class its own name");
      }
      config.host_classes.push_back(std::move(c));
    }
    GDR_ASSIGN_OR_RETURN(YAML::Node schedules, list("schedules"));
    std::set<std::string> schedule_names;
    for (size_t i = 0; schedules && i < schedules.size(); ++i) {
      ScheduleConfig c;
      const std::string path = Parser::index("schedules", i);
      GDR_RETURN_IF_ERROR(p.schedule(schedules[i], path, c));
      if (!schedule_names.insert(c.name).second) {
        return p.error(schedules[i]["name"], path + ".name",
                       "schedule '" + c.name + "' is defined twice",
                       "give each schedule its own name");
      }
      config.schedules.push_back(std::move(c));
    }
    if (YAML::Node r = root["retention"]) {
      GDR_RETURN_IF_ERROR(p.checkMap(r, "retention", clusterConfigKeysOf("retention")));
      RetentionOptions& o = config.retention;
      if (r["days"]) {
        GDR_ASSIGN_OR_RETURN(const uint64_t days, p.count(r["days"], "retention.days", 0, 36500));
        o.days = static_cast<uint32_t>(days);
      }
      if (r["interval"]) {
        GDR_ASSIGN_OR_RETURN(o.interval_seconds, p.seconds(r["interval"], "retention.interval"));
        if (!(o.interval_seconds >= 1 && o.interval_seconds <= 7 * 86400.0)) {
          return p.error(r["interval"], "retention.interval", "is out of range 1s..7 days",
                         "e.g. 1h");
        }
      }
      if (r["batch"]) {
        GDR_ASSIGN_OR_RETURN(const uint64_t batch,
                             p.count(r["batch"], "retention.batch", 1, 100000));
        o.batch_rows = static_cast<uint32_t>(batch);
      }
      config.retention_set = true;
    }
    if (YAML::Node n = root["log"]) {
      GDR_RETURN_IF_ERROR(p.checkMap(n, "log", clusterConfigKeysOf("log")));
      if (n["format"]) {
        GDR_ASSIGN_OR_RETURN(const std::string f, p.string(n["format"], "log.format"));
        auto format = parseLogFormat(f);
        if (!format.ok()) {
          return p.error(n["format"], "log.format", "'" + f + "' is not text or json",
                         "json: one JSON object per line (journald, Kubernetes)");
        }
        config.log_format = *format;
      }
      if (n["level"]) {
        GDR_ASSIGN_OR_RETURN(const std::string l, p.string(n["level"], "log.level"));
        auto level = parseLogLevel(l);
        if (!level.ok()) {
          return p.error(n["level"], "log.level",
                         "'" + l + "' is not one of: debug, info, warn, error", "e.g. info");
        }
        config.log_level = *level;
      }
    }
    if (YAML::Node n = root["outliers"]) {
      GDR_RETURN_IF_ERROR(p.checkMap(n, "outliers", clusterConfigKeysOf("outliers")));
      OutlierOptions& o = config.outliers;
      if (n["detect"]) {
        GDR_ASSIGN_OR_RETURN(const std::string d, p.string(n["detect"], "outliers.detect"));
        if (d != "true" && d != "false") {
          return p.error(n["detect"], "outliers.detect", "'" + d + "' is not true or false",
                         "detect: false turns outlier detection off");
        }
        o.detect = d == "true";
      }
      if (n["fail"]) {
        GDR_ASSIGN_OR_RETURN(const std::string f, p.string(n["fail"], "outliers.fail"));
        if (f == "auto") {
          o.fail = OutlierOptions::Fail::kAuto;
        } else if (f == "always") {
          o.fail = OutlierOptions::Fail::kAlways;
        } else if (f == "never") {
          o.fail = OutlierOptions::Fail::kNever;
        } else {
          return p.error(n["fail"], "outliers.fail",
                         "'" + f + "' is not one of: auto, always, never",
                         "auto: an outlier fails a sweep whose config sets no threshold");
        }
      }
      if (n["robust_z"]) {
        GDR_ASSIGN_OR_RETURN(o.robust_z, p.number(n["robust_z"], "outliers.robust_z"));
        if (!(o.robust_z >= 1 && o.robust_z <= 1000)) {
          return p.error(n["robust_z"], "outliers.robust_z", "is outside [1, 1000]",
                         "give robust standard deviations, e.g. 5");
        }
      }
      if (n["min_shortfall"]) {
        GDR_ASSIGN_OR_RETURN(o.min_shortfall,
                             p.number(n["min_shortfall"], "outliers.min_shortfall"));
        if (!(o.min_shortfall >= 0 && o.min_shortfall < 1)) {
          return p.error(n["min_shortfall"], "outliers.min_shortfall", "is outside [0, 1)",
                         "give a fraction (0.1 = 10 % below the cluster's median)");
        }
      }
      if (n["min_partners"]) {
        GDR_ASSIGN_OR_RETURN(const uint64_t v,
                             p.count(n["min_partners"], "outliers.min_partners", 1, 100000));
        o.min_partners = static_cast<int>(v);
      }
      if (n["min_hosts"]) {
        GDR_ASSIGN_OR_RETURN(const uint64_t v,
                             p.count(n["min_hosts"], "outliers.min_hosts", 3, 100000));
        o.min_hosts = static_cast<int>(v);
      }
    }
    if (YAML::Node n = root["actions"]) {
      GDR_RETURN_IF_ERROR(p.actions(n, "actions", config.actions));
    }
    if (YAML::Node n = root["fabric"]) {
      GDR_ASSIGN_OR_RETURN(config.fabric, p.string(n, "fabric"));
      if (config.fabric.empty()) {
        return p.error(n, "fabric", "is empty",
                       "give the snapshot `gdrmesh fabric discover --save FILE` wrote");
      }
    }
    if (YAML::Node n = root["fabric_hosts"]) {
      if (!n.IsMap()) {
        return p.error(n, "fabric_hosts",
                       "must be a mapping of WORKER: \"node description\" (or host name)",
                       "e.g. fabric_hosts: {gpu07: \"node07 mlx5_0\"}");
      }
      GDR_ASSIGN_OR_RETURN(config.fabric_hosts, p.labels(n, "fabric_hosts"));
    }
    if (YAML::Node n = root["fabric_reader"]) {
      GDR_ASSIGN_OR_RETURN(config.fabric_reader, p.string(n, "fabric_reader"));
      if (config.fabric_reader.empty()) {
        return p.error(n, "fabric_reader", "is empty",
                       "name a real worker on an InfiniBand host (the one that discovers)");
      }
    }
    if (YAML::Node n = root["fabric_counters_reset"]) {
      GDR_ASSIGN_OR_RETURN(config.fabric_counters_reset, p.boolean(n, "fabric_counters_reset"));
    }
    if (YAML::Node n = root["fabric_thresholds"]) {
      if (!n.IsMap()) {
        return p.error(n, "fabric_thresholds", "must be a mapping of COUNTER: RATE",
                       "e.g. fabric_thresholds: {SymbolErrorCounter: 120/h, PortRcvErrors: 10}");
      }
      for (const auto& kv : n) {
        const std::string counter = kv.first.as<std::string>();
        const std::string field = "fabric_thresholds." + counter;
        const fabric::CounterKind* kind = fabric::counterKind(counter);
        if (kind == nullptr || !kind->error) {
          return p.error(kv.first, field, "is not an error counter gdrmesh reads",
                         "name one of SymbolErrorCounter, LinkErrorRecoveryCounter, "
                         "LinkDownedCounter, PortRcvErrors, PortXmitDiscards, PortXmitWait, ...");
        }
        GDR_ASSIGN_OR_RETURN(const std::string text, p.string(kv.second, field));
        auto t = parseCounterThreshold(counter, text, field);
        if (!t.ok()) return p.error(kv.second, field, t.status().message(), t.status().fix());
        auto& all = config.fabric_thresholds;
        all.erase(std::remove_if(all.begin(), all.end(),
                                 [&](const CounterThreshold& x) { return x.counter == counter; }),
                  all.end());
        all.push_back(*t);
      }
    }
    GDR_ASSIGN_OR_RETURN(YAML::Node hooks, list("hooks"));
    for (size_t i = 0; hooks && i < hooks.size(); ++i) {
      HookOptions h;
      GDR_RETURN_IF_ERROR(p.hook(hooks[i], Parser::index("hooks", i), h));
      config.hooks.push_back(std::move(h));
    }
  } catch (const YAML::Exception& e) {
    return invalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg,
                           "check the structure near that line against docs/config.md");
  }
  return config;
}

}  // namespace gdrmesh
