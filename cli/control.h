// The client side of ControlService shared by the client commands: the channel, deadlines,
// how an RPC failure becomes a message and an exit code, and following a sweep.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/sweep_output.h"
#include "common/limits.h"
#include "common/status.h"
#include "gdrmesh/v1/gdrmesh.grpc.pb.h"

namespace gdrmesh::cli {

namespace pb = ::gdrmesh::v1;

std::unique_ptr<pb::ControlService::Stub> connectControl(const ClientOptions& o);
void setDeadline(grpc::ClientContext* ctx, double seconds);
// RunTest's deadline is the run's own timeout (PairTestSpec::runTimeoutSeconds) plus this, for
// what surrounds the run: preparing and connecting both sides, verifying, storing the result.
inline constexpr double kRunTestRpcSlackSeconds = 120;

// True for the texts gRPC gives when the channel itself cannot reach the server ("failed to
// connect to all addresses", "Connection refused", DNS failures, ...), as opposed to an
// UNAVAILABLE that the coordinator returned on purpose ("worker 'b' is offline").
bool isConnectionFailure(grpc::StatusCode code, const std::string& message);

struct RpcFailure {
  int exit_code = kExitInternal;
  std::string message;  // printed to stderr, may span lines ("  fix: ...")
};

// Pure: decides the message and exit code of a failed RPC.
//  - the channel cannot reach the coordinator (by the error text, or `probe` is nullopt: a
//    ListWorkers probe failed too): exit 4;
//  - a worker named by the request (`named_workers`) is not registered: exit 2 with the
//    workers known; registered but offline: exit 1 with the last heartbeat;
//  - otherwise the coordinator's message, INVALID_ARGUMENT/NOT_FOUND/FAILED_PRECONDITION: 2,
//    UNAVAILABLE/DEADLINE_EXCEEDED/ABORTED (a worker lost mid-test, a test too slow): 1,
//    UNIMPLEMENTED: 5 with "upgrade the coordinator", anything else: 5.
// `probe` holds the workers ListWorkers returned, or nullopt when the probe failed.
RpcFailure classifyRpcFailure(const std::string& coordinator, const std::string& rpc,
                              grpc::StatusCode code, const std::string& message,
                              const std::vector<std::string>& named_workers,
                              const std::optional<std::vector<pb::WorkerInfo>>& probe,
                              int64_t now_ms);

// Prints the failure of `rpc` and returns the exit code. Probes the coordinator with a short
// ListWorkers when the error could come from either the channel or a worker.
int reportRpcError(const ClientOptions& o, const std::string& rpc, const grpc::Status& st,
                   const std::vector<std::string>& named_workers = {});

// Asks ListWorkers and converts the answer; on failure returns an empty list and sets `error`
// (when not nullptr).
std::vector<WorkerStatus> listWorkersQuietly(pb::ControlService::Stub& stub, std::string* error);

// Reads a whole file; the error names `flag` and the path.
Result<std::string> readTextFile(const std::string& path, const std::string& flag);

// Follows a sweep until it reaches a final state (finished, cancelled, interrupted, failed),
// and with `until_stored` until its report is also stored (report_pending false), calling
// `on_progress` for each update. Ctrl-C (SIGINT) or SIGTERM stops following (the sweep goes
// on). Call blockTerminationSignals() before the first channel is made, so that gRPC's threads
// never take the signal.
struct FollowOutcome {
  bool interrupted = false;  // the user pressed Ctrl-C
  grpc::Status status;       // of the last stream; OK when it ended normally
  std::optional<pb::SweepProgress> last;
};
FollowOutcome followSweep(pb::ControlService::Stub& stub, const std::string& id,
                          const std::function<void(const pb::SweepProgress&)>& on_progress,
                          bool until_stored = false);

bool isFinalSweepState(const std::string& state);

// Prints progress to stderr: one line rewritten in place on a terminal, one line per ~5% or
// state change otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter();
  void update(const pb::SweepProgress& wire);
  // Ends the live line (newline) if one is showing.
  void finish();

 private:
  bool tty_;
  bool live_ = false;
  ProgressThrottle throttle_;
};

// The exit code of a followed sweep: 0 finished with verdict PASS, 1 otherwise (with the
// reason printed), 130 interrupted by the user, 4/5 when the stream failed.
int sweepExitCode(const ClientOptions& o, const FollowOutcome& f, const std::string& id);

// StartSweep: prints "sweep ID started" to stderr and sets `id`. Returns an exit code (0 when
// started). `named_workers` as for reportRpcError.
int startSweep(const ClientOptions& o, pb::ControlService::Stub& stub, const pb::SweepSpec& spec,
               const std::vector<std::string>& named_workers, pb::SweepProgress* started);

// Reads sweep `id`'s report into `report` page by page (kReportVerdictsPerPage verdicts and
// kReportResultsPerPage results a message): the verdicts `verdicts` keeps and, with
// `with_results`, every result, each in plan order; the counts cover every verdict.
struct ReportPaging {
  uint32_t verdicts = kReportVerdictsPerPage;
  uint32_t results = kReportResultsPerPage;
};
grpc::Status fetchSweepReport(pb::ControlService::Stub& stub, const std::string& id,
                              bool with_results, pb::VerdictFilter verdicts,
                              pb::SweepReport* report, ReportPaging paging = {});
// The same for JudgeSweep (`req`'s page limit is set here); the coordinator judges again for
// every page.
grpc::Status fetchJudgedSweep(pb::ControlService::Stub& stub, pb::JudgeSweepRequest req,
                              pb::SweepReport* report, ReportPaging paging = {});

// Follows sweep `id` with progress on stderr, then fetches its report (fetchSweepReport) into
// `report` unless following was interrupted or failed. Returns sweepExitCode(); `fetched` says
// whether `report` was filled.
int followAndFetch(const ClientOptions& o, pb::ControlService::Stub& stub, const std::string& id,
                   bool with_results, pb::VerdictFilter verdicts, pb::SweepReport* report,
                   bool* fetched);

// After a followed sweep's report was printed: while `last` (its progress as fetched) says its
// report is still being stored, follows it until it is, so that what the command leaves
// behind (history, aggregates) is there when it exits. Returns `rc`, or the exit code of a
// failed or interrupted wait (saying so on stderr).
int awaitReportStored(const ClientOptions& o, pb::ControlService::Stub& stub,
                      const pb::SweepProgress& last, int rc);

// gRPC's own log lines (gpr_log: its errors, and more with GRPC_VERBOSITY) go to the daemon's
// log (common/log.h) as `component`'s, with "source": "grpc" and the file:line: with
// --log-format json every line on stderr stays one JSON object.
void routeGrpcLog(const char* component);

}  // namespace gdrmesh::cli
