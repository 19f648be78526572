// The cluster config, in domain terms (parsed from YAML by coordinator/config): which sweeps
// acceptance runs, the thresholds that judge them, host classes with their own thresholds and
// expected inventory, and nightly schedules. Documented in docs/config.md. The smallest useful
// file:
//
//     sweeps:
//       - pattern: all-pairs
//         size: 64KiB
//         iters: 50
//     thresholds:
//       bandwidth_gbps_min: 25
//
// Parsing errors name the key path ("sweeps[0].size") and the fix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/inventory.h"
#include "common/log.h"
#include "common/status.h"
#include "coordinator/actions/action_options.h"
#include "coordinator/orchestrator/retention.h"
#include "coordinator/orchestrator/sweep_types.h"

namespace gdrmesh {

// Every threshold is optional; an unset one is not checked.
struct Thresholds {
  std::optional<double> bandwidth_gbps_min;         // absolute
  std::optional<double> latency_us_max;             // absolute (median)
  std::optional<double> line_rate_fraction_min;     // avg Gb/s / active port rate (0..1)
  std::optional<double> best_pair_fraction_min;     // avg Gb/s / best pair of the sweep (0..1)
  std::optional<double> lowest_latency_factor_max;  // median / lowest median of the sweep
  std::optional<double> gpu_host_ratio_min;         // GPU-memory bw / host-memory bw, same NICs
  std::optional<double> regression_tolerance;       // max drop vs baseline (0.1 = 10 %)
  // Fills every unset field of *this from `base`.
  void inheritFrom(const Thresholds& base);
};

// Outlier detection (`outliers:`; docs/config.md): runs on every sweep, needs no threshold.
// A host (or a NIC of a host with several) whose median figure over all its partners lies at
// least `robust_z` robust spreads (1.4826 x MAD of the hosts' medians, at least 1 %) AND at
// least `min_shortfall` below the cluster's median is a suspect; so is a pair that far below
// its group's median on the sweep's test and again on its repeat. Defaults and why: README
// "Localisation".
struct OutlierOptions {
  bool detect = true;
  // When an outlier fails the sweep: kAuto when the config sets no bandwidth or latency
  // threshold (thresholds, where configured, decide the verdict), kAlways, or kNever (a
  // suspect, never the verdict).
  enum class Fail { kAuto, kAlways, kNever };
  Fail fail = Fail::kAuto;
  double robust_z = 5;
  double min_shortfall = 0.10;  // 0.10: 10 % below the cluster's median
  int min_partners = 4;         // partners a host needs before it is judged
  int min_hosts = 5;            // hosts with that many partners before anyone is
};

// What a host of a class must have: an acceptance preflight fails a host that has less.
struct ExpectedInventory {
  std::optional<int> gpus;
  std::optional<int> nics;
  std::optional<double> nic_rate_gbps;  // every NIC port at least this rate
  std::vector<std::string> transports;  // e.g. ["verbs"]
};

// Hosts matched by a name glob ("gpu-a*") and/or labels; the first matching class wins.
struct HostClass {
  std::string name;
  std::string match;                          // glob on the worker name; "" = any
  std::map<std::string, std::string> labels;  // all must match
  Thresholds thresholds;                      // unset fields inherit the global thresholds
  ExpectedInventory expect;
};

struct ScheduleConfig {
  std::string name;
  std::string cron;      // 5 fields: minute hour day-of-month month day-of-week
  std::string timezone;  // IANA name ("Europe/Berlin"); "" = UTC
  SweepSpec sweep;
  // `catch_up: true`: the newest run missed while the coordinator was down runs once after it
  // starts again, as soon as the sweep's expected workers are online, if that happens within
  // `grace` of the start; otherwise (and without catch_up) a run missed while down is `missed`.
  bool catch_up = false;
  double catch_up_grace_seconds = 600;
};

// A port counter's threshold (docs/fabric.md, "Counters"): more than `count` per `per_seconds`
// (0: per round, the window between the reads around it) is an error of the link. A rate, never
// "any error": HDR/NDR links (PAM4) always show some symbol errors before FEC.
struct CounterThreshold {
  std::string counter;     // IBA name: SymbolErrorCounter, ...
  double count = 0;        // more than this is over
  double per_seconds = 0;  // 3600: per hour; 60: per minute; 0: per round
  std::string source;      // where the default comes from (docs)
};
// "120/h", "5/min", "10/s", "10" (per round).
std::string thresholdText(const CounterThreshold& t);
// LinkDownedCounter: any increase; SymbolErrorCounter above 120/h (BER 1e-12, the IBTA figure
// NVIDIA's NVSentinel uses); LinkErrorRecoveryCounter above 5/min; infiniband-diags' per-window
// thresholds PortRcvErrors 10, PortXmitDiscards 100, PortXmitWait 1000.
std::vector<CounterThreshold> defaultCounterThresholds();
// "120/h", "5/min", "2/s", "10" (per round) -> count and period; errors name `field` and the fix.
Result<CounterThreshold> parseCounterThreshold(const std::string& counter, const std::string& text,
                                               const std::string& field);

struct ClusterConfig {
  std::vector<SweepSpec> sweeps;  // what `gdrmesh accept` runs, in order
  Thresholds thresholds;
  std::vector<HostClass> host_classes;
  std::vector<ScheduleConfig> schedules;
  OutlierOptions outliers;
  // The coordinator's raw-row retention (`retention:`); retention_set when the file has it.
  RetentionOptions retention;
  bool retention_set = false;
  // What the coordinator does with verdicts (`actions:`, `hooks:`); read from the coordinator's
  // own --config only, never from a sweep's.
  ActionOptions actions;
  std::vector<HookOptions> hooks;
  // The coordinator's log (`log:`, common/log.h); unset: --log-format / --log-level decide
  // (text, info). The command line's options win over these.
  std::optional<LogFormat> log_format;
  std::optional<LogLevel> log_level;
  // The coordinator's fabric snapshot (`fabric:`, a file `gdrmesh fabric discover --save`
  // wrote; relative to the config file's folder) and the workers' HCAs where their node
  // descriptions do not start with the worker's name or hostname (`fabric_hosts:`, worker ->
  // node description or host name). Read from the coordinator's own --config only.
  std::string fabric;
  std::map<std::string, std::string> fabric_hosts;
  // OpenSM's compute-node order (`fabric_ca_order:`, the opensm-ftree-ca-order.dump OpenSM's
  // ftree writes; relative to the config file's folder): seeds a `cover` sweep's first round as
  // `gdrmesh sweep plan --ca-order` does. Coordinator only.
  std::string fabric_ca_order;
  // The worker that reads the port counters around each round of a sweep on the fabric
  // (`fabric_reader:`, a real worker on an InfiniBand HCA; "": counters are not read), whether
  // it may reset the error counters after reading (`fabric_counters_reset:`, default false),
  // and the counters' thresholds (`fabric_thresholds:`, over the defaults). Coordinator only.
  std::string fabric_reader;
  bool fabric_counters_reset = false;
  std::vector<CounterThreshold> fabric_thresholds = defaultCounterThresholds();
  std::string source;  // the YAML text it was parsed from (stored with sweeps)

  // The class of a worker (nullptr = none) and the thresholds that apply to it.
  const HostClass* classOf(const std::string& worker,
                           const std::map<std::string, std::string>& labels) const;
  Thresholds thresholdsFor(const std::string& worker,
                           const std::map<std::string, std::string>& labels) const;
  // Whether any bandwidth or latency threshold is set, globally or in a host class.
  bool hasThresholds() const;
};

// An acceptance preflight: the host's inventory against the expected inventory of its host
// class. One check per expectation (expect.gpus, expect.nics, expect.nic_rate,
// expect.transports), FAIL naming what is missing and the fix; one UNKNOWN "expect.class" when
// no class matches or the class expects nothing.
std::vector<PreflightCheck> checkExpectedInventory(const ClusterConfig& config,
                                                   const std::string& worker,
                                                   const std::map<std::string, std::string>& labels,
                                                   const Inventory& inventory);

// A registration against the expected inventory of its host class, as the coordinator sees it
// when the worker registers: what the worker claims that its class contradicts (a NIC or GPU
// count other than expected, a port rate above the class's, a NIC without ports). Each finding
// names the field, the claim and the expectation; none when no class matches or it expects
// nothing. `expected_rate_gbps` (may be null) gets the class's nic_rate_gbps, else 0: the
// rate that bounds the worker's figures instead of the one it registered.
std::vector<std::string> registrationFindings(const ClusterConfig& config,
                                              const std::string& worker,
                                              const std::map<std::string, std::string>& labels,
                                              const Inventory& inventory,
                                              double* expected_rate_gbps);

}  // namespace gdrmesh
