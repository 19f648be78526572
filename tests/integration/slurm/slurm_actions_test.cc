// Issue #21, draining suspects on a real single-host Slurm (Debian's slurm-wlm and munge): the
// test starts munged, slurmctld and four slurmd (`slurmd -N sim-000N`, one port each) in a
// temporary folder, a real coordinator whose cluster config turns the Slurm actions on, and
// four simulated workers named after the nodes, one of them (sim-0001) failing every test.
//   - the failing sweep drains sim-0001 with gdrmesh's reason and its sweep id;
//   - sim-0003, drained by "someone else" before, keeps its state and reason throughout;
//   - after a passing sweep sim-0001 is resumed, and every decision is in node_actions;
//   - a command hook is told of each sweep's end and of the suspect appearing and clearing;
//   - `check --local --slurm-drain` drains and resumes its own node, and only its own drain.
// Every wait is a bounded poll of an observable state (scontrol's answer, the CLI's).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/local_cluster.h"

extern char** environ;

namespace gdrmesh::testing {
namespace {

bool slurmExecutable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

// A port that was free a moment ago (bound to 0 and released): slurmctld and slurmd take fixed
// ports from their config, so the test picks them this way.
int freeSlurmPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

struct Run {
  int code = -1;
  std::string out;
};

// Runs argv to completion with its output in a file (the test's own helper, not the code under
// test's runner).
Run runProgram(const std::vector<std::string>& argv, const std::string& out_file) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  Run r;
  if (::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  r.out = readFile(out_file);
  return r;
}

// munged, slurmctld and one slurmd per node, all children of this test, in `dir`.
class SingleHostSlurm {
 public:
  SingleHostSlurm(std::string dir, std::vector<std::string> nodes)
      : dir_(std::move(dir)), nodes_(std::move(nodes)) {}
  ~SingleHostSlurm() {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) {
      ::kill(*it, SIGTERM);
      ::waitpid(*it, nullptr, 0);
    }
  }

  std::string conf() const { return dir_ + "/slurm.conf"; }

  // Starts everything and waits (bounded) until every node answers; "" or what went wrong.
  std::string start() {
    ::chmod(dir_.c_str(), 0711);  // munged's socket must be reachable through the folder
    Run key = runProgram({"mungekey", "-c", "-k", dir_ + "/munge.key", "-b", "1024"},
                         dir_ + "/mungekey.out");
    if (key.code != 0) return "mungekey: " + key.out;
    ::chmod((dir_ + "/munge.key").c_str(), 0400);
    spawn({"munged", "-F", "-f", "--key-file=" + dir_ + "/munge.key",
           "--socket=" + dir_ + "/munge.sock", "--pid-file=" + dir_ + "/munged.pid",
           "--seed-file=" + dir_ + "/munged.seed", "--log-file=" + dir_ + "/munged.log"},
          "munged");
    for (int i = 0; i < 100 && ::access((dir_ + "/munge.sock").c_str(), F_OK) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // bounded poll: 5 s
    }
    std::ofstream c(conf());
    c << "ClusterName=gdrmesh\nSlurmctldHost=localhost\nSlurmctldPort=" << freeSlurmPort()
      << "\nAuthType=auth/munge\nAuthInfo=socket=" << dir_
      << "/munge.sock\nCryptoType=crypto/munge\nSlurmUser=root\nSlurmdUser=root\n"
      << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool-%n\n"
      << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_
      << "/slurmd-%n.pid\nSlurmctldLogFile=" << dir_ << "/slurmctld.log\nSlurmdLogFile=" << dir_
      << "/slurmd-%n.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
      << "MpiDefault=none\nSwitchType=switch/none\nJobCompType=jobcomp/none\n"
      << "AccountingStorageType=accounting_storage/none\nReturnToService=2\n";
    for (const auto& n : nodes_) {
      c << "NodeName=" << n << " NodeHostname=localhost Port=" << freeSlurmPort()
        << " CPUs=1 RealMemory=100 State=UNKNOWN\n";
    }
    c << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    c.close();
    ::mkdir((dir_ + "/state").c_str(), 0700);
    ::setenv("SLURM_CONF", conf().c_str(), 1);  // scontrol here and in the coordinator
    spawn({"slurmctld", "-D", "-i", "-f", conf()}, "slurmctld");
    for (const auto& n : nodes_) spawn({"slurmd", "-D", "-N", n, "-f", conf()}, "slurmd-" + n);
    for (int i = 0; i < 300; ++i) {  // bounded poll: 30 s
      bool all = true;
      for (const auto& n : nodes_) {
        const std::string s = state(n);
        all = all && s.find("State=IDLE") != std::string::npos &&
              s.find("NOT_RESPONDING") == std::string::npos;
      }
      if (all) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "the nodes did not come up: " + state(nodes_[0]) + "\n" +
           readFile(dir_ + "/slurmctld.log");
  }

  // `scontrol show node -o NODE`.
  std::string state(const std::string& node) const {
    return runProgram({"scontrol", "show", "node", "-o", node}, dir_ + "/scontrol.out").out;
  }
  Run scontrol(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"scontrol"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProgram(argv, dir_ + "/scontrol.out");
  }

 private:
  void spawn(const std::vector<std::string>& argv, const std::string& tag) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string out = dir_ + "/" + tag + ".out";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = -1;
    if (::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
      pids_.push_back(pid);
    }
    posix_spawn_file_actions_destroy(&fa);
  }

  std::string dir_;
  std::vector<std::string> nodes_;
  std::vector<pid_t> pids_;
};

// The value of `Key=` in an `scontrol show node -o` line, Reason running to the line's end.
std::string slurmValue(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 2;
  if (key == "Reason") {
    std::string v = line.substr(start);
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  }
  return line.substr(start, line.find(' ', start) - start);
}

TEST(SlurmActionsTest, DrainsTheSuspectLeavesOthersAndResumesItOncePassed) {
  for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/scontrol",
                        "/usr/sbin/munged", "/usr/sbin/mungekey"}) {
    if (!slurmExecutable(p)) {
      GTEST_SKIP() << p << " is missing: slurm-wlm and munge are not installed "
                   << "(apt-get install slurmctld slurmd slurm-client munge; "
                   << "deploy/install-deps.sh installs them)";
    }
  }
  if (::geteuid() != 0) {
    GTEST_SKIP() << "slurmd runs jobs as root here (SlurmdUser=root): run the test as root";
  }
  const auto t0 = std::chrono::steady_clock::now();
  LocalCluster c;
  const std::vector<std::string> nodes = {"sim-0000", "sim-0001", "sim-0002", "sim-0003"};
  // Short paths: munged's socket path must fit a sockaddr_un.
  char tmpl[] = "/tmp/gdrslurm-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string sdir = tmpl;
  // Removed however the test ends (a failed assertion returns early, a throw unwinds).
  struct RemoveSlurmDir {
    std::string dir;
    ~RemoveSlurmDir() { runProgram({"rm", "-rf", dir}, "/dev/null"); }
  } remove_dir{sdir};
  {
    SingleHostSlurm slurm(sdir, nodes);
    const std::string up = slurm.start();
    ASSERT_EQ(up, "");
    const auto slurm_up = std::chrono::steady_clock::now();

    // Someone else's drain, before gdrmesh runs.
    ASSERT_EQ(slurm
                  .scontrol({"update", "NodeName=sim-0003", "State=DRAIN",
                             "Reason=maintenance: cable swap"})
                  .code,
              0);

    const std::string cfg = c.dir() + "/cluster.yaml";
    std::ofstream(cfg) << "actions:\n  mode: on\n  actuator: slurm\n  scontrol: /usr/bin/scontrol\n"
                       << "  max_share: 0.5\n  window: 5m\n"
                       << "hooks:\n  - command: [tee, -a, " << c.dir() << "/events]\n";
    c.startCoordinator({"--config", cfg});
    c.startWorker("sim-0000",
                  {"--simulate", "4", "--sim-test-ms", "5", "--sim-fault", "fail:sim-0001"});
    ASSERT_TRUE(c.waitFor([](const nlohmann::json& ws) {
      int online = 0;
      for (const auto& w : ws) online += w["state"] == "online" ? 1 : 0;
      return online == 4;
    }));

    auto failing =
        c.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "64KiB", "--iters", "10"});
    ASSERT_EQ(failing.exit_code, 1) << failing.out << failing.err;
    const auto ids = c.query("SELECT id FROM sweeps ORDER BY created_ms DESC LIMIT 1");
    ASSERT_EQ(ids.size(), 1u);
    const std::string fail_id = ids[0].at("id");

    const std::string drained = slurm.state("sim-0001");
    EXPECT_NE(slurmValue(drained, "State").find("DRAIN"), std::string::npos) << drained;
    const std::string reason = slurmValue(drained, "Reason");
    EXPECT_EQ(reason.rfind("gdrmesh: host suspect: ", 0), 0u) << drained;
    EXPECT_NE(reason.find("(sweep " + fail_id + ")"), std::string::npos) << drained;
    for (const std::string n : {"sim-0000", "sim-0002"}) {
      EXPECT_EQ(slurmValue(slurm.state(n), "State"), "IDLE") << slurm.state(n);
    }
    const std::string other = slurm.state("sim-0003");
    EXPECT_EQ(slurmValue(other, "Reason").rfind("maintenance: cable swap", 0), 0u) << other;
    auto show = c.cli({"sweep", "show", fail_id});
    EXPECT_NE(show.out.find("action drain sim-0001: taken (slurm"), std::string::npos) << show.out;

    // The node is repaired: the workers come back without the fault, and a sweep passes it.
    c.killWorker("sim-0000", SIGTERM);
    ASSERT_TRUE(c.waitFor([](const nlohmann::json& ws) {
      for (const auto& w : ws) {
        if (w["state"] == "online") return false;
      }
      return true;
    }));
    c.startWorker("sim-0000", {"--simulate", "4", "--sim-test-ms", "5"});
    ASSERT_TRUE(c.waitFor([](const nlohmann::json& ws) {
      int online = 0;
      for (const auto& w : ws) online += w["state"] == "online" ? 1 : 0;
      return online == 4;
    }));
    auto passing =
        c.cli({"sweep", "run", "--pattern", "all-pairs", "--size", "64KiB", "--iters", "10"});
    ASSERT_EQ(passing.exit_code, 0) << passing.out << passing.err;
    const std::string resumed = slurm.state("sim-0001");
    EXPECT_EQ(slurmValue(resumed, "State").find("DRAIN"), std::string::npos) << resumed;
    const std::string still = slurm.state("sim-0003");
    EXPECT_NE(slurmValue(still, "State").find("DRAIN"), std::string::npos) << still;
    EXPECT_EQ(slurmValue(still, "Reason").rfind("maintenance: cable swap", 0), 0u) << still;

    const auto rows =
        c.query("SELECT node, action, outcome, sweep_id FROM node_actions ORDER BY id");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("node"), "sim-0001");
    EXPECT_EQ(rows[0].at("action"), "drain");
    EXPECT_EQ(rows[0].at("outcome"), "taken");
    EXPECT_EQ(rows[0].at("sweep_id"), fail_id);
    EXPECT_EQ(rows[1].at("node"), "sim-0001");
    EXPECT_EQ(rows[1].at("action"), "resume");
    EXPECT_EQ(rows[1].at("outcome"), "taken");
    // The hook (a command, on its own thread) was told of both ends and of sim-0001 appearing
    // as a suspect and clearing.
    const auto told = [&](const std::string& what) {
      for (int i = 0; i < 300; ++i) {  // bounded poll of the file: 30 s
        if (readFile(c.dir() + "/events").find(what) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return false;
    };
    EXPECT_TRUE(told("{\"event\":\"suspect-appeared\""));
    EXPECT_TRUE(told("{\"event\":\"suspect-cleared\""));
    EXPECT_TRUE(told("\"actions\":[\"action resume sim-0001: taken"))
        << readFile(c.dir() + "/events");
    // `check --local --slurm-drain` as the HealthCheckProgram of sim-0002: unhealthy drains it
    // with its own reason, healthy resumes it; it leaves sim-0003 (someone else's drain) and a
    // drain the coordinator made for a sweep (sim-0000 here) alone.
    const std::vector<std::string> check = {
        "check", "--local", "--no-cuda", "--transport",   "emulated",   "--iters",
        "5",     "--size",  "4KiB",      "--slurm-drain", "--scontrol", "/usr/bin/scontrol"};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = check;
      args.insert(args.end(), extra.begin(), extra.end());
      return c.cli(args, false);
    };
    auto sick = with({"--slurm-node", "sim-0002", "--test-corrupt-bytes", "3"});
    EXPECT_EQ(sick.exit_code, 1) << sick.out << sick.err;
    const std::string by_check = slurm.state("sim-0002");
    EXPECT_NE(slurmValue(by_check, "State").find("DRAIN"), std::string::npos) << by_check;
    EXPECT_EQ(slurmValue(by_check, "Reason")
                  .rfind("gdrmesh: check --local: loopback.emulated "
                         "failed",
                         0),
              0u)
        << by_check;
    auto well = with({"--slurm-node", "sim-0002"});
    EXPECT_EQ(well.exit_code, 0) << well.out << well.err;
    EXPECT_EQ(slurmValue(slurm.state("sim-0002"), "State").find("DRAIN"), std::string::npos)
        << slurm.state("sim-0002");
    EXPECT_EQ(with({"--slurm-node", "sim-0003", "--test-corrupt-bytes", "3"}).exit_code, 1);
    EXPECT_EQ(slurmValue(slurm.state("sim-0003"), "Reason").rfind("maintenance: cable swap", 0),
              0u);
    ASSERT_EQ(slurm
                  .scontrol({"update", "NodeName=sim-0000", "State=DRAIN",
                             "Reason=gdrmesh: host suspect: x (sweep s-0)"})
                  .code,
              0);
    EXPECT_EQ(with({"--slurm-node", "sim-0000"}).exit_code, 0);
    EXPECT_NE(slurmValue(slurm.state("sim-0000"), "State").find("DRAIN"), std::string::npos)
        << "a healthy check must not resume the coordinator's drain";

    const auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
    std::printf("slurm up in %.1f s; whole test %.1f s\n", secs(slurm_up - t0),
                secs(std::chrono::steady_clock::now() - t0));
  }
}

}  // namespace
}  // namespace gdrmesh::testing
