// Sweep commands: `gdrmesh sweep run|follow|cancel|show|judge`, `gdrmesh sweeps`,
// `gdrmesh schedules`. The coordinator plans, runs, stores and judges sweeps; these commands
// start them, follow their progress and print their reports.
#include <cstdio>
#include <iostream>

#include "cli/cli.h"
#include "cli/cmd_report.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/specs.h"
#include "common/units.h"
#include "coordinator/service/history_convert.h"
#include "coordinator/service/sweep_convert.h"

namespace gdrmesh::cli {
namespace {

// `-o csv` of a report: one row per verdict.
std::string verdictsCsv(const SweepReportData& r) {
  std::vector<OrderedJson> rows;
  rows.reserve(r.verdicts.size());
  for (const auto& v : r.verdicts) rows.push_back(toJson(v));
  return recordsCsv(rows, toJson(PairVerdict{}));
}

// Prints a report as the command's result: JSON, CSV (one row per verdict) or text on stdout.
// The wire report is converted to domain types here, once.
void printReport(const ClientOptions& o, const pb::SweepReport& wire, const ReportOptions& opts) {
  const SweepReportData r = convert::fromProto(wire, nullptr);
  if (o.output == "json") {
    std::cout << jsonText(toJson(r)) << "\n";
  } else if (o.output == "csv") {
    std::cout << verdictsCsv(r);
  } else {
    std::cout << sweepReportText(r, opts);
  }
}

// Workers a sweep names (pairs and --hosts): to explain a refusal that names one of them.
std::vector<std::string> namedWorkers(const pb::SweepSpec& spec) {
  std::vector<std::string> out(spec.hosts().begin(), spec.hosts().end());
  for (const auto& p : spec.pairs()) {
    auto colon = p.find(':');
    for (const auto& side : {p.substr(0, colon), p.substr(colon + 1)}) {
      out.push_back(side.substr(0, side.find('/')));
    }
  }
  return out;
}

// --verdicts: which verdicts a report is fetched with. By default a table shows the failing
// ones (the counts give the rest), JSON and CSV hold them all.
const std::vector<std::string> kVerdictChoices{"all", "failed", "none"};

pb::VerdictFilter verdictFilter(const std::string& choice, const ClientOptions& o,
                                bool table_default_all) {
  if (choice == "all") return pb::VERDICTS_ALL;
  if (choice == "failed") return pb::VERDICTS_FAILED;
  if (choice == "none") return pb::VERDICTS_NONE;
  return o.output == "table" && !table_default_all ? pb::VERDICTS_FAILED : pb::VERDICTS_ALL;
}

void addVerdictsOption(CLI::App* cmd, std::string* choice, const char* table_default) {
  cmd->add_option("--verdicts", *choice,
                  std::string("which verdicts to fetch and print: all | failed | none (default: ") +
                      table_default + " in a table, all with -o json/csv; counts cover all)")
      ->check(CLI::IsMember(kVerdictChoices));
}

int followReport(const ClientOptions& o, pb::ControlService::Stub& stub, const std::string& id,
                 bool with_results, const std::string& verdicts) {
  pb::SweepReport report;
  bool fetched = false;
  int rc = followAndFetch(o, stub, id, with_results, verdictFilter(verdicts, o, false), &report,
                          &fetched);
  // --verdicts all: every verdict fetched is printed, not only the failing ones.
  if (fetched) printReport(o, report, ReportOptions{verdicts == "all", with_results});
  // Printed as soon as it is judged; the command ends once the report is stored.
  if (fetched) std::cout.flush();
  return fetched ? awaitReportStored(o, stub, report.progress(), rc) : rc;
}

struct RunArgs {
  SweepArgs sweep;
  TestOptions test;
  bool results = false;
  std::string verdicts;
};

int runSweep(const ClientOptions& o, const RunArgs& a) {
  std::string pairs_text, config_text;
  if (!a.sweep.pairs_file.empty()) {
    auto t = readTextFile(a.sweep.pairs_file, "--pairs-file");
    if (!t.ok()) return usageFailure("sweep run", t.status());
    pairs_text = *t;
  }
  if (!a.sweep.config.empty()) {
    auto t = readTextFile(a.sweep.config, "--config");
    if (!t.ok()) return usageFailure("sweep run", t.status());
    config_text = *t;
  }
  auto spec = buildSweepSpec(a.sweep, a.test, pairs_text, config_text);
  if (!spec.ok()) return usageFailure("sweep run", spec.status());

  blockTerminationSignals();  // before gRPC starts threads: Ctrl-C only stops following
  auto stub = connectControl(o);
  pb::SweepProgress started;
  int rc = startSweep(o, *stub, *spec, namedWorkers(*spec), &started);
  if (rc != kExitOk) return rc;
  if (a.sweep.detach) {
    if (o.output == "json") {
      std::cout << jsonText(toJson(convert::fromProto(started))) << "\n";
    } else {
      std::cout << started.id() << "\n";
    }
    std::fprintf(stderr, "follow it with `gdrmesh sweep follow %s`\n", started.id().c_str());
    return kExitOk;
  }
  return followReport(o, *stub, started.id(), a.results, a.verdicts);
}

int runFollow(const ClientOptions& o, const std::string& id, bool results,
              const std::string& verdicts) {
  blockTerminationSignals();
  auto stub = connectControl(o);
  return followReport(o, *stub, id, results, verdicts);
}

int runCancel(const ClientOptions& o, const std::string& id) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::SweepIdRequest req;
  req.set_id(id);
  pb::SweepProgress resp;
  auto st = stub->CancelSweep(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "CancelSweep", st);
  const SweepProgress p = convert::fromProto(resp);
  if (o.output == "json") {
    std::cout << jsonText(toJson(p)) << "\n";
  } else {
    std::cout << progressLine(p) << "\n";
  }
  return kExitOk;
}

struct ShowArgs {
  bool results = false;
  bool matrix = false;
  size_t max_hosts = 40;
  std::string verdicts;
};

int runShow(const ClientOptions& o, const std::string& id, const ShowArgs& a) {
  const bool results = a.results;
  if (a.matrix && o.output != "table") {
    return usageFailure("sweep show",
                        invalidArgument("--matrix: the matrix is drawn as text",
                                        "drop -o json/csv (they hold every verdict)"));
  }
  if (a.matrix && !a.verdicts.empty() && a.verdicts != "all") {
    return usageFailure("sweep show",
                        invalidArgument("--matrix: the matrix is drawn from every verdict",
                                        "drop --verdicts " + a.verdicts));
  }
  auto stub = connectControl(o);
  pb::SweepReport resp;
  auto st = fetchSweepReport(*stub, id, results, verdictFilter(a.verdicts, o, a.matrix), &resp);
  if (!st.ok()) return reportRpcError(o, "GetSweep", st);
  printReport(o, resp, ReportOptions{a.verdicts == "all", results});
  if (a.matrix) {
    // Labels pick host classes, whose thresholds are the cells' references.
    auto workers = listWorkersQuietly(*stub, nullptr);
    SweepView view = sweepView(convert::fromProto(resp, nullptr), std::move(workers));
    std::string provisional;
    if (view.data.verdicts.empty() && resp.progress().tests_done() > 0) {
      // A running sweep stores its verdicts at its end: the coordinator judges the results
      // stored so far, with the sweep's own config.
      pb::JudgeSweepRequest req;
      req.set_id(id);
      req.mutable_page()->set_verdicts(pb::VERDICTS_ALL);
      pb::SweepReport judged;
      auto js = fetchJudgedSweep(*stub, req, &judged);
      if (js.ok()) {
        for (const auto& v : judged.verdicts()) view.data.verdicts.push_back(convert::fromProto(v));
        provisional = "provisional: judged from the " + std::to_string(judged.verdicts_size()) +
                      " results stored so far (" + std::to_string(resp.progress().tests_done()) +
                      "/" + std::to_string(resp.progress().tests_total()) +
                      " ran); the verdicts are stored when the sweep ends\n";
      } else {
        provisional =
            "no verdicts yet, and judging the results stored so far failed: " + js.error_message() +
            "\n";
      }
    }
    std::cout << "\n" << provisional << sweepMatrixText(view, a.max_hosts, stdoutWantsColour());
  }
  return kExitOk;
}

struct JudgeArgs {
  std::string id;
  std::string config;
  std::string baseline;
  std::string verdicts;
};

int runJudge(const ClientOptions& o, const JudgeArgs& a) {
  pb::JudgeSweepRequest req;
  req.set_id(a.id);
  req.set_baseline(a.baseline);
  if (!a.config.empty()) {
    auto t = readTextFile(a.config, "--config");
    if (!t.ok()) return usageFailure("sweep judge", t.status());
    req.set_config_yaml(*t);
  }
  req.mutable_page()->set_verdicts(verdictFilter(a.verdicts, o, true));
  auto stub = connectControl(o);
  pb::SweepReport resp;
  auto st = fetchJudgedSweep(*stub, req, &resp);
  if (!st.ok()) return reportRpcError(o, "JudgeSweep", st);
  printReport(o, resp, ReportOptions{req.page().verdicts() == pb::VERDICTS_ALL, false});
  return kExitOk;
}

int runSweeps(const ClientOptions& o, uint32_t limit) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::ListSweepsRequest req;
  req.set_limit(limit);
  pb::ListSweepsResponse resp;
  auto st = stub->ListSweeps(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "ListSweeps", st);
  std::vector<SweepProgress> sweeps;
  for (const auto& p : resp.sweeps()) sweeps.push_back(convert::fromProto(p));
  std::vector<OrderedJson> docs;
  if (o.output != "table") {
    for (const auto& p : sweeps) docs.push_back(toJson(p));
  }
  if (o.output == "json") {
    std::cout << jsonText(OrderedJson{{"sweeps", OrderedJson(docs)}}) << "\n";
  } else if (o.output == "csv") {
    std::cout << recordsCsv(docs, toJson(SweepProgress{}));
  } else {
    std::cout << sweepsTable(sweeps);
  }
  return kExitOk;
}

int runSchedules(const ClientOptions& o) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::ListSchedulesResponse resp;
  auto st = stub->ListSchedules(&ctx, pb::ListSchedulesRequest(), &resp);
  if (!st.ok()) return reportRpcError(o, "ListSchedules", st);
  std::vector<ScheduleSummary> schedules;
  for (const auto& s : resp.schedules()) schedules.push_back(convert::fromProto(s));
  std::vector<OrderedJson> docs;
  if (o.output != "table") {
    for (const auto& s : schedules) docs.push_back(toJson(s));
  }
  if (o.output == "json") {
    std::cout << jsonText(OrderedJson{{"schedules", OrderedJson(docs)}}) << "\n";
  } else if (o.output == "csv") {
    std::cout << recordsCsv(docs, toJson(ScheduleSummary{}));
  } else {
    std::cout << schedulesTable(schedules, nowUnixMs());
  }
  return kExitOk;
}

// A subcommand taking one sweep ID.
CLI::App* idCommand(CLI::App* parent, const char* name, const char* help,
                    std::shared_ptr<ClientOptions>* o, std::shared_ptr<std::string>* id,
                    bool csv = false) {
  auto* cmd = parent->add_subcommand(name, help);
  *o = std::make_shared<ClientOptions>();
  *id = std::make_shared<std::string>();
  addClientOptions(cmd, o->get(), csv);
  cmd->add_option("ID", **id, "sweep id (`gdrmesh sweeps` lists them)")->required();
  return cmd;
}

// `sweep run`: the options of a sweep (pattern, workers, sizes, judging) and of its test.
void registerSweepRun(CLI::App* sweep, Action* action) {
  auto* cmd = sweep->add_subcommand(
      "run", "Start a sweep of pair tests over the cluster and follow it to its verdict");
  auto o = std::make_shared<ClientOptions>();
  auto a = std::make_shared<RunArgs>();
  addClientOptions(cmd, o.get(), true);
  auto& s = a->sweep;
  cmd->add_option("--pattern", s.pattern,
                  "pairs | all-pairs | rails | loopback | random | cover | bisection (cover "
                  "and bisection need the coordinator's --fabric)")
      ->required();
  cmd->add_option("PAIRS", s.pairs, "for --pattern pairs: SRC:DST, each WORKER[/NIC]");
  cmd->add_option("--pairs-file", s.pairs_file, "file of pairs, one SRC:DST per line");
  cmd->add_option("--direction", s.direction,
                  "one (A->B) | both (A->B and B->A) | bidir (one bidirectional test)")
      ->capture_default_str();
  // Given or not is kept apart from its value: `--rounds 0` is refused, not taken as unset.
  auto rounds = std::make_shared<uint32_t>(0);
  auto* rounds_opt =
      cmd->add_option("--rounds", *rounds, "--pattern random: matchings, 1..100000 (default 3)");
  cmd->add_option("--seed", s.seed, "--pattern random: seed (default chosen and recorded)");
  cmd->add_option("--hosts", s.hosts, "only these workers (a,b,c; default every online one)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--exclude", s.exclude, "never these workers (a,b)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--select", s.select, "label selector KEY=VALUE (repeatable; all must match)")
      ->allow_extra_args(false);
  auto* sizes = cmd->add_option("--sizes", s.sizes, "message sizes: 4KiB,1MiB (overrides --size)")
                    ->delimiter(',')
                    ->allow_extra_args(false);
  auto* range = cmd->add_option("--sweep-sizes", s.sweep_sizes,
                                "message sizes: powers of two over MIN..MAX, e.g. 2..8MiB");
  sizes->excludes(range);
  cmd->add_option("--max-concurrency", s.max_concurrency,
                  "pair tests in flight at once (0: limited by NICs and GPUs only)");
  cmd->add_option("--retries", s.retries,
                  "retries of transient errors (never of integrity failures)")
      ->capture_default_str();
  cmd->add_option("--config", s.config, "cluster config (YAML): thresholds and host classes");
  cmd->add_option("--baseline", s.baseline, "compare with this sweep id, or `previous`");
  cmd->add_flag("--no-localise", s.no_localise,
                "do not retest failing pairs with known-good partners");
  cmd->add_flag("--queue", s.queue, "wait behind a running sweep instead of being refused");
  cmd->add_option("--name", s.name, "free text stored with the sweep");
  cmd->add_flag("--detach", s.detach, "print the sweep id and return; the sweep goes on");
  cmd->add_flag("--results", a->results, "also print every result at the end");
  addVerdictsOption(cmd, &a->verdicts, "failed");
  addTestOptions(cmd, &a->test);
  cmd->callback([action, o, a, rounds, rounds_opt] {
    if (rounds_opt->count() > 0) a->sweep.rounds = *rounds;
    *action = [o, a] { return runSweep(*o, *a); };
  });
}

void registerSweepFollow(CLI::App* sweep, Action* action) {
  std::shared_ptr<ClientOptions> o;
  std::shared_ptr<std::string> id;
  auto* cmd = idCommand(sweep, "follow", "Follow a running sweep to its verdict", &o, &id, true);
  auto results = std::make_shared<bool>(false);
  auto verdicts = std::make_shared<std::string>();
  cmd->add_flag("--results", *results, "also print every result at the end");
  addVerdictsOption(cmd, verdicts.get(), "failed");
  cmd->callback([action, o, id, results, verdicts] {
    *action = [o, id, results, verdicts] { return runFollow(*o, *id, *results, *verdicts); };
  });
}

void registerSweepCancel(CLI::App* sweep, Action* action) {
  std::shared_ptr<ClientOptions> o;
  std::shared_ptr<std::string> id;
  auto* cmd = idCommand(sweep, "cancel", "Cancel a queued or running sweep", &o, &id);
  cmd->callback([action, o, id] { *action = [o, id] { return runCancel(*o, *id); }; });
}

void registerSweepShow(CLI::App* sweep, Action* action) {
  std::shared_ptr<ClientOptions> o;
  std::shared_ptr<std::string> id;
  auto* cmd = idCommand(sweep, "show",
                        "Show a sweep: state, verdicts, suspects (-o csv: one row per verdict)", &o,
                        &id, true);
  auto a = std::make_shared<ShowArgs>();
  cmd->add_flag("--results", a->results, "also print every result");
  cmd->add_flag("--matrix", a->matrix,
                "also draw the hosts x hosts matrix (per rail), coloured on a terminal");
  cmd->add_option("--max-hosts", a->max_hosts,
                  "--matrix: draw all hosts up to this many, else only those with failures, "
                  "skips or suspects (at most 128)")
      ->capture_default_str();
  addVerdictsOption(cmd, &a->verdicts, "failed (all with --matrix)");
  cmd->callback([action, o, id, a] { *action = [o, id, a] { return runShow(*o, *id, *a); }; });
}

void registerSweepJudge(CLI::App* sweep, Action* action) {
  auto* cmd = sweep->add_subcommand(
      "judge", "Judge a stored sweep again (another config or baseline) and print the verdicts");
  auto o = std::make_shared<ClientOptions>();
  auto a = std::make_shared<JudgeArgs>();
  addClientOptions(cmd, o.get());
  cmd->add_option("ID", a->id, "sweep id")->required();
  cmd->add_option("--config", a->config, "cluster config (YAML); default the sweep's own");
  cmd->add_option("--baseline", a->baseline, "compare with this sweep id, or `previous`");
  addVerdictsOption(cmd, &a->verdicts, "all");
  cmd->callback([action, o, a] { *action = [o, a] { return runJudge(*o, *a); }; });
}

// `gdrmesh sweeps`: the list of sweeps.
void registerSweepsList(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("sweeps", "List sweeps, newest first");
  auto o = std::make_shared<ClientOptions>();
  auto limit = std::make_shared<uint32_t>(20);
  addClientOptions(cmd, o.get(), true);
  cmd->add_option("--limit", *limit, "rows (0: the coordinator's default)")->capture_default_str();
  cmd->callback([action, o, limit] { *action = [o, limit] { return runSweeps(*o, *limit); }; });
}

// `gdrmesh schedules`: the scheduled sweeps.
void registerSchedulesList(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("schedules", "List scheduled sweeps: next run, last run");
  auto o = std::make_shared<ClientOptions>();
  addClientOptions(cmd, o.get(), true);
  cmd->callback([action, o] { *action = [o] { return runSchedules(*o); }; });
}

}  // namespace

void registerSweepCommands(CLI::App& app, Action* action) {
  auto* sweep = app.add_subcommand("sweep", "Run, follow, cancel, show and judge sweeps");
  sweep->require_subcommand(1);
  registerSweepRun(sweep, action);
  registerSweepFollow(sweep, action);
  registerSweepCancel(sweep, action);
  registerSweepShow(sweep, action);
  registerSweepJudge(sweep, action);
  registerSweepsList(app, action);
  registerSchedulesList(app, action);
}

}  // namespace gdrmesh::cli
