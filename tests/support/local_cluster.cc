#include "tests/support/local_cluster.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gdrmesh::testing {

long testTimeScale() {
  const char* scale = std::getenv("GDRMESH_TEST_TIME_SCALE");
  if (scale == nullptr) return 1;
  const long k = std::strtol(scale, nullptr, 10);
  return k > 1 && k <= 100 ? k : 1;
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

LocalCluster::LocalCluster(Security security) : security_(security) {
  char tmpl[] = "/tmp/gdrmesh-it-XXXXXX";
  char* d = ::mkdtemp(tmpl);
  if (d == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = d;
  if (tls()) {
    auto r = cli({"certs", "init", "--dir", certsDir()}, false);
    if (r.exit_code != 0) throw std::runtime_error("certs init failed: " + r.err);
    issue("coordinator", "coordinator", {"--san", "127.0.0.1,localhost"});
    issue("admin", "it-admin");
  }
}

std::string LocalCluster::issue(const std::string& role, const std::string& name,
                                const std::vector<std::string>& extra) {
  auto it = issued_.find(role + "/" + name);
  if (it != issued_.end()) return it->second;
  const std::string out = certsDir() + "/" + role + "-" + name;
  std::vector<std::string> args{"certs", "issue",  "--dir", certsDir(), "--role",
                                role,    "--name", name,    "--out",    out};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = cli(args, false);
  if (r.exit_code != 0) throw std::runtime_error("certs issue failed: " + r.err);
  issued_[role + "/" + name] = out;
  return out;
}

LocalCluster::~LocalCluster() {
  for (auto& [name, pid] : workers_) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  stopCoordinator(SIGKILL);
  if (std::getenv("GDRMESH_KEEP_TEST_DIR") == nullptr) {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }
}

std::string LocalCluster::binary() {
  const char* b = std::getenv("GDRMESH_BINARY");
  if (b != nullptr && *b != '\0') return b;
#ifdef GDRMESH_BINARY_PATH
  return GDRMESH_BINARY_PATH;
#else
  throw std::runtime_error("GDRMESH_BINARY is not set");
#endif
}

pid_t LocalCluster::spawn(const std::vector<std::string>& args, const std::string& out,
                          const std::string& err) const {
  // The children's security: plaintext asked for explicitly, or the admin's certificate.
  const std::string tls_dir = tls() ? certsDir() + "/admin-it-admin" : "";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::unsetenv("GDRMESH_TLS_DIR");
    ::unsetenv("GDRMESH_INSECURE");
    if (tls()) {
      ::setenv("GDRMESH_TLS_DIR", tls_dir.c_str(), 1);
    } else {
      ::setenv("GDRMESH_INSECURE", "1", 1);
    }
    FILE* o = std::freopen(out.c_str(), "w", stdout);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    (void)o;
    (void)e;
    std::vector<char*> argv;
    std::string bin = binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    std::_Exit(127);
  }
  return pid;
}

void LocalCluster::startCoordinator(const std::vector<std::string>& extra, int port,
                                    const std::string& host) {
  std::string port_file = dir_ + "/port";
  ::unlink(port_file.c_str());
  std::vector<std::string> args{"coordinator", "--listen", host + ":" + std::to_string(port),
                                "--db",        dbPath(),   "--port-file",
                                port_file};
  // Fast loss detection (100 ms x 5 misses) unless the test asks for its own interval, or the
  // environment does: under a sanitizer on a loaded machine a healthy worker can go 500 ms
  // without being scheduled, and the sweep tests then saw it lost (tests/sanitize/run_ci.sh sets
  // GDRMESH_TEST_HEARTBEAT_MS=1000; a killed worker is still noticed at once, by its stream).
  if (std::find(extra.begin(), extra.end(), "--heartbeat-ms") == extra.end()) {
    const char* env = std::getenv("GDRMESH_TEST_HEARTBEAT_MS");
    args.push_back("--heartbeat-ms");
    args.push_back(env != nullptr && *env != '\0' ? env : "100");
  }
  // The coordinator closes a worker stream that sends no Register within 10 s; a sanitizer
  // build on a loaded machine took longer than that to read a 1 MB registration
  // (WorkerRemove.AJunkWorkerIsRemovedAndWorkersIsCleanAgain, TSan leg, 2026-11-27).
  if (std::find(extra.begin(), extra.end(), "--register-deadline") == extra.end()) {
    args.push_back("--register-deadline");
    args.push_back(std::to_string(10 * testTimeScale()) + "s");
  }
  if (tls()) {
    args.push_back("--tls-dir");
    args.push_back(certsDir() + "/coordinator-coordinator");
  } else {
    args.push_back("--insecure");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  coordinator_ = spawn(args, dir_ + "/coordinator.out", dir_ + "/coordinator.err");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string p = readFile(port_file);
    if (!p.empty()) {
      port_ = std::stoi(p);
      return;
    }
    int status = 0;
    if (::waitpid(coordinator_, &status, WNOHANG) == coordinator_) {
      coordinator_ = -1;
      throw std::runtime_error("coordinator exited: " + readFile(dir_ + "/coordinator.err"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("coordinator did not start listening within 20 s");
}

void LocalCluster::stopCoordinator(int sig) {
  if (coordinator_ <= 0) return;
  ::kill(coordinator_, sig);
  ::waitpid(coordinator_, nullptr, 0);
  coordinator_ = -1;
}

void LocalCluster::startWorker(const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"worker", "--coordinator",          address(), "--name",
                                name,     "--allow-fault-injection"};
  bool own_tls = false;
  for (const auto& e : extra) own_tls = own_tls || e == "--tls-dir" || e == "--insecure";
  if (tls() && !own_tls) {
    args.push_back("--tls-dir");
    args.push_back(issue("worker", name));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  workers_[name] =
      spawn(args, dir_ + "/worker-" + name + ".out", dir_ + "/worker-" + name + ".err");
  bool ok = waitFor([&](const nlohmann::json& ws) {
    for (const auto& w : ws) {
      if (w["name"] == name && w["state"] == "online") return true;
    }
    return false;
  });
  if (!ok) {
    throw std::runtime_error(
        "worker " + name + " did not come online: " + readFile(dir_ + "/worker-" + name + ".err"));
  }
}

void LocalCluster::killWorker(const std::string& name, int sig) {
  pid_t pid = workers_.at(name);
  ::kill(pid, sig);
  ::waitpid(pid, nullptr, 0);
  workers_[name] = -1;
}

CommandResult LocalCluster::cli(std::vector<std::string> args, bool add_coordinator) const {
  static int n = 0;
  std::string tag = "cli-" + std::to_string(n++);
  pid_t pid = cliAsync(std::move(args), tag, add_coordinator);
  return collect(pid, tag);
}

pid_t LocalCluster::cliAsync(std::vector<std::string> args, const std::string& tag,
                             bool add_coordinator) const {
  if (port_ > 0 && add_coordinator) {
    args.push_back("--coordinator");
    args.push_back(address());
  }
  return spawn(args, dir_ + "/" + tag + ".out", dir_ + "/" + tag + ".err");
}

CommandResult LocalCluster::collect(pid_t pid, const std::string& tag,
                                    std::chrono::seconds limit) const {
  CommandResult r;
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.exit_code = -2;  // timed out
      r.out = readFile(dir_ + "/" + tag + ".out");
      r.err = readFile(dir_ + "/" + tag + ".err") + "\n[killed: exceeded time limit]";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = readFile(dir_ + "/" + tag + ".out");
  r.err = readFile(dir_ + "/" + tag + ".err");
  return r;
}

nlohmann::json LocalCluster::workersJson() const {
  auto r = cli({"workers", "-o", "json"});
  if (r.exit_code != 0) return nlohmann::json::array();
  return nlohmann::json::parse(r.out, nullptr, false);
}

bool LocalCluster::waitFor(const std::function<bool(const nlohmann::json&)>& pred,
                           std::chrono::milliseconds limit) const {
  // Sanitizer legs run everything several times slower; a bound on the cluster's answers
  // stretches with them.
  limit *= testTimeScale();
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    auto ws = workersJson();
    if (ws.is_array() && pred(ws)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<std::map<std::string, std::string>> LocalCluster::query(const std::string& sql) const {
  std::vector<std::map<std::string, std::string>> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(dbPath().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + dbPath());
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw std::runtime_error("bad query: " + msg);
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::map<std::string, std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const auto* t = sqlite3_column_text(st, i);
      row[sqlite3_column_name(st, i)] = t ? reinterpret_cast<const char*>(t) : "";
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

}  // namespace gdrmesh::testing
