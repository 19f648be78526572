#include "worker/fabric/lldp_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "worker/inventory/discover.h"
#include "worker/inventory/sysfs.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawnp's environment

namespace gdrmesh::fabric {
namespace {

struct LldpcliRun {
  int exit_code = -1;
  std::string out, err;
};

// Closes a file descriptor on every path out.
struct LldpFd {
  int fd = -1;
  LldpFd() = default;
  LldpFd(const LldpFd&) = delete;
  LldpFd& operator=(const LldpFd&) = delete;
  ~LldpFd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Runs argv (no shell) with stdout and stderr captured, killed at the deadline.
Result<LldpcliRun> runLldpcliArgv(const std::vector<std::string>& argv, double timeout_s) {
  std::array<LldpFd, 2> out_pipe, err_pipe;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return internalError("pipe: " + std::string(strerror(errno)));
  out_pipe[0].fd = p[0];
  out_pipe[1].fd = p[1];
  if (::pipe2(p, O_CLOEXEC) != 0) return internalError("pipe: " + std::string(strerror(errno)));
  err_pipe[0].fd = p[0];
  err_pipe[1].fd = p[1];
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1].fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1].fd, 2);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (rc == ENOENT) {
      return notFound("'" + argv[0] + "' not found: lldpd is not installed", kLldpdInstallFix);
    }
    return failedPrecondition("cannot run '" + argv[0] + "': " + strerror(rc), kLldpdInstallFix);
  }
  out_pipe[1].reset();
  err_pipe[1].reset();
  LldpcliRun run;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  bool timed_out = false;
  std::array<pollfd, 2> fds{pollfd{out_pipe[0].fd, POLLIN, 0}, pollfd{err_pipe[0].fd, POLLIN, 0}};
  std::array<std::string*, 2> sinks{&run.out, &run.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[8192];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        if (sinks[i]->size() < (8u << 20)) sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status(
        Code::kDeadlineExceeded,
        argv[0] + " did not answer within " + std::to_string(static_cast<int>(timeout_s)) + " s",
        "check that lldpd is running: `systemctl status lldpd`");
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string firstLine(const std::string& s) {
  const std::string t = sysfs::trim(s);
  const auto nl = t.find('\n');
  return nl == std::string::npos ? t : t.substr(0, nl);
}

// The netdev of an RDMA port: the inventory's (from its GIDs), else the PCI function's only net/
// entry, else the one whose dev_port is port - 1.
std::string lldpNetdevOf(const Nic& nic, const NicPort& port, const std::string& root) {
  if (!port.netdev.empty()) return port.netdev;
  const std::string dir = "/sys/class/infiniband/" + nic.name + "/device/net";
  const auto names = sysfs::listDir(root, dir);
  if (names.size() == 1) return names[0];
  for (const auto& n : names) {
    auto dev_port = sysfs::readInt(root, dir + "/" + n + "/dev_port");
    if (dev_port && *dev_port == port.port - 1) return n;
  }
  return "";
}

}  // namespace

Result<std::string> readLldpNeighboursJson(const LldpReadOptions& opts) {
  if (!opts.json_file.empty()) {
    std::ifstream in(opts.json_file);
    if (!in) {
      return notFound("lldp JSON file '" + opts.json_file + "' cannot be read",
                      "give the output of `lldpcli -f json show neighbors details` saved to a "
                      "file");
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> argv{opts.lldpcli};
  if (!opts.socket.empty()) {
    argv.push_back("-u");
    argv.push_back(opts.socket);
  }
  for (const char* a : {"-f", "json", "show", "neighbors", "details"}) argv.emplace_back(a);
  GDR_ASSIGN_OR_RETURN(auto run, runLldpcliArgv(argv, opts.timeout_s));
  if (run.exit_code != 0 || run.out.empty()) {
    const std::string why = firstLine(run.err.empty() ? run.out : run.err);
    if (why.find("Permission denied") != std::string::npos) {
      return Status(
          Code::kPermissionDenied, "lldpcli cannot reach lldpd's socket: " + why,
          "run the worker as root or in group _lldpd (lldpcli is set-user-ID _lldpd and needs "
          "to reach the socket's directory)");
    }
    if (why.find("unable to connect") != std::string::npos ||
        why.find("No such file") != std::string::npos ||
        why.find("Connection refused") != std::string::npos) {
      return failedPrecondition("lldpd is not running (lldpcli: " + why + ")",
                                "start it: `systemctl enable --now lldpd`");
    }
    return failedPrecondition(
        "lldpcli exited " + std::to_string(run.exit_code) + (why.empty() ? "" : ": " + why),
        kLldpdInstallFix);
  }
  return run.out;
}

LldpHost matchLldpNeighbours(const std::string& host, const std::vector<Nic>& nics,
                             const std::string& sysfs_root,
                             const Result<std::vector<LldpNeighbour>>& neighbours) {
  LldpHost h;
  h.host = host;
  if (!neighbours.ok()) h.status = neighbours.status();
  std::map<std::string, const LldpNeighbour*> by_netdev;
  if (neighbours.ok()) {
    // lldpd lists one entry per neighbour: the first heard on an interface wins.
    for (const auto& n : *neighbours) by_netdev.emplace(n.interface, &n);
  }
  for (const auto& nic : nics) {
    for (const auto& port : nic.ports) {
      if (port.link_layer != "Ethernet") continue;
      LldpNic x;
      x.device = nic.name;
      x.port = port.port;
      x.link_layer = port.link_layer;
      x.netdev = lldpNetdevOf(nic, port, sysfs_root);
      const std::string where = nic.name + "/" + std::to_string(port.port);
      if (!neighbours.ok()) {
        x.reason = where + ": " + neighbours.status().message();
        x.fix = neighbours.status().fix();
      } else if (x.netdev.empty()) {
        x.reason = where + " has no netdev (no GID bound to a net device)";
        x.fix = "check the port's GID table: `rdma link show " + where + "`";
      } else if (auto it = by_netdev.find(x.netdev); it != by_netdev.end()) {
        x.neighbour = *it->second;
      } else {
        x.reason = "lldpd hears no neighbour on " + x.netdev + " (" + where + ", port " +
                   (port.state.empty() ? "state unknown" : port.state) + ")";
        x.fix = "enable LLDP on the switch port and in lldpd for " + x.netdev +
                " (`lldpcli show interfaces`; `lldpcli configure ports " + x.netdev +
                " lldp status rx-and-tx`)";
      }
      h.nics.push_back(std::move(x));
    }
  }
  if (h.status.ok() && h.nics.empty()) {
    h.status = failedPrecondition("no RoCE (Ethernet) RDMA port on " + host,
                                  "LLDP maps RoCE NICs; an InfiniBand fabric is read from its "
                                  "LFTs with `gdrmesh fabric discover`");
  }
  return h;
}

LldpHost readLldpHost(const LldpReadOptions& opts) {
  const std::string host = opts.host.empty() ? hostName() : opts.host;
  auto nics = discoverNics(opts.sysfs_root);
  if (!nics.ok()) {
    LldpHost h;
    h.host = host;
    h.status = nics.status();
    return h;
  }
  std::vector<Nic> chosen;
  for (auto& n : *nics) {
    if (opts.device.empty() || n.name == opts.device) chosen.push_back(std::move(n));
  }
  if (chosen.empty()) {
    LldpHost h;
    h.host = host;
    h.status = opts.device.empty()
                   ? failedPrecondition("no RDMA device on " + host,
                                        "load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re)")
                   : notFound("no RDMA device '" + opts.device + "' on " + host,
                              "`ls /sys/class/infiniband` lists them");
    return h;
  }
  Result<std::vector<LldpNeighbour>> neighbours = [&]() -> Result<std::vector<LldpNeighbour>> {
    GDR_ASSIGN_OR_RETURN(auto text, readLldpNeighboursJson(opts));
    return parseLldpNeighboursText(text, opts.json_file.empty()
                                             ? "lldpcli's JSON"
                                             : "lldp JSON file '" + opts.json_file + "'");
  }();
  return matchLldpNeighbours(host, chosen, opts.sysfs_root, neighbours);
}

}  // namespace gdrmesh::fabric
