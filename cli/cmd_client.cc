// Client commands that talk to the coordinator: workers, test, results.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/cli.h"
#include "cli/output.h"
#include "common/json.h"
#include "common/units.h"
#include "convert.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::cli {
namespace {

namespace pb = ::gdrmesh::v1;

std::unique_ptr<pb::ControlService::Stub> connectControl(const ClientOptions& o) {
  return pb::ControlService::NewStub(
      grpc::CreateChannel(o.coordinator, grpc::InsecureChannelCredentials()));
}

// Maps an RPC failure to a message and exit code.
int reportRpcError(const ClientOptions& o, const grpc::Status& st) {
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
      st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::fprintf(stderr,
                 "gdrmesh: coordinator %s unreachable: %s\n"
                 "  fix: start it with `gdrmesh coordinator --db FILE`, or pass --coordinator "
                 "HOST:PORT (or set GDRMESH_COORDINATOR)\n",
                 o.coordinator.c_str(), st.error_message().c_str());
    return kExitUnreachable;
  }
  std::fprintf(stderr, "gdrmesh: %s\n", st.error_message().c_str());
  switch (st.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return kExitUsage;
    default:
      return kExitInternal;
  }
}

void setDeadline(grpc::ClientContext* ctx, double seconds) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

// ------------------------------------------------------------------ workers

int runWorkers(const ClientOptions& o) {
  auto stub = connectControl(o);
  grpc::ClientContext ctx;
  setDeadline(&ctx, 10);
  pb::ListWorkersRequest req;
  pb::ListWorkersResponse resp;
  auto st = stub->ListWorkers(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, st);
  std::vector<WorkerView> views;
  for (const auto& w : resp.workers()) {
    WorkerView v;
    v.name = w.name();
    v.state = w.state();
    v.connected_ms = w.connected_ms();
    v.last_heartbeat_ms = w.last_heartbeat_ms();
    v.peer = w.peer();
    v.active_tests = w.active_tests();
    v.inventory = convert::fromProto(w.inventory());
    views.push_back(std::move(v));
  }
  if (o.output == "json") {
    std::cout << workersJson(views).dump(2) << "\n";
  } else {
    std::cout << workersTable(views);
  }
  return kExitOk;
}

// ------------------------------------------------------------------ test

struct TestArgs {
  std::string src, dst;
  std::string op = "write";
  std::string mode = "bw";
  std::string size = "64KiB";
  uint64_t iters = 1000;
  uint64_t warmup = 16;
  uint32_t qps = 1;
  uint32_t tx_depth = 128;
  std::string transport = "auto";
  std::string memory = "host";
  int gpu = -1;
  std::string reg = "auto";
  int gid_index = -1;
  double timeout = 0;
  uint64_t corrupt_bytes = 0;
  bool invalidate_rkey = false;
  std::string run_id;
  bool rdma_cm = false;
  std::string duration;
  uint32_t inline_size = 0;
  bool bidir = false;
  uint32_t cq_mod = 0;
  std::string sweep;
  double duration_s() const {
    auto d = parseDurationSeconds(duration, "--duration");
    return !duration.empty() && d.ok() ? *d : 0.0;
  }
};

// "--sweep" alone: 2 B .. 8 MiB in powers of two (perftest -a); or "MIN..MAX".
Result<std::vector<uint64_t>> sweepSizes(const std::string& spec) {
  uint64_t lo = 2, hi = 8ULL << 20;
  if (!spec.empty() && spec != "default") {
    auto dots = spec.find("..");
    if (dots == std::string::npos) {
      return invalidArgument("--sweep: '" + spec + "' is not MIN..MAX", "e.g. --sweep 4KiB..1MiB");
    }
    GDR_ASSIGN_OR_RETURN(lo, parseSize(spec.substr(0, dots), "--sweep MIN"));
    GDR_ASSIGN_OR_RETURN(hi, parseSize(spec.substr(dots + 2), "--sweep MAX"));
    if (lo == 0 || lo > hi) return invalidArgument("--sweep: need 0 < MIN <= MAX");
  }
  std::vector<uint64_t> out;
  for (uint64_t s = lo; s <= hi; s *= 2) out.push_back(s);
  return out;
}

// "worker" or "worker/device"
void parseSelector(const std::string& s, pb::EndpointSelector* out) {
  auto slash = s.find('/');
  out->set_worker(s.substr(0, slash));
  if (slash != std::string::npos) out->set_device(s.substr(slash + 1));
}

int usage(const std::string& msg) {
  std::fprintf(stderr, "gdrmesh test: %s\n", msg.c_str());
  return kExitUsage;
}

int runTest(const ClientOptions& o, const TestArgs& a) {
  pb::RunTestRequest req;
  parseSelector(a.src, req.mutable_initiator());
  parseSelector(a.dst, req.mutable_target());
  if (req.initiator().worker().empty()) return usage("SRC: empty worker name");
  if (req.target().worker().empty()) return usage("DST: empty worker name");
  auto op = parseOp(a.op);
  if (!op) return usage("--op: '" + a.op + "' is not one of write, read, send, write_imm");
  req.set_op(convert::toProto(*op));
  auto mode = parseMode(a.mode);
  if (!mode) return usage("--mode: '" + a.mode + "' is not one of bw, lat");
  req.set_mode(convert::toProto(*mode));
  auto size = parseSize(a.size, "--size");
  if (!size.ok()) return usage(size.status().toString());
  if (*size == 0) return usage("--size: must be > 0");
  req.set_message_size(*size);
  if (a.iters == 0) return usage("--iters: must be > 0");
  req.set_iterations(a.iters);
  req.set_warmup_iterations(a.warmup);
  req.set_num_qps(a.qps);
  req.set_tx_depth(a.tx_depth);
  req.set_gid_index(a.gid_index);
  req.set_use_rdma_cm(a.rdma_cm);
  req.set_timeout_seconds(a.timeout);
  req.set_run_id(a.run_id);
  if (!a.duration.empty()) {
    auto d = parseDurationSeconds(a.duration, "--duration");
    if (!d.ok()) return usage(d.status().toString());
    req.set_duration_seconds(*d);
  }
  req.set_inline_size(a.inline_size);
  req.set_bidirectional(a.bidir);
  req.set_cq_moderation(a.cq_mod);
  req.mutable_fault()->set_corrupt_bytes(a.corrupt_bytes);
  req.mutable_fault()->set_invalidate_remote_key(a.invalidate_rkey);
  if (a.transport != "auto") {
    auto t = parseTransportKind(a.transport);
    if (!t) return usage("--transport: '" + a.transport + "' is not one of auto, emulated, verbs");
    req.set_transport(convert::toProto(*t));
  }
  auto mem = parseMemoryKind(a.memory);
  if (!mem) return usage("--memory: '" + a.memory + "' is not one of host, cuda");
  auto reg = parseRegPath(a.reg);
  if (!reg)
    return usage("--reg: '" + a.reg + "' is not one of auto, host, dmabuf, peermem, staged");
  for (auto* side : {req.mutable_initiator(), req.mutable_target()}) {
    side->set_memory(convert::toProto(*mem));
    side->set_gpu(*mem == MemoryKind::kCuda ? std::max(0, a.gpu) : a.gpu);
    side->set_reg_path(*mem == MemoryKind::kHost && *reg == RegPath::kAuto
                           ? pb::REG_PATH_HOST
                           : convert::toProto(*reg));
  }

  auto stub = connectControl(o);
  if (!a.sweep.empty()) {
    auto sizes = sweepSizes(a.sweep);
    if (!sizes.ok()) return usage(sizes.status().toString());
    if (req.run_id().empty()) req.set_run_id("sweep-" + nowRfc3339());
    std::vector<TestResult> rows;
    int worst = kExitOk;
    for (uint64_t sz : *sizes) {
      req.set_message_size(sz);
      grpc::ClientContext ctx;
      setDeadline(&ctx, (a.timeout > 0 ? a.timeout : 120) + 120);
      pb::RunTestResponse resp;
      auto st = stub->RunTest(&ctx, req, &resp);
      if (!st.ok()) return reportRpcError(o, st);
      rows.push_back(convert::fromProto(resp.result()));
      if (rows.back().status != TestStatus::kPassed) worst = kExitFailed;
    }
    if (o.output == "json") {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : rows) j.push_back(toJson(r));
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << sweepTable(rows);
    }
    return worst;
  }
  grpc::ClientContext ctx;
  setDeadline(&ctx, (a.timeout > 0 ? a.timeout : 120) + a.duration_s() + 120);
  pb::RunTestResponse resp;
  auto st = stub->RunTest(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, st);
  TestResult r = convert::fromProto(resp.result());
  if (o.output == "json") {
    auto j = toJson(r);
    if (!resp.store_error().empty()) j["store_error"] = resp.store_error();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << resultDetail(r);
    if (!resp.store_error().empty()) {
      std::cout << "WARNING: result not stored yet (kept in coordinator memory): "
                << resp.store_error() << "\n";
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
  req.set_worker(a.worker);
  req.set_run_id(a.run_id);
  if (!a.status.empty()) {
    auto s = parseTestStatus(a.status);
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
  if (!st.ok()) return reportRpcError(o, st);
  std::vector<TestResult> rows;
  for (const auto& r : resp.results()) rows.push_back(convert::fromProto(r));
  if (o.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(toJson(r));
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << resultsTable(rows);
  }
  return kExitOk;
}

}  // namespace

void addClientOptions(CLI::App* app, ClientOptions* opts) {
  const char* env = std::getenv("GDRMESH_COORDINATOR");
  opts->coordinator = env != nullptr && *env != '\0' ? env : "127.0.0.1:7070";
  app->add_option("--coordinator", opts->coordinator,
                  "coordinator HOST:PORT (env GDRMESH_COORDINATOR)")
      ->capture_default_str();
  app->add_option("-o,--output", opts->output, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
}

void registerClientCommands(CLI::App& app, Action* action) {
  {
    auto* cmd = app.add_subcommand("workers", "List registered workers, their NICs and GPUs");
    auto o = std::make_shared<ClientOptions>();
    addClientOptions(cmd, o.get());
    cmd->callback([action, o] { *action = [o] { return runWorkers(*o); }; });
  }
  {
    auto* cmd = app.add_subcommand("test", "Run one pair test: SRC initiates, DST is the target");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<TestArgs>();
    addClientOptions(cmd, o.get());
    cmd->add_option("SRC", a->src, "initiator: WORKER or WORKER/DEVICE")->required();
    cmd->add_option("DST", a->dst, "target: WORKER or WORKER/DEVICE")->required();
    cmd->add_option("--op", a->op, "write | read | send | write_imm")->capture_default_str();
    cmd->add_option("--mode", a->mode, "bw (bandwidth) | lat (latency)")->capture_default_str();
    cmd->add_option("--size", a->size, "message size: bytes or 64KiB, 1MiB, ...")
        ->capture_default_str();
    cmd->add_option("--iters", a->iters, "measured iterations")->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "warm-up iterations (not measured)")
        ->capture_default_str();
    cmd->add_option("--qps", a->qps, "queue pairs")->capture_default_str();
    cmd->add_option("--tx-depth", a->tx_depth, "outstanding operations per QP")
        ->capture_default_str();
    cmd->add_option("--transport", a->transport, "auto | verbs | emulated")->capture_default_str();
    cmd->add_option("--memory", a->memory, "host | cuda (both sides)")->capture_default_str();
    cmd->add_option("--gpu", a->gpu, "GPU index for --memory cuda (default 0)");
    cmd->add_option("--reg", a->reg, "auto | host | dmabuf | peermem | staged")
        ->capture_default_str();
    cmd->add_option("--gid-index", a->gid_index, "RoCE GID index (-1: automatic)");
    cmd->add_flag("--rdma-cm", a->rdma_cm, "connect with librdmacm instead of the OOB exchange");
    cmd->add_option("--timeout", a->timeout, "seconds before the run is abandoned (0: 120)");
    cmd->add_option("--run-id", a->run_id, "group this result under a run id");
    cmd->add_option("--duration", a->duration, "run for this long (30s, 2m) instead of --iters");
    cmd->add_option("--inline", a->inline_size, "max inline data in bytes (verbs)");
    cmd->add_flag("--bidir", a->bidir, "both sides send at once (bandwidth, verbs)");
    cmd->add_option("--cq-mod", a->cq_mod, "signal every Nth send (0: transport default)");
    cmd->add_option("--sweep", a->sweep,
                    "message-size sweep: powers of two over MIN..MAX (default 2..8MiB)")
        ->expected(0, 1)
        ->default_str("default");
    cmd->add_option("--inject-corrupt-bytes", a->corrupt_bytes,
                    "TEST ONLY: flip N landed bytes (worker needs --allow-fault-injection)")
        ->group("");
    cmd->add_flag("--inject-invalidate-rkey", a->invalidate_rkey,
                  "TEST ONLY: the target revokes remote access after connect")
        ->group("");
    cmd->callback([action, o, a] { *action = [o, a] { return runTest(*o, *a); }; });
  }
  {
    auto* cmd = app.add_subcommand("results", "Show the latest results");
    auto o = std::make_shared<ClientOptions>();
    auto a = std::make_shared<ResultsArgs>();
    addClientOptions(cmd, o.get());
    cmd->add_option("--limit", a->limit, "rows, newest first")->capture_default_str();
    cmd->add_option("--worker", a->worker, "only tests with this worker on either side");
    cmd->add_option("--status", a->status, "PASSED | FAILED | SKIPPED | ERROR");
    cmd->add_option("--run-id", a->run_id, "only this run");
    cmd->callback([action, o, a] { *action = [o, a] { return runResults(*o, *a); }; });
  }
}

}  // namespace gdrmesh::cli
