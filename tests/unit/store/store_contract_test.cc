#include "tests/unit/store/store_contract_test.h"

#include <gmock/gmock.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <tuple>
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
  EXPECT_EQ(want.cpu_binding, got.cpu_binding);
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
  r.plan_index = std::numeric_limits<int>::max();
  r.started_ms = 1795000000123;
  r.finished_ms = std::numeric_limits<int64_t>::max();
  r.op = Op::kWriteImm;
  r.mode = Mode::kLatency;
  r.transport = TransportKind::kVerbs;
  r.initiator = {"node-a",
                 "host-a.example",
                 "mlx5_0",
                 1,
                 3,
                 "0000:3b:00.0",
                 MemoryKind::kCuda,
                 RegPath::kDmabuf,
                 3,
                 "PXB",
                 "cpu 3 (numa 0, nic mlx5_0)"};
  r.target = {"nöde-ß",
              "host-b",
              "mlx5_1",
              2,
              std::numeric_limits<int>::min(),
              "0000:af:00.0",
              MemoryKind::kHost,
              RegPath::kStaged,
              std::numeric_limits<int>::max(),
              "SYS",
              "not bound: 'quoted'\ttab, ünïcode"};
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
  EXPECT_EQ(want.plan_index, got.plan_index);
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

SweepRecord makeSweep(const std::string& id, int64_t created_ms, const std::string& state) {
  SweepRecord s;
  s.id = id;
  s.state = state;
  s.pattern = "all-pairs";
  s.name = "nightly ✓ 'quoted'";
  s.spec_json = R"({"pattern":"all-pairs","sizes":[8388608]})";
  s.plan_json = R"({"tests":[{"i":0},{"i":1}]})";
  s.created_ms = created_ms;
  s.started_ms = created_ms + 1;
  s.finished_ms = 0;
  s.tests_total = std::numeric_limits<uint32_t>::max();
  s.reason = "";
  s.verdict = "";
  return s;
}

void expectSameSweep(const SweepRecord& want, const SweepRecord& got) {
  EXPECT_EQ(want.id, got.id);
  EXPECT_EQ(want.state, got.state);
  EXPECT_EQ(want.pattern, got.pattern);
  EXPECT_EQ(want.name, got.name);
  EXPECT_EQ(want.spec_json, got.spec_json);
  EXPECT_EQ(want.plan_json, got.plan_json);
  EXPECT_EQ(want.created_ms, got.created_ms);
  EXPECT_EQ(want.started_ms, got.started_ms);
  EXPECT_EQ(want.finished_ms, got.finished_ms);
  EXPECT_EQ(want.tests_total, got.tests_total);
  EXPECT_EQ(want.reason, got.reason);
  EXPECT_EQ(want.verdict, got.verdict);
  EXPECT_EQ(want.verdicts_pass, got.verdicts_pass);
  EXPECT_EQ(want.verdicts_fail, got.verdicts_fail);
  EXPECT_EQ(want.verdicts_skip, got.verdicts_skip);
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

TEST_P(ResultStoreContractTest, KeysetPagesWalkEveryRowOnceInOrder) {
  // Ties in started_ms across page boundaries; a worker filter (two merged halves) too.
  const std::vector<int64_t> starts = {100, 200, 200, 200, 300, 300, 400};
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSERT_TRUE(
        store()
            .insertResult(makeResult("p" + std::to_string(i), i % 2 ? "a" : "b", "a", starts[i]))
            .ok());
  }
  for (const std::string worker : {"", "a", "b"}) {
    ResultQuery all;
    all.limit = 0;
    all.worker = worker;
    auto want = store().queryResults(all);
    ASSERT_TRUE(want.ok());
    std::vector<std::string> got;
    ResultQuery page;
    page.limit = 2;
    page.worker = worker;
    for (int pages = 0; pages < 10; ++pages) {
      auto rows = store().queryResults(page);
      ASSERT_TRUE(rows.ok()) << rows.status().toString();
      for (const auto& r : *rows) got.push_back(r.test_id);
      if (rows->size() < page.limit) break;
      page.before_started_ms = rows->back().started_ms;
      page.before_id = rows->back().id;
    }
    EXPECT_EQ(got, ids(*want)) << "worker '" << worker << "'";
  }
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

TEST_P(ResultStoreContractTest, CountResultsStopsPastTheCap) {
  std::vector<TestResult> rows;
  for (uint64_t i = 0; i < kResultCountCap + 5; ++i) {
    rows.push_back(makeResult("t" + std::to_string(i), "a", "b", static_cast<int64_t>(i),
                              TestStatus::kPassed, "r1"));
  }
  ASSERT_TRUE(store().insertResults(rows).ok());
  ResultQuery q;
  auto n = store().countResults(q);
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(*n, kResultCountCap + 1);  // "more than 10000", not a walk of the whole table
  q.worker = "a";
  n = store().countResults(q);
  ASSERT_TRUE(n.ok());
  EXPECT_GT(*n, kResultCountCap);
  q = ResultQuery{};
  q.since_ms = static_cast<int64_t>(kResultCountCap);  // 5 rows left: counted exactly
  n = store().countResults(q);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 5u);
}

TEST_P(ResultStoreContractTest, CountResultsCountsEveryMatchIgnoringTheLimit) {
  ASSERT_TRUE(
      store().insertResult(makeResult("ab-pass", "a", "b", 10, TestStatus::kPassed, "r1")).ok());
  ASSERT_TRUE(
      store().insertResult(makeResult("ba-fail", "b", "a", 20, TestStatus::kFailed, "r1")).ok());
  ASSERT_TRUE(
      store().insertResult(makeResult("bc-fail", "b", "c", 30, TestStatus::kFailed, "r2")).ok());
  ASSERT_TRUE(store().insertResult(makeResult("dd-err", "d", "d", 50, TestStatus::kError)).ok());
  auto count = [&](const ResultQuery& q) {
    auto n = store().countResults(q);
    EXPECT_TRUE(n.ok()) << n.status().toString();
    return n.ok() ? *n : ~uint64_t{0};
  };
  ResultQuery q;
  q.limit = 1;  // ignored
  EXPECT_EQ(count(q), 4u);
  q.worker = "a";
  EXPECT_EQ(count(q), 2u);
  q.worker = "d";  // on both sides of one test: counted once
  EXPECT_EQ(count(q), 1u);
  q.worker = "nobody";
  EXPECT_EQ(count(q), 0u);
  q = ResultQuery{};
  q.status = TestStatus::kFailed;
  EXPECT_EQ(count(q), 2u);
  q.run_id = "r1";
  EXPECT_EQ(count(q), 1u);
  q = ResultQuery{};
  q.worker = "b";
  q.since_ms = 25;
  EXPECT_EQ(count(q), 1u);
  // The count agrees with an unlimited query for every filter.
  q.limit = 0;
  auto all = store().queryResults(q);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), count(q));
}

TEST_P(ResultStoreContractTest, HistoryListsBothDirectionsOfAPairNewestFirst) {
  auto add = [&](const std::string& id, const std::string& ini, const std::string& tgt, int64_t t,
                 uint64_t size, Op op, Mode mode) {
    TestResult r = makeResult(id, ini, tgt, t);
    r.message_size = size;
    r.op = op;
    r.mode = mode;
    r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
    ASSERT_TRUE(store().insertResult(r).ok()) << id;
  };
  add("ab1", "a", "b", 10, 4096, Op::kWrite, Mode::kBandwidth);
  add("ba1", "b", "a", 20, 4096, Op::kWrite, Mode::kBandwidth);
  add("ab2", "a", "b", 30, 65536, Op::kRead, Mode::kBandwidth);
  add("ac1", "a", "c", 40, 4096, Op::kWrite, Mode::kBandwidth);  // another pair
  add("ab3", "a", "b", 50, 4096, Op::kWrite, Mode::kLatency);
  add("bb1", "b", "b", 60, 4096, Op::kWrite, Mode::kBandwidth);  // loopback of b
  add("ab4", "a", "b", 50, 4096, Op::kSend, Mode::kBandwidth);   // same time as ab3, later row

  auto run = [&](const HistoryQuery& q) {
    auto r = store().queryHistory(q);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? ids(*r) : std::vector<std::string>{};
  };
  using ::testing::ElementsAre;
  using ::testing::IsEmpty;
  HistoryQuery q;
  q.src = "a";
  q.dst = "b";
  EXPECT_THAT(run(q), ElementsAre("ab4", "ab3", "ab2", "ba1", "ab1"));
  q.src = "b";  // the same pair named the other way round
  q.dst = "a";
  EXPECT_THAT(run(q), ElementsAre("ab4", "ab3", "ab2", "ba1", "ab1"));
  q.both_directions = false;  // b -> a only
  EXPECT_THAT(run(q), ElementsAre("ba1"));
  q = HistoryQuery{};
  q.src = "a";
  q.dst = "b";
  q.since_ms = 20;  // inclusive
  q.until_ms = 50;  // exclusive
  EXPECT_THAT(run(q), ElementsAre("ab2", "ba1"));
  q = HistoryQuery{};
  q.src = "a";
  q.dst = "b";
  q.message_size = 4096;
  EXPECT_THAT(run(q), ElementsAre("ab4", "ab3", "ba1", "ab1"));
  q.op = Op::kWrite;
  EXPECT_THAT(run(q), ElementsAre("ab3", "ba1", "ab1"));
  q.mode = Mode::kBandwidth;
  EXPECT_THAT(run(q), ElementsAre("ba1", "ab1"));
  q.limit = 1;
  EXPECT_THAT(run(q), ElementsAre("ba1"));
  // A loopback pair is listed once, not once per direction.
  q = HistoryQuery{};
  q.src = q.dst = "b";
  EXPECT_THAT(run(q), ElementsAre("bb1"));
  q.src = "a";
  q.dst = "nobody";
  EXPECT_THAT(run(q), IsEmpty());
  // Both workers are required.
  q.dst = "";
  auto bad = store().queryHistory(q);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("dst"));
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

// `gdrmesh worker remove`: the stored registration goes, the worker's results stay.
TEST_P(ResultStoreContractTest, RemoveWorkerForgetsItsRegistrationButKeepsItsResults) {
  ASSERT_TRUE(store().upsertWorker({"junk", "h", R"({"nics":[]})", 1, 1}).ok());
  ASSERT_TRUE(store().upsertWorker({"good", "g", "{}", 1, 1}).ok());
  ASSERT_TRUE(store().insertResult(makeResult("t-junk", "junk", "good", 10)).ok());

  auto removed = store().removeWorker("junk");
  ASSERT_TRUE(removed.ok()) << removed.status().toString();
  EXPECT_TRUE(*removed);
  auto left = store().listWorkers();
  ASSERT_TRUE(left.ok()) << left.status().toString();
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].name, "good");
  auto kept = store().getResult("t-junk");
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  EXPECT_TRUE(kept->has_value()) << "a removed worker's results stay in the history";

  // Removing it again, or a name never stored, removes nothing and is no error.
  auto again = store().removeWorker("junk");
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_FALSE(*again);
  auto unknown = store().removeWorker("never-seen");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(*unknown);
  EXPECT_EQ(store().removeWorker("").status().code(), Code::kInvalidArgument);
  // It may register again.
  ASSERT_TRUE(store().upsertWorker({"junk", "h2", "{}", 5, 5}).ok());
  auto back = store().listWorkers();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->size(), 2u);
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

// ---------------------------------------------------------------------------------------------
// insertResults: one transaction, all or none.

namespace {

std::vector<TestResult> batchOf(const std::string& prefix, int n, const std::string& run_id = "") {
  std::vector<TestResult> v;
  for (int i = 0; i < n; ++i) {
    TestResult r =
        makeResult(prefix + std::to_string(i), "a", "b", 100 + i, TestStatus::kPassed, run_id);
    r.initiator.reg_path = r.target.reg_path = RegPath::kHost;
    r.plan_index = run_id.empty() ? -1 : i;
    v.push_back(std::move(r));
  }
  return v;
}

}  // namespace

TEST_P(ResultStoreContractTest, InsertResultsStoresEveryRowAndReturnsIdsInOrder) {
  std::vector<TestResult> rows = batchOf("b", 5, "s-1");
  rows[2] = makeFullResult("b-full");
  rows[2].status = TestStatus::kPassed;
  auto ids = store().insertResults(rows);
  ASSERT_TRUE(ids.ok()) << ids.status().toString();
  ASSERT_EQ(ids->size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(rows[i].test_id);
    if (i > 0) {
      EXPECT_GT((*ids)[i], (*ids)[i - 1]);
    }
    auto got = store().getResult(rows[i].test_id);
    ASSERT_TRUE(got.ok()) << got.status().toString();
    ASSERT_TRUE(got->has_value());
    rows[i].id = (*ids)[i];
    expectSameResult(rows[i], **got);
  }
  // A single insert after a batch gets the next id; an empty batch is a no-op.
  auto one = store().insertResult(makeResult("after", "a", "b", 1));
  ASSERT_TRUE(one.ok()) << one.status().toString();
  EXPECT_GT(*one, ids->back());
  auto none = store().insertResults({});
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_TRUE(none->empty());
}

TEST_P(ResultStoreContractTest, InsertResultsIsAllOrNone) {
  ASSERT_TRUE(store().insertResult(makeResult("taken", "a", "b", 1)).ok());
  ResultQuery all;
  all.limit = 0;

  // A row that collides with a stored one, in the middle of the batch.
  std::vector<TestResult> rows = batchOf("x", 4);
  rows[2].test_id = "taken";
  auto res = store().insertResults(rows);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), Code::kInvalidArgument) << res.status().toString();
  EXPECT_THAT(res.status().message(), ::testing::HasSubstr("taken"));
  auto got = store().queryResults(all);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(ids(*got), ::testing::ElementsAre("taken"));

  // Two rows of the batch with one id.
  rows = batchOf("y", 3);
  rows[2].test_id = rows[0].test_id;
  EXPECT_EQ(store().insertResults(rows).status().code(), Code::kInvalidArgument);
  // A row refused before SQLite sees it (empty id; 'auto' on a pass).
  rows = batchOf("z", 3);
  rows[1].test_id = "";
  EXPECT_EQ(store().insertResults(rows).status().code(), Code::kInvalidArgument);
  rows = batchOf("w", 3);
  rows[2].target.reg_path = RegPath::kAuto;
  EXPECT_EQ(store().insertResults(rows).status().code(), Code::kInvalidArgument);
  got = store().queryResults(all);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u);

  // The store takes the corrected batch.
  rows = batchOf("x", 4);
  auto ok = store().insertResults(rows);
  ASSERT_TRUE(ok.ok()) << ok.status().toString();
  got = store().queryResults(all);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 5u);
}

TEST_P(ResultStoreContractTest, PlanIndexDefaultsToMinusOneAndRoundTrips) {
  ASSERT_TRUE(store().insertResult(makeResult("adhoc", "a", "b", 1)).ok());
  TestResult swept = makeResult("swept", "a", "b", 2, TestStatus::kSkipped, "s-1");
  swept.plan_index = 0;
  ASSERT_TRUE(store().insertResult(swept).ok());
  auto a = store().getResult("adhoc");
  auto s = store().getResult("swept");
  ASSERT_TRUE(a.ok() && a->has_value() && s.ok() && s->has_value());
  EXPECT_EQ((*a)->plan_index, -1);
  EXPECT_EQ((*s)->plan_index, 0);
  TestResult bad = makeResult("bad", "a", "b", 3);
  bad.plan_index = -2;
  EXPECT_EQ(store().insertResult(bad).status().code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ConcurrentBatchesAndReads) {
  constexpr int kThreads = 4;
  constexpr int kBatches = 10;
  constexpr int kPerBatch = 25;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        auto rows = batchOf("t" + std::to_string(t) + "-" + std::to_string(b) + "-", kPerBatch);
        auto ids = store().insertResults(rows);
        if (!ids.ok() || ids->size() != rows.size()) {
          errors[t] = "insertResults: " + ids.status().toString();
          return;
        }
        auto got = store().getResult(rows.back().test_id);
        if (!got.ok() || !got->has_value() || (*got)->id != ids->back()) {
          errors[t] = "read after batch: " + got.status().toString();
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  ResultQuery all;
  all.limit = 0;
  auto got = store().queryResults(all);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->size(), size_t{kThreads * kBatches * kPerBatch});
}

// ---------------------------------------------------------------------------------------------
// SweepStore.

TEST_P(ResultStoreContractTest, SweepCreateGetUpdate) {
  auto none = sweeps().getSweep("s-none");
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_FALSE(none->has_value());

  SweepRecord want = makeSweep("s-1", 1000, "queued");
  ASSERT_TRUE(sweeps().createSweep(want).ok());
  auto got = sweeps().getSweep("s-1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  expectSameSweep(want, **got);

  // Every column but id and created_ms is overwritten.
  SweepRecord next = want;
  next.state = "finished";
  next.pattern = "ring";
  next.name = "renamed";
  next.spec_json = "{}";
  next.plan_json = "[]";
  next.created_ms = 5;  // ignored
  next.started_ms = 2000;
  next.finished_ms = 3000;
  next.tests_total = 12;
  next.reason = "done";
  next.verdict = "FAIL";
  next.verdicts_pass = 9;
  next.verdicts_fail = 2;
  next.verdicts_skip = 1;
  Status s = sweeps().updateSweep(next);
  ASSERT_TRUE(s.ok()) << s.toString();
  got = sweeps().getSweep("s-1");
  ASSERT_TRUE(got.ok() && got->has_value());
  next.created_ms = want.created_ms;
  expectSameSweep(next, **got);

  Status dup = sweeps().createSweep(makeSweep("s-1", 1, "queued"));
  EXPECT_EQ(dup.code(), Code::kInvalidArgument) << dup.toString();
  EXPECT_THAT(dup.message(), ::testing::HasSubstr("s-1"));
  Status unknown = sweeps().updateSweep(makeSweep("s-unknown", 1, "running"));
  EXPECT_EQ(unknown.code(), Code::kNotFound) << unknown.toString();
  EXPECT_THAT(unknown.message(), ::testing::HasSubstr("s-unknown"));
  EXPECT_EQ(sweeps().createSweep(makeSweep("", 1, "queued")).code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ListSweepsIsNewestFirstWithStateAndLimit) {
  for (const auto& [id, created, state] :
       std::vector<std::tuple<std::string, int64_t, std::string>>{{"s-b", 200, "finished"},
                                                                  {"s-a", 100, "running"},
                                                                  {"s-d", 400, "running"},
                                                                  {"s-c", 300, "finished"},
                                                                  {"s-c2", 300, "failed"}}) {
    ASSERT_TRUE(sweeps().createSweep(makeSweep(id, created, state)).ok()) << id;
  }
  auto names = [](const Result<std::vector<SweepRecord>>& r) {
    EXPECT_TRUE(r.ok()) << r.status().toString();
    std::vector<std::string> out;
    if (r.ok()) {
      for (const auto& s : *r) out.push_back(s.id);
    }
    return out;
  };
  using ::testing::ElementsAre;
  // Equal created_ms: the later creation first.
  EXPECT_THAT(names(sweeps().listSweeps(0, "")), ElementsAre("s-d", "s-c2", "s-c", "s-b", "s-a"));
  EXPECT_THAT(names(sweeps().listSweeps(2, "")), ElementsAre("s-d", "s-c2"));
  EXPECT_THAT(names(sweeps().listSweeps(0, "finished")), ElementsAre("s-c", "s-b"));
  EXPECT_THAT(names(sweeps().listSweeps(1, "running")), ElementsAre("s-d"));
  EXPECT_THAT(names(sweeps().listSweeps(0, "cancelled")), ::testing::IsEmpty());
  // A list carries each sweep's verdict counts (it reads no report).
  SweepRecord judged = makeSweep("s-b", 200, "finished");
  judged.verdict = "FAIL";
  judged.verdicts_pass = 4;
  judged.verdicts_fail = 2;
  ASSERT_TRUE(sweeps().updateSweep(judged).ok());
  auto listed = sweeps().listSweeps(0, "finished");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[1].id, "s-b");
  EXPECT_EQ((*listed)[1].verdicts_pass, 4u);
  EXPECT_EQ((*listed)[1].verdicts_fail, 2u);
  EXPECT_EQ((*listed)[1].verdicts_skip, 0u);
}

SweepTestStart marker(int plan_index, const std::string& test_id, int64_t started_ms) {
  SweepTestStart m;
  m.plan_index = plan_index;
  m.test_id = test_id;
  m.started_ms = started_ms;
  return m;
}

TEST_P(ResultStoreContractTest, UnfinishedSweepTestsAreStartedWithoutAResult) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "running")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-2", 2, "running")).ok());
  for (int i = 0; i < 4; ++i) {
    Status s = sweeps().markSweepTestStarted("s-1", marker(i, "s1-t" + std::to_string(i), 10 + i));
    ASSERT_TRUE(s.ok()) << s.toString();
  }
  ASSERT_TRUE(sweeps().markSweepTestStarted("s-2", marker(0, "s2-t0", 20)).ok());

  auto unfinished = [&](const std::string& sweep) {
    auto r = sweeps().unfinishedSweepTests(sweep);
    EXPECT_TRUE(r.ok()) << r.status().toString();
    std::vector<int> out;
    if (r.ok()) {
      for (const auto& t : *r) out.push_back(t.plan_index);
    }
    return out;
  };
  using ::testing::ElementsAre;
  EXPECT_THAT(unfinished("s-1"), ElementsAre(0, 1, 2, 3));

  // Results of the sweep (run_id = sweep id) finish their plan index; a result of another run
  // with the same plan index, or an ad-hoc one, does not.
  TestResult r1 = makeResult("s1-t1", "a", "b", 11, TestStatus::kFailed, "s-1");
  r1.plan_index = 1;
  ASSERT_TRUE(store().insertResult(r1).ok());
  TestResult other = makeResult("s2-t2", "a", "b", 11, TestStatus::kFailed, "s-2");
  other.plan_index = 2;
  ASSERT_TRUE(store().insertResult(other).ok());
  ASSERT_TRUE(store().insertResult(makeResult("adhoc", "a", "b", 11)).ok());
  EXPECT_THAT(unfinished("s-1"), ElementsAre(0, 2, 3));
  std::vector<TestResult> batch = batchOf("s1-b", 4, "s-1");  // plan indexes 0..3
  batch.erase(batch.begin() + 1, batch.begin() + 3);          // keep 0 and 3
  ASSERT_TRUE(store().insertResults(batch).ok());
  EXPECT_THAT(unfinished("s-1"), ElementsAre(2));
  EXPECT_THAT(unfinished("s-2"), ElementsAre(0));
  EXPECT_THAT(unfinished("s-none"), ::testing::IsEmpty());

  // What comes back is the marker; a re-run replaces it.
  ASSERT_TRUE(sweeps().markSweepTestStarted("s-1", marker(2, "s1-t2-rerun", 99)).ok());
  auto r = sweeps().unfinishedSweepTests("s-1");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->front().plan_index, 2);
  EXPECT_EQ(r->front().test_id, "s1-t2-rerun");
  EXPECT_EQ(r->front().started_ms, 99);
  EXPECT_EQ(r->front().initiator_worker, "");
  // A marker names its pair (a restart records the test even when it cannot plan again).
  SweepTestStart named = marker(2, "s1-t2-named", 100);
  named.initiator_worker = "sim-0000";
  named.initiator_nic = "sim0";
  named.target_worker = "sim-0001";
  named.target_nic = "sim1";
  named.message_size = 65536;
  ASSERT_TRUE(sweeps().markSweepTestStarted("s-1", named).ok());
  r = sweeps().unfinishedSweepTests("s-1");
  ASSERT_TRUE(r.ok() && r->size() == 1u);
  EXPECT_EQ(r->front().test_id, "s1-t2-named");
  EXPECT_EQ(r->front().initiator_worker, "sim-0000");
  EXPECT_EQ(r->front().initiator_nic, "sim0");
  EXPECT_EQ(r->front().target_worker, "sim-0001");
  EXPECT_EQ(r->front().target_nic, "sim1");
  EXPECT_EQ(r->front().message_size, 65536u);

  Status unknown = sweeps().markSweepTestStarted("s-unknown", marker(0, "t", 1));
  EXPECT_EQ(unknown.code(), Code::kNotFound) << unknown.toString();
  EXPECT_THAT(unknown.message(), ::testing::HasSubstr("s-unknown"));
  EXPECT_EQ(sweeps().markSweepTestStarted("s-1", marker(-1, "t", 1)).code(),
            Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ScheduleRunsAreNewestFirstPerSchedule) {
  const std::vector<ScheduleRun> runs = {
      {"nightly", 1000, "started", "s-1", 1001, ""},
      {"nightly", 3000, "missed", "", 3500, "coordinator was down"},
      {"hourly", 2000, "started", "s-2", 2001, ""},
      {"nightly", 2000, "skipped-overlap", "", 2001, "s-1 still running"},
      {"nightly", 3000, "started", "s-3", 3600, "late start"},  // same due: later record first
  };
  for (const ScheduleRun& r : runs) {
    Status s = sweeps().recordScheduleRun(r);
    ASSERT_TRUE(s.ok()) << s.toString();
  }
  auto got = sweeps().scheduleRuns("nightly", 0);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 4u);
  EXPECT_EQ((*got)[0].sweep_id, "s-3");
  EXPECT_EQ((*got)[0].state, "started");
  EXPECT_EQ((*got)[0].detail, "late start");
  EXPECT_EQ((*got)[0].recorded_ms, 3600);
  EXPECT_EQ((*got)[1].state, "missed");
  EXPECT_EQ((*got)[1].detail, "coordinator was down");
  EXPECT_EQ((*got)[2].due_ms, 2000);
  EXPECT_EQ((*got)[2].state, "skipped-overlap");
  EXPECT_EQ((*got)[3].due_ms, 1000);
  EXPECT_EQ((*got)[3].schedule, "nightly");
  got = sweeps().scheduleRuns("nightly", 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 2u);
  got = sweeps().scheduleRuns("hourly", 10);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->front().sweep_id, "s-2");
  got = sweeps().scheduleRuns("weekly", 10);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(sweeps().recordScheduleRun({"", 1, "started", "", 1, ""}).code(),
            Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ReopenKeepsSweepsMarkersAndScheduleRuns) {
  if (!harness_->persistent()) GTEST_SKIP() << "store keeps nothing across a reopen";
  SweepRecord want = makeSweep("s-keep", 7, "running");
  ASSERT_TRUE(sweeps().createSweep(want).ok());
  ASSERT_TRUE(sweeps().markSweepTestStarted("s-keep", marker(3, "t3", 8)).ok());
  ASSERT_TRUE(sweeps().recordScheduleRun({"nightly", 5, "started", "s-keep", 6, ""}).ok());
  Status s = harness_->reopen();
  ASSERT_TRUE(s.ok()) << s.toString();
  auto got = sweeps().getSweep("s-keep");
  ASSERT_TRUE(got.ok() && got->has_value());
  expectSameSweep(want, **got);
  auto unfinished = sweeps().unfinishedSweepTests("s-keep");
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ(unfinished->front().test_id, "t3");
  auto runs = sweeps().scheduleRuns("nightly", 0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

}  // namespace gdrmesh::testing
