// Soak test of the worker: N tiny emulated pair tests through ONE pair of real `gdrmesh worker`
// processes over the real gRPC path, driven by a tiny in-test coordinator (soak_coordinator.h)
// with the lean protocol (prepare initiator; prepare target with peer+arm; start initiator;
// finish target). Every `sample_every` tests, at a quiescent point, it samples each worker's
// threads, VmRSS, /proc/PID/maps lines and /proc/PID/fd entries, and asserts that nothing
// wears out: threads, fds and maps stay flat and RSS grows less than a bound after warm-up.
//
// Environment: GDRMESH_SOAK_TESTS (N), GDRMESH_SOAK_SAMPLE_EVERY, GDRMESH_SOAK_CONCURRENCY
// (pair tests in flight), GDRMESH_SOAK_RSS_MB (growth bound), GDRMESH_BINARY.
//
// Two binaries are built from this file: worker_soak_quick_test (label integration, 5,000
// tests) and worker_soak_test (label soak, 100,000 tests).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/worker_soak/soak_coordinator.h"

#ifndef GDRMESH_SOAK_TESTS
#define GDRMESH_SOAK_TESTS 5000
#endif

namespace gdrmesh::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
constexpr milliseconds kCallLimit{20000};

uint64_t envOr(const char* name, uint64_t def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : def;
}

std::string binary() {
  const char* b = std::getenv("GDRMESH_BINARY");
  if (b != nullptr && *b != '\0') return b;
#ifdef GDRMESH_BINARY_PATH
  return GDRMESH_BINARY_PATH;
#else
  return "";
#endif
}

std::string tempDir() {
  char tmpl[] = "/tmp/gdrmesh-soak-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d != nullptr ? d : "/tmp";
}

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A child process running `gdrmesh ARGS...`, output to files; killed (SIGTERM, then SIGKILL)
// and reaped by the destructor.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o >= 0) ::dup2(o, 1);
      if (e >= 0) ::dup2(e, 2);
      std::vector<std::string> copy = args;
      std::string bin = binary();
      std::vector<char*> argv{bin.data()};
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  // SIGTERM and wait (bounded); the exit status, or -1 when it had to be killed.
  int stop() {
    if (pid_ <= 0) return status_;
    ::kill(pid_, SIGTERM);
    const auto end = steady_clock::now() + std::chrono::seconds(20);
    int st = 0;
    for (;;) {
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        break;
      }
      if (steady_clock::now() > end) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        status_ = -1;
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));  // polling a child's exit, not syncing
    }
    pid_ = -1;
    return status_;
  }
  // Runs to completion (bounded); the exit code.
  int wait(std::chrono::seconds limit) {
    const auto end = steady_clock::now() + limit;
    int st = 0;
    while (::waitpid(pid_, &st, WNOHANG) != pid_) {
      if (steady_clock::now() > end) return stop();
      std::this_thread::sleep_for(milliseconds(10));  // polling a child's exit, not syncing
    }
    pid_ = -1;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

struct Sample {
  uint64_t tests = 0;
  long threads = 0;
  long rss_kb = 0;
  long maps = 0;
  long fds = 0;
};

long statusField(const std::string& status, const std::string& key) {
  auto p = status.find("\n" + key + ":");
  if (p == std::string::npos) return -1;
  return std::strtol(status.c_str() + p + key.size() + 2, nullptr, 10);
}

Sample sampleOf(pid_t pid, uint64_t tests) {
  const std::string proc = "/proc/" + std::to_string(pid);
  Sample s;
  s.tests = tests;
  const std::string status = "\n" + readAll(proc + "/status");
  s.threads = statusField(status, "Threads");
  s.rss_kb = statusField(status, "VmRSS");
  const std::string maps = readAll(proc + "/maps");
  s.maps = static_cast<long>(std::count(maps.begin(), maps.end(), '\n'));
  if (DIR* d = ::opendir((proc + "/fd").c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++s.fds;
    }
    ::closedir(d);
  }
  return s;
}

std::string describe(const Sample& s) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%7llu tests: threads %3ld  rss %7.1f MB  maps %4ld  fds %3ld",
                static_cast<unsigned long long>(s.tests), s.threads,
                static_cast<double>(s.rss_kb) / 1024.0, s.maps, s.fds);
  return buf;
}

// The two workers and the coordinator they registered with.
class WorkerPair {
 public:
  WorkerPair() : dir_(tempDir()) {}
  bool start(const std::vector<std::string>& extra = {}) {
    for (const char* name : {"soak-a", "soak-b"}) {
      std::vector<std::string> args{
          "worker",      "--coordinator", coordinator_.address(), "--name",    name,
          "--data-host", "127.0.0.1",     "--no-verbs",           "--no-cuda", "--insecure"};
      args.insert(args.end(), extra.begin(), extra.end());
      workers_.push_back(
          std::make_unique<Child>(args, dir_ + "/" + name + ".out", dir_ + "/" + name + ".err"));
    }
    a_ = coordinator_.waitFor("soak-a", milliseconds(30000));
    b_ = coordinator_.waitFor("soak-b", milliseconds(30000));
    return a_ && b_;
  }
  std::string log(int i) const {
    return readAll(dir_ + "/soak-" + std::string(1, "ab"[i]) + ".err");
  }
  SoakLink& a() { return *a_; }
  SoakLink& b() { return *b_; }
  pid_t pid(int i) const { return workers_[static_cast<size_t>(i)]->pid(); }
  int stop(int i) { return workers_[static_cast<size_t>(i)]->stop(); }
  SoakCoordinator& coordinator() { return coordinator_; }

 private:
  std::string dir_;
  SoakCoordinator coordinator_;
  std::vector<std::unique_ptr<Child>> workers_;
  std::shared_ptr<SoakLink> a_, b_;
};

pb::Op opOf(uint64_t n) {
  static const pb::Op kOps[] = {pb::OP_WRITE, pb::OP_READ, pb::OP_SEND, pb::OP_WRITE_IMM};
  return kOps[n % 4];
}

// One lean pair test; "" when it passed, else what went wrong.
std::string leanPairTest(SoakLink& a, SoakLink& b, uint64_t n) {
  const std::string id = "soak-" + std::to_string(n);
  const pb::Op op = opOf(n);
  const uint64_t size = 1024;
  pb::RunSpec run;
  run.set_message_size(size);
  run.set_iterations(4);
  run.set_warmup_iterations(1);
  run.set_timeout_seconds(15);
  auto spec = [&](pb::Role role) {
    pb::EndpointSpec s;
    s.set_test_id(id);
    s.set_role(role);
    s.set_op(op);
    s.set_mode(pb::MODE_BANDWIDTH);
    s.set_buffer_size(size);
    s.set_transport(pb::TRANSPORT_EMULATED);
    s.set_memory(pb::MEMORY_KIND_HOST);
    s.set_gpu(-1);
    s.set_seed(n + 1);
    return s;
  };
  auto failed = [&](const char* step, const std::optional<pb::CommandReply>& r) -> std::string {
    if (!r) return id + " " + step + ": no reply";
    if (!r->status().ok())
      return id + " " + step + ": " + r->status().code() + ": " + r->status().message();
    return "";
  };
  pb::CoordinatorCommand c;
  *c.mutable_prepare()->mutable_spec() = spec(pb::ROLE_INITIATOR);
  auto pi = a.call(c, kCallLimit);
  if (auto e = failed("prepare initiator", pi); !e.empty()) return e;

  c.Clear();
  *c.mutable_prepare()->mutable_spec() = spec(pb::ROLE_TARGET);
  *c.mutable_prepare()->mutable_peer() = pi->prepare().local();
  *c.mutable_prepare()->mutable_arm() = run;
  auto pt = b.call(c, kCallLimit);
  if (auto e = failed("prepare target", pt); !e.empty()) {
    pb::CoordinatorCommand rel;
    rel.mutable_release()->set_test_id(id);
    a.call(rel, kCallLimit);
    return e;
  }

  const bool initiator_dst = op == pb::OP_READ;
  c.Clear();
  c.mutable_start()->set_test_id(id);
  *c.mutable_start()->mutable_peer() = pt->prepare().local();
  *c.mutable_start()->mutable_run() = run;
  c.mutable_start()->set_verify(initiator_dst);
  c.mutable_start()->set_verify_length(size);
  auto st = a.call(c, kCallLimit);

  c.Clear();
  c.mutable_finish()->set_test_id(id);
  c.mutable_finish()->set_verify(!initiator_dst);
  c.mutable_finish()->set_verify_length(size);
  c.mutable_finish()->set_timeout_seconds(15);
  auto fi = b.call(c, kCallLimit);
  if (auto e = failed("start", st); !e.empty()) return e;
  if (auto e = failed("finish", fi); !e.empty()) return e;

  const pb::SideOutcome& dst = initiator_dst ? st->start() : fi->finish();
  if (!st->start().has_measurement() || st->start().measurement().bw().bytes() == 0) {
    return id + ": the initiator reported no figures";
  }
  if (!dst.has_integrity() || dst.integrity().wrong_bytes() != 0 ||
      dst.integrity().bytes_checked() != size) {
    return id + ": integrity: " + dst.integrity().ShortDebugString();
  }
  return "";
}

void runSoak(uint64_t total) {
  if (binary().empty()) GTEST_SKIP() << "GDRMESH_BINARY is not set";
  const uint64_t every = std::max<uint64_t>(1, envOr("GDRMESH_SOAK_SAMPLE_EVERY", total / 10));
  const uint64_t concurrency = std::max<uint64_t>(1, envOr("GDRMESH_SOAK_CONCURRENCY", 4));
  const long rss_bound_kb = static_cast<long>(envOr("GDRMESH_SOAK_RSS_MB", 20)) * 1024;
  const uint64_t warmup = std::min<uint64_t>(every, 500);

  WorkerPair pair;
  ASSERT_TRUE(pair.start()) << "workers did not register:\n" << pair.log(0) << pair.log(1);

  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> failures{0};
  std::mutex first_mu;
  std::string first_failure;
  // Runs tests [next, end) on `concurrency` threads and returns at a quiescent point.
  auto batch = [&](uint64_t end) {
    std::vector<std::thread> drivers;
    for (uint64_t t = 0; t < concurrency; ++t) {
      drivers.emplace_back([&] {
        for (uint64_t n = next.fetch_add(1); n < end; n = next.fetch_add(1)) {
          std::string e = leanPairTest(pair.a(), pair.b(), n);
          if (!e.empty() && failures.fetch_add(1) == 0) {
            std::lock_guard<std::mutex> lock(first_mu);
            first_failure = e;
          }
        }
      });
    }
    for (auto& d : drivers) d.join();
    next.store(end);
  };

  batch(warmup);
  std::vector<Sample> samples[2];
  for (int w = 0; w < 2; ++w) samples[w].push_back(sampleOf(pair.pid(w), 0));
  const auto t0 = steady_clock::now();
  for (uint64_t done = 0; done < total && failures.load() == 0;) {
    done = std::min(total, done + every);
    batch(warmup + done);
    for (int w = 0; w < 2; ++w) samples[w].push_back(sampleOf(pair.pid(w), done));
  }
  const double seconds = std::chrono::duration<double>(steady_clock::now() - t0).count();
  const uint64_t ran = next.load() - warmup;
  ASSERT_EQ(failures.load(), 0u) << first_failure;

  std::printf("soak: %llu lean pair tests in %.1f s: %.0f tests/s (%llu in flight)\n",
              static_cast<unsigned long long>(ran), seconds, static_cast<double>(ran) / seconds,
              static_cast<unsigned long long>(concurrency));
  for (int w = 0; w < 2; ++w) {
    std::printf("worker soak-%c (pid %d), after %llu warm-up tests:\n", "ab"[w], pair.pid(w),
                static_cast<unsigned long long>(warmup));
    for (const auto& s : samples[w]) std::printf("  %s\n", describe(s).c_str());
  }
  std::fflush(stdout);
  ::testing::Test::RecordProperty("tests_per_second", static_cast<int>(ran / seconds));

  for (int w = 0; w < 2; ++w) {
    SCOPED_TRACE(std::string("worker soak-") + "ab"[w]);
    const Sample& first = samples[w].front();
    for (const auto& s : samples[w]) {
      // Idle command-pool threads persist (bounded); gRPC may start or end a couple of its own.
      EXPECT_LE(std::abs(s.threads - first.threads), 4) << describe(first) << "\n" << describe(s);
      EXPECT_LE(std::abs(s.fds - first.fds), 4) << describe(first) << "\n" << describe(s);
      EXPECT_LE(std::abs(s.maps - first.maps), 24) << describe(first) << "\n" << describe(s);
      EXPECT_LE(s.rss_kb - first.rss_kb, rss_bound_kb) << describe(first) << "\n" << describe(s);
    }
  }
  EXPECT_EQ(pair.stop(0), 0) << pair.log(0);
  EXPECT_EQ(pair.stop(1), 0) << pair.log(1);
}

#ifdef GDRMESH_SOAK_LONG
TEST(WorkerSoak, HundredThousandLeanPairTestsWearNothingOut) {
  runSoak(envOr("GDRMESH_SOAK_TESTS", GDRMESH_SOAK_TESTS));
}
#else
TEST(WorkerSoak, ThousandsOfLeanPairTestsWearNothingOut) {
  runSoak(envOr("GDRMESH_SOAK_TESTS", GDRMESH_SOAK_TESTS));
}

TEST(WorkerRegistration, LabelsArriveWithTheRegistration) {
  if (binary().empty()) GTEST_SKIP() << "GDRMESH_BINARY is not set";
  WorkerPair pair;
  ASSERT_TRUE(pair.start({"--label", "rack=r12", "--label", "zone=eu-west.1"}))
      << pair.log(0) << pair.log(1);
  const auto& labels = pair.a().registration().labels();
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels.at("rack"), "r12");
  EXPECT_EQ(labels.at("zone"), "eu-west.1");
}

TEST(WorkerRegistration, BadLabelsAreRefusedWithTheRule) {
  if (binary().empty()) GTEST_SKIP() << "GDRMESH_BINARY is not set";
  const std::string dir = tempDir();
  struct Case {
    std::string label;
    std::string says;
  };
  for (const Case& c :
       {Case{"rack", "KEY=VALUE"}, Case{"bad key=x", "key 'bad key'"}, Case{"rack=", "value ''"},
        Case{"_rack=1", "starting with"}, Case{"rack=a=b", "value 'a=b'"},
        Case{std::string(64, 'k') + "=v", "1..63"}}) {
    SCOPED_TRACE(c.label);
    Child w({"worker", "--coordinator", "127.0.0.1:1", "--insecure", "--no-verbs", "--no-cuda",
             "--label", c.label},
            dir + "/bad.out", dir + "/bad.err");
    EXPECT_EQ(w.wait(std::chrono::seconds(30)), 2);
    const std::string err = readAll(dir + "/bad.err");
    EXPECT_NE(err.find("--label"), std::string::npos) << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
  }
  Child dup({"worker", "--coordinator", "127.0.0.1:1", "--insecure", "--no-verbs", "--no-cuda",
             "--label", "rack=1", "--label", "rack=2"},
            dir + "/dup.out", dir + "/dup.err");
  EXPECT_EQ(dup.wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(readAll(dir + "/dup.err").find("given twice"), std::string::npos);
}
#endif

}  // namespace
}  // namespace gdrmesh::testing
