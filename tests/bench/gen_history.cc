// gen_history: writes a coordinator database that holds a year of nightly sweeps, to time the
// coordinator's queries on a realistic history (tests/bench/history_queries.sh). Not a test.
//
//   gen_history --db FILE [--hosts 1024] [--nights 365] [--rounds 9] [--seed 1]
//               [--end-ms UNIX_MS]
//
// Every night at 02:00 and 03:00 UTC two sweeps run on every host: "nightly-bw" (RDMA write
// bandwidth at 64 KiB, 1 MiB, 8 MiB) and "nightly-lat" (RDMA write latency at 8 B, 4 KiB,
// 64 KiB), each `--rounds` random perfect matchings of the hosts, NIC i to NIC i (rails), GPU
// memory over dma-buf. 1024 hosts x 365 nights x 2 sweeps x 9 rounds x 512 pairs x 3 sizes =
// 10,091,520 result rows. Figures are drawn around a 400G NIC (bandwidth within 1-3 % of its
// size's norm, latency likewise); three hosts are "bad" on some nights (bandwidth or latency
// far off), and about 0.1 % of tests fail, 0.1 % end in ERROR, 0.05 % are skipped. The real
// judge and localiser make each sweep's verdicts and suspects, stored as the coordinator
// stores them (storeSweepReport: rows), with the spec in the wire format's JSON (the coordinator's
// codec), so GetSweep and /api/sweeps/ID read the sweeps as their own.
//
// The database is opened through SqliteStore, so it has the schema (migrations) of this
// build. One transaction per sweep (13,824 rows at the defaults; one transaction for the
// whole year would grow the WAL to the size of the database). Prints rows/s.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/units.h"
#include "coordinator/orchestrator/cluster_config.h"
#include "coordinator/orchestrator/judge.h"
#include "coordinator/orchestrator/localiser.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/orchestrator/sweep_report_rows.h"
#include "coordinator/service/sweep_convert.h"
#include "coordinator/store/sqlite_store.h"

namespace gdrmesh {
namespace {

struct Args {
  std::string db;
  int hosts = 1024;
  int nights = 365;
  int rounds = 9;
  uint64_t seed = 1;
  int64_t end_ms = 0;  // the last night's 02:00 UTC is before this; 0 = now
  int schema = 0;      // write this (older) schema version; 0 = the latest
  bool aggregate_existing = false;
};

constexpr int64_t kDayMs = 86'400'000;
constexpr int kNics = 8;

void usage() {
  std::fprintf(stderr,
               "usage: gen_history --db FILE [--hosts N (1024)] [--nights N (365)] "
               "[--rounds N (9)] [--seed N (1)] [--end-ms UNIX_MS (now)] "
               "[--schema-version N (latest)]\n"
               "       gen_history --db FILE --aggregate-existing\n");
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--aggregate-existing") {
      a->aggregate_existing = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gen_history: %s needs a value\n", k.c_str());
      return false;
    }
    const std::string v = argv[++i];
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    const bool num = end != nullptr && *end == '\0' && !v.empty();
    if (k == "--db") {
      a->db = v;
      continue;
    }
    if (!num || n < 0) {
      std::fprintf(stderr, "gen_history: %s '%s' is not a whole number >= 0\n", k.c_str(),
                   v.c_str());
      return false;
    }
    if (k == "--hosts" && n >= 2 && n <= 100000) {
      a->hosts = static_cast<int>(n);
    } else if (k == "--nights" && n >= 1 && n <= 10000) {
      a->nights = static_cast<int>(n);
    } else if (k == "--rounds" && n >= 1 && n <= 1000) {
      a->rounds = static_cast<int>(n);
    } else if (k == "--seed") {
      a->seed = static_cast<uint64_t>(n);
    } else if (k == "--end-ms") {
      a->end_ms = n;
    } else if (k == "--schema-version" && n >= 2 && n <= SqliteStore::latestSchemaVersion()) {
      a->schema = static_cast<int>(n);
    } else {
      std::fprintf(stderr,
                   "gen_history: %s %s: unknown option or out of range (--hosts 2..100000, "
                   "--nights 1..10000, --rounds 1..1000, --schema-version 2..%d)\n",
                   k.c_str(), v.c_str(), SqliteStore::latestSchemaVersion());
      return false;
    }
  }
  if (a->db.empty()) {
    std::fprintf(stderr, "gen_history: --db FILE is required\n");
    return false;
  }
  return true;
}

std::string hostName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "gpu-%04d", i + 1);
  return buf;
}

// "s-20261123T020000-bw": the coordinator's id shape, with the sweep's kind as the suffix.
std::string sweepId(int64_t ms, const char* kind) {
  std::string t = formatRfc3339(ms);  // 2026-11-23T02:00:00.000Z
  std::string compact;
  for (char c : t.substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return "s-" + compact + "-" + kind;
}

struct SweepKind {
  const char* name;    // schedule name
  const char* suffix;  // id suffix
  Mode mode;
  std::vector<uint64_t> sizes;
  std::vector<double> norm;  // Gb/s or us per size
  int hour;
};

EndpointRecord endpoint(const std::string& worker, int nic) {
  static const char* const kPci[kNics] = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0",
                                          "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0",
                                          "0000:d1:00.0", "0000:df:00.0"};
  EndpointRecord e;
  e.worker = worker;
  e.host = worker + ".cluster.local";
  e.nic = "mlx5_" + std::to_string(nic);
  e.port = 1;
  e.gpu = nic;
  e.gpu_pci = kPci[nic];
  e.memory = MemoryKind::kCuda;
  e.reg_path = RegPath::kDmabuf;
  e.gid_index = 3;
  e.topo_class = "PIX";
  return e;
}

class Generator {
 public:
  Generator(const Args& a, SqliteStore& store) : a_(a), store_(store), rng_(a.seed) {
    for (int i = 0; i < a.hosts; ++i) hosts_.push_back(hostName(i));
    // Three hosts misbehave on some nights: a slow link, high latency, flaky.
    bad_ = {a.hosts / 7, a.hosts / 3, a.hosts - 2};
    config_.thresholds.best_pair_fraction_min = 0.8;
    config_.thresholds.lowest_latency_factor_max = 2.0;
  }

  int run() {
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& h : hosts_) {
      WorkerRecord w;
      w.name = h;
      w.hostname = h + ".cluster.local";
      w.inventory_json = R"({"gpus":8,"nics":8,"transports":["verbs"]})";
      w.first_seen_ms = firstNight();
      w.last_seen_ms = lastNight();
      Status st = store_.upsertWorker(w);
      if (!st.ok()) return fail(st);
    }
    const std::vector<SweepKind> kinds = {
        {"nightly-bw", "bw", Mode::kBandwidth, {65536, 1048576, 8388608}, {180, 370, 392}, 2},
        {"nightly-lat", "lat", Mode::kLatency, {8, 4096, 65536}, {2.1, 2.6, 4.6}, 3},
    };
    for (int night = 0; night < a_.nights; ++night) {
      const int64_t day = firstNight() + night * kDayMs;
      for (const auto& k : kinds) {
        Status st = sweep(k, day + (k.hour - 2) * 3'600'000LL, night);
        if (!st.ok()) return fail(st);
      }
      if ((night + 1) % 10 == 0 || night + 1 == a_.nights) {
        const double s = secondsSince(t0);
        std::printf("gen_history: night %d/%d, %" PRId64 " rows, %.0f rows/s\n", night + 1,
                    a_.nights, rows_, static_cast<double>(rows_) / s);
        std::fflush(stdout);
      }
    }
    const double s = secondsSince(t0);
    std::printf("gen_history: %s: %" PRId64
                " result rows, %d sweeps, %d hosts in %.1f s = %.0f "
                "rows/s (insert only: %.1f s, %.0f rows/s; aggregates: %.1f s)\n",
                a_.db.c_str(), rows_, sweeps_, a_.hosts, s, static_cast<double>(rows_) / s,
                insert_s_, static_cast<double>(rows_) / insert_s_, aggregate_s_);
    return 0;
  }

 private:
  static double secondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  int fail(const Status& st) {
    std::fprintf(stderr, "gen_history: %s\n", st.toString().c_str());
    return 1;
  }
  // 02:00 UTC of the last night before end_ms, and of the first.
  int64_t lastNight() const {
    const int64_t end = a_.end_ms;
    int64_t d = end - end % kDayMs + 2 * 3'600'000LL;
    if (d + 2 * 3'600'000LL > end) d -= kDayMs;  // both sweeps of the night have ended
    return d;
  }
  int64_t firstNight() const { return lastNight() - static_cast<int64_t>(a_.nights - 1) * kDayMs; }

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }

  Status sweep(const SweepKind& k, int64_t start_ms, int night) {
    const std::string id = sweepId(start_ms, k.suffix);
    const bool bad_night = night % 11 == 3 || night % 29 == 0;
    std::vector<TestResult> rows;
    const int pairs = a_.hosts / 2;
    rows.reserve(static_cast<size_t>(a_.rounds) * pairs * k.sizes.size());
    std::vector<int> order(hosts_.size());
    int64_t t = start_ms + 5000;
    int plan_index = 0;
    for (int round = 0; round < a_.rounds; ++round) {
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::shuffle(order.begin(), order.end(), rng_);
      const int nic = round % kNics;
      for (size_t s = 0; s < k.sizes.size(); ++s) {
        for (int p = 0; p < pairs; ++p) {
          const int src = order[2 * p];
          const int dst = order[2 * p + 1];
          TestResult r;
          r.run_id = id;
          r.plan_index = plan_index;
          r.test_id = "t-" + id.substr(2) + "-" + std::to_string(plan_index);
          ++plan_index;
          r.started_ms = t + p % 7;
          r.op = Op::kWrite;
          r.mode = k.mode;
          r.transport = TransportKind::kVerbs;
          r.initiator = endpoint(hosts_[static_cast<size_t>(src)], nic);
          r.target = endpoint(hosts_[static_cast<size_t>(dst)], nic);
          r.message_size = k.sizes[s];
          r.iterations = k.mode == Mode::kBandwidth ? 1000 : 10000;
          r.num_qps = 1;
          r.path_mtu = 4096;
          Measurement& m = r.measurement;
          m.message_size = r.message_size;
          m.iterations = r.iterations;
          m.warmup_iterations = 16;
          m.staging_seconds = 0;
          const bool bad = bad_night && (std::find(bad_.begin(), bad_.end(), src) != bad_.end() ||
                                         std::find(bad_.begin(), bad_.end(), dst) != bad_.end());
          const double draw = uniform(0, 1);
          r.status = TestStatus::kPassed;
          if (draw < 0.0005) {
            r.status = TestStatus::kSkipped;
            r.reason = "GPU " + std::to_string(nic) + " on " + r.target.worker +
                       " is busy (another process holds it)";
          } else if (draw < 0.0015) {
            r.status = TestStatus::kError;
            r.reason = "timeout: the target did not answer within 30 s";
          } else if (draw < 0.0025) {
            r.status = TestStatus::kFailed;
            r.reason = "integrity: 4096 wrong bytes, first at offset 131072";
          }
          if (r.status == TestStatus::kPassed || r.status == TestStatus::kFailed) {
            const double norm = k.norm[s] * (bad ? (k.mode == Mode::kBandwidth ? 0.45 : 3.0) : 1.0);
            if (k.mode == Mode::kBandwidth) {
              m.has_bandwidth = true;
              const double gbps = norm * uniform(0.97, 1.01);
              m.bw.avg_gbps = gbps;
              m.bw.peak_gbps = gbps * uniform(1.0, 1.02);
              m.bw.bytes = r.message_size * r.iterations;
              m.bw.messages = r.iterations;
              m.bw.seconds = static_cast<double>(m.bw.bytes) * 8 / (gbps * 1e9);
              m.bw.msg_rate_mpps = static_cast<double>(r.iterations) / m.bw.seconds / 1e6;
            } else {
              m.has_latency = true;
              const double med = norm * uniform(0.98, 1.03);
              m.lat.samples = r.iterations;
              m.lat.min_us = med * 0.93;
              m.lat.median_us = med;
              m.lat.mean_us = med * 1.01;
              m.lat.stdev_us = med * 0.04;
              m.lat.p99_us = med * 1.2;
              m.lat.p999_us = med * 1.6;
              m.lat.max_us = med * 3.1;
            }
            m.counters.valid = true;
            m.counters.xmit_bytes = r.message_size * r.iterations;
            m.counters.rcv_bytes = m.counters.xmit_bytes;
            m.counters.xmit_packets = (r.message_size + 4095) / 4096 * r.iterations;
            m.counters.rcv_packets = m.counters.xmit_packets;
            r.integrity.checked = true;
            r.integrity.bytes_checked = r.message_size;
            if (r.status == TestStatus::kFailed) {
              r.integrity.wrong_bytes = 4096;
              r.integrity.first_wrong_offset = 131072;
              r.integrity.where = "target";
            }
          }
          const double dur_ms =
              k.mode == Mode::kBandwidth ? 200 + static_cast<double>(r.message_size) / 50'000 : 120;
          r.finished_ms = r.started_ms + static_cast<int64_t>(dur_ms);
          rows.push_back(std::move(r));
        }
        t += 2000;  // one round of disjoint pairs
      }
    }
    // The judge and localiser as the coordinator runs them after a sweep, on a second thread
    // while the rows are inserted (both only read `rows`).
    struct Judged {
      std::vector<PairVerdict> verdicts;
      std::vector<Suspect> suspects;
      VerdictCounts counts;
      bool pass = true;
    };
    auto judged = std::async(std::launch::async, [&rows, this] {
      const JudgeContext ctx;
      std::vector<PairVerdict> verdicts = judgeResults(rows, config_, ctx);
      std::vector<Suspect> suspects = localise(rows, verdicts);
      Judged j;
      for (const auto& v : verdicts) {
        j.pass = j.pass && v.verdict != VerdictKind::kFail;
        j.counts.add(v.verdict);
      }
      j.verdicts = std::move(verdicts);
      j.suspects = std::move(suspects);
      return j;
    });
    const auto ti = std::chrono::steady_clock::now();
    auto ids = store_.insertResults(rows);
    Judged j = judged.get();
    if (!ids.ok()) return ids.status();
    insert_s_ += secondsSince(ti);
    rows_ += static_cast<int64_t>(rows.size());

    SweepSpec spec;
    spec.pattern = SweepPattern::kRandom;
    spec.random_rounds = static_cast<uint32_t>(a_.rounds);
    spec.seed = a_.seed * 100000 + static_cast<uint64_t>(night);
    spec.sizes = k.sizes;
    spec.name = k.name;
    spec.test.op = Op::kWrite;
    spec.test.mode = k.mode;
    SweepRecord rec;
    rec.id = id;
    rec.state = "finished";
    rec.pattern = "random";
    rec.name = k.name;
    rec.spec_json = codec_.encode(spec);
    rec.plan_json = R"({"hosts":[)";
    for (size_t i = 0; i < hosts_.size(); ++i) {
      rec.plan_json += (i ? ",\"" : "\"") + hosts_[i] + "\"";
    }
    rec.plan_json += "],\"plan_size\":" + std::to_string(rows.size()) +
                     ",\"rounds\":" + std::to_string(a_.rounds * static_cast<int>(k.sizes.size())) +
                     ",\"seed\":\"" + std::to_string(spec.seed) + "\"}";
    rec.verdicts_pass = static_cast<uint32_t>(j.counts.pass);
    rec.verdicts_fail = static_cast<uint32_t>(j.counts.fail);
    rec.verdicts_skip = static_cast<uint32_t>(j.counts.skip);
    rec.created_ms = start_ms;
    rec.started_ms = start_ms + 1000;
    rec.finished_ms = t + 1000;
    rec.tests_total = static_cast<uint32_t>(rows.size());
    rec.verdict = j.pass ? "PASS" : "FAIL";
    GDR_RETURN_IF_ERROR(store_.createSweep(rec));
    GDR_RETURN_IF_ERROR(storeReport(id, j.verdicts, j.suspects));
    // As the coordinator does when a sweep ends (schema 3 on).
    if (a_.schema == 0 || a_.schema >= 3) {
      const auto ta = std::chrono::steady_clock::now();
      GDR_RETURN_IF_ERROR(store_.aggregateSweep(id, rec.tests_total));
      aggregate_s_ += secondsSince(ta);
    }
    ++sweeps_;
    return Status();
  }

  // The report as the coordinator of the schema stores it: rows from schema 10 on, one JSON
  // text in sweep_reports (schemas 6 to 9; what migration 10 converts), none before.
  Status storeReport(const std::string& id, const std::vector<PairVerdict>& verdicts,
                     const std::vector<Suspect>& suspects) {
    if (a_.schema == 0 || a_.schema >= 10) {
      return storeSweepReport(store_, id, verdicts.size(), [&](size_t i) { return verdicts[i]; },
                              suspects, {});
    }
    if (a_.schema < 6) return Status();
    nlohmann::json r = {{"notes", nlohmann::json::array()},
                        {"suspects", nlohmann::json::array()},
                        {"verdicts", nlohmann::json::array()}};
    for (const auto& s : suspects) {
      r["suspects"].push_back(
          {{"kind", s.kind}, {"name", s.name}, {"score", s.score}, {"evidence", s.evidence}});
    }
    for (const auto& v : verdicts) {
      r["verdicts"].push_back({{"test_id", v.test_id},
                               {"src", v.src},
                               {"dst", v.dst},
                               {"size", v.message_size},
                               {"verdict", toString(v.verdict)},
                               {"reasons", v.reasons},
                               {"value", v.value},
                               {"unit", v.unit},
                               {"topo_class", v.topo_class},
                               {"retest", v.retest},
                               {"op", toString(v.op)},
                               {"mode", toString(v.mode)}});
    }
    return insertOldReport(a_.db, id, r.dump());
  }

  static Status insertOldReport(const std::string& path, const std::string& id,
                                const std::string& text) {
    sqlite3* db = nullptr;
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_open(path.c_str(), &db);
    if (rc == SQLITE_OK) sqlite3_busy_timeout(db, 5000);
    if (rc == SQLITE_OK) {
      rc = sqlite3_prepare_v2(
          db, "INSERT INTO sweep_reports (sweep_id, revision, report_json) VALUES (?1, 1, ?2)", -1,
          &s, nullptr);
    }
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text64(s, 2, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    Status st = rc == SQLITE_OK ? Status()
                                : internalError(path + ": storing the report of " + id + ": " +
                                                (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return st;
  }

  const Args a_;
  SqliteStore& store_;
  std::mt19937_64 rng_;
  std::vector<std::string> hosts_;
  std::vector<int> bad_;
  ClusterConfig config_;
  convert::StoredSweepCodec codec_;
  int64_t rows_ = 0;
  int sweeps_ = 0;
  double insert_s_ = 0;
  double aggregate_s_ = 0;
};

// The results table's secondary indexes, dropped and made again on a connection of its own.
class BulkIndexes {
 public:
  explicit BulkIndexes(const std::string& path) : path_(path) {}
  ~BulkIndexes() {
    if (db_ != nullptr) sqlite3_close(db_);
  }
  BulkIndexes(const BulkIndexes&) = delete;
  BulkIndexes& operator=(const BulkIndexes&) = delete;

  bool drop() {
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) return fail("open");
    sqlite3_busy_timeout(db_, 5000);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND "
                           "tbl_name = 'results' AND sql IS NOT NULL",
                           -1, &s, nullptr) != SQLITE_OK) {
      return fail("list indexes");
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      names_.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      sql_.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)));
    }
    sqlite3_finalize(s);
    for (const auto& n : names_) {
      if (sqlite3_exec(db_, ("DROP INDEX " + n).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        return fail("drop index " + n);
      }
    }
    return true;
  }

  bool recreate() {
    const auto t0 = std::chrono::steady_clock::now();
    if (sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("begin");
    for (const auto& q : sql_) {
      if (sqlite3_exec(db_, q.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return fail(q);
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("commit");
    // Planner statistics, as a database that has been in use a while would have none either:
    // left out on purpose (the coordinator never runs ANALYZE).
    std::printf("gen_history: made %zu results indexes again in %.1f s\n", sql_.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return true;
  }

 private:
  bool fail(const std::string& what) {
    std::fprintf(stderr, "gen_history: %s: %s: %s\n", path_.c_str(), what.c_str(),
                 db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<std::string> names_;
  std::vector<std::string> sql_;
};

// Aggregates every ended sweep of an existing database that has none (what retention does
// before it deletes a sweep's rows), e.g. after a migration from an older schema.
int aggregateExisting(SqliteStore& store) {
  const auto t0 = std::chrono::steady_clock::now();
  int n = 0;
  for (;;) {
    auto pending = store.sweepsWithoutAggregates(std::numeric_limits<int64_t>::max(), 64);
    if (!pending.ok()) {
      std::fprintf(stderr, "gen_history: %s\n", pending.status().toString().c_str());
      return 1;
    }
    for (const SweepRecord& s : *pending) {
      Status st = store.aggregateSweep(s.id, s.tests_total);
      if (!st.ok()) {
        std::fprintf(stderr, "gen_history: %s\n", st.toString().c_str());
        return 1;
      }
      ++n;
    }
    if (pending->size() < 64) break;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("gen_history: aggregated %d sweeps in %.1f s (%.1f ms per sweep)\n", n, s,
              n ? s * 1000 / n : 0.0);
  return 0;
}

}  // namespace
}  // namespace gdrmesh

int main(int argc, char** argv) {
  gdrmesh::Args a;
  if (!gdrmesh::parseArgs(argc, argv, &a)) {
    gdrmesh::usage();
    return 2;
  }
  if (a.end_ms == 0) {
    a.end_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  }
  gdrmesh::SqliteStoreOptions options;
  std::vector<gdrmesh::SqliteMigration> older;
  if (a.schema != 0) {
    const auto& all = gdrmesh::sqliteSchemaMigrations();
    older.assign(all.begin(), all.begin() + a.schema);
    options.migrations = &older;
  }
  auto store = gdrmesh::SqliteStore::open(a.db, options);
  if (!store.ok()) {
    std::fprintf(stderr, "gen_history: --db %s: %s\n", a.db.c_str(),
                 store.status().toString().c_str());
    return 1;
  }
  if (a.aggregate_existing) return gdrmesh::aggregateExisting(**store);
  // Bulk load: the secondary indexes of `results` (as the migrations made them) are dropped
  // while rows go in and made again at the end, which sorts once instead of inserting 10M
  // keys at random places.
  gdrmesh::BulkIndexes indexes(a.db);
  if (!indexes.drop()) return 1;
  gdrmesh::Generator g(a, **store);
  const int rc = g.run();
  if (rc != 0) return rc;
  return indexes.recreate() ? 0 : 1;
}
