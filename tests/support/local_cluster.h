// A real gdrmesh cluster on loopback for integration tests: a coordinator process and worker
// processes started from the built `gdrmesh` binary, an ephemeral port, a temporary SQLite
// database, and the CLI run as a child process. Nothing is mocked.
//
// Security: kInsecure (the default) asks for plaintext explicitly: the coordinator gets
// --insecure, every child GDRMESH_INSECURE=1. kTls makes a cluster CA with `gdrmesh certs`
// in certsDir(), serves mutual TLS, gives each worker its own certificate and runs the CLI as
// an admin (GDRMESH_TLS_DIR).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gdrmesh::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

enum class Security { kInsecure, kTls };

class LocalCluster {
 public:
  explicit LocalCluster(Security security = Security::kInsecure);
  ~LocalCluster();

  static std::string binary();  // $GDRMESH_BINARY
  const std::string& dir() const { return dir_; }
  std::string dbPath() const { return dir_ + "/results.db"; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  bool tls() const { return security_ == Security::kTls; }
  std::string certsDir() const { return dir_ + "/pki"; }
  // kTls: issues (once) a certificate with `gdrmesh certs issue` and returns its --tls-dir.
  std::string issue(const std::string& role, const std::string& name,
                    const std::vector<std::string>& extra = {});

  // Starts the coordinator (port 0 unless `port` is given) on `host` and waits until it
  // listens. Heartbeats every 100 ms unless `extra` has its own --heartbeat-ms.
  void startCoordinator(const std::vector<std::string>& extra = {}, int port = 0,
                        const std::string& host = "127.0.0.1");
  void stopCoordinator(int sig = 15);
  pid_t coordinatorPid() const { return coordinator_; }
  // Starts a worker and waits until the coordinator lists it online.
  void startWorker(const std::string& name, const std::vector<std::string>& extra = {});
  void killWorker(const std::string& name, int sig = 9);
  pid_t workerPid(const std::string& name) const { return workers_.at(name); }

  // Runs `gdrmesh ARGS... --coordinator ADDR` to completion (without --coordinator when
  // `add_coordinator` is false or no coordinator was started).
  CommandResult cli(std::vector<std::string> args, bool add_coordinator = true) const;
  // Starts the CLI in the background; collect() waits for it.
  pid_t cliAsync(std::vector<std::string> args, const std::string& tag,
                 bool add_coordinator = true) const;
  CommandResult collect(pid_t pid, const std::string& tag,
                        std::chrono::seconds limit = std::chrono::seconds(60)) const;

  nlohmann::json workersJson() const;
  // Waits (bounded) until pred(workers json) holds; false on timeout.
  bool waitFor(const std::function<bool(const nlohmann::json&)>& pred,
               std::chrono::milliseconds limit = std::chrono::milliseconds(15000)) const;

  // Rows of the results table, via a direct SQLite query (the real file).
  std::vector<std::map<std::string, std::string>> query(const std::string& sql) const;

 private:
  pid_t spawn(const std::vector<std::string>& args, const std::string& out,
              const std::string& err) const;
  std::string dir_;
  Security security_;
  std::map<std::string, std::string> issued_;  // role/name -> folder
  int port_ = 0;
  pid_t coordinator_ = -1;
  std::map<std::string, pid_t> workers_;
};

std::string readFile(const std::string& path);

// GDRMESH_TEST_TIME_SCALE (1 to 100; tests/sanitize/run_ci.sh sets 10): the sanitizer legs run
// everything several times slower, so a bound a test puts on the cluster's answers, and a
// deadline it leaves to the coordinator, stretch by this factor. 1 when unset.
long testTimeScale();

}  // namespace gdrmesh::testing
