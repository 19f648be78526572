// The shared encoding (docs/json.md, "One encoding"): each encoder's exact field names and
// values, and the sweep spec read back as written.
#include "coordinator/encoding/sweep_json.h"

#include <gtest/gtest.h>

namespace gdrmesh {
namespace {

TEST(SweepJson, ProgressFieldsTimesAndCounts) {
  SweepProgress p;
  p.id = "s-1";
  p.state = SweepState::kFinished;
  p.pattern = "all-pairs";
  p.created_ms = 1'700'000'000'000;
  p.tests_total = 6;
  p.tests_done = 6;
  p.eta_seconds = -1;
  p.verdict = "FAIL";
  p.verdict_counts = {4, 2, 0};
  const OrderedJson j = toJson(p);
  EXPECT_EQ(j["id"], "s-1");
  EXPECT_EQ(j["state"], "finished");
  EXPECT_EQ(j["created"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j["created_ms"], 1'700'000'000'000);
  EXPECT_TRUE(j["created_ms"].is_number_integer());
  EXPECT_EQ(j["started"], "") << "a time that has not come is empty";
  EXPECT_EQ(j["tests_total"], 6);
  EXPECT_EQ(j["eta_seconds"], -1.0);
  EXPECT_EQ(j["verdict_counts"], OrderedJson({{"pass", 4}, {"fail", 2}, {"skip", 0}}));
  EXPECT_EQ(j["report_pending"], false);
  // Field order is the encoding's: CSV columns follow it.
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  ASSERT_GE(keys.size(), 4u);
  EXPECT_EQ(keys[0], "id");
  EXPECT_EQ(keys[1], "state");
  EXPECT_EQ(keys[2], "pattern");
  EXPECT_EQ(keys[3], "name");
}

TEST(SweepJson, VerdictSuspectAndLink) {
  PairVerdict v;
  v.test_id = "t-1";
  v.src = "h1/mlx5_0";
  v.dst = "h2/mlx5_0";
  v.message_size = 65536;
  v.verdict = VerdictKind::kFail;
  v.reasons = {"min_bw_gbps: 12.00 Gb/s is below 150 Gb/s"};
  v.value = 12;
  v.unit = "Gb/s";
  v.op = Op::kWriteImm;
  v.mode = Mode::kLatency;
  EXPECT_EQ(toJson(v).dump(), R"({"test_id":"t-1","src":"h1/mlx5_0","dst":"h2/mlx5_0",)"
                              R"("message_size":65536,"verdict":"FAIL","reasons":)"
                              R"(["min_bw_gbps: 12.00 Gb/s is below 150 Gb/s"],"value":12.0,)"
                              R"("unit":"Gb/s","topo_class":"","retest":false,)"
                              R"("op":"write_imm","mode":"lat"})");
  EXPECT_EQ(toJson(Suspect{"nic", "h3/mlx5_1", 0.5, {"failed with 5 of 7 partners"}}).dump(),
            R"({"kind":"nic","name":"h3/mlx5_1","score":0.5,)"
            R"("evidence":["failed with 5 of 7 partners"]})");
  LinkVerdictRecord l;
  l.link = "leaf01[5] <-> spine01[1]";
  l.switch_name = "leaf01";
  l.switch_guid = 0xfffe000000001001ULL;  // above 2^53: a string, never a rounded number
  l.port = 5;
  l.remote_name = "spine01";
  l.remote_guid = 0x2001;
  l.remote_port = 1;
  l.verdict = "errors";
  const OrderedJson lj = toJson(l);
  EXPECT_EQ(lj["switch_guid"], "0xfffe000000001001");
  EXPECT_EQ(lj["remote_guid"], "0x0000000000002001");
  EXPECT_EQ(lj["port"], 5);
  EXPECT_EQ(lj["evidence"], OrderedJson::array());
}

TEST(SweepJson, ComparisonAbsentFiguresAreNull) {
  SweepComparison c;
  c.a = "s-a";
  c.b = "s-b";
  c.worse = 1;
  c.added = 2;
  ComparisonRow r;
  r.src = "h1";
  r.dst = "h2";
  r.change = ChangeKind::kNew;
  r.b = 2.5;
  r.b_status = TestStatus::kPassed;
  c.rows.push_back(r);
  const OrderedJson j = toJson(c);
  EXPECT_EQ(
      j["summary"],
      OrderedJson({{"worse", 1}, {"better", 0}, {"unchanged", 0}, {"new", 2}, {"missing", 0}}));
  const OrderedJson& row = j["rows"][0];
  EXPECT_EQ(row["change"], "new");
  EXPECT_EQ(row["op"], "write");
  EXPECT_TRUE(row["a"].is_null());
  EXPECT_EQ(row["b"], 2.5);
  EXPECT_TRUE(row["change_pct"].is_null());
  EXPECT_TRUE(row["a_status"].is_null());
  EXPECT_EQ(row["b_status"], "PASSED");
}

TEST(SweepJson, ScheduleAndActionTimesBesideTheirMilliseconds) {
  ScheduleSummary s;
  s.name = "nightly";
  s.next_run_ms = 1'700'000'000'000;
  s.missed = 2;
  const OrderedJson sj = toJson(s);
  EXPECT_EQ(sj["next_run_ms"], 1'700'000'000'000);
  EXPECT_EQ(sj["next_run"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(sj["last_run"], "");
  EXPECT_EQ(sj["missed"], 2);
  ActionRecord a;
  a.id = 7;
  a.recorded_ms = 1'700'000'000'000;
  a.node = "h3";
  a.action = "drain";
  const OrderedJson aj = toJson(a);
  EXPECT_EQ(aj["id"], 7);
  EXPECT_TRUE(aj["id"].is_number_integer()) << "not the string \"7\" of protobuf's JSON";
  EXPECT_EQ(aj["recorded_ms"], 1'700'000'000'000);
  EXPECT_EQ(aj["recorded"], "2023-11-14T22:13:20.000Z");
}

SweepSpec richSpec() {
  SweepSpec s;
  s.pattern = SweepPattern::kPairs;
  EndpointSelector a, b;
  a.worker = "h1";
  a.device = "mlx5_0";
  b.worker = "h2";
  s.pairs.emplace_back(a, b);
  s.direction = SweepDirection::kBidir;
  s.random_rounds = 7;
  s.seed = 0xfedcba9876543210ULL;  // 64 bits round-trip exactly
  s.hosts = {"h1", "h2"};
  s.exclude = {"h9"};
  s.select = {{"rack", "r12"}, {"zone", "a"}};
  s.test.op = Op::kRead;
  s.test.mode = Mode::kLatency;
  s.test.message_size = 1 << 20;
  s.test.iterations = 123;
  s.test.warmup_iterations = 4;
  s.test.num_qps = 2;
  s.test.tx_depth = 64;
  s.test.transport = TransportKind::kVerbs;
  s.test.gid_index = 3;
  s.test.use_rdma_cm = true;
  s.test.inline_size = 64;
  s.test.bidirectional = true;
  s.test.duration_seconds = 1.5;
  s.test.cq_moderation = 16;
  s.test.timeout_seconds = 30;
  s.test.initiator.memory = MemoryKind::kCuda;
  s.test.initiator.gpu = 1;
  s.test.initiator.reg = RegPath::kDmabuf;
  s.test.fault.corrupt_bytes = 5;
  s.sizes = {4096, 1 << 20};
  s.max_concurrency = 8;
  s.retries = 2;
  s.config_yaml = "thresholds: {}\n";
  s.name = "nightly";
  s.queue = true;
  s.localise = false;
  s.baseline = "previous";
  return s;
}

TEST(SweepSpecJson, RoundTripsEveryField) {
  const SweepSpec s = richSpec();
  const OrderedJson j = toJson(s);
  EXPECT_EQ(j["pattern"], "pairs");
  EXPECT_EQ(j["pairs"], OrderedJson({"h1/mlx5_0:h2"}));
  EXPECT_EQ(j["seed"], 0xfedcba9876543210ULL);
  EXPECT_EQ(j["select"], OrderedJson({{"rack", "r12"}, {"zone", "a"}}));
  EXPECT_EQ(j["test"]["op"], "read");
  EXPECT_EQ(j["test"]["transport"], "verbs");
  EXPECT_EQ(j["test"]["initiator"]["memory"], "cuda");
  auto back = sweepSpecFromJsonText(j.dump());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(toJson(*back), j) << "read back, it encodes to the same document";
  EXPECT_EQ(back->seed, s.seed);
  EXPECT_EQ(back->pairs[0].first.device, "mlx5_0");
  EXPECT_EQ(back->select, s.select);
  EXPECT_EQ(back->test.transport, TransportKind::kVerbs);
  EXPECT_EQ(back->test.fault.corrupt_bytes, 5u);
  EXPECT_FALSE(back->localise);
  // An acceptance run's spec: no pattern of its own, and no transport chosen.
  SweepSpec accept;
  accept.pattern_from_config = true;
  accept.config_yaml = "sweeps: []\n";
  auto a = sweepSpecFromJsonText(toJson(accept).dump());
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->pattern_from_config);
  EXPECT_FALSE(a->test.transport.has_value());
}

// Protobuf's JSON mapping (what older builds stored) is another form: refused here, naming the
// field, so that the store's reader takes it with the reader of that form.
TEST(SweepSpecJson, RefusesOtherFormsNamingTheField) {
  auto old = sweepSpecFromJsonText(
      R"({"pattern":"all-pairs","direction":"one","test":{"op":"OP_WRITE","message_size":"65536"}})");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("pairs"), std::string::npos) << old.status().message();
  OrderedJson j = toJson(richSpec());
  j["test"]["op"] = "OP_READ";
  auto bad = sweepSpecFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("test.op"), std::string::npos) << bad.status().message();
  j = toJson(richSpec());
  j["seed"] = "18364758544493064720";
  bad = sweepSpecFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("seed"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(sweepSpecFromJsonText("not json").ok());
}

// The reader's error for `j` (empty when it reads).
std::string specError(const OrderedJson& j) {
  auto s = sweepSpecFromJson(j);
  return s.ok() ? std::string() : s.status().message();
}

// Every error names the field by its path and what was expected of it.
TEST(SweepSpecJson, ErrorsNameTheFieldAndWhatWasExpected) {
  const std::string prefix = "sweep spec JSON: ";
  EXPECT_EQ(specError(OrderedJson::array()), prefix + "the document is not a JSON object");
  OrderedJson j = toJson(richSpec());
  j["pairs"] = {"h1h2"};
  EXPECT_EQ(specError(j), prefix + "pairs 'h1h2' is not SRC:DST");
  j = toJson(richSpec());
  j["pattern"] = "mesh";
  EXPECT_EQ(specError(j), prefix + "pattern 'mesh' is not a pattern");
  j = toJson(richSpec());
  j["select"]["rack"] = 12;
  EXPECT_EQ(specError(j), prefix + "select.rack is not a string");
  j = toJson(richSpec());
  j["sizes"] = {4096, -1};
  EXPECT_EQ(specError(j), prefix + "sizes holds an element that is not a number >= 0");
  j = toJson(richSpec());
  j["hosts"] = "h1";
  EXPECT_EQ(specError(j), prefix + "hosts is not an array");
  j = toJson(richSpec());
  j["test"].erase("initiator");
  EXPECT_EQ(specError(j), prefix + "test.initiator is missing");
  j = toJson(richSpec());
  j["test"]["initiator"]["memory"] = "gpu";
  EXPECT_EQ(specError(j), prefix + "test.initiator.memory 'gpu' is not one of its names");
  j = toJson(richSpec());
  j["test"]["target"]["gpu"] = int64_t{1} << 40;
  EXPECT_EQ(specError(j), prefix + "test.target.gpu is out of range");
  j = toJson(richSpec());
  j["test"]["num_qps"] = uint64_t{1} << 33;
  EXPECT_EQ(specError(j), prefix + "test.num_qps is too large");
  j = toJson(richSpec());
  j["test"]["transport"] = "rdma";
  EXPECT_EQ(specError(j), prefix + "test.transport 'rdma' is not a transport");
  j = toJson(richSpec());
  j["test"]["fault"] = true;
  EXPECT_EQ(specError(j), prefix + "test.fault is not an object");
  j = toJson(richSpec());
  j["test"]["fault"].erase("corrupt_bytes");
  EXPECT_EQ(specError(j), prefix + "test.fault.corrupt_bytes is missing");
  // The first error is the one reported.
  j = toJson(richSpec());
  j["test"]["op"] = 3;
  j["baseline"] = 3;
  EXPECT_EQ(specError(j), prefix + "test.op is not a string");
}

TEST(CsvTable, ColumnsInTheEncodingsOrderNestedAndJoined) {
  Suspect s{"nic", "h1/mlx5_0", 0.5, {"a", "b"}};
  const auto t = csvTable({toJson(s)}, toJson(Suspect{}));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], (std::vector<std::string>{"kind", "name", "score", "evidence"}));
  EXPECT_EQ(t[1], (std::vector<std::string>{"nic", "h1/mlx5_0", "0.5", "a; b"}));
  const auto p = csvTable({}, toJson(SweepProgress{}));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(std::find(p[0].begin(), p[0].end(), "verdict_counts.fail"), p[0].end());
}

}  // namespace
}  // namespace gdrmesh
