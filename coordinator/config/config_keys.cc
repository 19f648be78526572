#include "coordinator/config/config_keys.h"

namespace gdrmesh {

// Over 80 lines as a table: one line per key of the config, no logic (issue #19).
const std::vector<ConfigKey>& clusterConfigKeys() {
  static const std::vector<ConfigKey> kKeys = {
      {"(top level)", "sweeps", "list of sweeps: what `gdrmesh accept` runs, in order"},
      {"(top level)", "thresholds", "the rules every result is judged by"},
      {"(top level)", "host_classes",
       "list of classes: hosts with their own thresholds and "
       "expected inventory"},
      {"(top level)", "schedules", "list of sweeps started on a cron schedule"},
      {"(top level)", "retention", "how long the coordinator keeps raw result rows"},
      {"(top level)", "outliers", "outlier detection without thresholds, and its verdict"},
      {"(top level)", "actions", "drain/taint suspects (Slurm, Kubernetes); off by default"},
      {"(top level)", "hooks", "list of commands or webhooks told of sweep ends and suspects"},
      {"(top level)", "log", "the coordinator's log: format and level"},
      {"(top level)", "fabric",
       "InfiniBand fabric snapshot (`gdrmesh fabric discover --save`): paths, link blame, cover"},
      {"(top level)", "fabric_hosts",
       "WORKER: \"node description\" for HCAs not named after their worker or hostname"},
      {"(top level)", "fabric_ca_order",
       "OpenSM's opensm-ftree-ca-order.dump: seeds a cover sweep's first round (as `sweep plan "
       "--ca-order`)"},
      {"(top level)", "fabric_reader",
       "the real worker on an InfiniBand HCA that reads the switch ports' counters around each "
       "round"},
      {"(top level)", "fabric_counters_reset",
       "true: the reader resets the error counters after reading (default false)"},
      {"(top level)", "fabric_thresholds",
       "COUNTER: RATE (\"120/h\", \"5/min\", \"10\" per round) over the defaults of "
       "docs/fabric.md"},

      {"sweeps[]", "name", "a label for the sweep"},
      {"sweeps[]", "pattern",
       "pairs, all-pairs, rails, loopback, random, cover (fabric), bisection (fabric) (default "
       "all-pairs)"},
      {"sweeps[]", "size", "one message size (default 64KiB); not with sizes"},
      {"sweeps[]", "sizes", "a list of message sizes; each pair runs every size"},
      {"sweeps[]", "iters", "measured iterations per test (default 1000)"},
      {"sweeps[]", "warmup", "warm-up iterations, not measured (default 16)"},
      {"sweeps[]", "op", "write, read, send, write_imm (default write)"},
      {"sweeps[]", "mode", "bw or lat (default bw)"},
      {"sweeps[]", "memory", "host, cuda or cuda:N on both sides (default host)"},
      {"sweeps[]", "src_memory", "the initiator side's memory only; not with memory"},
      {"sweeps[]", "dst_memory", "the target side's memory only; not with memory"},
      {"sweeps[]", "gpu", "GPU index of every cuda side that names none"},
      {"sweeps[]", "reg", "auto, host, dmabuf, peermem, staged: the GPU sides' registration"},
      {"sweeps[]", "src_reg", "the initiator side's registration only; not with reg"},
      {"sweeps[]", "dst_reg", "the target side's registration only; not with reg"},
      {"sweeps[]", "transport", "emulated, verbs, simulated (default: best available)"},
      {"sweeps[]", "direction", "one, both, bidir (default one)"},
      {"sweeps[]", "rounds", "random: how many random matchings (default 3)"},
      {"sweeps[]", "seed", "random: the seed (default chosen and recorded)"},
      {"sweeps[]", "hosts", "only these workers"},
      {"sweeps[]", "exclude", "never these workers"},
      {"sweeps[]", "select", "labels a host must all carry (rack: a)"},
      {"sweeps[]", "pairs", "pairs: a list of INITIATOR[/NIC]:TARGET[/NIC]"},
      {"sweeps[]", "qps", "queue pairs per test (default 1)"},
      {"sweeps[]", "duration", "run this long instead of iters (bandwidth only)"},
      {"sweeps[]", "timeout", "per test, on top of duration (default 30s)"},
      {"sweeps[]", "max_concurrency", "tests at once; 0 = as many as the resources allow"},
      {"sweeps[]", "retries", "retries of a transient error, 0 to 10 (default 1)"},

      {"thresholds", "bandwidth_gbps_min", "average bandwidth at least this many Gb/s"},
      {"thresholds", "latency_us_max", "median latency at most this many microseconds"},
      {"thresholds", "line_rate_fraction_min", "bandwidth over the lower port rate (0.9 = 90 %)"},
      {"thresholds", "best_pair_fraction_min", "bandwidth over the sweep's best pair"},
      {"thresholds", "lowest_latency_factor_max", "latency over the sweep's lowest"},
      {"thresholds", "gpu_host_ratio_min", "GPU-memory over host-memory bandwidth"},
      {"thresholds", "regression_tolerance", "largest drop against the baseline (0.1 = 10 %)"},

      {"host_classes[]", "name", "the class's name (required, unique)"},
      {"host_classes[]", "match", "shell glob on the worker name; empty = any"},
      {"host_classes[]", "labels", "labels a worker must all carry"},
      {"host_classes[]", "thresholds", "thresholds overriding the global ones field by field"},
      {"host_classes[]", "expect", "the inventory each host of the class must have"},
      {"host_classes[].expect", "gpus", "number of GPUs"},
      {"host_classes[].expect", "nics", "number of NICs"},
      {"host_classes[].expect", "nic_rate_gbps",
       "every NIC port at least this rate; bounds "
       "the figures of verbs tests"},
      {"host_classes[].expect", "transports", "transports the host must offer ([verbs])"},

      {"schedules[]", "name", "the schedule's name (required, unique)"},
      {"schedules[]", "cron", "five fields: minute hour day-of-month month day-of-week"},
      {"schedules[]", "timezone", "IANA time zone (default UTC)"},
      {"schedules[]", "sweep", "a sweep, with the keys of sweeps[] (required)"},
      {"schedules[]", "catch_up", "true: run the newest missed run once after a restart"},
      {"schedules[]", "grace", "with catch_up: how long to wait for the workers (default 10m)"},

      {"log", "format", "text or json (one object per line); --log-format overrides it"},
      {"log", "level", "debug, info, warn or error (default info); --log-level overrides it"},

      {"retention", "days", "delete raw result rows older than this; 0 keeps all (default 0)"},
      {"retention", "interval", "how often to delete, 1s to 7 days (default 1h)"},
      {"retention", "batch", "rows deleted per transaction, 1 to 100000 (default 2000)"},

      {"outliers", "detect", "false: no outlier detection (default true)"},
      {"outliers", "fail", "auto, always, never: when an outlier fails the sweep"},
      {"outliers", "robust_z", "robust standard deviations below the median (default 5)"},
      {"outliers", "min_shortfall", "and at least this fraction below it (default 0.1)"},
      {"outliers", "min_partners", "partners a host needs before it is judged (default 4)"},
      {"outliers", "min_hosts", "hosts that must qualify before anyone is judged (default 5)"},

      {"actions", "mode", "off, dry-run, on (default off)"},
      {"actions", "actuator", "slurm or kubernetes (default slurm)"},
      {"actions", "max_share", "circuit breaker: share of hosts drained within window (0.5)"},
      {"actions", "window", "the circuit breaker's window (default 5m)"},
      {"actions", "scontrol", "the scontrol program (default scontrol)"},
      {"actions", "command_timeout", "per scontrol call or API request (default 10s)"},
      {"actions", "kubernetes", "the Kubernetes API (with actuator: kubernetes)"},
      {"actions.kubernetes", "api", "the API server's URL (required for kubernetes)"},
      {"actions.kubernetes", "token_file", "the bearer token's file, read at each request"},
      {"actions.kubernetes", "ca_file", "the API server's CA bundle; empty = the system's"},

      {"hooks[]", "command", "argv of a program given the event's JSON on stdin"},
      {"hooks[]", "url", "http(s) URL POSTed the event's JSON; exactly one of command, url"},
      {"hooks[]", "token_file", "with url: a file holding a bearer token"},
      {"hooks[]", "attempts", "tries per event, 1 to 20 (default 3)"},
      {"hooks[]", "timeout", "per try (default 10s)"},
      {"hooks[]", "backoff", "before the second try, doubling after (default 1s)"},
      {"hooks[]", "queue_limit", "events waiting per hook (default 100)"},
  };
  return kKeys;
}

std::vector<std::string> clusterConfigKeysOf(std::string_view section) {
  std::vector<std::string> keys;
  for (const ConfigKey& k : clusterConfigKeys()) {
    if (k.section == section) keys.emplace_back(k.key);
  }
  return keys;
}

}  // namespace gdrmesh
