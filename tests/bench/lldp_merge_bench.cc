// lldp_merge_bench: the coordinator's side of `fabric discover --lldp --all-workers` once every
// answer is in (FabricRecorder::recordLldpAll): N hosts' LLDP answers (NICS RoCE ports each, on
// leaf switches of 32 ports) merged into the newest LLDP snapshot, diffed against it and stored
// as one row in a SQLite store, as the coordinator does. Simulated workers cannot ask lldpd, so
// tests/bench/lldp_all_workers.sh times the fan-out without this part; this times it alone.
// Not a test; run by hand:
//   lldp_merge_bench [hosts (1024)] [nics (2)]
// Prints the wall time of the first call (no previous snapshot), of a second one (1 in 100 NICs
// moved: diffed against the first) and of the single call's merge (one host into the N-host
// snapshot), and the findings and document size.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/orchestrator/fabric_history.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {
namespace {

std::vector<LldpWorkerReply> answers(int hosts, int nics, int moved_every) {
  std::vector<LldpWorkerReply> out;
  int port = 0;
  for (int h = 0; h < hosts; ++h) {
    char name[16];
    std::snprintf(name, sizeof name, "h%04d", h);
    LldpWorkerReply r;
    r.worker = name;
    r.outcome.asked_lldp = true;
    fabric::LldpHost host;
    host.host = name;
    for (int n = 0; n < nics; ++n, ++port) {
      fabric::LldpNic nic;
      nic.device = "mlx5_" + std::to_string(n);
      nic.netdev = "ens" + std::to_string(n);
      nic.link_layer = "Ethernet";
      fabric::LldpNeighbour nb;
      nb.interface = nic.netdev;
      nb.chassis_name = "leaf" + std::to_string(port / 32);
      nb.chassis_id = "02:00:00:00:" + std::to_string(port / 32);
      nb.chassis_id_type = "mac";
      const bool moved = moved_every > 0 && port % moved_every == 0;
      nb.port_id = "Ethernet" + std::to_string(port % 32 + (moved ? 32 : 0));
      nb.mfs = 9216;
      nb.pvid = 100;
      nb.vlans = {100};
      nic.neighbour = nb;
      host.nics.push_back(nic);
    }
    r.outcome.lldp = host;
    out.push_back(std::move(r));
  }
  return out;
}

double timed(FabricRecorder& rec, const std::vector<LldpWorkerReply>& replies, size_t* findings,
             size_t* bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = rec.recordLldpAll(replies);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    std::fprintf(stderr, "recordLldpAll: %s\n", r.status().toString().c_str());
    std::exit(1);
  }
  *findings = r->record.findings.size();
  *bytes = r->record.snapshot.snapshot_json.size();
  return s;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  using namespace gdrmesh;  // NOLINT(google-build-using-namespace): a bench's main
  const int hosts = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int nics = argc > 2 ? std::atoi(argv[2]) : 2;
  char path[] = "/tmp/lldp-merge-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  auto store = SqliteStore::open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().toString().c_str());
    return 1;
  }
  SystemClock clock;
  FabricRecorder rec(**store, clock);
  size_t findings = 0, bytes = 0;
  const double first = timed(rec, answers(hosts, nics, 0), &findings, &bytes);
  std::printf(
      "first call: %d hosts x %d NICs merged and stored in %.3f s (%zu findings, %zu KiB "
      "document)\n",
      hosts, nics, first, findings, bytes / 1024);
  const double second = timed(rec, answers(hosts, nics, 100), &findings, &bytes);
  std::printf(
      "second call: %d hosts, 1 in 100 NICs moved, diffed and stored in %.3f s (%zu "
      "findings)\n",
      hosts, second, findings);
  const auto one = answers(1, nics, 0);
  const double single = timed(rec, one, &findings, &bytes);
  std::printf(
      "one host into the %d-host snapshot (what each single call does): %.3f s; x %d "
      "hosts = %.1f s of merging alone\n",
      hosts, single, hosts, single * hosts);
  std::remove(path);
  return 0;
}
