// The cluster config's sections other than sweeps and thresholds (config_yaml.cc): host
// classes, schedules, actions, hooks, retention, log, outliers and the fabric's keys.
#include <algorithm>
#include <set>

#include "common/fabric/counters.h"
#include "coordinator/config/config_keys.h"
#include "coordinator/config/config_parser.h"

namespace gdrmesh::config_yaml {

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

Status Parser::retention(const YAML::Node& r, ClusterConfig& config) const {
  GDR_RETURN_IF_ERROR(checkMap(r, "retention", clusterConfigKeysOf("retention")));
  RetentionOptions& o = config.retention;
  if (r["days"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t days, count(r["days"], "retention.days", 0, 36500));
    o.days = static_cast<uint32_t>(days);
  }
  if (r["interval"]) {
    GDR_ASSIGN_OR_RETURN(o.interval_seconds, seconds(r["interval"], "retention.interval"));
    if (!(o.interval_seconds >= 1 && o.interval_seconds <= 7 * 86400.0)) {
      return error(r["interval"], "retention.interval", "is out of range 1s..7 days", "e.g. 1h");
    }
  }
  if (r["batch"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t batch, count(r["batch"], "retention.batch", 1, 100000));
    o.batch_rows = static_cast<uint32_t>(batch);
  }
  config.retention_set = true;
  return Status::okStatus();
}

Status Parser::log(const YAML::Node& n, ClusterConfig& config) const {
  GDR_RETURN_IF_ERROR(checkMap(n, "log", clusterConfigKeysOf("log")));
  if (n["format"]) {
    GDR_ASSIGN_OR_RETURN(const std::string f, string(n["format"], "log.format"));
    auto format = parseLogFormat(f);
    if (!format.ok()) {
      return error(n["format"], "log.format", "'" + f + "' is not text or json",
                   "json: one JSON object per line (journald, Kubernetes)");
    }
    config.log_format = *format;
  }
  if (n["level"]) {
    GDR_ASSIGN_OR_RETURN(const std::string l, string(n["level"], "log.level"));
    auto level = parseLogLevel(l);
    if (!level.ok()) {
      return error(n["level"], "log.level", "'" + l + "' is not one of: debug, info, warn, error",
                   "e.g. info");
    }
    config.log_level = *level;
  }
  return Status::okStatus();
}

Status Parser::outliers(const YAML::Node& n, OutlierOptions& o) const {
  GDR_RETURN_IF_ERROR(checkMap(n, "outliers", clusterConfigKeysOf("outliers")));
  if (n["detect"]) {
    GDR_ASSIGN_OR_RETURN(const std::string d, string(n["detect"], "outliers.detect"));
    if (d != "true" && d != "false") {
      return error(n["detect"], "outliers.detect", "'" + d + "' is not true or false",
                   "detect: false turns outlier detection off");
    }
    o.detect = d == "true";
  }
  if (n["fail"]) {
    GDR_ASSIGN_OR_RETURN(const std::string f, string(n["fail"], "outliers.fail"));
    if (f == "auto") {
      o.fail = OutlierOptions::Fail::kAuto;
    } else if (f == "always") {
      o.fail = OutlierOptions::Fail::kAlways;
    } else if (f == "never") {
      o.fail = OutlierOptions::Fail::kNever;
    } else {
      return error(n["fail"], "outliers.fail", "'" + f + "' is not one of: auto, always, never",
                   "auto: an outlier fails a sweep whose config sets no threshold");
    }
  }
  if (n["robust_z"]) {
    GDR_ASSIGN_OR_RETURN(o.robust_z, number(n["robust_z"], "outliers.robust_z"));
    if (!(o.robust_z >= 1 && o.robust_z <= 1000)) {
      return error(n["robust_z"], "outliers.robust_z", "is outside [1, 1000]",
                   "give robust standard deviations, e.g. 5");
    }
  }
  if (n["min_shortfall"]) {
    GDR_ASSIGN_OR_RETURN(o.min_shortfall, number(n["min_shortfall"], "outliers.min_shortfall"));
    if (!(o.min_shortfall >= 0 && o.min_shortfall < 1)) {
      return error(n["min_shortfall"], "outliers.min_shortfall", "is outside [0, 1)",
                   "give a fraction (0.1 = 10 % below the cluster's median)");
    }
  }
  if (n["min_partners"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t v,
                         count(n["min_partners"], "outliers.min_partners", 1, 100000));
    o.min_partners = static_cast<int>(v);
  }
  if (n["min_hosts"]) {
    GDR_ASSIGN_OR_RETURN(const uint64_t v, count(n["min_hosts"], "outliers.min_hosts", 3, 100000));
    o.min_hosts = static_cast<int>(v);
  }
  return Status::okStatus();
}

Status Parser::fabric(const YAML::Node& root, ClusterConfig& config) const {
  if (YAML::Node n = root["fabric"]) {
    GDR_ASSIGN_OR_RETURN(config.fabric, string(n, "fabric"));
    if (config.fabric.empty()) {
      return error(n, "fabric", "is empty",
                   "give the snapshot `gdrmesh fabric discover --save FILE` wrote");
    }
  }
  if (YAML::Node n = root["fabric_hosts"]) {
    if (!n.IsMap()) {
      return error(n, "fabric_hosts",
                   "must be a mapping of WORKER: \"node description\" (or host name)",
                   "e.g. fabric_hosts: {gpu07: \"node07 mlx5_0\"}");
    }
    GDR_ASSIGN_OR_RETURN(config.fabric_hosts, labels(n, "fabric_hosts"));
  }
  if (YAML::Node n = root["fabric_ca_order"]) {
    GDR_ASSIGN_OR_RETURN(config.fabric_ca_order, string(n, "fabric_ca_order"));
    if (config.fabric_ca_order.empty()) {
      return error(n, "fabric_ca_order", "is empty",
                   "give the opensm-ftree-ca-order.dump OpenSM's ftree writes beside its log");
    }
  }
  if (YAML::Node n = root["fabric_reader"]) {
    GDR_ASSIGN_OR_RETURN(config.fabric_reader, string(n, "fabric_reader"));
    if (config.fabric_reader.empty()) {
      return error(n, "fabric_reader", "is empty",
                   "name a real worker on an InfiniBand host (the one that discovers)");
    }
  }
  if (YAML::Node n = root["fabric_counters_reset"]) {
    GDR_ASSIGN_OR_RETURN(config.fabric_counters_reset, boolean(n, "fabric_counters_reset"));
  }
  if (YAML::Node n = root["fabric_thresholds"]) GDR_RETURN_IF_ERROR(fabricThresholds(n, config));
  return Status::okStatus();
}

Status Parser::fabricThresholds(const YAML::Node& n, ClusterConfig& config) const {
  if (!n.IsMap()) {
    return error(n, "fabric_thresholds", "must be a mapping of COUNTER: RATE",
                 "e.g. fabric_thresholds: {SymbolErrorCounter: 120/h, PortRcvErrors: 10}");
  }
  for (const auto& kv : n) {
    const std::string counter = kv.first.as<std::string>();
    const std::string field = "fabric_thresholds." + counter;
    const fabric::CounterKind* kind = fabric::counterKind(counter);
    if (kind == nullptr || !kind->error) {
      return error(kv.first, field, "is not an error counter gdrmesh reads",
                   "name one of SymbolErrorCounter, LinkErrorRecoveryCounter, "
                   "LinkDownedCounter, PortRcvErrors, PortXmitDiscards, PortXmitWait, ...");
    }
    GDR_ASSIGN_OR_RETURN(const std::string text, string(kv.second, field));
    auto t = parseCounterThreshold(counter, text, field);
    if (!t.ok()) return error(kv.second, field, t.status().message(), t.status().fix());
    auto& all = config.fabric_thresholds;
    all.erase(std::remove_if(all.begin(), all.end(),
                             [&](const CounterThreshold& x) { return x.counter == counter; }),
              all.end());
    all.push_back(*t);
  }
  return Status::okStatus();
}

}  // namespace gdrmesh::config_yaml
