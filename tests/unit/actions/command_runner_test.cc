#include "coordinator/actions/command_runner.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace gdrmesh {
namespace {

TEST(ProcessRunnerTest, CapturesOutputAndExitCode) {
  ManualClock clock;  // time stands still: no run here ends on its timeout
  ProcessRunner runner(clock);
  auto r = runner.run({"printf", "%s|%s", "a b", "c"}, 30);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "a b|c");  // one argument with a space: no shell split it
  auto f = runner.run({"false"}, 30);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->exit_code, 1);
}

TEST(ProcessRunnerTest, FeedsStdin) {
  ManualClock clock;  // time stands still: no run here ends on its timeout
  ProcessRunner runner(clock);
  auto r = runner.run({"cat"}, 30, "{\"verdict\":\"PASS\"}");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->out, "{\"verdict\":\"PASS\"}");
}

// A hook that exits without reading its stdin: writing the rest of the event into the closed
// pipe raised SIGPIPE, whose default action killed the whole coordinator.
TEST(ProcessRunnerTest, AProgramThatDoesNotReadItsInputIsNoSignal) {
  ManualClock clock;  // time stands still: no run here ends on its timeout
  ProcessRunner runner(clock);
  const std::string input(4u << 20, 'x');  // beyond any pipe buffer
  auto r = runner.run({"true"}, 30, input);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->exit_code, 0);
}

// The coordinator blocks SIGTERM and SIGINT in every thread (a signal thread takes them): a
// program it runs (scontrol, a hook) must not inherit that mask, or it could not be stopped.
TEST(ProcessRunnerTest, TheProgramStartsWithNoSignalBlocked) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  ManualClock clock;  // time stands still: no run here ends on its timeout
  ProcessRunner runner(clock);
  auto r = runner.run({"grep", "SigBlk", "/proc/self/status"}, 30);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->out, "SigBlk:\t0000000000000000\n");
}

TEST(ProcessRunnerTest, AMissingProgramIsAnError) {
  ManualClock clock;  // time stands still: no run here ends on its timeout
  ProcessRunner runner(clock);
  auto r = runner.run({"/nonexistent/gdrmesh-no-such-program"}, 30);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot run it"), std::string::npos);
}

// The deadline is on the injected clock (issue #19): a program is killed when the ManualClock
// passes its timeout, an hour here, without a real second going by.
Result<CommandOutput> runUntilTheClockPassesItsTimeout(const std::vector<std::string>& argv) {
  ManualClock clock;
  ProcessRunner runner(clock);
  auto run = std::async(std::launch::async, [&] { return runner.run(argv, 3600); });
  // The run's deadline is a timer on the clock from its start: moved once it is there.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (clock.pendingTimers() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(clock.pendingTimers(), 1u);
  clock.advanceSeconds(3600);
  // Ends at once; the bound is a safety net, not a timing.
  EXPECT_EQ(run.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the run did not end when the clock passed its deadline";
  return run.get();
}

TEST(ProcessRunnerTest, KillsAProgramWhenTheClockPassesItsTimeout) {
  auto r = runUntilTheClockPassesItsTimeout({"sleep", "600"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("still running after 3600"), std::string::npos)
      << r.status().toString();
}

// A program that closed its output and still runs: the wait for its exit is on the clock too.
TEST(ProcessRunnerTest, KillsAProgramThatClosedItsOutputWhenTheClockPassesItsTimeout) {
  auto r = runUntilTheClockPassesItsTimeout({"sh", "-c", "exec >&- 2>&-; sleep 600"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
}

TEST(DescribeArgvTest, QuotesWhatAShellWouldSplit) {
  EXPECT_EQ(describeArgv({"scontrol", "update", "Reason=gdrmesh: x (sweep s)"}),
            "scontrol update 'Reason=gdrmesh: x (sweep s)'");
  EXPECT_EQ(describeArgv({"echo", "it's"}), "echo 'it'\\''s'");
}

}  // namespace
}  // namespace gdrmesh
