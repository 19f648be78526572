// store_bench: rows/s into a temporary SQLite file, one transaction per result (insertResult)
// against ResultWriter batches (insertResults, max_batch 256); then a sweep's report as rows
// (a 1024-host all-pairs: 523,776 verdicts, 0.1 % failing) written as the sweep's end writes it
// (transactions of 8192 verdicts) and read as the CLI and the page read it. Not a test; run by
// hand:
//   store_bench [rows (100000)] [verdicts (523776)]
//
// Metric: rows/s = rows / wall seconds from the first insert (or submit) until the last row is
// committed (for the writer: until flush() returns), on a fresh database per mode. Queries:
// the median of 5 runs each, on a warm database.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/store/result_writer.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace gdrmesh {
namespace {

TestResult benchRow(int i) {
  TestResult r;
  r.test_id = "bench-" + std::to_string(i);
  r.run_id = "s-bench";
  r.plan_index = i;
  r.started_ms = 1795000000000 + i;
  r.finished_ms = r.started_ms + 250;
  r.initiator.worker = "node-" + std::to_string(i % 16);
  r.target.worker = "node-" + std::to_string((i + 1) % 16);
  r.initiator.reg_path = r.target.reg_path = RegPath::kDmabuf;
  r.initiator.memory = r.target.memory = MemoryKind::kCuda;
  r.message_size = 8388608;
  r.measurement.has_bandwidth = true;
  r.measurement.bw.avg_gbps = 190.0 + (i % 10);
  r.status = TestStatus::kPassed;
  return r;
}

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from) {
  return std::chrono::duration<double>(Clock::now() - from).count();
}

// Verdict i of an all-pairs sweep over `hosts` (an even number) in plan order: round-robin
// rounds of disjoint pairs (the circle method), as the planner makes them.
// Verdict i of an all-pairs sweep over `hosts` (an even number) in plan order: round-robin
// rounds of disjoint pairs (the circle method), as the planner makes them.
VerdictRecord benchVerdict(int i, int hosts) {
  const int per_round = hosts / 2, round = i / per_round, k = i % per_round;
  auto at = [&](int pos) { return pos == 0 ? 0 : 1 + (pos - 1 + round) % (hosts - 1); };
  const int src = at(k), dst = at(hosts - 1 - k);
  char buf[64];
  VerdictRecord v;
  v.seq = static_cast<uint64_t>(i);
  std::snprintf(buf, sizeof buf, "t-20261127T020000-%08x", static_cast<unsigned>(i) * 2654435761u);
  v.test_id = buf;
  std::snprintf(buf, sizeof buf, "node-%04d/mlx5_0", src);
  v.src = buf;
  std::snprintf(buf, sizeof buf, "node-%04d/mlx5_0", dst);
  v.dst = buf;
  v.message_size = 65536;
  v.verdict = i % 1000 == 7 ? "FAIL" : "PASS";
  if (v.verdict == "FAIL") v.reasons = {"bandwidth 10.0 Gb/s < 50 Gb/s (bandwidth_gbps_min)"};
  v.value = 90.0 + (i % 17);
  v.unit = "Gb/s";
  return v;
}

// This process's CPU time (user and system), seconds.
double cpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

double medianSeconds(const std::function<bool()>& query) {
  std::vector<double> s;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    if (!query()) return -1;
    s.push_back(seconds(start));
  }
  std::sort(s.begin(), s.end());
  return s[2];
}

int reportRows(const std::string& path, int verdicts) {
  auto store = SqliteStore::open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "store_bench: %s\n", store.status().toString().c_str());
    return 1;
  }
  SqliteStore& st = **store;
  int hosts = 2;
  while (hosts * (hosts - 1) / 2 < verdicts) hosts += 2;
  SweepRecord sweep;
  sweep.id = "s-bench";
  sweep.state = "finished";
  if (!st.createSweep(sweep).ok()) return 1;
  const double cpu0 = cpuSeconds();
  const auto start = Clock::now();
  std::vector<VerdictRecord> batch;
  for (int i = 0; i < verdicts; ++i) {
    batch.push_back(benchVerdict(i, hosts));
    if (batch.size() == 8192 || i + 1 == verdicts) {
      Status s = st.appendSweepVerdicts("s-bench", batch);
      if (!s.ok()) {
        std::fprintf(stderr, "store_bench: %s\n", s.toString().c_str());
        return 1;
      }
      batch.clear();
    }
  }
  if (!st.putSweepReportSummary("s-bench", {}).ok()) return 1;
  const double write_s = seconds(start);
  const double write_cpu = cpuSeconds() - cpu0;
  std::printf(
      "report rows: %d verdicts (%d hosts) written in %.3f s = %.0f rows/s (%.3f s of CPU)\n",
      verdicts, hosts, write_s, verdicts / write_s, write_cpu);
  auto rows = [&](VerdictQuery q, size_t* n) {
    q.sweep_id = "s-bench";
    auto r = st.sweepVerdicts(q);
    if (r.ok()) *n = r->size();
    return r.ok();
  };
  size_t n = 0;
  VerdictQuery failing;
  failing.verdict = "FAIL";
  failing.limit = 50;
  const double fail_s = medianSeconds([&] { return rows(failing, &n); });
  std::printf("  a page of 50 failing verdicts: %.4f s (%zu rows)\n", fail_s, n);
  VerdictQuery pair;
  pair.src_host = "node-0001";
  pair.dst_host = "node-0002";
  const double pair_s = medianSeconds([&] { return rows(pair, &n); });
  std::printf("  a pair's verdicts: %.4f s (%zu rows)\n", pair_s, n);
  VerdictQuery host;
  host.host = "node-0003";
  const double host_s = medianSeconds([&] { return rows(host, &n); });
  std::printf("  a host's verdicts (either side): %.4f s (%zu rows)\n", host_s, n);
  VerdictQuery last;
  last.offset = static_cast<uint64_t>(verdicts) - 100;
  last.limit = 100;
  const double last_s = medianSeconds([&] { return rows(last, &n); });
  std::printf("  the last page of 100 of every verdict: %.4f s (%zu rows)\n", last_s, n);
  const double all_s = medianSeconds([&] {
    size_t total = 0;
    for (uint64_t off = 0;; off += 100000) {
      VerdictQuery page;
      page.offset = off;
      page.limit = 100000;
      if (!rows(page, &n)) return false;
      total += n;
      if (n < 100000) break;
    }
    return total == static_cast<size_t>(verdicts);
  });
  std::printf("  every verdict in pages of 100,000 (as the CLI fetches -o json): %.3f s\n", all_s);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("  peak RSS of this process: %ld MiB\n", ru.ru_maxrss / 1024);
  return 0;
}

int run(int rows, int verdicts) {
  testing::TempDir dir;
  if (!dir.ok()) {
    std::fprintf(stderr, "store_bench: cannot create a temporary directory (set TMPDIR)\n");
    return 1;
  }

  {
    auto store = SqliteStore::open(dir.file("one-by-one.db"));
    if (!store.ok()) {
      std::fprintf(stderr, "store_bench: %s\n", store.status().toString().c_str());
      return 1;
    }
    const auto start = Clock::now();
    for (int i = 0; i < rows; ++i) {
      auto id = (*store)->insertResult(benchRow(i));
      if (!id.ok()) {
        std::fprintf(stderr, "store_bench: %s\n", id.status().toString().c_str());
        return 1;
      }
    }
    const double s = seconds(start);
    std::printf("insertResult one by one : %7d rows in %7.3f s = %10.0f rows/s\n", rows, s,
                rows / s);
  }

  {
    auto store = SqliteStore::open(dir.file("writer.db"));
    if (!store.ok()) {
      std::fprintf(stderr, "store_bench: %s\n", store.status().toString().c_str());
      return 1;
    }
    ResultWriter::Options options;  // max_batch 256, max_delay_ms 20
    int failed = 0;
    SystemClock clock;
    ResultWriter writer(**store, clock, options);
    const auto start = Clock::now();
    for (int i = 0; i < rows; ++i) {
      writer.submit(benchRow(i), [&failed](Result<int64_t> id) {
        if (!id.ok()) ++failed;  // writer thread only
      });
    }
    const double submit_s = seconds(start);
    writer.flush();
    const double s = seconds(start);
    if (failed != 0) {
      std::fprintf(stderr, "store_bench: %d rows refused\n", failed);
      return 1;
    }
    std::printf(
        "ResultWriter batches 256: %7d rows in %7.3f s = %10.0f rows/s (submit alone: "
        "%.3f s = %.0f rows/s)\n",
        rows, s, rows / s, submit_s, rows / submit_s);
  }
  return verdicts > 0 ? reportRows(dir.file("report.db"), verdicts) : 0;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int verdicts = argc > 2 ? std::atoi(argv[2]) : 523776;
  if (rows <= 0 || verdicts < 0 || verdicts == 1) {
    std::fprintf(stderr, "usage: store_bench [rows > 0] [verdicts: 0 (none) or > 1]\n");
    return 2;
  }
  return gdrmesh::run(rows, verdicts);
}
