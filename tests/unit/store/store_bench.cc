// store_bench: rows/s into a temporary SQLite file, one transaction per result (insertResult)
// against ResultWriter batches (insertResults, max_batch 256). Not a test; run by hand:
//   store_bench [rows]   (default 100000)
//
// Metric: rows/s = rows / wall seconds from the first insert (or submit) until the last row is
// committed (for the writer: until flush() returns), on a fresh database per mode.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

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

int run(int rows) {
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
  return 0;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 100000;
  if (rows <= 0) {
    std::fprintf(stderr, "usage: store_bench [rows > 0]\n");
    return 2;
  }
  return gdrmesh::run(rows);
}
