// A real gdrmesh cluster on loopback for integration tests: a coordinator process and worker
// processes started from the built `gdrmesh` binary, an ephemeral port, a temporary SQLite
// database, and the CLI run as a child process. Nothing is mocked.
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

class LocalCluster {
 public:
  LocalCluster();
  ~LocalCluster();

  static std::string binary();  // $GDRMESH_BINARY
  const std::string& dir() const { return dir_; }
  std::string dbPath() const { return dir_ + "/results.db"; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Starts the coordinator (port 0 unless `port` is given) and waits until it listens.
  void startCoordinator(const std::vector<std::string>& extra = {}, int port = 0);
  void stopCoordinator(int sig = 15);
  // Starts a worker and waits until the coordinator lists it online.
  void startWorker(const std::string& name, const std::vector<std::string>& extra = {});
  void killWorker(const std::string& name, int sig = 9);
  pid_t workerPid(const std::string& name) const { return workers_.at(name); }

  // Runs `gdrmesh ARGS... --coordinator ADDR` to completion.
  CommandResult cli(std::vector<std::string> args, bool add_coordinator = true) const;
  // Starts the CLI in the background; collect() waits for it.
  pid_t cliAsync(std::vector<std::string> args, const std::string& tag) const;
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
  int port_ = 0;
  pid_t coordinator_ = -1;
  std::map<std::string, pid_t> workers_;
};

std::string readFile(const std::string& path);

}  // namespace gdrmesh::testing
