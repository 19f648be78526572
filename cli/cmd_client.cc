// Client commands that talk to the coordinator: workers, test, results. Sweeps: cmd_sweep.cc.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/output.h"
#include "cli/specs.h"
#include "common/json.h"
#include "common/units.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::cli {
namespace {

// ------------------------------------------------------------------ workers

int runWorkers(const ClientOptions& o, bool notes) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 10);
  pb::ListWorkersRequest req;
  pb::ListWorkersResponse resp;
  auto st = stub->ListWorkers(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "ListWorkers", st);
  std::vector<WorkerView> views;
  views.reserve(static_cast<size_t>(resp.workers_size()));
  // Labels included: they are what `--select KEY=VALUE` matches.
  for (const auto& w : resp.workers()) views.push_back(convert::fromProto(w));
  if (o.output == "json") {
    std::cout << workersJson(views).dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << workersCsv(views);
  } else {
    std::cout << workersTable(views, notes);
  }
  return kExitOk;
}

// ------------------------------------------------------------------ test

struct TestArgs {
  std::string src, dst;
  TestOptions test;
  std::string sweep;  // --sweep [MIN..MAX]: a coordinator sweep over message sizes
};

int usage(const Status& st) {
  std::fprintf(stderr, "gdrmesh test: %s\n", st.message().c_str());
  if (!st.fix().empty()) std::fprintf(stderr, "  fix: %s\n", st.fix().c_str());
  return kExitUsage;
}

// `test SRC DST --sweep`: one pair over a size list, run and stored by the coordinator as a
// sweep (pattern `pairs`); printed as the per-size table.
int runSizeSweep(const ClientOptions& o, const TestArgs& a, const pb::RunTestRequest& req) {
  auto sizes = parseSizeRange(a.sweep, "--sweep");
  if (!sizes.ok()) return usage(sizes.status());
  blockTerminationSignals();  // before gRPC starts threads: Ctrl-C only stops following
  auto stub = connectControl(o);
  pb::SweepProgress started;
  int rc = startSweep(o, *stub, singlePairSweep(a.src, a.dst, req, *sizes),
                      {req.initiator().worker(), req.target().worker()}, &started);
  if (rc != kExitOk) return rc;
  pb::SweepReport report;
  bool fetched = false;
  rc = followAndFetch(o, *stub, started.id(), true, pb::VERDICTS_NONE, &report, &fetched);
  if (!fetched) return rc;
  // The per-size table is printed once the report is stored, as the command's result.
  rc = awaitReportStored(o, *stub, report.progress(), rc);
  std::vector<TestResult> rows;
  for (const auto& r : report.results()) rows.push_back(convert::fromProto(r));
  std::stable_sort(rows.begin(), rows.end(), [](const TestResult& x, const TestResult& y) {
    return x.message_size < y.message_size;
  });
  if (o.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(toJson(r));
    std::cout << j.dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << resultsCsv(rows);
  } else {
    std::cout << sweepTable(rows);
  }
  // Any size that did not pass fails the command, as before; so does a sweep that did not
  // finish with verdict PASS (rc).
  for (const auto& r : rows) {
    if (r.status != TestStatus::kPassed) return kExitFailed;
  }
  if (rows.empty()) {
    std::fprintf(stderr, "gdrmesh test: sweep %s has no results\n", started.id().c_str());
    return kExitFailed;
  }
  return rc;
}

int runTest(const ClientOptions& o, const TestArgs& a) {
  auto spec = toPairTestSpec(a.test);
  if (!spec.ok()) return usage(spec.status());
  Status st = parseEndpoint(a.src, "SRC", &spec->initiator);
  if (!st.ok()) return usage(st);
  st = parseEndpoint(a.dst, "DST", &spec->target);
  if (!st.ok()) return usage(st);
  pb::RunTestRequest req;
  convert::toProto(*spec, &req);
  if (!a.sweep.empty()) return runSizeSweep(o, a, req);

  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, spec->runTimeoutSeconds() + kRunTestRpcSlackSeconds);
  pb::RunTestResponse resp;
  auto rpc = stub->RunTest(&ctx, req, &resp);
  if (!rpc.ok()) {
    return reportRpcError(o, "RunTest", rpc, {spec->initiator.worker, spec->target.worker});
  }
  TestResult r = convert::fromProto(resp.result());
  if (o.output == "json") {
    auto j = toJson(r);
    if (!resp.store_error().empty()) j["store_error"] = resp.store_error();
    std::cout << j.dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << resultsCsv({r});  // the columns of `results -o csv`
    if (!resp.store_error().empty()) {
      std::fprintf(stderr, "WARNING: result not in the database yet: %s\n",
                   resp.store_error().c_str());
    }
  } else {
    std::cout << resultDetail(r);
    if (!resp.store_error().empty()) {
      // The error says whether the result is durable (spooled) or held in memory only.
      std::cout << "WARNING: result not in the database yet: " << resp.store_error() << "\n";
    }
  }
  if (!resp.store_error().empty()) return kExitInternal;
  switch (r.status) {
    case TestStatus::kPassed:
      return kExitOk;
    case TestStatus::kSkipped:
      return kExitSkipped;
    default:
      return kExitFailed;
  }
}

// ------------------------------------------------------------------ results

struct ResultsArgs {
  uint32_t limit = 20;
  std::string worker;
  std::string status;
  std::string run_id;
};

int runResults(const ClientOptions& o, const ResultsArgs& a) {
  pb::ListResultsRequest req;
  req.set_limit(a.limit);
  req.set_all(a.limit == 0);  // 0 = every matching result
  req.set_worker(a.worker);
  req.set_run_id(a.run_id);
  if (!a.status.empty()) {
    std::string upper = a.status;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto s = parseTestStatus(upper);
    if (!s) {
      std::fprintf(stderr,
                   "gdrmesh results: --status: '%s' is not one of PASSED, FAILED, "
                   "SKIPPED, ERROR\n",
                   a.status.c_str());
      return kExitUsage;
    }
    req.set_status(convert::toProto(*s));
  }
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::ListResultsResponse resp;
  auto st = stub->ListResults(&ctx, req, &resp);
  // The coordinator names an unknown --worker itself (registered or in a stored result).
  if (!st.ok()) return reportRpcError(o, "ListResults", st);
  std::vector<TestResult> rows;
  for (const auto& r : resp.results()) rows.push_back(convert::fromProto(r));
  if (o.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(toJson(r));
    std::cout << j.dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << resultsCsv(rows);
  } else {
    std::cout << resultsTable(rows, resp.total());
  }
  return kExitOk;
}

}  // namespace

namespace {
// The client options of every subcommand, checked for the one that was parsed.
struct Registered {
  CLI::App* app;
  ClientOptions* opts;
  std::function<bool()> needed;
};
std::vector<Registered>& clientOptionsOf() {
  static std::vector<Registered> all;
  return all;
}
}  // namespace

bool prepareClientOptions() {
  for (auto& [app, opts, needed] : clientOptionsOf()) {
    if (!app->parsed() || (needed && !needed())) continue;
    auto creds = resolveTls(opts->tls, {PeerRole::kAdmin, PeerRole::kReader});
    if (!creds.ok()) {
      std::fprintf(stderr, "gdrmesh %s: %s\n", app->get_name().c_str(),
                   creds.status().toString().c_str());
      return false;
    }
    opts->credentials = std::move(*creds);
  }
  return true;
}

void addConnectionOptions(CLI::App* app, ClientOptions* opts, std::function<bool()> needed) {
  clientOptionsOf().push_back({app, opts, std::move(needed)});
  addTlsOptions(app, &opts->tls, /*env_insecure=*/true);
  const char* env = std::getenv("GDRMESH_COORDINATOR");
  opts->coordinator = env != nullptr && *env != '\0' ? env : "127.0.0.1:7070";
  app->add_option("--coordinator", opts->coordinator,
                  "coordinator HOST:PORT (env GDRMESH_COORDINATOR)")
      ->capture_default_str();
}

void addClientOptions(CLI::App* app, ClientOptions* opts, bool csv, std::function<bool()> needed) {
  addConnectionOptions(app, opts, std::move(needed));
  if (csv) {
    app->add_option("-o,--output", opts->output, "output format: table, json or csv (RFC 4180)")
        ->check(CLI::IsMember({"table", "json", "csv"}))
        ->capture_default_str();
  } else {
    app->add_option("-o,--output", opts->output, "output format")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
  }
}

void registerClientCommands(CLI::App& app, Action* action) {
  {
    auto* cmd = app.add_subcommand("workers", "List registered workers, their NICs and GPUs");
    auto o = std::make_shared<ClientOptions>();
    auto notes = std::make_shared<bool>(false);
    addClientOptions(cmd, o.get(), true);
    cmd->add_flag("--notes", *notes,
                  "print each worker's notes (why a transport is missing, ...); by default the "
                  "table shows their count");
    cmd->callback([action, o, notes] { *action = [o, notes] { return runWorkers(*o, *notes); }; });
  }
  {
    auto* cmd = app.add_subcommand("test", "Run one pair test: SRC initiates, DST is the target");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<TestArgs>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("SRC", a->src, "initiator: WORKER or WORKER/DEVICE")->required();
    cmd->add_option("DST", a->dst, "target: WORKER or WORKER/DEVICE")->required();
    addTestOptions(cmd, &a->test);
    cmd->add_option("--sweep", a->sweep,
                    "message-size sweep run by the coordinator: powers of two over MIN..MAX "
                    "(default 2..8MiB)")
        ->expected(0, 1)
        ->default_str("default");
    cmd->callback([action, o, a] { *action = [o, a] { return runTest(*o, *a); }; });
  }
  {
    auto* cmd = app.add_subcommand("results", "Show the latest results");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<ResultsArgs>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("--limit", a->limit, "rows, newest first (0: all)")->capture_default_str();
    cmd->add_option("--worker", a->worker,
                    "only tests with this worker on either side (an unknown worker is an error)");
    cmd->add_option("--status", a->status, "PASSED | FAILED | SKIPPED | ERROR (any case)");
    cmd->add_option("--run-id", a->run_id, "only this run");
    cmd->callback([action, o, a] { *action = [o, a] { return runResults(*o, *a); }; });
  }
}

}  // namespace gdrmesh::cli
