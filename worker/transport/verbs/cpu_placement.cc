// CPU placement of the verbs transport's test threads (the contract is in cpu_placement.h).
#include "worker/transport/verbs/cpu_placement.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "common/sync/mutex.h"

namespace gdrmesh::verbs {
namespace {

// First line of a sysfs file, whitespace trimmed; nullopt when it cannot be read.
std::optional<std::string> readLine(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::string line;
  std::getline(f, line);
  if (f.bad()) return std::nullopt;
  const auto b = line.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::string();
  const auto e = line.find_last_not_of(" \t\r\n");
  return line.substr(b, e - b + 1);
}

std::optional<int> parseNonNegative(const std::string& s) {
  if (s.empty() || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The NIC's NUMA node: the number, -1 when the kernel says none, nullopt when unreadable.
std::optional<int> nicNumaNode(const std::string& sysfs_root, const std::string& nic) {
  auto text = readLine(sysfs_root + "/class/infiniband/" + nic + "/device/numa_node");
  if (!text) return std::nullopt;
  if (*text == "-1") return -1;
  return parseNonNegative(*text);
}

}  // namespace

std::optional<std::vector<int>> parseCpuList(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) return std::nullopt;
    const auto dash = part.find('-');
    auto lo = parseNonNegative(part.substr(0, dash));
    auto hi = dash == std::string::npos ? lo : parseNonNegative(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi >= CPU_SETSIZE) return std::nullopt;
    for (int c = *lo; c <= *hi; ++c) out.push_back(c);
  }
  if (!text.empty() && text.back() == ',') return std::nullopt;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::string CpuPlacement::describe() const {
  if (cpu < 0) return "not bound: " + reason;
  const std::string numa = numa_node >= 0 ? "numa " + std::to_string(numa_node) : "numa unknown";
  if (overridden) return "cpu " + std::to_string(cpu) + " (--cpu; nic " + nic + ", " + numa + ")";
  return "cpu " + std::to_string(cpu) + " (" + numa + ", nic " + nic + ")";
}

CpuPlacement chooseCpu(const std::string& sysfs_root, const std::string& nic, int override_cpu,
                       const std::vector<int>& allowed, const std::map<int, int>& load) {
  CpuPlacement p;
  p.nic = nic;
  const auto numa = nicNumaNode(sysfs_root, nic);
  p.numa_node = numa.value_or(-1);
  if (override_cpu >= 0) {
    p.cpu = override_cpu;
    p.overridden = true;
    return p;
  }
  if (!numa) {
    p.reason = nic + " has no readable numa_node (no PCI device: rxe, siw)";
    return p;
  }
  if (*numa < 0) {
    p.reason = nic + " reports no NUMA node (-1)";
    return p;
  }
  const std::string node = "numa " + std::to_string(*numa);
  const auto list =
      readLine(sysfs_root + "/devices/system/node/node" + std::to_string(*numa) + "/cpulist");
  const auto cpus = list ? parseCpuList(*list) : std::nullopt;
  if (!cpus || cpus->empty()) {
    p.reason = node + " of " + nic + ": its cpulist cannot be read";
    return p;
  }
  std::vector<int> usable;
  std::set_intersection(cpus->begin(), cpus->end(), allowed.begin(), allowed.end(),
                        std::back_inserter(usable));
  if (usable.empty()) {
    p.reason = node + " of " + nic + ": its CPUs " + formatCpuList(*cpus) +
               " are outside this worker's CPU set " + formatCpuList(allowed);
    return p;
  }
  int best = std::numeric_limits<int>::max();
  for (int c : usable) {
    const auto it = load.find(c);
    const int n = it == load.end() ? 0 : it->second;
    if (n < best) {
      best = n;
      p.cpu = c;
    }
  }
  return p;
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

Status checkCpuOverride(int cpu, const std::vector<int>& allowed) {
  if (std::binary_search(allowed.begin(), allowed.end(), cpu)) return Status();
  return invalidArgument(
      "--cpu " + std::to_string(cpu) +
          ": not a CPU this worker may run on (its set: " + formatCpuList(allowed) + ")",
      "give one of " + formatCpuList(allowed) +
          ", or leave --cpu out: each verbs test then runs on a CPU of its "
          "NIC's NUMA node");
}

CpuPlacer::Lease& CpuPlacer::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    shared_ = std::move(o.shared_);
    placement_ = std::move(o.placement_);
  }
  return *this;
}

void CpuPlacer::Lease::release() {
  if (!shared_) return;
  if (placement_.cpu >= 0) {
    MutexLock lock(shared_->mu);
    auto it = shared_->load.find(placement_.cpu);
    if (it != shared_->load.end() && --it->second <= 0) shared_->load.erase(it);
  }
  shared_.reset();
}

CpuPlacer::CpuPlacer(std::string sysfs_root, int override_cpu,
                     std::optional<std::vector<int>> allowed)
    : sysfs_root_(std::move(sysfs_root)),
      override_cpu_(override_cpu),
      allowed_(allowed ? std::move(*allowed) : allowedCpus()) {}

CpuPlacer::Lease CpuPlacer::place(const std::string& nic) {
  Lease lease;
  lease.shared_ = shared_;
  MutexLock lock(shared_->mu);
  lease.placement_ = chooseCpu(sysfs_root_, nic, override_cpu_, allowed_, shared_->load);
  if (lease.placement_.cpu >= 0) ++shared_->load[lease.placement_.cpu];
  return lease;
}

ScopedCpuBinding::~ScopedCpuBinding() {
  // Back to the mask the thread had: pool threads serve other tests afterwards.
  if (bound_) (void)pthread_setaffinity_np(pthread_self(), sizeof(previous_), &previous_);
}

Status ScopedCpuBinding::bind(int cpu) {
  if (cpu < 0 || bound_) return Status();
  if (cpu >= CPU_SETSIZE) {
    return invalidArgument("cpu " + std::to_string(cpu) + " is beyond CPU_SETSIZE",
                           "give --cpu a CPU of this host (`nproc`, lscpu)");
  }
  CPU_ZERO(&previous_);
  if (int rc = pthread_getaffinity_np(pthread_self(), sizeof(previous_), &previous_)) {
    return failedPrecondition("pthread_getaffinity_np: " + std::string(std::strerror(rc)));
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof(one), &one)) {
    return failedPrecondition(
        "cannot bind the test thread to cpu " + std::to_string(cpu) + ": " + std::strerror(rc),
        "give the worker's --cpu a CPU it may use (taskset -p, the cgroup's cpuset), or leave "
        "--cpu out to use the NIC's NUMA node");
  }
  bound_ = true;
  return Status();
}

}  // namespace gdrmesh::verbs
