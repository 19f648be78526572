// Commands that run on this host without a coordinator: `topo`, `doctor --local` and
// `check --local` (a health check / prolog for one node); and `doctor WORKER`, which shows the
// checks a worker ran at start (through the coordinator).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/worker_setup.h"
#include "common/clock.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/actions/command_runner.h"
#include "coordinator/actions/slurm_actuator.h"
#include "coordinator/config/config_yaml.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "worker/doctor/doctor.h"
#include "worker/topology/topology.h"

namespace gdrmesh::cli {
namespace {

// `--config FILE`'s host-class checks of `inventory` (the worker `name` with `labels`), added to
// `checks`. False, with the reason printed as `command`'s, when the file cannot be read or parsed.
bool addExpectedInventoryChecks(const char* command, const std::string& path,
                                const std::string& name,
                                const std::map<std::string, std::string>& labels,
                                const Inventory& inventory, std::vector<PreflightCheck>* checks) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "gdrmesh %s: --config %s: cannot read the file\n", command, path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto cfg = parseClusterConfig(ss.str(), path);
  if (!cfg.ok()) {
    std::fprintf(stderr, "gdrmesh %s: --config: %s\n", command, cfg.status().toString().c_str());
    return false;
  }
  for (auto& c : checkExpectedInventory(*cfg, name, labels, inventory)) {
    checks->push_back(std::move(c));
  }
  return true;
}

struct LocalArgs {
  std::string sysfs_root = "/";
  std::string output = "table";
  bool local = false;
  bool no_cuda = false;
  std::string worker;
  std::string config;  // doctor: compare with the expected inventory of the host's class
  ClientOptions client;
  // check --local
  std::vector<std::string> nics;  // "" = every NIC of the inventory
  std::string transport = "verbs";
  std::string size = "1MiB";
  uint64_t iterations = 200;
  std::string time_limit = "50s";
  uint64_t test_corrupt_bytes = 0;  // TEST ONLY: the loopback's destination gets wrong bytes
  bool slurm_drain = false;
  std::string slurm_node;  // "" = $SLURMD_NODENAME, else the short hostname
  std::string scontrol = "scontrol";
};

int runTopo(const LocalArgs& a) {
  WorkerSetupOptions so;
  so.sysfs_root = a.sysfs_root;
  so.enable_cuda = !a.no_cuda && a.sysfs_root == "/";
  so.build_sessions = false;
  auto s = setUpWorker(so);
  if (!s->topology) {
    for (const auto& n : s->notes) std::fprintf(stderr, "gdrmesh topo: %s\n", n.c_str());
    return kExitFailed;
  }
  if (a.output == "json") {
    std::cout << toJson(*s->topology).dump(2) << "\n";
  } else {
    std::cout << renderMatrix(*s->topology);
  }
  return kExitOk;
}

std::string checksTable(const std::vector<PreflightCheck>& checks) {
  std::vector<std::vector<std::string>> rows{{"STATUS", "CHECK", "DETAIL"}};
  std::string fixes;
  for (const auto& c : checks) {
    rows.push_back({c.status, c.id, c.detail});
    if ((c.status == "FAIL" || c.status == "WARN" || c.status == "UNKNOWN") &&
        !c.remediation.empty()) {
      fixes += "  " + c.id + ": " + c.remediation + "\n";
    }
  }
  std::string out = renderTable(rows);
  if (!fixes.empty()) out += "\nwhat to do:\n" + fixes;
  return out;
}

int exitFor(const std::vector<PreflightCheck>& checks) {
  for (const auto& c : checks) {
    if (c.status == "FAIL") return kExitFailed;
  }
  return kExitOk;
}

int runDoctor(const LocalArgs& a) {
  if (a.local == !a.worker.empty()) {
    std::fprintf(stderr, "gdrmesh doctor: give either WORKER or --local\n");
    return kExitUsage;
  }
  std::vector<PreflightCheck> checks;
  Inventory inventory;
  std::string name;
  std::map<std::string, std::string> labels;
  if (a.local) {
    WorkerSetupOptions so;
    so.sysfs_root = a.sysfs_root;
    so.enable_cuda = !a.no_cuda && a.sysfs_root == "/";
    so.build_sessions = false;
    auto setup = setUpWorker(so);
    checks = setup->inventory.preflight;
    inventory = setup->inventory;
    name = setup->inventory.hostname;
  } else {
    auto stub = connectControl(a.client);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListWorkersResponse resp;
    auto st = stub->ListWorkers(&ctx, v1::ListWorkersRequest(), &resp);
    if (!st.ok()) return reportRpcError(a.client, "ListWorkers", st);
    bool found = false;
    for (const auto& w : resp.workers()) {
      if (w.name() == a.worker) {
        inventory = convert::fromProto(w.inventory());
        checks = inventory.preflight;
        labels.insert(w.labels().begin(), w.labels().end());
        name = w.name();
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "gdrmesh doctor: WORKER: unknown worker '%s'\n", a.worker.c_str());
      return kExitUsage;
    }
  }
  if (!a.config.empty() &&
      !addExpectedInventoryChecks("doctor", a.config, name, labels, inventory, &checks)) {
    return kExitUsage;
  }
  const std::string& fmt = a.local ? a.output : a.client.output;
  if (fmt == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& c : checks) {
      j.push_back({{"id", c.id},
                   {"title", c.title},
                   {"status", c.status},
                   {"detail", c.detail},
                   {"remediation", c.remediation}});
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << checksTable(checks);
  }
  return exitFor(checks);
}

// One loopback test of `check --local`: this host's NIC `nic` ("" = the transport's default) to
// itself, a write of `size` bytes `iterations` times, the landed bytes checked. Both sides run
// in this process on one SessionManager, as a worker runs a loopback test of a sweep.
PreflightCheck runLoopbackCheck(SessionManager& sessions, TransportKind transport,
                                const std::string& nic, uint64_t size, uint64_t iterations,
                                double timeout_seconds, uint64_t corrupt_bytes) {
  PreflightCheck c;
  c.id = "loopback." + (nic.empty() ? std::string(toString(transport)) : nic);
  c.title = "loopback write through " + (nic.empty() ? std::string(toString(transport)) : nic);
  const std::string id = "check-" + (nic.empty() ? std::string(toString(transport)) : nic);
  SessionSpec target;
  target.endpoint.test_id = id + ".target";
  target.endpoint.role = Role::kTarget;
  target.endpoint.op = Op::kWrite;
  target.endpoint.mode = Mode::kBandwidth;
  target.endpoint.buffer_size = size;
  target.endpoint.device = nic;
  target.transport = transport;
  target.seed = 20261127;
  target.corrupt_bytes = corrupt_bytes;
  SessionSpec initiator = target;
  initiator.endpoint.test_id = id;
  initiator.endpoint.role = Role::kInitiator;
  initiator.corrupt_bytes = 0;
  auto fail = [&](const std::string& what, const Status& st) {
    sessions.release(initiator.endpoint.test_id);
    sessions.release(target.endpoint.test_id);
    c.status = "FAIL";
    c.detail = what + ": " + st.toString();
    c.remediation = "run `gdrmesh doctor --local` and fix what it reports for " +
                    (nic.empty() ? std::string("the device") : nic) +
                    " (port state, GID, MTU); then check its cable and switch port";
    return c;
  };
  auto pt = sessions.prepare(target);
  if (!pt.ok()) return fail("prepare (target)", pt.status());
  auto pi = sessions.prepare(initiator);
  if (!pi.ok()) return fail("prepare (initiator)", pi.status());
  if (auto st = sessions.connect(target.endpoint.test_id, pi->desc); !st.ok()) {
    return fail("connect (target)", st.status());
  }
  if (auto st = sessions.connect(initiator.endpoint.test_id, pt->desc); !st.ok()) {
    return fail("connect (initiator)", st.status());
  }
  RunSpec run;
  run.message_size = size;
  run.iterations = iterations;
  run.timeout_seconds = timeout_seconds;
  auto target_run =
      std::async(std::launch::async, [&] { return sessions.run(target.endpoint.test_id, run); });
  Result<Measurement> m = sessions.run(initiator.endpoint.test_id, run);
  if (!m.ok()) sessions.release(target.endpoint.test_id);  // ends the target's run
  Result<Measurement> tm = target_run.get();
  if (!m.ok()) return fail("run", m.status());
  if (!tm.ok()) return fail("run (target)", tm.status());
  auto v = sessions.verify(target.endpoint.test_id, size);
  if (!v.ok()) return fail("verify", v.status());
  sessions.release(initiator.endpoint.test_id);
  sessions.release(target.endpoint.test_id);
  char bw[64];
  std::snprintf(bw, sizeof(bw), "%.1f Gb/s", m->bw.avg_gbps);
  c.detail = "write " + formatSize(size) + " x " + std::to_string(iterations) + ": " + bw + "; " +
             v->integrity.toString();
  if (!v->integrity.ok()) {
    c.status = "FAIL";
    c.remediation = "data landed wrong through " + (nic.empty() ? std::string("the device") : nic) +
                    ": drain the node and check the NIC's firmware, PCIe link and memory";
  } else {
    c.status = "PASS";
  }
  return c;
}

// `check --local --slurm-drain`: Slurm ignores a HealthCheckProgram's exit code, so the check
// drains its own node when unhealthy (reason "gdrmesh: check --local: ...") and resumes it once
// healthy, only when the drain is its own: never a node drained by someone else, nor one the
// coordinator drained for a sweep's suspect.
void slurmDrainForCheck(const LocalArgs& a, const std::vector<PreflightCheck>& checks, int code) {
  std::string node = a.slurm_node;
  if (node.empty()) {
    const char* env = std::getenv("SLURMD_NODENAME");
    node = env != nullptr ? env : "";
  }
  if (node.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0) node = host;
    node = node.substr(0, node.find('.'));
  }
  SystemClock clock;
  ProcessRunner runner(clock);
  SlurmActuator slurm(runner, a.scontrol, 10);
  auto mark = slurm.inspect(node);
  if (!mark.ok()) {
    std::fprintf(stderr, "gdrmesh check: --slurm-drain: %s\n", mark.status().toString().c_str());
    return;
  }
  const std::string own = std::string(kGdrmeshReasonPrefix) + " check --local";
  const bool ours = mark->detail.find("Reason=" + own) != std::string::npos;
  if (code != kExitOk) {
    if (mark->owner != MarkOwner::kNone) {
      std::printf("slurm: %s is out of service already (%s): left as it is\n", node.c_str(),
                  mark->detail.c_str());
      return;
    }
    std::string failed;
    for (const auto& c : checks) {
      if (c.status == "FAIL") failed += (failed.empty() ? "" : ", ") + c.id;
    }
    const MarkRequest req{node, "check --local: " + failed + " failed", ""};
    Status st = slurm.mark(req);
    std::printf("slurm: %s %s\n", st.ok() ? "drained" : "could not drain", node.c_str());
    if (!st.ok()) std::fprintf(stderr, "gdrmesh check: --slurm-drain: %s\n", st.toString().c_str());
  } else if (mark->owner == MarkOwner::kGdrmesh && ours) {
    Status st = slurm.clear(node);
    std::printf("slurm: %s %s (its drain was this check's)\n",
                st.ok() ? "resumed" : "could not resume", node.c_str());
    if (!st.ok()) std::fprintf(stderr, "gdrmesh check: --slurm-drain: %s\n", st.toString().c_str());
  }
}

// The loopback pattern on this host's own NICs (each to itself), or once through the
// emulated transport; each NIC gets an equal share of the time left before `deadline`.
void addLoopbackChecks(const LocalArgs& a, const WorkerSetup& setup, TransportKind transport,
                       uint64_t size, std::chrono::steady_clock::time_point deadline,
                       std::vector<PreflightCheck>* checks) {
  std::vector<std::string> devices;
  const bool viable =
      std::find(setup.inventory.transports.begin(), setup.inventory.transports.end(),
                toString(transport)) != setup.inventory.transports.end();
  if (transport == TransportKind::kVerbs) {
    for (const auto& n : setup.inventory.nics) devices.push_back(n.name);
  } else {
    devices.push_back("");
  }
  if (!viable || !setup.sessions || devices.empty()) {
    PreflightCheck c;
    c.id = "loopback";
    c.title = "loopback write through each NIC";
    c.status = "N/A";
    std::string why;
    for (const auto& n : setup.notes) why += (why.empty() ? "" : "; ") + n;
    c.detail = std::string("no ") + toString(transport) + " device to test" +
               (why.empty() ? "" : ": " + why);
    checks->push_back(std::move(c));
  }
  for (size_t i = 0; viable && setup.sessions && i < devices.size(); ++i) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left < 1) {
      PreflightCheck c;
      c.id = "loopback." + devices[i];
      c.title = "loopback write through " + devices[i];
      c.status = "FAIL";
      c.detail = "not run: the time limit (" + a.time_limit + ") was spent before it";
      c.remediation = "give a longer --time-limit, fewer --iters or a smaller --size";
      checks->push_back(std::move(c));
      continue;
    }
    // Each NIC gets an equal share of what is left.
    const double share = left / static_cast<double>(devices.size() - i);
    checks->push_back(runLoopbackCheck(*setup.sessions, transport, devices[i], size, a.iterations,
                                       share, a.test_corrupt_bytes));
  }
}

// The checks as JSON (-o json), or as a table with the verdict and the time taken.
void printCheckReport(const LocalArgs& a, const std::vector<PreflightCheck>& checks,
                      std::chrono::steady_clock::time_point started) {
  if (a.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& c : checks) {
      j.push_back({{"id", c.id},
                   {"title", c.title},
                   {"status", c.status},
                   {"detail", c.detail},
                   {"remediation", c.remediation}});
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << checksTable(checks);
    const int code = exitFor(checks);
    char took[32];
    std::snprintf(
        took, sizeof(took), "%.1f s",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    std::cout << "\n"
              << (code == kExitOk ? "healthy" : "UNHEALTHY") << " (exit " << code << ", " << took
              << ")\n";
  }
}

int runCheck(const LocalArgs& a) {
  if (!a.local) {
    std::fprintf(stderr, "gdrmesh check: give --local (the checks of this host)\n");
    return kExitUsage;
  }
  const auto started = std::chrono::steady_clock::now();
  auto limit = parseDurationSeconds(a.time_limit, "--time-limit");
  if (limit.ok() && !(*limit >= 1 && *limit <= 3600)) {
    limit = invalidArgument("--time-limit: " + a.time_limit + " is out of range",
                            "give 1s to 1h; Slurm's HealthCheckProgram must end within 60 s");
  }
  auto size = parseSize(a.size, "--size");
  auto transport = parseTransportKind(a.transport);
  if (!limit.ok() || !size.ok() || !transport || *size == 0 || a.iterations == 0) {
    const std::string why = !limit.ok()  ? limit.status().toString()
                            : !size.ok() ? size.status().toString()
                            : !transport
                                ? "--transport: '" + a.transport + "' is not verbs or emulated"
                            : *size == 0 ? std::string("--size: must be > 0")
                                         : std::string("--iters: must be > 0");
    std::fprintf(stderr, "gdrmesh check: %s\n", why.c_str());
    return kExitUsage;
  }
  const auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(*limit));
  WorkerSetupOptions so;
  so.sysfs_root = a.sysfs_root;
  so.enable_cuda = !a.no_cuda && a.sysfs_root == "/";
  so.enable_verbs = *transport == TransportKind::kVerbs;
  so.allow_fault_injection = a.test_corrupt_bytes > 0;
  so.nics = a.nics;
  auto setup = setUpWorker(so);
  std::vector<PreflightCheck> checks = setup->inventory.preflight;
  if (!a.config.empty() && !addExpectedInventoryChecks("check", a.config, setup->inventory.hostname,
                                                       {}, setup->inventory, &checks)) {
    return kExitUsage;
  }
  addLoopbackChecks(a, *setup, *transport, *size, deadline, &checks);
  printCheckReport(a, checks, started);
  const int code = exitFor(checks);
  if (a.slurm_drain) slurmDrainForCheck(a, checks, code);
  return code;
}

}  // namespace

void registerLocalCommands(CLI::App& app, Action* action) {
  {
    auto* cmd = app.add_subcommand("topo", "GPU x NIC PCIe topology matrix of this host");
    auto a = std::make_shared<LocalArgs>();
    cmd->add_option("--sysfs-root", a->sysfs_root, "read sysfs under this root (recorded trees)")
        ->capture_default_str();
    cmd->add_option("-o,--output", a->output, "table | json")
        ->check(CLI::IsMember({"table", "json"}));
    cmd->add_flag("--no-cuda", a->no_cuda, "do not load the CUDA driver (GPUs from sysfs)");
    cmd->callback([action, a] { *action = [a] { return runTopo(*a); }; });
  }
  {
    auto* cmd = app.add_subcommand(
        "doctor", "Preflight checks: of a registered WORKER, or of this host with --local");
    auto a = std::make_shared<LocalArgs>();
    cmd->add_option("WORKER", a->worker, "worker name (asks the coordinator)");
    cmd->add_flag("--local", a->local, "check this host, no coordinator needed");
    cmd->add_option("--sysfs-root", a->sysfs_root, "with --local: read sysfs under this root")
        ->capture_default_str();
    cmd->add_flag("--no-cuda", a->no_cuda, "do not load the CUDA driver");
    cmd->add_option("--config", a->config,
                    "cluster config: also check the host against its class's expected inventory "
                    "(an acceptance preflight)");
    addClientOptions(cmd, &a->client, false, [a] { return !a->local; });
    cmd->callback([action, a] {
      a->output = a->client.output;
      *action = [a] { return runDoctor(*a); };
    });
  }
  {
    auto* cmd = app.add_subcommand(
        "check",
        "Health check of this host for Slurm's HealthCheckProgram or a prolog (--local): the "
        "preflight checks plus a loopback write through each NIC. Exit 0: healthy; 1: a check "
        "failed (Slurm drains the node on a prolog's non-zero exit); 2: usage");
    auto a = std::make_shared<LocalArgs>();
    cmd->add_flag("--local", a->local, "check this host (required)")->required();
    cmd->add_option("--nic", a->nics, "test only these NICs (repeatable); default: every NIC");
    cmd->add_option("--transport", a->transport,
                    "verbs (default) | emulated (TCP in this process: a self-test of the check)")
        ->capture_default_str();
    cmd->add_option("--size", a->size, "message size of each loopback write")
        ->capture_default_str();
    cmd->add_option("--iters", a->iterations, "writes per NIC")->capture_default_str();
    cmd->add_option("--time-limit", a->time_limit,
                    "every loopback ends by then (Slurm kills a HealthCheckProgram after 60 s)")
        ->capture_default_str();
    cmd->add_option("--config", a->config,
                    "cluster config: also check the host against its class's expected inventory");
    cmd->add_option("--sysfs-root", a->sysfs_root, "read sysfs under this root")
        ->capture_default_str();
    cmd->add_flag("--no-cuda", a->no_cuda, "do not load the CUDA driver");
    cmd->add_option("-o,--output", a->output, "table | json")
        ->check(CLI::IsMember({"table", "json"}));
    cmd->add_flag("--slurm-drain", a->slurm_drain,
                  "as Slurm's HealthCheckProgram (whose exit code Slurm ignores): drain this "
                  "node when unhealthy, resume it when healthy again (only its own drain)");
    cmd->add_option("--slurm-node", a->slurm_node,
                    "this node's Slurm name (default: $SLURMD_NODENAME, else the short hostname)");
    cmd->add_option("--scontrol", a->scontrol, "the scontrol program")->capture_default_str();
    cmd->add_option("--test-corrupt-bytes", a->test_corrupt_bytes,
                    "TEST ONLY: bytes of the loopback's landed data made wrong")
        ->group("");
    cmd->callback([action, a] { *action = [a] { return runCheck(*a); }; });
  }
}

}  // namespace gdrmesh::cli
