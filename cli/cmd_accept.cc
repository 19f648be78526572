// `gdrmesh accept --config cluster.yaml`: the acceptance run of a cluster. The CLI does not
// parse the config: it sends its text, and the coordinator runs the config's sweeps in order as
// one acceptance sweep (SweepSpec.config_yaml set, pattern empty). The outcome is printed,
// and written as JUnit XML (--junit) and as the SweepReport in JSON (--report) for CI.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/junit.h"
#include "cli/output.h"
#include "cli/sweep_output.h"
#include "coordinator/service/sweep_convert.h"

namespace gdrmesh::cli {
namespace {

struct AcceptArgs {
  std::string config;
  std::string junit;
  std::string report;
};

bool writeFile(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr,
                 "gdrmesh accept: %s: cannot write '%s'\n  fix: check that the folder exists "
                 "and is writable\n",
                 flag, path.c_str());
    return false;
  }
  return true;
}

int runAccept(const ClientOptions& o, const AcceptArgs& a) {
  auto text = readTextFile(a.config, "--config");
  if (!text.ok()) {
    std::fprintf(stderr, "gdrmesh accept: %s\n  fix: %s\n", text.status().message().c_str(),
                 text.status().fix().c_str());
    return kExitUsage;
  }
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    std::fprintf(stderr,
                 "gdrmesh accept: --config: '%s' is empty\n  fix: describe the cluster's sweeps "
                 "under `sweeps:` (see README)\n",
                 a.config.c_str());
    return kExitUsage;
  }
  pb::SweepSpec spec;
  spec.set_config_yaml(*text);
  spec.set_pattern("");  // the config's sweeps, in order, as one acceptance sweep
  spec.set_name("accept");
  spec.set_localise(true);
  spec.set_retries(1);

  blockTerminationSignals();  // before gRPC starts threads: Ctrl-C only stops following
  auto stub = connectControl(o);
  pb::SweepProgress started;
  int rc = startSweep(o, *stub, spec, {}, &started);
  if (rc != kExitOk) {
    if (rc == kExitUsage) {
      std::fprintf(stderr, "  (the coordinator refused the config %s)\n", a.config.c_str());
    }
    return rc;
  }
  pb::SweepReport report;
  bool fetched = false;
  rc = followAndFetch(o, *stub, started.id(), true, pb::VERDICTS_ALL, &report, &fetched);
  // The wire report in domain types, once: JUnit, the JSON document and the text come from it.
  SweepReportData data = convert::fromProto(report, nullptr);
  std::string lost;
  if (!fetched) {
    // Still leave CI a document that fails, saying why.
    data.progress = convert::fromProto(started);
    lost = rc == kExitInterrupted
               ? "the CLI stopped following (interrupted); the sweep goes on"
               : "the CLI lost the sweep's progress (exit " + std::to_string(rc) + ")";
  }
  bool written = true;
  if (!a.junit.empty()) {
    written &=
        writeFile(a.junit, renderJUnit(junitFromReport(data, o.coordinator, lost)), "--junit");
  }
  if (!a.report.empty() && fetched) {
    written &= writeFile(a.report, jsonText(toJson(data)) + "\n", "--report");
  }
  if (fetched) {
    if (o.output == "json") {
      std::cout << jsonText(toJson(data)) << "\n";
    } else {
      std::cout << sweepReportText(data, ReportOptions{});
    }
    std::cout.flush();
    // Written and printed as soon as it is judged; the run ends once the report is stored.
    rc = awaitReportStored(o, *stub, report.progress(), rc);
  }
  if (!written) return rc == kExitOk ? kExitUsage : rc;
  return rc;
}

}  // namespace

void registerAcceptCommand(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand(
      "accept", "Acceptance run: the config's sweeps, judged; JUnit XML and JSON for CI");
  auto o = std::make_shared<ClientOptions>();
  auto a = std::make_shared<AcceptArgs>();
  addClientOptions(cmd, o.get());
  cmd->add_option("--config", a->config, "cluster config (YAML) with its `sweeps:`")->required();
  cmd->add_option("--junit", a->junit, "write JUnit XML here (one suite per sweep)");
  cmd->add_option("--report", a->report, "write the sweep report as JSON here");
  cmd->callback([action, o, a] { *action = [o, a] { return runAccept(*o, *a); }; });
}

}  // namespace gdrmesh::cli
