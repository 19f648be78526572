// History commands: `gdrmesh history SRC DST` (a pair's results over time), `gdrmesh compare
// SWEEP_A SWEEP_B` (what changed between two sweeps) and `gdrmesh result TEST_ID` (one result
// whole). The coordinator answers from its store (coordinator/orchestrator/history.h); these
// commands turn flags into requests and print the answers.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>

#include "cli/cli.h"
#include "cli/control.h"
#include "cli/output.h"
#include "common/json.h"
#include "common/time_point.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/service/history_convert.h"

namespace gdrmesh::cli {
namespace {

void printResults(const ClientOptions& o, const std::vector<TestResult>& rows) {
  if (o.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(toJson(r));
    std::cout << j.dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << resultsCsv(rows);
  } else {
    std::cout << historyTable(rows);
  }
}

// ------------------------------------------------------------------ history

struct HistoryArgs {
  std::string src, dst;
  std::string since, until;
  std::string size;
  std::string op, mode;
  std::string direction = "both";
  uint32_t limit = 50;
};

// Flags -> request; errors name the flag. `now_ms` is what durations count back from.
Result<pb::HistoryRequest> historyRequest(const HistoryArgs& a, int64_t now_ms) {
  pb::HistoryRequest req;
  for (const std::string* side : {&a.src, &a.dst}) {
    if (side->find('/') != std::string::npos) {
      return invalidArgument(
          std::string(side == &a.src ? "SRC" : "DST") + " '" + *side + "' names a NIC",
          "give the worker only: history covers every NIC of the pair");
    }
  }
  req.set_src(a.src);
  req.set_dst(a.dst);
  if (!a.since.empty()) {
    GDR_ASSIGN_OR_RETURN(int64_t t, parseTimePoint(a.since, now_ms, "--since"));
    req.set_since_ms(t);
  }
  if (!a.until.empty()) {
    GDR_ASSIGN_OR_RETURN(int64_t t, parseTimePoint(a.until, now_ms, "--until"));
    if (t <= req.since_ms()) {
      return invalidArgument("--until " + a.until + " is not after --since " + a.since,
                             "give --since an earlier time than --until");
    }
    req.set_until_ms(t);
  }
  if (!a.size.empty()) {
    GDR_ASSIGN_OR_RETURN(uint64_t s, parseSize(a.size, "--size"));
    req.set_message_size(s);
  }
  if (!a.op.empty()) {
    auto op = parseOp(a.op);
    if (!op) {
      return invalidArgument("--op: '" + a.op + "' is not an operation",
                             "use write, read, send or write_imm");
    }
    req.set_op(convert::toProto(*op));
  }
  if (!a.mode.empty()) {
    auto mode = parseMode(a.mode);
    if (!mode) return invalidArgument("--mode: '" + a.mode + "' is not a mode", "use bw or lat");
    req.set_mode(convert::toProto(*mode));
  }
  if (a.direction != "both" && a.direction != "one") {
    return invalidArgument("--direction: '" + a.direction + "' is not a direction",
                           "use both (default) or one (SRC -> DST only)");
  }
  req.set_one_direction(a.direction == "one");
  req.set_limit(a.limit);
  req.set_all(a.limit == 0);
  return req;
}

int runHistory(const ClientOptions& o, const HistoryArgs& a) {
  auto req = historyRequest(a, nowUnixMs());
  if (!req.ok()) return usageFailure("history", req.status());
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 60);
  pb::HistoryResponse resp;
  auto st = stub->History(&ctx, *req, &resp);
  // The coordinator names unknown workers itself (registered or in a stored result).
  if (!st.ok()) return reportRpcError(o, "History", st);
  std::vector<TestResult> rows;
  for (const auto& r : resp.results()) rows.push_back(convert::fromProto(r));
  printResults(o, rows);
  if (o.output == "table" && !req->all() && rows.size() == req->limit()) {
    std::cout << rows.size() << " newest results shown (--limit N for more, --limit 0 for all)\n";
  }
  return kExitOk;
}

// ------------------------------------------------------------------ actions

struct ActionsArgs {
  std::string host;
  std::string sweep;
  std::string since;
  uint32_t limit = 50;
};

Result<pb::ListActionsRequest> actionsRequest(const ActionsArgs& a, int64_t now_ms) {
  pb::ListActionsRequest req;
  req.set_node(a.host);
  req.set_sweep_id(a.sweep);
  if (!a.since.empty()) {
    GDR_ASSIGN_OR_RETURN(int64_t t, parseTimePoint(a.since, now_ms, "--since"));
    req.set_since_ms(t);
  }
  req.set_limit(a.limit);
  return req;
}

int runActions(const ClientOptions& o, const ActionsArgs& a) {
  auto req = actionsRequest(a, nowUnixMs());
  if (!req.ok()) return usageFailure("actions", req.status());
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 60);
  pb::ListActionsResponse resp;
  auto st = stub->ListActions(&ctx, *req, &resp);
  if (!st.ok()) return reportRpcError(o, "ListActions", st);
  std::vector<ActionRecord> actions;
  for (const auto& x : resp.actions()) actions.push_back(convert::fromProto(x));
  std::vector<OrderedJson> docs;
  if (o.output != "table") {
    for (const auto& x : actions) docs.push_back(toJson(x));
  }
  if (o.output == "json") {
    std::cout << jsonText(OrderedJson{{"actions", OrderedJson(docs)}}) << "\n";
  } else if (o.output == "csv") {
    std::cout << recordsCsv(docs, toJson(ActionRecord{}));
  } else if (actions.empty()) {
    std::cout << "no node actions recorded"
              << (a.host.empty() && a.sweep.empty() && a.since.empty() ? "" : " that match")
              << " (the coordinator's `actions:` config turns them on: docs/operations.md)\n";
  } else {
    std::cout << actionsTable(actions);
    if (req->limit() != 0 && actions.size() == req->limit()) {
      std::cout << actions.size()
                << " newest actions shown (--limit N for more, --limit 0 for all)\n";
    }
  }
  return kExitOk;
}

// ------------------------------------------------------------------ compare

struct CompareArgs {
  std::string a, b;
  std::string tolerance;
};

// "5%", "5", "2.5%" -> 5, 5, 2.5.
Result<double> parseTolerance(const std::string& text) {
  std::string s = text;
  if (!s.empty() && s.back() == '%') s.pop_back();
  char* end = nullptr;
  const double v = s.empty() ? -1 : std::strtod(s.c_str(), &end);
  if (s.empty() || end == nullptr || *end != '\0' || !(v >= 0 && v <= 1000)) {
    return invalidArgument("--tolerance: '" + text + "' is not a percentage from 0 to 1000",
                           "e.g. --tolerance 5%");
  }
  return v;
}

int runCompare(const ClientOptions& o, const CompareArgs& a) {
  pb::CompareSweepsRequest req;
  req.set_a(a.a);
  req.set_b(a.b);
  if (!a.tolerance.empty()) {
    auto t = parseTolerance(a.tolerance);
    if (!t.ok()) return usageFailure("compare", t.status());
    req.set_tolerance_pct(*t);
  }
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 120);
  pb::CompareSweepsResponse resp;
  auto st = stub->CompareSweeps(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "CompareSweeps", st);
  const SweepComparison c = convert::fromProto(resp);
  if (o.output == "json") {
    std::cout << jsonText(toJson(c)) << "\n";
  } else if (o.output == "csv") {
    std::cout << compareCsv(c);
    std::cerr << compareSummary(c);
  } else {
    std::cout << compareTable(c);
  }
  return kExitOk;  // it could answer: regressions are in the output, not the exit code
}

// ------------------------------------------------------------------ result

// The test's stored path through the fabric (GetResult's fabric_path), hop by hop.
nlohmann::json resultPathJson(const pb::TestResult& resp) {
  nlohmann::json hops = nlohmann::json::array();
  for (const pb::FabricPathHop& h : resp.fabric_path()) {
    hops.push_back({{"direction", h.direction()},
                    {"hop", h.hop()},
                    {"switch", h.switch_name()},
                    {"switch_guid", h.switch_guid()},
                    {"in_port", h.in_port()},
                    {"out_port", h.out_port()},
                    {"fabric", h.fabric()}});
  }
  return hops;
}

// "path (LFTs of tree.json)" and one line a direction: "forward  leaf01[1>4] spine02[1>2] ...".
std::string resultPathText(const pb::TestResult& resp) {
  if (resp.fabric_path_size() == 0) return "";
  std::set<std::string> sources;
  for (const pb::FabricPathHop& h : resp.fabric_path()) sources.insert(h.fabric());
  std::string sources_text;
  for (const auto& f : sources) sources_text += (sources_text.empty() ? "" : ", ") + f;
  std::string out = "path (switch[in port>out port], from the LFTs of " + sources_text + ")\n";
  std::string direction;
  for (const pb::FabricPathHop& h : resp.fabric_path()) {
    if (h.direction() != direction) {
      if (!direction.empty()) out += "\n";
      direction = h.direction();
      out += "  " + direction + " ";
    }
    out += " " + h.switch_name() + "[" + std::to_string(h.in_port()) + ">" +
           std::to_string(h.out_port()) + "]";
  }
  return out + "\n";
}

int runResult(const ClientOptions& o, const std::string& test_id) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::GetResultRequest req;
  req.set_test_id(test_id);
  pb::TestResult resp;
  auto st = stub->GetResult(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "GetResult", st);
  const TestResult r = convert::fromProto(resp);
  if (o.output == "json") {
    nlohmann::json j = toJson(r);
    if (resp.fabric_path_size() > 0) j["fabric_path"] = resultPathJson(resp);
    std::cout << j.dump(2) << "\n";
  } else if (o.output == "csv") {
    std::cout << resultsCsv({r});
  } else {
    std::cout << resultWhole(r) << resultPathText(resp);
  }
  return kExitOk;
}

}  // namespace

void registerHistoryCommands(CLI::App& app, Action* action) {
  {
    auto* cmd = app.add_subcommand(
        "history", "A pair's results over time, newest first (both directions by default)");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<HistoryArgs>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("SRC", a->src, "one worker of the pair")->required();
    cmd->add_option("DST", a->dst, "the other worker")->required();
    cmd->add_option("--since", a->since,
                    "only results started since: a duration back from now (30d, 12h, 2w) or a "
                    "UTC date (2026-11-20, 2026-11-20T14:00Z)");
    cmd->add_option("--until", a->until, "only results started before (same forms as --since)");
    cmd->add_option("--size", a->size, "only this message size (64KiB)");
    cmd->add_option("--op", a->op, "only this operation: write | read | send | write_imm");
    cmd->add_option("--mode", a->mode, "only this mode: bw | lat");
    cmd->add_option("--direction", a->direction, "both (SRC <-> DST) | one (SRC -> DST only)")
        ->capture_default_str();
    cmd->add_option("--limit", a->limit, "rows, newest first (0: all)")->capture_default_str();
    cmd->callback([action, o, a] { *action = [o, a] { return runHistory(*o, *a); }; });
  }
  {
    auto* cmd = app.add_subcommand(
        "compare",
        "Compare two sweeps: every (pair, op, mode, size), worst regression first; exit 0 when "
        "it could answer");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<CompareArgs>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("SWEEP_A", a->a, "the earlier sweep (baseline)")->required();
    cmd->add_option("SWEEP_B", a->b, "the sweep compared with it")->required();
    cmd->add_option("--tolerance", a->tolerance,
                    "changes within this are unchanged (default 5%; bandwidth higher and latency "
                    "lower is better)");
    cmd->callback([action, o, a] { *action = [o, a] { return runCompare(*o, *a); }; });
  }
  {
    auto* cmd = app.add_subcommand(
        "actions",
        "List the coordinator's node actions: drains and resumes after sweeps (taken, dry-run, "
        "refused by the circuit breaker, failed, skipped), newest first");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<ActionsArgs>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("--host", a->host, "only this node (the worker's name)");
    cmd->add_option("--sweep", a->sweep, "only the actions of this sweep");
    cmd->add_option("--since", a->since,
                    "only actions recorded since: a duration back from now (30d, 12h, 2w) or a "
                    "UTC date (2026-11-20, 2026-11-20T14:00Z)");
    cmd->add_option("--limit", a->limit, "rows, newest first (0: all)")->capture_default_str();
    cmd->callback([action, o, a] { *action = [o, a] { return runActions(*o, *a); }; });
  }
  {
    auto* cmd = app.add_subcommand("result", "Show one result whole, by its test id");
    auto o = std::make_shared<ClientOptions>();
    auto id = std::make_shared<std::string>();
    addClientOptions(cmd, o.get(), true);
    cmd->add_option("TEST_ID", *id, "test id, as `gdrmesh results` or `history` prints it")
        ->required();
    cmd->callback([action, o, id] { *action = [o, id] { return runResult(*o, *id); }; });
  }
}

}  // namespace gdrmesh::cli
