#include "coordinator/actions/command_runner.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <csignal>

namespace gdrmesh {
namespace {

TEST(ProcessRunnerTest, CapturesOutputAndExitCode) {
  ProcessRunner runner;
  auto r = runner.run({"printf", "%s|%s", "a b", "c"}, 30);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "a b|c");  // one argument with a space: no shell split it
  auto f = runner.run({"false"}, 30);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->exit_code, 1);
}

TEST(ProcessRunnerTest, FeedsStdin) {
  ProcessRunner runner;
  auto r = runner.run({"cat"}, 30, "{\"verdict\":\"PASS\"}");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->out, "{\"verdict\":\"PASS\"}");
}

// A hook that exits without reading its stdin: writing the rest of the event into the closed
// pipe raised SIGPIPE, whose default action killed the whole coordinator.
TEST(ProcessRunnerTest, AProgramThatDoesNotReadItsInputIsNoSignal) {
  ProcessRunner runner;
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
  ProcessRunner runner;
  auto r = runner.run({"grep", "SigBlk", "/proc/self/status"}, 30);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->out, "SigBlk:\t0000000000000000\n");
}

TEST(ProcessRunnerTest, AMissingProgramIsAnError) {
  ProcessRunner runner;
  auto r = runner.run({"/nonexistent/gdrmesh-no-such-program"}, 30);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot run it"), std::string::npos);
}

TEST(ProcessRunnerTest, KillsAProgramPastItsTimeout) {
  ProcessRunner runner;
  auto r = runner.run({"sleep", "600"}, 0.2);
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
