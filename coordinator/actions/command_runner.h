// Runs a program with an argv (never a shell string) and a time limit, capturing its output:
// what the Slurm actuator (scontrol) and command hooks run. Injected, so tests can record the
// commands or run real ones.
//
// Thread contract: run() may be called from several threads at once.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace gdrmesh {

struct CommandOutput {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;     // stdout, at most 1 MiB kept
  std::string err;     // stderr, at most 1 MiB kept
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (looked up in PATH when it has no '/') with argv; `input` goes to its stdin.
  // A program that cannot start, or runs past `timeout_seconds` (it is killed), is an error
  // naming it; a non-zero exit is an output, not an error.
  virtual Result<CommandOutput> run(const std::vector<std::string>& argv, double timeout_seconds,
                                    const std::string& input) = 0;
  Result<CommandOutput> run(const std::vector<std::string>& argv, double timeout_seconds) {
    return run(argv, timeout_seconds, std::string());
  }
};

// fork + execvp, pipes for stdin/stdout/stderr, SIGKILL at the deadline. The deadline is on
// `clock` (the coordinator's; a ManualClock in tests): the waits for the child's output and exit
// are poll(2) calls that a ClockAlarm (common/clock_alarm.h) ends at it. `clock` must outlive
// the runner.
class ProcessRunner final : public CommandRunner {
 public:
  explicit ProcessRunner(Clock& clock) : clock_(clock) {}
  using CommandRunner::run;
  Result<CommandOutput> run(const std::vector<std::string>& argv, double timeout_seconds,
                            const std::string& input) override;

 private:
  Clock& clock_;
};

// "a b 'c d'": argv as one line for logs and dry-run records (quoted where needed).
std::string describeArgv(const std::vector<std::string>& argv);

}  // namespace gdrmesh
