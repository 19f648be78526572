// Commands that run on this host without a coordinator: `topo` and `doctor --local`; and
// `doctor WORKER`, which shows the checks a worker ran at start (through the coordinator).
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/worker_setup.h"
#include "convert.h"
#include "coordinator/config/config_yaml.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"
#include "worker/doctor/doctor.h"
#include "worker/topology/topology.h"

namespace gdrmesh::cli {
namespace {

struct LocalArgs {
  std::string sysfs_root = "/";
  std::string output = "table";
  bool local = false;
  bool no_cuda = false;
  std::string worker;
  std::string config;  // doctor: compare with the expected inventory of the host's class
  ClientOptions client;
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
  if (!a.config.empty()) {
    std::ifstream f(a.config);
    if (!f) {
      std::fprintf(stderr, "gdrmesh doctor: --config %s: cannot read the file\n", a.config.c_str());
      return kExitUsage;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    auto cfg = parseClusterConfig(ss.str(), a.config);
    if (!cfg.ok()) {
      std::fprintf(stderr, "gdrmesh doctor: --config: %s\n", cfg.status().toString().c_str());
      return kExitUsage;
    }
    for (auto& c : checkExpectedInventory(*cfg, name, labels, inventory)) {
      checks.push_back(std::move(c));
    }
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
}

}  // namespace gdrmesh::cli
