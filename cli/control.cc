#include "cli/control.h"

#include <grpc/support/log.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/limits.h"
#include "common/log.h"
#include "common/sync/mutex.h"
#include "common/units.h"
#include "convert.h"
#include "coordinator/service/sweep_convert.h"
#include "security/grpc_tls.h"

namespace gdrmesh::cli {

std::unique_ptr<pb::ControlService::Stub> connectControl(const ClientOptions& o) {
  // Query answers (`results --limit 0`, `history --limit 0`, a compare of two large sweeps) can
  // exceed gRPC's default 4 MiB: the CLI takes up to the coordinator's send limit.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxControlMessageBytes);
  return pb::ControlService::NewStub(
      grpc::CreateCustomChannel(o.coordinator, channelCredentials(o.credentials), args));
}

void setDeadline(grpc::ClientContext* ctx, double seconds) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

bool isConnectionFailure(grpc::StatusCode code, const std::string& message) {
  if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED) {
    return false;
  }
  // Texts of grpc 1.51's client channel when no connection could be made.
  static const char* const kTexts[] = {"failed to connect to all addresses",
                                       "connections to all backends failing",
                                       "Connection refused",
                                       "DNS resolution failed",
                                       "Name resolution failure",
                                       "Socket closed",
                                       "Connection reset by peer",
                                       "No route to host",
                                       "empty address list",
                                       "Waiting for LB pick"};
  for (const char* t : kTexts) {
    if (message.find(t) != std::string::npos) return true;
  }
  return false;
}

namespace {

std::string unreachable(const std::string& coordinator, const std::string& message) {
  return "gdrmesh: coordinator " + coordinator + " unreachable: " + message +
         "\n  fix: start it with `gdrmesh coordinator --db FILE`, or pass --coordinator "
         "HOST:PORT (or set GDRMESH_COORDINATOR)";
}

std::string knownWorkers(const std::vector<pb::WorkerInfo>& workers) {
  std::string s;
  for (const auto& w : workers) {
    s += (s.empty() ? "" : ", ") + w.name() + (w.state() == "online" ? "" : " (" + w.state() + ")");
  }
  return s.empty() ? "none" : s;
}

}  // namespace

RpcFailure classifyRpcFailure(const std::string& coordinator, const std::string& rpc,
                              grpc::StatusCode code, const std::string& message,
                              const std::vector<std::string>& named_workers,
                              const std::optional<std::vector<pb::WorkerInfo>>& probe,
                              int64_t now_ms) {
  if (isConnectionFailure(code, message))
    return {kExitUnreachable, unreachable(coordinator, message)};
  bool may_be_channel =
      code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED;
  if (may_be_channel && !probe) return {kExitUnreachable, unreachable(coordinator, message)};
  if (probe) {
    for (const auto& name : named_workers) {
      auto it = std::find_if(probe->begin(), probe->end(),
                             [&](const pb::WorkerInfo& w) { return w.name() == name; });
      if (it == probe->end()) {
        // The coordinator's own message names the field (initiator/target); keep it first.
        const std::string field = message.find("unknown worker") != std::string::npos
                                      ? message.substr(0, message.find(" (known")) + ": "
                                      : std::string();
        return {kExitUsage, "gdrmesh: " + field + "worker '" + name +
                                "' is not registered with coordinator " + coordinator +
                                " (known: " + knownWorkers(*probe) +
                                ")\n  fix: pick one from `gdrmesh workers`, or start `gdrmesh "
                                "worker --name " +
                                name + " --coordinator " + coordinator + "` on that host"};
      }
      if (it->state() != "online") {
        std::string hb = "never heard from";
        if (it->last_heartbeat_ms() > 0) {
          double ago = static_cast<double>(now_ms - it->last_heartbeat_ms()) / 1e3;
          hb = "last heartbeat " + formatElapsed(std::max(0.0, ago)) + " ago";
        }
        std::string host = it->inventory().hostname().empty() ? name : it->inventory().hostname();
        return {kExitFailed, "gdrmesh: worker " + name + " is " + it->state() + " (" + hb +
                                 ")\n  fix: check the `gdrmesh worker` process on " + host +
                                 " (systemctl status gdrmesh-worker) and its connection to " +
                                 coordinator};
      }
    }
  }
  std::string text = "gdrmesh: " + message;
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
      return {kExitUsage, text};
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return {kExitFailed, text};
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      // The coordinator's message names the RPC, this client's role and the credential needed.
      return {kExitUsage,
              "gdrmesh: coordinator " + coordinator + " refused " + rpc + ": " + message};
    case grpc::StatusCode::UNIMPLEMENTED:
      return {kExitInternal, "gdrmesh: coordinator " + coordinator + " does not implement " + rpc +
                                 ": " + message +
                                 "\n  fix: upgrade the coordinator to this CLI's version"};
    default:
      return {kExitInternal, text};
  }
}

int reportRpcError(const ClientOptions& o, const std::string& rpc, const grpc::Status& st,
                   const std::vector<std::string>& named_workers) {
  std::optional<std::vector<pb::WorkerInfo>> probe;
  auto code = st.error_code();
  bool ask =
      !isConnectionFailure(code, st.error_message()) &&
      (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
       (!named_workers.empty() &&
        (code == grpc::StatusCode::NOT_FOUND || code == grpc::StatusCode::FAILED_PRECONDITION)));
  if (ask) {
    auto stub = connectControl(o);
    grpc::ClientContext ctx;
    setDeadline(&ctx, 3);
    pb::ListWorkersResponse resp;
    if (stub->ListWorkers(&ctx, pb::ListWorkersRequest(), &resp).ok()) {
      probe.emplace(resp.workers().begin(), resp.workers().end());
    }
  }
  auto f = classifyRpcFailure(o.coordinator, rpc, code, st.error_message(), named_workers, probe,
                              nowUnixMs());
  if (f.exit_code == kExitUnreachable) {
    const std::string hint = tlsFailureHint(st.error_message(), o.credentials.has_value());
    if (!hint.empty()) f.message += "\n  tls: " + hint;
  }
  std::fprintf(stderr, "%s\n", f.message.c_str());
  return f.exit_code;
}

std::vector<WorkerStatus> listWorkersQuietly(pb::ControlService::Stub& stub, std::string* error) {
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::ListWorkersResponse resp;
  auto st = stub.ListWorkers(&ctx, pb::ListWorkersRequest(), &resp);
  if (!st.ok()) {
    if (error != nullptr) *error = st.error_message();
    return {};
  }
  std::vector<WorkerStatus> out;
  out.reserve(static_cast<size_t>(resp.workers_size()));
  for (const auto& w : resp.workers()) out.push_back(convert::fromProto(w));
  return out;
}

Result<std::string> readTextFile(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return invalidArgument(flag + ": cannot read '" + path + "'",
                           "check the path and its permissions");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalidArgument(flag + ": error reading '" + path + "'");
  return ss.str();
}

bool isFinalSweepState(const std::string& state) {
  return state == "finished" || state == "cancelled" || state == "interrupted" || state == "failed";
}

namespace {

// Waits for SIGINT/SIGTERM (blocked by blockTerminationSignals) on a thread of its own and
// calls `on_signal` once; stops when destroyed.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void()> on_signal)
      : on_signal_(std::move(on_signal)), thread_([this] { loop(); }) {}
  ~SignalWatcher() {
    stop_ = true;
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;
  bool fired() const { return fired_; }

 private:
  void loop() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    timespec tick{0, 100L * 1000 * 1000};
    while (!stop_) {
      int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM) {
        fired_ = true;
        on_signal_();
        return;
      }
    }
  }

  std::function<void()> on_signal_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> fired_{false};
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

FollowOutcome followSweep(pb::ControlService::Stub& stub, const std::string& id,
                          const std::function<void(const pb::SweepProgress&)>& on_progress,
                          bool until_stored) {
  FollowOutcome out;
  // A stream that ends cleanly before a final state (a coordinator that closes idle streams)
  // is reopened; one that delivers nothing twice in a row is not.
  int empty_streams = 0;
  while (true) {
    grpc::ClientContext ctx;
    Mutex mu;
    bool done = false;
    SignalWatcher watcher([&] {
      MutexLock lock(mu);
      if (!done) ctx.TryCancel();
    });
    pb::SweepIdRequest req;
    req.set_id(id);
    auto reader = stub.FollowSweep(&ctx, req);
    pb::SweepProgress p;
    bool any = false;
    bool reached = false;
    while (reader->Read(&p)) {
      any = true;
      out.last = p;
      on_progress(p);
      // The end is seen (its report readable) before the report is stored; the coordinator's
      // stream goes on until then.
      if (isFinalSweepState(p.state()) && (!until_stored || !p.report_pending())) {
        reached = true;
        ctx.TryCancel();
        break;
      }
    }
    out.status = reader->Finish();
    if (reached) out.status = grpc::Status::OK;
    {
      MutexLock lock(mu);
      done = true;
    }
    if (watcher.fired()) {
      out.interrupted = true;
      return out;
    }
    if (!out.status.ok() || reached) return out;
    if (out.last && isFinalSweepState(out.last->state()) &&
        (!until_stored || !out.last->report_pending())) {
      return out;
    }
    empty_streams = any ? 0 : empty_streams + 1;
    if (empty_streams >= 2) return out;
  }
}

ProgressPrinter::ProgressPrinter() : tty_(isatty(STDERR_FILENO) == 1) {}

void ProgressPrinter::update(const pb::SweepProgress& wire) {
  const SweepProgress p = convert::fromProto(wire);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", progressLine(p).c_str());
    live_ = true;
  } else if (throttle_.shouldPrint(p)) {
    std::fprintf(stderr, "%s\n", progressLine(p).c_str());
  }
  std::fflush(stderr);
}

void ProgressPrinter::finish() {
  if (live_) std::fprintf(stderr, "\n");
  live_ = false;
}

int sweepExitCode(const ClientOptions& o, const FollowOutcome& f, const std::string& id) {
  if (f.interrupted) {
    std::fprintf(stderr,
                 "gdrmesh: stopped following; sweep %s continues on the coordinator; "
                 "`gdrmesh sweep cancel %s` stops it\n",
                 id.c_str(), id.c_str());
    return kExitInterrupted;
  }
  if (!f.status.ok()) {
    int rc = reportRpcError(o, "FollowSweep", f.status);
    std::fprintf(stderr, "  sweep %s: `gdrmesh sweep show %s` tells its state\n", id.c_str(),
                 id.c_str());
    return rc;
  }
  if (!f.last || !isFinalSweepState(f.last->state())) {
    std::fprintf(stderr,
                 "gdrmesh: the coordinator stopped sending progress of sweep %s before it "
                 "ended\n  fix: `gdrmesh sweep follow %s`\n",
                 id.c_str(), id.c_str());
    return kExitFailed;
  }
  const auto& p = *f.last;
  if (p.state() == "finished" && p.verdict() == "PASS") return kExitOk;
  if (p.state() == "finished") {
    std::fprintf(stderr, "gdrmesh: sweep %s: verdict %s\n", id.c_str(),
                 p.verdict().empty() ? "none" : p.verdict().c_str());
  } else {
    std::fprintf(stderr, "gdrmesh: sweep %s %s: %s\n", id.c_str(), p.state().c_str(),
                 p.reason().empty() ? "no reason given" : p.reason().c_str());
  }
  return kExitFailed;
}

int startSweep(const ClientOptions& o, pb::ControlService::Stub& stub, const pb::SweepSpec& spec,
               const std::vector<std::string>& named_workers, pb::SweepProgress* started) {
  grpc::ClientContext ctx;
  setDeadline(&ctx, 30);
  pb::StartSweepRequest req;
  *req.mutable_spec() = spec;
  pb::StartSweepResponse resp;
  auto st = stub.StartSweep(&ctx, req, &resp);
  if (!st.ok()) return reportRpcError(o, "StartSweep", st, named_workers);
  *started = resp.progress();
  std::fprintf(stderr, "sweep %s %s: %u tests\n", started->id().c_str(), started->state().c_str(),
               started->tests_total());
  return kExitOk;
}

namespace {

// Appends a later page to what the first page started; true when another page of verdicts
// follows (a coordinator older than paging sends them all and leaves verdicts_matching 0).
bool appendPage(pb::SweepReport&& page, uint64_t offset, bool first, pb::SweepReport* report) {
  const uint64_t end = offset + static_cast<uint64_t>(page.verdicts_size());
  const bool more = page.verdicts_size() > 0 && end < page.verdicts_matching();
  if (first) {
    *report = std::move(page);
  } else {
    for (auto& v : *page.mutable_verdicts()) *report->add_verdicts() = std::move(v);
    for (auto& r : *page.mutable_results()) *report->add_results() = std::move(r);
  }
  return more;
}

}  // namespace

grpc::Status fetchSweepReport(pb::ControlService::Stub& stub, const std::string& id,
                              bool with_results, pb::VerdictFilter verdicts,
                              pb::SweepReport* report, ReportPaging paging) {
  pb::SweepIdRequest req;
  req.set_id(id);
  req.set_with_results(with_results);
  req.set_results_limit(paging.results);
  req.mutable_page()->set_verdicts(verdicts);
  req.mutable_page()->set_verdict_limit(paging.verdicts);
  for (bool first = true;; first = false) {
    grpc::ClientContext ctx;
    setDeadline(&ctx, 60);
    pb::SweepReport page;
    auto st = stub.GetSweep(&ctx, req, &page);
    if (!st.ok()) return st;
    const uint64_t offset = req.page().verdict_offset();
    const uint64_t got = static_cast<uint64_t>(page.verdicts_size());
    std::string results_next = req.with_results() ? page.results_next() : "";
    const bool more_verdicts = appendPage(std::move(page), offset, first, report);
    if (!more_verdicts && results_next.empty()) break;
    req.mutable_page()->set_verdict_offset(offset + got);
    if (!more_verdicts) req.mutable_page()->set_verdicts(pb::VERDICTS_NONE);
    req.set_with_results(!results_next.empty());
    req.set_results_after(std::move(results_next));
  }
  report->clear_results_next();
  return grpc::Status::OK;
}

grpc::Status fetchJudgedSweep(pb::ControlService::Stub& stub, pb::JudgeSweepRequest req,
                              pb::SweepReport* report, ReportPaging paging) {
  req.mutable_page()->set_verdict_limit(paging.verdicts);
  for (bool first = true;; first = false) {
    grpc::ClientContext ctx;
    setDeadline(&ctx, 120);
    pb::SweepReport page;
    auto st = stub.JudgeSweep(&ctx, req, &page);
    if (!st.ok()) return st;
    const uint64_t offset = req.page().verdict_offset();
    const uint64_t got = static_cast<uint64_t>(page.verdicts_size());
    if (!appendPage(std::move(page), offset, first, report)) break;
    req.mutable_page()->set_verdict_offset(offset + got);
  }
  return grpc::Status::OK;
}

int awaitReportStored(const ClientOptions& o, pb::ControlService::Stub& stub,
                      const pb::SweepProgress& last, int rc) {
  if (!last.report_pending()) return rc;
  auto f = followSweep(
      stub, last.id(), [](const pb::SweepProgress&) {}, true);
  if (!f.interrupted && f.status.ok() && f.last && !f.last->report_pending()) return rc;
  const std::string why = f.interrupted ? "interrupted" : f.status.error_message();
  std::fprintf(stderr,
               "gdrmesh: the coordinator did not confirm that sweep %s's report is stored: %s\n"
               "  (the verdict above is final; a coordinator restarted before storing it judges "
               "the sweep again from its stored results: check with `gdrmesh sweep show %s`)\n",
               last.id().c_str(), why.c_str(), last.id().c_str());
  return f.interrupted ? kExitInterrupted : sweepExitCode(o, f, last.id());
}

int followAndFetch(const ClientOptions& o, pb::ControlService::Stub& stub, const std::string& id,
                   bool with_results, pb::VerdictFilter verdicts, pb::SweepReport* report,
                   bool* fetched) {
  *fetched = false;
  ProgressPrinter printer;
  auto f = followSweep(stub, id, [&](const pb::SweepProgress& p) { printer.update(p); });
  printer.finish();
  if (f.interrupted || !f.status.ok()) return sweepExitCode(o, f, id);
  auto st = fetchSweepReport(stub, id, with_results, verdicts, report);
  if (!st.ok()) return reportRpcError(o, "GetSweep", st);
  *fetched = true;
  // The report's progress is the final word (the stream may have ended early).
  f.last = report->progress();
  return sweepExitCode(o, f, id);
}

namespace {

const char* g_grpc_log_component = "coordinator";  // set once, before gRPC starts

void grpcLogToOurs(gpr_log_func_args* args) {
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR  ? LogLevel::kError
                         : args->severity == GPR_LOG_SEVERITY_INFO ? LogLevel::kInfo
                                                                   : LogLevel::kDebug;
  ComponentLog(g_grpc_log_component)
      .at(level, std::string("grpc: ") + (args->message != nullptr ? args->message : ""),
          {{"source", "grpc"},
           {"where", std::string(args->file != nullptr ? args->file : "?") + ":" +
                         std::to_string(args->line)}});
}

}  // namespace

void routeGrpcLog(const char* component) {
  g_grpc_log_component = component;
  gpr_set_log_function(grpcLogToOurs);
}

}  // namespace gdrmesh::cli
