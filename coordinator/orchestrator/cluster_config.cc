#include "coordinator/orchestrator/cluster_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gdrmesh {

const char* toString(ActionOptions::Mode m) {
  switch (m) {
    case ActionOptions::Mode::kOff:
      return "off";
    case ActionOptions::Mode::kDryRun:
      return "dry-run";
    case ActionOptions::Mode::kOn:
      return "on";
  }
  return "off";
}

void Thresholds::inheritFrom(const Thresholds& base) {
  auto fill = [](std::optional<double>& mine, const std::optional<double>& theirs) {
    if (!mine) mine = theirs;
  };
  fill(bandwidth_gbps_min, base.bandwidth_gbps_min);
  fill(latency_us_max, base.latency_us_max);
  fill(line_rate_fraction_min, base.line_rate_fraction_min);
  fill(best_pair_fraction_min, base.best_pair_fraction_min);
  fill(lowest_latency_factor_max, base.lowest_latency_factor_max);
  fill(gpu_host_ratio_min, base.gpu_host_ratio_min);
  fill(regression_tolerance, base.regression_tolerance);
}

const HostClass* ClusterConfig::classOf(const std::string& worker,
                                        const std::map<std::string, std::string>& labels) const {
  for (const auto& c : host_classes) {
    if (!c.match.empty() && fnmatch(c.match.c_str(), worker.c_str(), 0) != 0) continue;
    bool all = true;
    for (const auto& [key, value] : c.labels) {
      auto it = labels.find(key);
      all = all && it != labels.end() && it->second == value;
    }
    if (all) return &c;
  }
  return nullptr;
}

Thresholds ClusterConfig::thresholdsFor(const std::string& worker,
                                        const std::map<std::string, std::string>& labels) const {
  const HostClass* c = classOf(worker, labels);
  if (!c) return thresholds;
  Thresholds t = c->thresholds;
  t.inheritFrom(thresholds);
  return t;
}

bool ClusterConfig::hasThresholds() const {
  auto any = [](const Thresholds& t) {
    return t.bandwidth_gbps_min || t.latency_us_max || t.line_rate_fraction_min ||
           t.best_pair_fraction_min || t.lowest_latency_factor_max || t.gpu_host_ratio_min ||
           t.regression_tolerance;
  };
  if (any(thresholds)) return true;
  for (const auto& c : host_classes) {
    if (any(c.thresholds)) return true;
  }
  return false;
}

namespace {

// A check of the expected inventory: PASS, or FAIL with the fix.
PreflightCheck expectedCheck(const std::string& id, const std::string& title, bool ok,
                             const std::string& detail, const std::string& fix) {
  PreflightCheck c;
  c.id = id;
  c.title = title;
  c.status = ok ? "PASS" : "FAIL";
  c.detail = detail;
  if (!ok) c.remediation = fix;
  return c;
}

// UNKNOWN: no host class matches `worker`, or its class `hc` expects nothing.
PreflightCheck noExpectationCheck(const HostClass* hc, const std::string& worker) {
  PreflightCheck c;
  c.id = "expect.class";
  c.title = "expected inventory";
  c.status = "UNKNOWN";
  c.detail = hc == nullptr ? "no host class of the config matches " + worker
                           : "host class '" + hc->name + "' expects nothing";
  c.remediation =
      "add a host class with `expect:` (gpus, nics, nic_rate_gbps, transports) "
      "to the config (docs/config.md)";
  return c;
}

// Every NIC port ACTIVE at `rate_gbps` or more. `cls` ends the detail (" (host class 'x')").
PreflightCheck nicRateCheck(const Inventory& inv, double rate_gbps, const std::string& cls) {
  std::string slow;
  int ports = 0;
  for (const auto& n : inv.nics) {
    for (const auto& p : n.ports) {
      ++ports;
      if (p.state != "ACTIVE" || p.rate_gbps < rate_gbps) {
        slow += (slow.empty() ? "" : ", ") + n.name + "/" + std::to_string(p.port) + " " + p.state +
                " " + std::to_string(static_cast<int>(p.rate_gbps)) + " Gb/s";
      }
    }
  }
  const bool ok = ports > 0 && slow.empty();
  return expectedCheck(
      "expect.nic_rate", "NIC ports at rate", ok,
      ports == 0 ? "no NIC ports to check" + cls
                 : (ok ? "every port ACTIVE at >= " : "below ") +
                       std::to_string(static_cast<int>(rate_gbps)) + " Gb/s" +
                       (ok ? "" : ": " + slow) + cls,
      "check cables and the switch port (`ibstat`, `ethtool`); a degraded link fails "
      "acceptance");
}

// Transport `t` usable, or why not (the worker's note on it).
PreflightCheck transportCheck(const Inventory& inv, const std::string& t, const std::string& cls) {
  const bool have =
      std::find(inv.transports.begin(), inv.transports.end(), t) != inv.transports.end();
  std::string why;
  for (const auto& n : inv.notes) {
    if (n.rfind(t, 0) == 0) why = ": " + n;
  }
  return expectedCheck("expect.transport." + t, "transport " + t + " usable", have,
                       (have ? "usable" : "not usable" + why) + cls,
                       "see the worker's notes (`gdrmesh workers --notes`) for why");
}

}  // namespace

std::vector<PreflightCheck> checkExpectedInventory(const ClusterConfig& config,
                                                   const std::string& worker,
                                                   const std::map<std::string, std::string>& labels,
                                                   const Inventory& inv) {
  const HostClass* hc = config.classOf(worker, labels);
  const bool expects =
      hc != nullptr && (hc->expect.gpus || hc->expect.nics || hc->expect.nic_rate_gbps ||
                        !hc->expect.transports.empty());
  if (!expects) return {noExpectationCheck(hc, worker)};
  std::vector<PreflightCheck> out;
  const std::string cls = " (host class '" + hc->name + "')";
  const auto& e = hc->expect;
  if (e.gpus) {
    const int have = static_cast<int>(inv.gpus.size());
    out.push_back(expectedCheck(
        "expect.gpus", "GPUs present", have >= *e.gpus,
        std::to_string(have) + " of " + std::to_string(*e.gpus) + " expected GPUs visible" + cls,
        "check `nvidia-smi` and the NVIDIA driver; a missing GPU fails acceptance"));
  }
  if (e.nics) {
    const int have = static_cast<int>(inv.nics.size());
    out.push_back(expectedCheck("expect.nics", "RDMA NICs present", have >= *e.nics,
                                std::to_string(have) + " of " + std::to_string(*e.nics) +
                                    " expected RDMA NICs visible" + cls,
                                "check `ibv_devices` and the NIC's RDMA driver (mlx5_ib)"));
  }
  if (e.nic_rate_gbps) out.push_back(nicRateCheck(inv, *e.nic_rate_gbps, cls));
  for (const auto& t : e.transports) out.push_back(transportCheck(inv, t, cls));
  return out;
}

std::vector<std::string> registrationFindings(const ClusterConfig& config,
                                              const std::string& worker,
                                              const std::map<std::string, std::string>& labels,
                                              const Inventory& inv, double* expected_rate_gbps) {
  std::vector<std::string> out;
  if (expected_rate_gbps != nullptr) *expected_rate_gbps = 0;
  const HostClass* hc = config.classOf(worker, labels);
  if (hc == nullptr) return out;
  const auto& e = hc->expect;
  const std::string cls = " (host class '" + hc->name + "' expects ";
  auto fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return std::string(buf);
  };
  if (e.nics && static_cast<int>(inv.nics.size()) != *e.nics) {
    out.push_back("inventory.nics: " + std::to_string(inv.nics.size()) + " registered" + cls +
                  std::to_string(*e.nics) + ")");
  }
  if (e.gpus && static_cast<int>(inv.gpus.size()) != *e.gpus) {
    out.push_back("inventory.gpus: " + std::to_string(inv.gpus.size()) + " registered" + cls +
                  std::to_string(*e.gpus) + ")");
  }
  if (e.nic_rate_gbps) {
    if (expected_rate_gbps != nullptr) *expected_rate_gbps = *e.nic_rate_gbps;
    for (const auto& n : inv.nics) {
      if (n.ports.empty()) {
        out.push_back("inventory.nics[" + n.name + "].ports: none registered" + cls +
                      fmt(*e.nic_rate_gbps) + " Gb/s ports)");
      }
      for (const auto& p : n.ports) {
        if (p.rate_gbps > *e.nic_rate_gbps) {
          out.push_back("inventory.nics[" + n.name + "].ports[" + std::to_string(p.port) +
                        "].rate_gbps: " + fmt(p.rate_gbps) + " registered" + cls +
                        fmt(*e.nic_rate_gbps) + "; figures are bounded by that)");
        }
      }
    }
  }
  return out;
}

std::string thresholdText(const CounterThreshold& t) {
  char count[32];
  std::snprintf(count, sizeof count, "%g", t.count);
  if (t.per_seconds == 3600) return std::string(count) + "/h";
  if (t.per_seconds == 60) return std::string(count) + "/min";
  if (t.per_seconds == 1) return std::string(count) + "/s";
  if (t.per_seconds > 0) {
    char per[32];
    std::snprintf(per, sizeof per, "%g", t.per_seconds);
    return std::string(count) + " per " + per + " s";
  }
  return std::string(count) + " per round";
}

std::vector<CounterThreshold> defaultCounterThresholds() {
  return {
      {"LinkDownedCounter", 0, 0, "any increase: a link that went down during a round"},
      {"SymbolErrorCounter", 120, 3600,
       "BER 1e-12 (IBTA), the figure NVIDIA's NVSentinel uses: 120 symbol errors an hour"},
      {"LinkErrorRecoveryCounter", 5, 60, "5 link error recoveries a minute"},
      {"PortRcvErrors", 10, 0, "infiniband-diags' thresholds file (ibqueryerrors), per window"},
      {"PortXmitDiscards", 100, 0, "infiniband-diags' thresholds file (ibqueryerrors), per window"},
      {"PortXmitWait", 1000, 0, "infiniband-diags' thresholds file (ibqueryerrors), per window"},
  };
}

Result<CounterThreshold> parseCounterThreshold(const std::string& counter, const std::string& text,
                                               const std::string& field) {
  CounterThreshold t;
  t.counter = counter;
  t.source = "the config's " + field;
  const std::string fix =
      "give a count per hour, minute, second or round: \"120/h\", \"5/min\", \"2/s\", \"10\"";
  const size_t slash = text.find('/');
  const std::string number = text.substr(0, slash);
  char* end = nullptr;
  t.count = std::strtod(number.c_str(), &end);
  if (number.empty() || end == nullptr || *end != '\0' || !(t.count >= 0)) {
    return invalidArgument(field + ": '" + text + "' is not a count of errors", fix);
  }
  if (slash != std::string::npos) {
    const std::string per = text.substr(slash + 1);
    if (per == "h" || per == "hour") {
      t.per_seconds = 3600;
    } else if (per == "min" || per == "minute") {
      t.per_seconds = 60;
    } else if (per == "s" || per == "second") {
      t.per_seconds = 1;
    } else {
      return invalidArgument(field + ": '" + text + "': unknown period '" + per + "'", fix);
    }
  }
  return t;
}

}  // namespace gdrmesh
