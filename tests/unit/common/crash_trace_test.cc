// A thread's uncaught exception leaves its type, its text and the stack on stderr before the
// process aborts (a daemon's log then says where it died).
#include "common/crash_trace.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace gdrmesh {
namespace {

TEST(CrashTraceDeathTest, AnUncaughtExceptionInAThreadIsNamedWithTheStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        installCrashTrace();
        std::thread([] { throw std::runtime_error("boom in a pool thread"); }).join();
      },
      "gdrmesh: fatal: std::terminate.*uncaught .*: boom in a pool thread(.|\n)*stack "
      "\\(resolve with addr2line(.|\n)*#0 ");
}

}  // namespace
}  // namespace gdrmesh
