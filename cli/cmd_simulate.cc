// `gdrmesh worker --simulate N --coordinator HOST:PORT`: N simulated workers in this process,
// for scale tests of the coordinator. They move no bytes; their figures are configured and
// labelled transport simulated (never RDMA, never GPUDirect).
#include "cli/cmd_simulate.h"

#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <thread>
#include <vector>

#include "cli/cli.h"
#include "cli/worker_setup.h"
#include "common/fabric/fabric.h"
#include "common/log.h"
#include "common/sync/mutex.h"
#include "worker/simulate/sim_workers.h"

namespace gdrmesh::cli {

struct SimulateArgs {
  SimConfig config;
  std::string config_file;
  std::string fabric_file;  // --sim-fabric
  std::vector<std::string> faults;
  CLI::Option* simulate = nullptr;
  CLI::Option* file = nullptr;
  // Flags given on the command line override the config file.
  std::vector<std::pair<CLI::Option*, std::function<void(SimConfig&)>>> overrides;
};

namespace {

// Streams each hold a connection: make room for them in the open-file limit.
void raiseFileLimit(const SimConfig& c) {
  const rlim_t want = static_cast<rlim_t>(c.connections > 0 ? c.connections : c.count) + 256;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return;
  rl.rlim_cur = std::min(want, rl.rlim_max);
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < want) {
    ComponentLog("worker", nullptr, "--simulate")
        .warn("open-file limit " + std::to_string(rl.rlim_cur) + " is below the " +
              std::to_string(want) +
              " connections need; use --sim-connections to share connections, or raise ulimit "
              "-n");
  }
}

// --sim-fabric: the snapshot, the workers' names from its hosts and the port faults' fabric.
Status useSimFabric(const SimulateArgs& a, SimConfig& c) {
  auto f = fabric::loadFabricFile(a.fabric_file);
  if (!f.ok()) {
    return invalidArgument("--sim-fabric " + a.fabric_file + ": " + f.status().message(),
                           "give a snapshot `gdrmesh fabric discover --save FILE` wrote");
  }
  std::vector<SimBadPort> bad;
  for (const SimFault& x : c.faults) {
    if (x.kind == SimFault::Kind::kPort) bad.push_back({x.switch_name, x.port, x.factor, x.text});
  }
  GDR_ASSIGN_OR_RETURN(c.fabric, SimFabric::make(std::move(*f), std::move(bad)));
  std::vector<std::string> hosts = c.fabric->hostNames();
  if (a.simulate->count() == 0) c.count = static_cast<int>(hosts.size());
  if (hosts.empty() || static_cast<size_t>(c.count) > hosts.size()) {
    return invalidArgument("--simulate " + std::to_string(c.count) + ": the fabric " +
                               a.fabric_file + " has " + std::to_string(hosts.size()) + " hosts",
                           "simulate at most as many workers as the fabric has hosts");
  }
  hosts.resize(static_cast<size_t>(c.count));
  c.names = std::move(hosts);
  return Status();
}

}  // namespace

std::shared_ptr<SimulateArgs> addSimulateOptions(CLI::App* worker) {
  auto a = std::make_shared<SimulateArgs>();
  SimConfig* tmp = &a->config;  // defaults shown in --help; values applied after parsing
  const char* group = "Simulation (scale tests of the coordinator; no bytes move)";
  a->simulate = worker
                    ->add_option("--simulate", tmp->count,
                                 "run N simulated workers in this process instead of a real "
                                 "worker (their results are labelled simulated)")
                    ->group(group)
                    ->check(CLI::Range(1, 100000));
  a->file = worker
                ->add_option("--sim-config", a->config_file,
                             "simulation config: key: value lines (count, nics, gpus, "
                             "test_ms, bandwidth_gbps, latency_us, noise, seed, end_signal: "
                             "false, fault: SPEC...)")
                ->group(group)
                ->check(CLI::ExistingFile);
  auto keep = [&](CLI::Option* o, std::function<void(SimConfig&)> apply) {
    a->overrides.emplace_back(o, std::move(apply));
  };
  // Each flag parses into a holder; applied over the config file's values when given.
  struct Holders {
    std::string prefix = "sim";
    double test_ms = 10, bw = 100, lat = 2;
    int nics = 1, gpus = 0, connections = 0;
    uint64_t seed = 1;
  };
  auto h = std::make_shared<Holders>();
  keep(worker->add_option("--name-prefix", h->prefix, "simulated names: PREFIX-0000 ..")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.name_prefix = h->prefix; });
  keep(worker->add_option("--sim-test-ms", h->test_ms, "wall time of every simulated run")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.test_ms = h->test_ms; });
  keep(worker->add_option("--sim-bandwidth-gbps", h->bw, "bandwidth every simulated test reports")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.bandwidth_gbps = h->bw; });
  keep(worker->add_option("--sim-latency-us", h->lat, "latency every simulated test reports")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.latency_us = h->lat; });
  keep(worker->add_option("--sim-nics", h->nics, "NICs per simulated worker (mlx5_0 ..)")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.nics = h->nics; });
  keep(worker->add_option("--sim-gpus", h->gpus, "GPUs per simulated worker")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.gpus = h->gpus; });
  keep(worker
           ->add_option("--sim-connections", h->connections,
                        "TCP connections shared by the workers (0 = one per worker)")
           ->group(group)
           ->capture_default_str(),
       [h](SimConfig& c) { c.connections = h->connections; });
  keep(worker->add_option("--sim-seed", h->seed, "seed of flap faults and noise")->group(group),
       [h](SimConfig& c) { c.seed = h->seed; });
  worker
      ->add_option("--sim-fault", a->faults,
                   "fault, repeatable: slow:WORKER[/NIC]:FACTOR, fail:WORKER[/NIC], "
                   "flap:WORKER:P, mute:WORKER[:AFTER_N], drop:WORKER:AFTER_N, "
                   "link:WORKER[/NIC]:WORKER[/NIC]:FACTOR, glitch:WORKER:WORKER:FACTOR[:N], "
                   "port:SWITCH[PORT]:FACTOR (with --sim-fabric: every test whose path crosses "
                   "that switch port runs at FACTOR)")
      ->group(group);
  worker
      ->add_option("--sim-fabric", a->fabric_file,
                   "a fabric snapshot (`gdrmesh fabric discover --save`): the workers take its "
                   "hosts' names (the first word of each HCA's node description; --simulate N "
                   "takes the first N) and port faults slow the tests whose paths, traced from "
                   "its LFTs, cross them (docs/fabric.md)")
      ->group(group);
  return a;
}

bool simulateRequested(const SimulateArgs& a) {
  return a.simulate->count() > 0 || a.file->count() > 0 || !a.fabric_file.empty();
}

namespace {

// The workers' configuration from the arguments: --label, --sim-config, then the flags given
// over it, --sim-fault, --sim-fabric and --coordinator. Errors name the flag.
Status simConfigFromArgs(const SimulateArgs& a, const std::string& coordinator,
                         const std::vector<std::string>& labels, SimConfig& c) {
  GDR_ASSIGN_OR_RETURN(c.labels, parseWorkerLabels(labels));
  if (!a.config_file.empty()) GDR_RETURN_IF_ERROR(loadSimConfigFile(a.config_file, &c));
  if (a.simulate->count() > 0) c.count = a.config.count;
  for (const auto& [opt, apply] : a.overrides) {
    if (opt->count() > 0) apply(c);
  }
  for (const auto& spec : a.faults) {
    GDR_ASSIGN_OR_RETURN(SimFault f, parseSimFault(spec));
    c.faults.push_back(f);
  }
  if (!a.fabric_file.empty()) GDR_RETURN_IF_ERROR(useSimFabric(a, c));
  if (!coordinator.empty()) c.coordinator = coordinator;
  return Status();
}

// The simulator's TLS material into `c`. A simulator certificate registers only workers named
// after it (PREFIX-*), which --sim-fabric's host names are not. Logs why and returns false when
// refused (a usage error).
bool applySimulatorTls(const TlsArgs& tls, SimConfig& c, const ComponentLog& log) {
  CertInfo cert;
  auto creds = resolveTls(tls, {PeerRole::kSimulator}, &cert);
  if (!creds.ok()) {
    log.error(creds.status().toString());
    return false;
  }
  if (*creds && c.fabric) {
    log.error(
        "--sim-fabric names the workers after the fabric's hosts, and a simulator "
        "certificate allows only " +
        cert.identity.name +
        "-* names (fix: run fabric simulations with --insecure on a loopback coordinator)");
    return false;
  }
  if (*creds && cert.identity.name != c.name_prefix) {
    log.error("--name-prefix " + c.name_prefix + ": the simulator certificate is for '" +
              cert.identity.name + "', which may only register workers named " +
              cert.identity.name + "-* (fix: --name-prefix " + cert.identity.name +
              ", or `gdrmesh certs issue --role simulator --name " + c.name_prefix + "`)");
    return false;
  }
  c.tls = *creds;
  return true;
}

// The start line (names, coordinator, the figures every run reports) and one line per fault.
void logSimulationStart(const SimulatedWorkers& sims, const SimConfig& c, const ComponentLog& log) {
  char figures[160];
  std::snprintf(figures, sizeof(figures),
                "%d NIC(s), %d GPU(s) each; runs take %.0f ms and report %.1f Gb/s, %.2f us",
                c.nics, c.gpus, c.test_ms, c.bandwidth_gbps, c.latency_us);
  ComponentLog("worker", nullptr, "--simulate " + std::to_string(c.count))
      .info(sims.names().front() + " .. " + sims.names().back() + " -> " + c.coordinator + "; " +
                figures + " (simulated: no bytes move)",
            {{"workers", c.count}, {"coordinator", c.coordinator}});
  for (const auto& f : c.faults) log.info("fault: " + f.text);
}

// "N/M online, ... dropped" and the last stream error: the figures of the workers now.
void logSimulationFigures(const SimStats& s, int count, const ComponentLog& log) {
  log.info(std::to_string(s.online) + "/" + std::to_string(count) + " online, " +
               std::to_string(s.commands) + " commands, " + std::to_string(s.replies) +
               " replies, " + std::to_string(s.unanswered) + " unanswered (mute), " +
               std::to_string(s.dropped) + " dropped" +
               (s.last_error.empty() ? "" : "; last error: " + s.last_error),
           {{"online", s.online}, {"commands", s.commands}, {"dropped", s.dropped}});
}

// Follows the started workers until SIGINT or SIGTERM: a line once all have registered (how
// long it took from `t0`), then one whenever the figures change. kExitUsage when the
// coordinator refused every worker, else kExitOk once they are stopped.
int followSimulatedWorkers(SimulatedWorkers& sims, int count,
                           std::chrono::steady_clock::time_point t0, const ComponentLog& log) {
  Mutex mu;
  std::condition_variable cv;
  bool stop = false;
  TerminationSignalThread signals([&] {
    MutexLock lock(mu);
    stop = true;
    cv.notify_all();
  });

  bool all_in = false;
  SimStats last;
  UniqueLock lock(mu);
  while (!stop) {
    cv.wait_for(lock.native(), all_in ? std::chrono::seconds(10) : std::chrono::milliseconds(200));
    SimStats s = sims.stats();
    if (!all_in && s.ever_registered == count) {
      all_in = true;
      const double took =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.2f", took);
      log.info(std::to_string(count) + " workers registered in " + secs + " s",
               {{"workers", count}, {"seconds", took}});
    }
    if (s.refused == count) {
      log.error("the coordinator refused every worker: " + s.last_error);
      return kExitUsage;
    }
    if (all_in && (s.online != last.online || s.commands != last.commands)) {
      logSimulationFigures(s, count, log);
    }
    last = s;
  }
  lock.unlock();
  sims.stop();
  return kExitOk;
}

}  // namespace

int runSimulatedWorkers(const SimulateArgs& a, const std::string& coordinator,
                        const std::vector<std::string>& labels, const TlsArgs& tls) {
  const ComponentLog log("worker", nullptr, "--simulate");
  SimConfig c;
  if (Status st = simConfigFromArgs(a, coordinator, labels, c); !st.ok()) {
    log.error(st.toString());
    return kExitUsage;
  }
  if (!applySimulatorTls(tls, c, log)) return kExitUsage;
  if (Status valid = validateSimConfig(c); !valid.ok()) {
    log.error(valid.toString());
    return kExitUsage;
  }
  raiseFileLimit(c);

  blockTerminationSignals();
  SimulatedWorkers sims(c);
  logSimulationStart(sims, c, log);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = sims.start();
  if (!st.ok()) {
    log.error(st.toString());
    return kExitUsage;
  }
  return followSimulatedWorkers(sims, c.count, t0, log);
}

}  // namespace gdrmesh::cli
