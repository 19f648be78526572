// `gdrmesh worker`: discovers this host (NICs, GPUs, transports) and serves the coordinator.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.h"
#include "cli/cmd_simulate.h"
#include "cli/control.h"
#include "cli/worker_setup.h"
#include "common/log.h"
#include "worker/fabric/lldp_reader.h"
#include "worker/service/worker_agent.h"
#include "worker/transport/verbs/cpu_placement.h"
#ifdef GDRMESH_HAVE_FABRIC_DISCOVERY
#include "worker/fabric/ib_counters.h"
#include "worker/fabric/ib_discovery.h"
#endif

namespace gdrmesh::cli {
namespace {

struct WorkerArgs {
  std::string coordinator;
  std::string name;
  std::string data_host;
  bool allow_fault_injection = false;
  bool no_verbs = false;
  bool no_cuda = false;
  std::string sysfs_root = "/";
  std::string lldp_socket;          // --lldp-socket: lldpd's control socket ("" = lldpd's own)
  std::vector<std::string> labels;  // KEY=VALUE
  std::vector<std::string> nics;    // --nic: offer only these
  int cpu = -1;                     // --cpu: bind every verbs run's thread here
  TlsArgs tls;
  std::string log_format = "text";
  std::string log_level = "info";
};

// --log-format / --log-level (checked by CLI11): the process's log from here on.
void configureWorkerLog(const WorkerArgs& a) {
  const auto format = parseLogFormat(a.log_format);
  const auto level = parseLogLevel(a.log_level);
  configureLog(format.ok() ? *format : LogFormat::kText, level.ok() ? *level : LogLevel::kInfo);
  routeGrpcLog("worker");
}

// What the arguments give before the host is read: the TLS material, the name the certificate
// carries ("" with --insecure) and the labels.
struct WorkerCredentials {
  std::optional<TlsMaterial> tls;
  std::string cert_name;
  std::map<std::string, std::string> labels;
};

// --tls-dir/--insecure, --name against the certificate, --label and --cpu, checked. Logs why
// and returns nullopt when one is refused (a usage error).
std::optional<WorkerCredentials> checkWorkerArgs(const WorkerArgs& a, const ComponentLog& log) {
  CertInfo cert;
  auto tls = resolveTls(a.tls, {PeerRole::kWorker}, &cert);
  if (!tls.ok()) {
    log.error(tls.status().toString());
    return std::nullopt;
  }
  if (*tls && !a.name.empty() && a.name != cert.identity.name) {
    log.error("--name " + a.name + ": this worker's certificate is for '" + cert.identity.name +
              "', and the coordinator only accepts that name from it (fix: drop --name, "
              "or issue a certificate with `gdrmesh certs issue --role worker --name " +
              a.name + "`)");
    return std::nullopt;
  }
  auto labels = parseWorkerLabels(a.labels);
  if (!labels.ok()) {
    log.error(labels.status().toString());
    return std::nullopt;
  }
  if (a.cpu >= 0) {
    if (Status st = verbs::checkCpuOverride(a.cpu, verbs::allowedCpus()); !st.ok()) {
      log.error(st.toString());
      return std::nullopt;
    }
  }
  WorkerCredentials out;
  out.tls = std::move(*tls);
  if (out.tls) out.cert_name = cert.identity.name;
  out.labels = std::move(*labels);
  return out;
}

// This host as the worker offers it (--no-verbs, --no-cuda, --nic ...). Logs why and returns
// nullptr when a --nic is not on this host.
std::unique_ptr<WorkerSetup> setUpOfferedHost(const WorkerArgs& a, const ComponentLog& log) {
  WorkerSetupOptions so;
  so.cpu = a.cpu;
  so.enable_verbs = !a.no_verbs;
  so.enable_cuda = !a.no_cuda;
  so.sysfs_root = a.sysfs_root;
  so.allow_fault_injection = a.allow_fault_injection;
  so.nics = a.nics;
  auto setup = setUpWorker(so);
  for (const auto& want : a.nics) {
    bool found = false;
    for (const auto& n : setup->inventory.nics) found = found || n.name == want;
    if (!found) {
      log.error("--nic " + want + ": no such NIC on this host" +
                (setup->notes.empty() ? "" : " (see `gdrmesh doctor --local`)"));
      return nullptr;
    }
  }
  return setup;
}

// The fabric readers the coordinator may ask this worker for: lldpd's neighbours (RoCE) and,
// where the fabric module is built, InfiniBand discovery and port counters (docs/fabric.md).
void addFabricReaders(const WorkerArgs& a, WorkerOptions* wo) {
  // `gdrmesh fabric discover --worker NAME --lldp` (RoCE, docs/fabric.md): lldpd's neighbours.
  wo->read_lldp = [root = a.sysfs_root, socket = a.lldp_socket](const fabric::DiscoverRequest& r) {
    fabric::LldpReadOptions o;
    o.sysfs_root = root;
    o.socket = socket;
    o.device = r.ca;
    return fabric::readLldpHost(o);
  };
#ifdef GDRMESH_HAVE_FABRIC_DISCOVERY
  // `gdrmesh fabric discover --worker NAME` (docs/fabric.md); without the module the worker
  // answers that it has none.
  wo->discover_fabric = [](const fabric::DiscoverRequest& r) {
    fabric::DiscoverOptions o;
    o.ca = r.ca;
    o.ca_port = r.ca_port;
    o.timeout_ms = r.timeout_ms;
    o.read_lfts = r.read_lfts;
    return fabric::discoverFabric(o);
  };
  wo->read_port_counters = [](const fabric::CounterReadRequest& r) {
    return fabric::readPortCounters(r);
  };
#endif
}

// The agent's options: its name, the address its data transport listens on, the host's
// topology answers and the fabric readers. `setup` outlives the agent.
WorkerOptions workerOptionsFor(const WorkerArgs& a, WorkerCredentials creds, WorkerSetup* setup) {
  WorkerOptions wo;
  wo.coordinator = a.coordinator;
  // With TLS the name is the certificate's: a worker's identity is its certificate.
  wo.name = !a.name.empty() ? a.name : creds.tls ? creds.cert_name : setup->inventory.hostname;
  wo.tls = std::move(creds.tls);
  wo.data_host = a.data_host;
  wo.labels = std::move(creds.labels);
  wo.topo_class = [setup](int gpu, const std::string& nic) { return setup->topoClass(gpu, nic); };
  wo.nearest_nic = [setup](int gpu) { return setup->nearestNicOf(gpu); };
  wo.nic_numa = [setup](const std::string& nic) { return setup->nicNuma(nic); };
  addFabricReaders(a, &wo);
  if (wo.data_host.empty()) {
    // Loopback coordinators mean a single-host setup; otherwise listen on the host's name.
    const bool loopback = a.coordinator.rfind("127.", 0) == 0 ||
                          a.coordinator.rfind("localhost", 0) == 0 ||
                          a.coordinator.rfind("[::1]", 0) == 0;
    wo.data_host = loopback ? "127.0.0.1" : setup->inventory.hostname;
  }
  return wo;
}

// What this worker offers (NICs, GPUs, transports) and why something is missing.
void logWorkerInventory(const ComponentLog& log, const WorkerSetup& setup) {
  std::string transports;
  for (const auto& t : setup.inventory.transports) transports += " " + t;
  log.info(std::to_string(setup.inventory.nics.size()) + " NIC(s), " +
               std::to_string(setup.inventory.gpus.size()) + " GPU(s), transports:" + transports,
           {{"nics", setup.inventory.nics.size()},
            {"gpus", setup.inventory.gpus.size()},
            {"transports", setup.inventory.transports}});
  for (const auto& n : setup.notes) log.info("note: " + n);
}

int runWorker(const WorkerArgs& a) {
  const ComponentLog startup_log("worker");
  auto creds = checkWorkerArgs(a, startup_log);
  if (!creds) return kExitUsage;
  auto setup = setUpOfferedHost(a, startup_log);
  if (!setup) return kExitUsage;
  const WorkerOptions wo = workerOptionsFor(a, std::move(*creds), setup.get());
  const ComponentLog log("worker", nullptr, wo.name, {{"worker", wo.name}});
  logWorkerInventory(log, *setup);

  blockTerminationSignals();
  WorkerAgent agent(wo, setup->inventory, *setup->sessions);
  TerminationSignalThread signals([&] { agent.stop(); });
  Status st = agent.run();
  if (!st.ok()) {
    log.error(st.toString());
    return kExitUsage;
  }
  return kExitOk;
}

// `gdrmesh worker remove NAME [--force]`: an admin forgets a worker (docs/security.md).
struct RemoveArgs {
  std::string name;
  bool force = false;
};

int runRemove(const ClientOptions& o, const RemoveArgs& a) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::RemoveWorkerRequest req;
  req.set_name(a.name);
  req.set_force(a.force);
  pb::RemoveWorkerResponse resp;
  auto st = stub->RemoveWorker(&ctx, req, &resp);
  // Unknown name, online without --force, a reader's certificate: the coordinator's message.
  if (!st.ok()) return reportRpcError(o, "RemoveWorker", st);
  if (o.output == "json") {
    nlohmann::json j{{"name", resp.name()}, {"removed", true}, {"was_online", resp.was_online()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "worker " << resp.name() << " removed"
              << (resp.was_online() ? "; its connection was ended (a worker still running "
                                      "registers again: stop it first to keep it out)"
                                    : "")
              << "; its results stay in the history\n";
  }
  return kExitOk;
}

}  // namespace

void registerWorker(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("worker", "Run a worker: owns this host's GPUs and NICs");
  auto a = std::make_shared<WorkerArgs>();
  // Required for running a worker (checked below), not for `worker remove`.
  cmd->add_option("--coordinator", a->coordinator, "coordinator HOST:PORT (required)")
      ->envname("GDRMESH_COORDINATOR");
  cmd->add_option("--name", a->name,
                  "unique worker name (default: the name in the certificate, or with --insecure "
                  "the hostname)");
  cmd->add_option("--data-host", a->data_host,
                  "address the emulated transport listens on (default: 127.0.0.1 for a "
                  "loopback coordinator, else the hostname)");
  cmd->add_flag("--allow-fault-injection", a->allow_fault_injection,
                "honour fault-injection requests (tests only)");
  cmd->add_flag("--no-verbs", a->no_verbs, "do not offer the verbs transport");
  cmd->add_flag("--no-cuda", a->no_cuda, "do not load the CUDA driver");
  cmd->add_option("--label", a->labels,
                  "KEY=VALUE label sent with the registration, for sweep selectors "
                  "(repeatable; e.g. --label rack=r12)")
      ->take_all();
  cmd->add_option("--lldp-socket", a->lldp_socket,
                  "lldpd's control socket for `fabric discover --worker NAME --lldp` (lldpcli -u; "
                  "default: lldpd's own)");
  cmd->add_option("--nic", a->nics,
                  "offer only this NIC (repeatable; default every NIC): the inventory lists only "
                  "these and verbs tests without a device use the first")
      ->take_all();
  cmd->add_option("--cpu", a->cpu,
                  "bind the thread of every verbs test to this CPU (default: a CPU of the "
                  "test's NIC's NUMA node, recorded with each result)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sysfs-root", a->sysfs_root, "read NIC and PCI topology from this root")
      ->capture_default_str();
  addTlsOptions(cmd, &a->tls, /*env_insecure=*/true);
  cmd->add_option("--log-format", a->log_format,
                  "the log on stderr: text (lines as a terminal reads them) or json (one JSON "
                  "object per line: ts, level, component, msg and the line's fields)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--log-level", a->log_level,
                  "the lowest level logged: debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  auto sim = addSimulateOptions(cmd);  // `--simulate N`: cli/cmd_simulate.cc

  auto* remove = cmd->add_subcommand(
      "remove", "Forget a worker (admin): no longer listed by `gdrmesh workers`; its results stay");
  auto ro = std::make_shared<ClientOptions>();
  auto ra = std::make_shared<RemoveArgs>();
  addClientOptions(remove, ro.get());
  remove->add_option("NAME", ra->name, "the worker, as `gdrmesh workers` lists it")->required();
  remove->add_flag("--force", ra->force,
                   "also remove an online worker: its connection is ended (a worker still "
                   "running registers again)");
  remove->callback([action, ro, ra] { *action = [ro, ra] { return runRemove(*ro, *ra); }; });

  cmd->callback([action, a, sim, remove] {
    if (remove->parsed()) return;  // `worker remove`: its own action
    if (a->coordinator.empty()) {
      *action = [] {
        std::fprintf(stderr,
                     "gdrmesh worker: --coordinator is required (or GDRMESH_COORDINATOR)\n");
        return static_cast<int>(kExitUsage);
      };
      return;
    }
    if (simulateRequested(*sim)) {
      *action = [a, sim] {
        configureWorkerLog(*a);
        return runSimulatedWorkers(*sim, a->coordinator, a->labels, a->tls);
      };
      return;
    }
    *action = [a] {
      configureWorkerLog(*a);
      return runWorker(*a);
    };
  });
}

}  // namespace gdrmesh::cli
