// One database, one coordinator (issue #22), and a file-size limit on the coordinator (issue
// #23), with real processes: a second coordinator on the same --db refuses to start naming the
// holder and takes over once the holder is killed; a start that cannot listen leaves no new
// database; a database over RLIMIT_FSIZE is a store error (spooled, retried), never SIGXFSZ.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "tests/support/local_cluster.h"

namespace gdrmesh::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

bool exists(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) == 0;
}

off_t sizeOf(const std::string& path) {
  struct stat sb {};
  return ::stat(path.c_str(), &sb) == 0 ? sb.st_size : 0;
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  (void)::gethostname(buf, sizeof buf - 1);
  return buf;
}

class OneDatabaseTest : public ::testing::Test {
 protected:
  // `gdrmesh coordinator` on `db`, run to its end (bounded: a coordinator that starts instead of
  // refusing is killed after `limit` and reported as exit -2).
  CommandResult coordinator(const std::string& db, const std::string& listen,
                            seconds limit = seconds(20)) {
    pid_t pid = c_.cliAsync({"coordinator", "--listen", listen, "--db", db, "--insecure"},
                            "second-coordinator", false);
    return c_.collect(pid, "second-coordinator", limit);
  }
  int count(const std::string& sql) { return static_cast<int>(c_.query(sql).size()); }
  LocalCluster c_;
};

// Issue #22: a second coordinator (another port, the same --db) took over the first one's work
// as if after a restart. It must refuse before it touches anything, naming the holder; once the
// holder is killed (its lock released with its process), a new coordinator takes over.
TEST_F(OneDatabaseTest, ASecondCoordinatorOnTheSameDatabaseRefusesNamingTheHolder) {
  c_.startCoordinator();
  c_.startWorker("a");
  c_.startWorker("b");
  // A test in flight on the first coordinator: its marker is what a taking-over coordinator
  // would turn into an ERROR row "interrupted".
  pid_t cli = c_.cliAsync({"test", "a", "b", "--size", "1MiB", "--iters", "100000000", "--timeout",
                           "600", "-o", "json"},
                          "inflight");
  ASSERT_TRUE(c_.waitFor([&](const json&) {
    return !c_.query("SELECT 1 FROM test_starts WHERE initiator_worker = 'a'").empty();
  })) << "the test never started";

  auto second = coordinator(c_.dbPath(), "127.0.0.1:0");
  EXPECT_EQ(second.exit_code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("in use by another coordinator"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("pid " + std::to_string(c_.coordinatorPid())), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("on host " + hostName()), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("listening on " + c_.address()), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("own --db"), std::string::npos) << "the fix: " << second.err;
  EXPECT_EQ(count("SELECT 1 FROM results WHERE status = 'ERROR'"), 0)
      << "the refused coordinator recorded the first one's test as interrupted";
  EXPECT_EQ(count("SELECT 1 FROM test_starts"), 1) << "the marker of the test in flight is kept";

  // The holder killed: its lock goes with its process, and the next coordinator takes over.
  c_.stopCoordinator(SIGKILL);
  (void)c_.collect(cli, "inflight", seconds(30));
  c_.startCoordinator();
  const std::string log = readFile(c_.dir() + "/coordinator.err");
  EXPECT_NE(log.find("taking over"), std::string::npos) << log;
  EXPECT_EQ(count("SELECT 1 FROM results WHERE status = 'ERROR'"), 1)
      << "the coordinator that took over records the killed one's test as interrupted";
  // And it holds the database in its turn.
  auto third = coordinator(c_.dbPath(), "127.0.0.1:0");
  EXPECT_EQ(third.exit_code, 2) << third.out << third.err;
  EXPECT_NE(third.err.find("pid " + std::to_string(c_.coordinatorPid())), std::string::npos)
      << third.err;
}

// A coordinator that cannot listen (the port is taken) exits 2 and leaves no new database file
// behind, nor its WAL, lock or spool reserve; an existing database stays.
TEST_F(OneDatabaseTest, AStartThatCannotListenLeavesNoNewDatabase) {
  // A port that is taken: a listening socket of this test.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  const std::string db = c_.dir() + "/new.db";
  auto r = coordinator(db, taken);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
  for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock", ".spool", ".spool-reserve"}) {
    EXPECT_FALSE(exists(db + suffix)) << db + suffix << " was left behind";
  }

  c_.startCoordinator();
  c_.stopCoordinator();
  ASSERT_TRUE(exists(c_.dbPath()));
  r = coordinator(c_.dbPath(), taken);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(exists(c_.dbPath())) << "an existing database was removed";
  ::close(fd);
}

// Issue #23: under a file-size limit (ulimit -f) a write past it raised SIGXFSZ and killed the
// coordinator, losing an answered result. It must be a store error: the result is spooled and
// held, the coordinator serves on, and once the limit is raised the result is stored, once.
TEST_F(OneDatabaseTest, AFileSizeLimitIsAStoreErrorNotASignal) {
  c_.startCoordinator();
  c_.startWorker("a");
  c_.startWorker("b");
  auto first = c_.cli({"test", "a", "b", "--size", "4KiB", "--iters", "5", "-o", "json"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  // The limit: the database and its WAL may not grow past their size now.
  const pid_t pid = c_.coordinatorPid();
  rlimit old{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, nullptr, &old), 0);
  const off_t cap = std::max(sizeOf(c_.dbPath()), sizeOf(c_.dbPath() + "-wal"));
  rlimit capped{static_cast<rlim_t>(cap), old.rlim_max};
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, &capped, nullptr), 0);

  std::vector<std::string> all, held;
  for (int i = 0; i < 40 && held.size() < 2; ++i) {
    auto r = c_.cli({"test", "a", "b", "--size", "4KiB", "--iters", "5", "-o", "json"});
    ASSERT_NE(r.exit_code, 4) << "the coordinator died (SIGXFSZ?): " << r.err
                              << readFile(c_.dir() + "/coordinator.err");
    json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("test_id")) << r.out << r.err;
    all.push_back(j["test_id"]);
    if (j.contains("store_error")) {
      EXPECT_EQ(r.exit_code, 5) << r.out;
      const std::string e = j["store_error"];
      EXPECT_NE(e.find("file-size limit"), std::string::npos) << e;
      EXPECT_NE(e.find("durable in the spool"), std::string::npos) << e;
      held.push_back(j["test_id"]);
    } else {
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }
  ASSERT_EQ(held.size(), 2u) << "no write reached the limit";
  EXPECT_EQ(::kill(pid, 0), 0) << "the coordinator is gone";

  // The limit lifted: the held results are stored by the coordinator's retry, each once.
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, &old, nullptr), 0);
  for (const auto& id : held) {
    EXPECT_TRUE(c_.waitFor([&](const json&) {
      return !c_.query("SELECT 1 FROM results WHERE test_id = '" + id + "'").empty();
    })) << "held result "
        << id << " was not stored after the limit was lifted";
  }
  const int port = c_.port();
  c_.stopCoordinator(SIGKILL);
  c_.startCoordinator({}, port);
  for (const auto& id : all) {
    EXPECT_EQ(count("SELECT 1 FROM results WHERE test_id = '" + id + "' AND status = 'PASSED'"), 1)
        << "result " << id << " lost or duplicated";
  }
  EXPECT_EQ(count("SELECT 1 FROM results WHERE status = 'ERROR'"), 0);
}

}  // namespace
}  // namespace gdrmesh::testing
