// The `gdrmesh` command: one program, one subcommand per job. Each subcommand lives in its own
// file and registers itself on the CLI11 app.
//
// Exit codes (stable, documented in README):
//   0 success / test PASSED        1 test FAILED or ERROR        2 bad input (names the field)
//   3 test SKIPPED                 4 coordinator unreachable      5 internal error
//   130 interrupted (Ctrl-C while following a sweep; the sweep goes on)
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "cli/tls_args.h"
#include "common/result.h"

namespace gdrmesh::cli {

enum ExitCode {
  kExitOk = 0,
  kExitFailed = 1,
  kExitUsage = 2,
  kExitSkipped = 3,
  kExitUnreachable = 4,
  kExitInternal = 5,
  kExitInterrupted = 130
};

// A command's bad input: prints "gdrmesh CMD: message" and its fix to stderr; kExitUsage.
int usageFailure(const char* cmd, const Status& st);

// A subcommand's body, run after parsing; returns the exit code.
using Action = std::function<int()>;

// Options every client command shares.
struct ClientOptions {
  std::string coordinator;  // --coordinator, or $GDRMESH_COORDINATOR, or 127.0.0.1:7070
  std::string output = "table";
  TlsArgs tls;  // --tls-dir/--cert/--key/--ca or --insecure (env GDRMESH_TLS_DIR/_INSECURE)
  // Set by prepareClientOptions(): an admin or reader certificate; nullopt: --insecure.
  std::optional<TlsMaterial> credentials;
};
// How a command reaches the coordinator as a client: --coordinator (env GDRMESH_COORDINATOR)
// and the TLS options (--tls-dir/--cert/--key/--ca or --insecure, env GDRMESH_TLS_DIR /
// GDRMESH_INSECURE), checked by prepareClientOptions(). The one place every client command
// gets them. `needed`: whether the parsed command talks to the coordinator (default: always).
void addConnectionOptions(CLI::App* app, ClientOptions* opts, std::function<bool()> needed = {});
// addConnectionOptions and -o/--output: table|json, and also csv where `csv` (the query
// commands: one row per record, RFC 4180).
void addClientOptions(CLI::App* app, ClientOptions* opts, bool csv = false,
                      std::function<bool()> needed = {});
// After parsing, before the action runs: checks the TLS options of the client command that was
// parsed and loads its credentials. Prints the error and returns false when they are wrong.
bool prepareClientOptions();

void registerCoordinator(CLI::App& app, Action* action);
void registerWorker(CLI::App& app, Action* action);
void registerClientCommands(CLI::App& app, Action* action);
void registerSweepCommands(CLI::App& app, Action* action);    // sweep, sweeps, schedules
void registerHistoryCommands(CLI::App& app, Action* action);  // history, compare, result, actions
void registerAcceptCommand(CLI::App& app, Action* action);
void registerLocalCommands(CLI::App& app, Action* action);
void registerReportCommand(CLI::App& app, Action* action);   // report (cmd_report.cc)
void registerCertsCommands(CLI::App& app, Action* action);   // certs init, issue, show
void registerFabricCommands(CLI::App& app, Action* action);  // fabric discover/show/diff/path
// Hidden `reference`: prints docs/reference.md from `app` (register it last).
void registerReferenceCommand(CLI::App& app, Action* action);

// Blocks SIGINT/SIGTERM in this thread (call before starting threads) and returns a waiter
// that blocks until one arrives, then calls `on_signal`.
void blockTerminationSignals();
void waitForTerminationSignal(const std::function<void()>& on_signal);

// Calls `on_signal` on a thread of its own at the first SIGINT/SIGTERM (blocked beforehand with
// blockTerminationSignals()). The destructor wakes the thread when no signal came (it then skips
// `on_signal`) and joins it, so `on_signal` never runs on objects that are gone: declare it
// after what `on_signal` uses.
class TerminationSignalThread {
 public:
  explicit TerminationSignalThread(std::function<void()> on_signal);
  ~TerminationSignalThread();
  TerminationSignalThread(const TerminationSignalThread&) = delete;
  TerminationSignalThread& operator=(const TerminationSignalThread&) = delete;

 private:
  std::atomic<bool> closing_{false};
  std::thread thread_;
};

}  // namespace gdrmesh::cli
