// `gdrmesh report SWEEP_ID --format html|md [--out FILE]`: the acceptance report of one sweep
// (cli/report), from GetSweep and ListWorkers. The wire messages are converted once here, where
// they are asked for; the view, the matrix and the renderers see domain types only.
#include "cli/cmd_report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/control.h"
#include "cli/report/acceptance_report.h"
#include "cli/report/matrix.h"
#include "common/units.h"
#include "coordinator/config/config_yaml.h"
#include "coordinator/service/sweep_convert.h"

namespace gdrmesh::cli {

SweepView sweepView(SweepReportData data, std::vector<WorkerStatus> workers) {
  SweepView v;
  v.data = std::move(data);
  v.workers = std::move(workers);
  if (!v.data.spec.config_yaml.empty()) {
    auto cfg = parseClusterConfig(v.data.spec.config_yaml, "the sweep's stored config");
    if (cfg.ok()) {
      v.config = std::make_unique<ClusterConfig>(std::move(cfg).value());
    } else {
      v.config_error = cfg.status().message();
    }
  }
  return v;
}

std::string sweepMatrixText(const SweepView& view, size_t max_hosts, bool colour) {
  report::MatrixOptions mo;
  mo.config = view.config.get();
  for (const auto& w : view.workers) mo.labels[w.name] = w.labels;
  auto matrices = report::buildMatrices(view.data.verdicts, mo);
  return report::renderTerminal(matrices, view.data.suspects,
                                report::TerminalOptions{colour, max_hosts});
}

bool stdoutWantsColour() {
  return report::useColour(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"));
}

namespace {

struct ReportArgs {
  ClientOptions client;  // --coordinator and the TLS options, as every client command
  std::string id;
  std::string format = "html";
  std::string out;
  size_t max_hosts = 0;
};

// Writes next to the target and renames, so that a reader never sees half a report.
Status writeAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      return invalidArgument("--out: cannot write '" + path + "'",
                             "give a path in a directory that exists and is writable");
    }
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return invalidArgument("--out: writing '" + path + "' failed (disk full?)",
                             "free space or write elsewhere");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return invalidArgument("--out: cannot replace '" + path + "'",
                           "check the permissions of the file and its directory");
  }
  return Status::okStatus();
}

int runReport(const ReportArgs& a) {
  const ClientOptions& o = a.client;
  auto stub = connectControl(o);
  pb::SweepReport resp;
  // Page by page: a 1024-host all-pairs has 523,776 verdicts and as many results.
  grpc::Status st = fetchSweepReport(*stub, a.id, true, pb::VERDICTS_ALL, &resp);
  if (!st.ok()) return reportRpcError(o, "GetSweep", st);
  std::string workers_error;
  auto workers = listWorkersQuietly(*stub, &workers_error);
  if (!workers_error.empty()) {
    std::fprintf(stderr,
                 "gdrmesh report: ListWorkers failed (%s); the environment section will say "
                 "\"no stored inventory\"\n",
                 workers_error.c_str());
  }
  std::string spec_error;  // the stored spec no longer validates
  SweepView view = sweepView(convert::fromProto(resp, &spec_error), std::move(workers));
  report::ReportInput in;
  in.sweep = std::move(view.data);
  in.workers = std::move(view.workers);
  in.config = view.config.get();
  in.config_error = view.config_error;
  if (!spec_error.empty()) in.sweep.notes.push_back("stored spec: " + spec_error);
  in.generated_ms = nowUnixMs();
  in.max_matrix_hosts = a.max_hosts;
  const std::string text = a.format == "md" ? report::renderMarkdown(in) : report::renderHtml(in);
  if (a.out.empty() || a.out == "-") {
    std::cout << text;
    return kExitOk;
  }
  auto w = writeAtomically(a.out, text);
  if (!w.ok()) {
    std::fprintf(stderr, "gdrmesh report: %s\n", w.message().c_str());
    if (!w.fix().empty()) std::fprintf(stderr, "  fix: %s\n", w.fix().c_str());
    return kExitUsage;
  }
  const SweepProgress& p = in.sweep.progress;
  std::fprintf(stderr, "report of sweep %s (%s, verdict %s) written to %s\n", a.id.c_str(),
               a.format.c_str(), p.verdict.empty() ? toString(p.state) : p.verdict.c_str(),
               a.out.c_str());
  return kExitOk;
}

}  // namespace

void registerReportCommand(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand(
      "report",
      "Write the acceptance report of a sweep: summary, matrix, suspects, failures, environment");
  auto a = std::make_shared<ReportArgs>();
  addConnectionOptions(cmd, &a->client);
  cmd->add_option("SWEEP_ID", a->id, "sweep id (`gdrmesh sweeps` lists them)")->required();
  cmd->add_option("--format", a->format,
                  "html (one self-contained file, opens offline) or md (Markdown)")
      ->check(CLI::IsMember({"html", "md"}))
      ->capture_default_str();
  cmd->add_option("--out", a->out, "write to this file (default: stdout)");
  cmd->add_option("--max-hosts", a->max_hosts,
                  "matrix: draw all hosts up to this many, else only those with problems "
                  "(default md 32, html 64; at most 128)");
  cmd->callback([action, a] { *action = [a] { return runReport(*a); }; });
}

}  // namespace gdrmesh::cli
