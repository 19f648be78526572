#include "tests/unit/store/store_contract_test.h"

#include <gmock/gmock.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <vector>

namespace gdrmesh::testing {
namespace {

uint64_t bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

#define EXPECT_SAME_DOUBLE(field)              \
  EXPECT_EQ(bits(want.field), bits(got.field)) \
      << #field << ": want " << want.field << " got " << got.field

void expectSameEndpoint(const char* side, const EndpointRecord& want, const EndpointRecord& got) {
  SCOPED_TRACE(side);
  EXPECT_EQ(want.worker, got.worker);
  EXPECT_EQ(want.host, got.host);
  EXPECT_EQ(want.nic, got.nic);
  EXPECT_EQ(want.port, got.port);
  EXPECT_EQ(want.gpu, got.gpu);
  EXPECT_EQ(want.gpu_pci, got.gpu_pci);
  EXPECT_EQ(want.memory, got.memory);
  EXPECT_EQ(want.reg_path, got.reg_path);
  EXPECT_EQ(want.gid_index, got.gid_index);
  EXPECT_EQ(want.topo_class, got.topo_class);
}

std::vector<std::string> ids(const std::vector<TestResult>& v) {
  std::vector<std::string> out;
  for (const auto& r : v) out.push_back(r.test_id);
  return out;
}

}  // namespace

void ResultStoreContractTest::SetUp() {
  auto h = GetParam().make();
  ASSERT_TRUE(h.ok()) << h.status().toString();
  harness_ = std::move(h).value();
}

TestResult makeFullResult(const std::string& test_id) {
  TestResult r;
  r.id = 0;
  r.test_id = test_id;
  r.run_id = "run-'quoted'; DROP TABLE results; --";
  r.started_ms = 1795000000123;
  r.finished_ms = std::numeric_limits<int64_t>::max();
  r.op = Op::kWriteImm;
  r.mode = Mode::kLatency;
  r.transport = TransportKind::kVerbs;
  r.initiator = {"node-a",       "host-a.example",  "mlx5_0",         1, 3,
                 "0000:3b:00.0", MemoryKind::kCuda, RegPath::kDmabuf, 3, "PXB"};
  r.target = {"nöde-ß",
              "host-b",
              "mlx5_1",
              2,
              std::numeric_limits<int>::min(),
              "0000:af:00.0",
              MemoryKind::kHost,
              RegPath::kStaged,
              std::numeric_limits<int>::max(),
              "SYS"};
  r.message_size = std::numeric_limits<uint64_t>::max();
  r.iterations = (uint64_t{1} << 63) + 5;
  r.num_qps = std::numeric_limits<uint32_t>::max();
  r.path_mtu = 4096;
  Measurement& m = r.measurement;
  m.message_size = 8388608;
  m.iterations = 5000;
  m.warmup_iterations = 17;
  m.has_bandwidth = true;
  m.bw.bytes = 41943040000;
  m.bw.messages = 5000;
  m.bw.seconds = 1.0 / 3.0;
  m.bw.avg_gbps = 194.56789012345678;
  m.bw.peak_gbps = std::numeric_limits<double>::max();
  m.bw.msg_rate_mpps = std::numeric_limits<double>::denorm_min();
  m.has_latency = true;
  m.lat.samples = 1000;
  m.lat.min_us = -0.0;
  m.lat.max_us = std::numeric_limits<double>::infinity();
  m.lat.median_us = 2.0;  // integral: must come back as the same double
  m.lat.mean_us = 2.0000000000000004;
  m.lat.stdev_us = std::numeric_limits<double>::quiet_NaN();
  m.lat.p99_us = -std::numeric_limits<double>::infinity();
  m.lat.p999_us = 1e-300;
  m.staging_seconds = 0.1;
  m.counters.valid = true;
  m.counters.xmit_bytes = 1;
  m.counters.rcv_bytes = 2;
  m.counters.xmit_packets = 3;
  m.counters.rcv_packets = 4;
  m.counters.errors = 5;
  r.integrity.checked = true;
  r.integrity.bytes_checked = 8388608;
  r.integrity.wrong_bytes = 12;
  r.integrity.first_wrong_offset = 4096;
  r.integrity.where = "gpu:0";
  r.status = TestStatus::kFailed;
  r.reason = std::string("wrong bytes at 4096") + '\0' + "after a NUL, \"quotes\", ✓";
  return r;
}

TestResult makeResult(const std::string& test_id, const std::string& initiator,
                      const std::string& target, int64_t started_ms, TestStatus status,
                      const std::string& run_id) {
  TestResult r;
  r.test_id = test_id;
  r.run_id = run_id;
  r.started_ms = started_ms;
  r.finished_ms = started_ms + 10;
  r.initiator.worker = initiator;
  r.target.worker = target;
  r.status = status;
  return r;
}

void expectSameResult(const TestResult& want, const TestResult& got) {
  EXPECT_EQ(want.id, got.id);
  EXPECT_EQ(want.test_id, got.test_id);
  EXPECT_EQ(want.run_id, got.run_id);
  EXPECT_EQ(want.started_ms, got.started_ms);
  EXPECT_EQ(want.finished_ms, got.finished_ms);
  EXPECT_EQ(want.op, got.op);
  EXPECT_EQ(want.mode, got.mode);
  EXPECT_EQ(want.transport, got.transport);
  expectSameEndpoint("initiator", want.initiator, got.initiator);
  expectSameEndpoint("target", want.target, got.target);
  EXPECT_EQ(want.message_size, got.message_size);
  EXPECT_EQ(want.iterations, got.iterations);
  EXPECT_EQ(want.num_qps, got.num_qps);
  EXPECT_EQ(want.path_mtu, got.path_mtu);
  EXPECT_EQ(want.measurement.message_size, got.measurement.message_size);
  EXPECT_EQ(want.measurement.iterations, got.measurement.iterations);
  EXPECT_EQ(want.measurement.warmup_iterations, got.measurement.warmup_iterations);
  EXPECT_EQ(want.measurement.has_bandwidth, got.measurement.has_bandwidth);
  EXPECT_EQ(want.measurement.bw.bytes, got.measurement.bw.bytes);
  EXPECT_EQ(want.measurement.bw.messages, got.measurement.bw.messages);
  EXPECT_SAME_DOUBLE(measurement.bw.seconds);
  EXPECT_SAME_DOUBLE(measurement.bw.avg_gbps);
  EXPECT_SAME_DOUBLE(measurement.bw.peak_gbps);
  EXPECT_SAME_DOUBLE(measurement.bw.msg_rate_mpps);
  EXPECT_EQ(want.measurement.has_latency, got.measurement.has_latency);
  EXPECT_EQ(want.measurement.lat.samples, got.measurement.lat.samples);
  EXPECT_SAME_DOUBLE(measurement.lat.min_us);
  EXPECT_SAME_DOUBLE(measurement.lat.max_us);
  EXPECT_SAME_DOUBLE(measurement.lat.median_us);
  EXPECT_SAME_DOUBLE(measurement.lat.mean_us);
  EXPECT_SAME_DOUBLE(measurement.lat.stdev_us);
  EXPECT_SAME_DOUBLE(measurement.lat.p99_us);
  EXPECT_SAME_DOUBLE(measurement.lat.p999_us);
  EXPECT_SAME_DOUBLE(measurement.staging_seconds);
  EXPECT_EQ(want.measurement.counters.valid, got.measurement.counters.valid);
  EXPECT_EQ(want.measurement.counters.xmit_bytes, got.measurement.counters.xmit_bytes);
  EXPECT_EQ(want.measurement.counters.rcv_bytes, got.measurement.counters.rcv_bytes);
  EXPECT_EQ(want.measurement.counters.xmit_packets, got.measurement.counters.xmit_packets);
  EXPECT_EQ(want.measurement.counters.rcv_packets, got.measurement.counters.rcv_packets);
  EXPECT_EQ(want.measurement.counters.errors, got.measurement.counters.errors);
  EXPECT_EQ(want.integrity.checked, got.integrity.checked);
  EXPECT_EQ(want.integrity.bytes_checked, got.integrity.bytes_checked);
  EXPECT_EQ(want.integrity.wrong_bytes, got.integrity.wrong_bytes);
  EXPECT_EQ(want.integrity.first_wrong_offset, got.integrity.first_wrong_offset);
  EXPECT_EQ(want.integrity.where, got.integrity.where);
  EXPECT_EQ(want.status, got.status);
  EXPECT_EQ(want.reason, got.reason);
  EXPECT_EQ(want.gpudirect(), got.gpudirect());
}

TEST_P(ResultStoreContractTest, InsertThenGetReturnsTheRowWithItsId) {
  TestResult r = makeResult("t-1", "a", "b", 1000);
  auto id = store().insertResult(r);
  ASSERT_TRUE(id.ok()) << id.status().toString();
  EXPECT_GT(*id, 0);
  auto got = store().getResult("t-1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  r.id = *id;
  expectSameResult(r, **got);

  auto id2 = store().insertResult(makeResult("t-2", "a", "b", 1001));
  ASSERT_TRUE(id2.ok()) << id2.status().toString();
  EXPECT_NE(*id, *id2);
}

TEST_P(ResultStoreContractTest, GetUnknownTestIdIsEmptyNotAnError) {
  auto got = store().getResult("no-such-test");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_FALSE(got->has_value());
}

TEST_P(ResultStoreContractTest, EveryFieldRoundTripsExactly) {
  TestResult want = makeFullResult("t-full");
  want.status = TestStatus::kPassed;  // only a PASSED result may claim GPUDirect
  ASSERT_TRUE(want.gpudirect());
  auto id = store().insertResult(want);
  ASSERT_TRUE(id.ok()) << id.status().toString();
  want.id = *id;

  auto got = store().getResult("t-full");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  {
    SCOPED_TRACE("getResult");
    expectSameResult(want, **got);
  }
  auto q = store().queryResults(ResultQuery{});
  ASSERT_TRUE(q.ok()) << q.status().toString();
  ASSERT_EQ(q->size(), 1u);
  SCOPED_TRACE("queryResults");
  expectSameResult(want, q->front());
}

TEST_P(ResultStoreContractTest, QueryIsNewestFirstAndHonoursLimit) {
  for (int64_t t : {300, 100, 500, 200, 400}) {
    ASSERT_TRUE(store().insertResult(makeResult("t" + std::to_string(t), "a", "b", t)).ok());
  }
  ResultQuery q;
  q.limit = 3;
  auto got = store().queryResults(q);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_THAT(ids(*got), ::testing::ElementsAre("t500", "t400", "t300"));

  q.limit = 0;  // no limit
  got = store().queryResults(q);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_THAT(ids(*got), ::testing::ElementsAre("t500", "t400", "t300", "t200", "t100"));

  // Equal start times: the later insertion first.
  ASSERT_TRUE(store().insertResult(makeResult("t500b", "a", "b", 500)).ok());
  q.limit = 2;
  got = store().queryResults(q);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_THAT(ids(*got), ::testing::ElementsAre("t500b", "t500"));
}

TEST_P(ResultStoreContractTest, QueryFilters) {
  ASSERT_TRUE(
      store().insertResult(makeResult("ab-pass", "a", "b", 10, TestStatus::kPassed, "r1")).ok());
  ASSERT_TRUE(
      store().insertResult(makeResult("ba-fail", "b", "a", 20, TestStatus::kFailed, "r1")).ok());
  ASSERT_TRUE(
      store().insertResult(makeResult("bc-fail", "b", "c", 30, TestStatus::kFailed, "r2")).ok());
  ASSERT_TRUE(store().insertResult(makeResult("cd-skip", "c", "d", 40, TestStatus::kSkipped)).ok());
  ASSERT_TRUE(store().insertResult(makeResult("dd-err", "d", "d", 50, TestStatus::kError)).ok());

  auto run = [&](const ResultQuery& q) {
    auto r = store().queryResults(q);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? ids(*r) : std::vector<std::string>{};
  };
  using ::testing::ElementsAre;
  using ::testing::IsEmpty;

  ResultQuery q;
  q.worker = "a";  // initiator or target
  EXPECT_THAT(run(q), ElementsAre("ba-fail", "ab-pass"));
  q.worker = "c";
  EXPECT_THAT(run(q), ElementsAre("cd-skip", "bc-fail"));
  q.worker = "d";  // on both sides of one test: listed once
  EXPECT_THAT(run(q), ElementsAre("dd-err", "cd-skip"));
  q.worker = "nobody";
  EXPECT_THAT(run(q), IsEmpty());

  q = ResultQuery{};
  q.status = TestStatus::kFailed;
  EXPECT_THAT(run(q), ElementsAre("bc-fail", "ba-fail"));
  q.status = TestStatus::kPassed;
  EXPECT_THAT(run(q), ElementsAre("ab-pass"));

  q = ResultQuery{};
  q.run_id = "r1";
  EXPECT_THAT(run(q), ElementsAre("ba-fail", "ab-pass"));

  q = ResultQuery{};
  q.since_ms = 30;  // inclusive
  EXPECT_THAT(run(q), ElementsAre("dd-err", "cd-skip", "bc-fail"));

  q = ResultQuery{};
  q.worker = "b";
  q.status = TestStatus::kFailed;
  q.run_id = "r1";
  EXPECT_THAT(run(q), ElementsAre("ba-fail"));
  q.run_id = "";
  q.since_ms = 25;
  EXPECT_THAT(run(q), ElementsAre("bc-fail"));
  q.since_ms = 0;
  q.limit = 1;
  EXPECT_THAT(run(q), ElementsAre("bc-fail"));
}

TEST_P(ResultStoreContractTest, DuplicateTestIdIsRejectedAndTheFirstKept) {
  TestResult first = makeResult("dup", "a", "b", 1, TestStatus::kPassed);
  ASSERT_TRUE(store().insertResult(first).ok());
  TestResult second = makeResult("dup", "x", "y", 2, TestStatus::kFailed);
  auto id = store().insertResult(second);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument) << id.status().toString();
  EXPECT_THAT(id.status().message(), ::testing::HasSubstr("dup"));

  auto all = store().queryResults(ResultQuery{});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->front().initiator.worker, "a");
  EXPECT_EQ(all->front().status, TestStatus::kPassed);
  // The store still takes new rows after the refusal.
  EXPECT_TRUE(store().insertResult(makeResult("after-dup", "a", "b", 3)).ok());
}

TEST_P(ResultStoreContractTest, EmptyTestIdIsRejected) {
  auto id = store().insertResult(makeResult("", "a", "b", 1));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, UpsertAndListWorkers) {
  auto empty = store().listWorkers();
  ASSERT_TRUE(empty.ok()) << empty.status().toString();
  EXPECT_TRUE(empty->empty());

  ASSERT_TRUE(store().upsertWorker({"w2", "host2", R"({"nics":[]})", 100, 100}).ok());
  ASSERT_TRUE(store().upsertWorker({"w1", "host1", R"({"gpus":[0]})", 50, 60}).ok());
  // Re-registration: new hostname and inventory, first_seen stays, last_seen moves on.
  ASSERT_TRUE(store().upsertWorker({"w2", "host2b", R"({"nics":["mlx5_0"]})", 200, 200}).ok());

  auto got = store().listWorkers();
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 2u);
  const WorkerRecord& w1 = (*got)[0];
  const WorkerRecord& w2 = (*got)[1];
  EXPECT_EQ(w1.name, "w1");
  EXPECT_EQ(w1.hostname, "host1");
  EXPECT_EQ(w1.inventory_json, R"({"gpus":[0]})");
  EXPECT_EQ(w1.first_seen_ms, 50);
  EXPECT_EQ(w1.last_seen_ms, 60);
  EXPECT_EQ(w2.name, "w2");
  EXPECT_EQ(w2.hostname, "host2b");
  EXPECT_EQ(w2.inventory_json, R"({"nics":["mlx5_0"]})");
  EXPECT_EQ(w2.first_seen_ms, 100);
  EXPECT_EQ(w2.last_seen_ms, 200);

  EXPECT_EQ(store().upsertWorker({"", "h", "{}", 1, 1}).code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ConcurrentInsertsFromSeveralThreads) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::vector<std::vector<int64_t>> row_ids(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        auto r = store().insertResult(makeResult(id, "w" + std::to_string(t), "x", i));
        if (!r.ok()) {
          errors[t] = r.status().toString();
          return;
        }
        row_ids[t].push_back(*r);
        // Readers interleave with writers.
        ResultQuery q;
        q.worker = "w" + std::to_string(t);
        auto mine = store().queryResults(q);
        if (!mine.ok() || mine->empty() ||
            mine->front().test_id.rfind("t" + std::to_string(t) + "-", 0) != 0) {
          errors[t] = "query while inserting: " + mine.status().toString();
          return;
        }
        if (i % 10 == 0 && !store().upsertWorker({"w" + std::to_string(t), "h", "{}", i, i}).ok()) {
          errors[t] = "upsertWorker failed";
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> unique;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    unique.insert(row_ids[t].begin(), row_ids[t].end());
  }
  EXPECT_EQ(unique.size(), size_t{kThreads * kPerThread});
  ResultQuery all;
  all.limit = 0;
  auto got = store().queryResults(all);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->size(), size_t{kThreads * kPerThread});
  auto workers = store().listWorkers();
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->size(), size_t{kThreads});
}

TEST_P(ResultStoreContractTest, ReopenKeepsTheData) {
  if (!harness_->persistent()) GTEST_SKIP() << "store keeps nothing across a reopen";
  TestResult want = makeFullResult("t-persist");
  auto id = store().insertResult(want);
  ASSERT_TRUE(id.ok()) << id.status().toString();
  want.id = *id;
  ASSERT_TRUE(store().upsertWorker({"w", "h", "{}", 1, 2}).ok());

  Status s = harness_->reopen();
  ASSERT_TRUE(s.ok()) << s.toString();

  auto got = store().getResult("t-persist");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  expectSameResult(want, **got);
  auto workers = store().listWorkers();
  ASSERT_TRUE(workers.ok());
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ(workers->front().last_seen_ms, 2);
  // And it takes new rows after the reopen, with new ids.
  auto id2 = store().insertResult(makeResult("t-after", "a", "b", 1));
  ASSERT_TRUE(id2.ok()) << id2.status().toString();
  EXPECT_NE(*id2, *id);
}

}  // namespace gdrmesh::testing
