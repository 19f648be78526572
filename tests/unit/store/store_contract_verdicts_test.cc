// The store contract, continued: a sweep's report as rows (SweepStore::clearSweepReport,
// appendSweepVerdicts, putSweepReportSummary, sweepReportSummary, sweepVerdicts,
// countSweepVerdicts). Instantiated with the rest of ResultStoreContractTest.
#include <gmock/gmock.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/store/store_contract_test.h"

namespace gdrmesh::testing {
namespace {

using ::testing::ElementsAre;

VerdictRecord verdictRow(uint64_t seq, const std::string& src, const std::string& dst,
                         const std::string& verdict) {
  VerdictRecord v;
  v.seq = seq;
  v.test_id = "t-" + std::to_string(seq);
  v.src = src;
  v.dst = dst;
  v.message_size = 65536;
  v.verdict = verdict;
  v.value = 90.0 + static_cast<double>(seq) / 8;
  v.unit = "Gb/s";
  return v;
}

// Every field set: UTF-8, quotes, a NUL-free SQL metacharacter soup, extremes.
VerdictRecord fullVerdictRow(uint64_t seq) {
  VerdictRecord v = verdictRow(seq, "node-a ✓/mlx5_0", "node-'b'/mlx5_1", "FAIL");
  v.op = Op::kWriteImm;
  v.mode = Mode::kLatency;
  v.message_size = std::numeric_limits<uint64_t>::max() >> 1;
  v.reasons = {"bandwidth 10 Gb/s < 50 (bandwidth_gbps_min)", "integrity: \"quoted\"; DROP --"};
  v.value = -0.0;
  v.unit = "us";
  v.topo_class = "same-switch";
  v.retest = true;
  return v;
}

void expectSameVerdict(const VerdictRecord& want, const VerdictRecord& got) {
  EXPECT_EQ(want.seq, got.seq);
  EXPECT_EQ(want.test_id, got.test_id);
  EXPECT_EQ(want.src, got.src);
  EXPECT_EQ(want.dst, got.dst);
  EXPECT_EQ(want.op, got.op);
  EXPECT_EQ(want.mode, got.mode);
  EXPECT_EQ(want.message_size, got.message_size);
  EXPECT_EQ(want.verdict, got.verdict);
  EXPECT_EQ(want.reasons, got.reasons);
  EXPECT_EQ(want.value, got.value) << want.test_id;
  EXPECT_EQ(want.unit, got.unit);
  EXPECT_EQ(want.topo_class, got.topo_class);
  EXPECT_EQ(want.retest, got.retest);
}

std::vector<uint64_t> seqs(const Result<std::vector<VerdictRecord>>& r) {
  EXPECT_TRUE(r.ok()) << r.status().toString();
  std::vector<uint64_t> out;
  if (r.ok()) {
    for (const auto& v : *r) out.push_back(v.seq);
  }
  return out;
}

}  // namespace

TEST_P(ResultStoreContractTest, SweepVerdictsRoundTripInSeqOrderOverBatches) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "running")).ok());
  std::vector<VerdictRecord> first = {fullVerdictRow(0), verdictRow(1, "a", "b", "PASS")};
  std::vector<VerdictRecord> second = {verdictRow(2, "b", "a", "SKIP")};
  second[0].value = std::numeric_limits<double>::quiet_NaN();  // not finite: reads as 0
  second.push_back(verdictRow(3, "c", "a", "PASS"));
  second[1].value = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-1", first).ok());
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-1", second).ok());
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-1", {}).ok());  // nothing to add is fine

  VerdictQuery all;
  all.sweep_id = "s-1";
  auto got = sweeps().sweepVerdicts(all);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_EQ(got->size(), 4u);
  expectSameVerdict(first[0], (*got)[0]);
  expectSameVerdict(first[1], (*got)[1]);
  second[0].value = 0;
  second[1].value = 0;
  expectSameVerdict(second[0], (*got)[2]);
  expectSameVerdict(second[1], (*got)[3]);
  // Until its summary is stored the sweep has no report, whatever verdict rows it has.
  auto summary = sweeps().sweepReportSummary("s-1");
  ASSERT_TRUE(summary.ok()) << summary.status().toString();
  EXPECT_FALSE(summary->has_value());
}

TEST_P(ResultStoreContractTest, SweepReportSummaryRoundTripsAndIsReplaced) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "finished")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-2", 2, "finished")).ok());
  SweepReportSummary want;
  want.suspects = {{"host", "h6 ✓", 0.8333333333333334, {"failed with 5 of 7 partners"}},
                   {"link", "h1/mlx5_0<->h3/mlx5_0", 0.5, {}},
                   {"threshold", "bandwidth_gbps_min", 1e-300, {"a", "b \"c\""}}};
  want.notes = {"unequal NIC counts", "excluded: 'h9'"};
  want.figures_json = R"([{"op":"write"}])";
  ASSERT_TRUE(sweeps().putSweepReportSummary("s-1", want).ok());
  ASSERT_TRUE(sweeps().putSweepReportSummary("s-2", {}).ok());

  auto got = sweeps().sweepReportSummary("s-1");
  ASSERT_TRUE(got.ok()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  ASSERT_EQ((*got)->suspects.size(), want.suspects.size());
  for (size_t i = 0; i < want.suspects.size(); ++i) {
    EXPECT_EQ((*got)->suspects[i].kind, want.suspects[i].kind) << i;
    EXPECT_EQ((*got)->suspects[i].name, want.suspects[i].name) << i;
    EXPECT_EQ((*got)->suspects[i].score, want.suspects[i].score) << i;
    EXPECT_EQ((*got)->suspects[i].evidence, want.suspects[i].evidence) << i;
  }
  EXPECT_EQ((*got)->notes, want.notes);
  EXPECT_EQ((*got)->figures_json, want.figures_json);
  // An empty report is a report; another sweep's is its own.
  auto empty = sweeps().sweepReportSummary("s-2");
  ASSERT_TRUE(empty.ok() && empty->has_value());
  EXPECT_TRUE((*empty)->suspects.empty());
  EXPECT_TRUE((*empty)->notes.empty());
  EXPECT_EQ((*empty)->figures_json, "");

  // Stored again: replaced, not added to.
  SweepReportSummary next;
  next.notes = {"only this"};
  next.figures_json = "[]";
  ASSERT_TRUE(sweeps().putSweepReportSummary("s-1", next).ok());
  got = sweeps().sweepReportSummary("s-1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_TRUE((*got)->suspects.empty());
  EXPECT_THAT((*got)->notes, ElementsAre("only this"));
  EXPECT_EQ((*got)->figures_json, "[]");

  auto unknown = sweeps().sweepReportSummary("s-unknown");
  ASSERT_TRUE(unknown.ok()) << unknown.status().toString();
  EXPECT_FALSE(unknown->has_value());
  Status st = sweeps().putSweepReportSummary("s-unknown", next);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.toString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("s-unknown"));
}

TEST_P(ResultStoreContractTest, SweepVerdictsFilterByVerdictHostAndPairAndPage) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "finished")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-2", 2, "finished")).ok());
  ASSERT_TRUE(sweeps()
                  .appendSweepVerdicts("s-1", {verdictRow(0, "a/mlx5_0", "b/mlx5_0", "PASS"),
                                               verdictRow(1, "a/mlx5_1", "c/mlx5_0", "FAIL"),
                                               verdictRow(2, "b/mlx5_0", "a/mlx5_0", "FAIL"),
                                               verdictRow(3, "b", "c", "SKIP"),
                                               verdictRow(4, "c/mlx5_0", "a/mlx5_1", "FAIL"),
                                               verdictRow(5, "ab/mlx5_0", "b/mlx5_0", "FAIL")})
                  .ok());
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-2", {verdictRow(0, "a", "b", "FAIL")}).ok());
  VerdictQuery q;
  q.sweep_id = "s-1";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0, 1, 2, 3, 4, 5));
  q.verdict = "FAIL";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(1, 2, 4, 5));
  q.verdict = "SKIP";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(3));
  // By host: either side, the WORKER of WORKER/NIC exactly ("ab" is not "a").
  q.verdict = "";
  q.host = "a";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0, 1, 2, 4));
  q.verdict = "FAIL";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(1, 2, 4));
  // By pair: one direction; one side only.
  q = VerdictQuery{};
  q.sweep_id = "s-1";
  q.src_host = "a";
  q.dst_host = "b";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0));
  q.dst_host = "";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0, 1));
  q.src_host = "";
  q.dst_host = "a";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(2, 4));

  // Pages of the kept rows in order; the count ignores the page.
  q = VerdictQuery{};
  q.sweep_id = "s-1";
  q.verdict = "FAIL";
  q.offset = 1;
  q.limit = 2;
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(2, 4));
  q.offset = 3;
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(5));
  q.offset = 4;
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ::testing::IsEmpty());
  auto n = sweeps().countSweepVerdicts(q);
  ASSERT_TRUE(n.ok()) << n.status().toString();
  EXPECT_EQ(*n, 4u);
  q.verdict = "";
  q.host = "c";
  n = sweeps().countSweepVerdicts(q);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3u);
  q = VerdictQuery{};
  q.sweep_id = "s-2";
  n = sweeps().countSweepVerdicts(q);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  q.sweep_id = "s-unknown";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ::testing::IsEmpty());

  // A query that names no sweep, or no verdict word, is refused with the fix.
  q.sweep_id = "";
  EXPECT_EQ(sweeps().sweepVerdicts(q).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(sweeps().countSweepVerdicts(q).status().code(), Code::kInvalidArgument);
  q.sweep_id = "s-1";
  q.verdict = "fail' OR 1=1 --";
  auto bad = sweeps().sweepVerdicts(q);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().fix(), ::testing::HasSubstr("PASS, FAIL, SKIP"));
  EXPECT_EQ(sweeps().countSweepVerdicts(q).status().code(), Code::kInvalidArgument);
}

TEST_P(ResultStoreContractTest, ClearSweepReportRemovesEveryRowOfThatSweepOnly) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "finished")).ok());
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-2", 2, "finished")).ok());
  for (const char* id : {"s-1", "s-2"}) {
    ASSERT_TRUE(sweeps().appendSweepVerdicts(id, {verdictRow(0, "a", "b", "FAIL")}).ok());
    SweepReportSummary s;
    s.suspects = {{"host", "a", 1, {}}};
    s.notes = {"n"};
    ASSERT_TRUE(sweeps().putSweepReportSummary(id, s).ok());
  }
  ASSERT_TRUE(sweeps().clearSweepReport("s-1").ok());
  ASSERT_TRUE(sweeps().clearSweepReport("s-1").ok());  // none left is fine
  auto gone = sweeps().sweepReportSummary("s-1");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  VerdictQuery q;
  q.sweep_id = "s-1";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ::testing::IsEmpty());
  q.sweep_id = "s-2";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0));
  auto kept = sweeps().sweepReportSummary("s-2");
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->suspects.size(), 1u);

  // Written anew after a clear: the same seqs are free again.
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-1", {verdictRow(0, "c", "d", "PASS")}).ok());
  q.sweep_id = "s-1";
  auto again = sweeps().sweepVerdicts(q);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].src, "c");

  Status unknown = sweeps().clearSweepReport("s-unknown");
  EXPECT_EQ(unknown.code(), Code::kNotFound) << unknown.toString();
  EXPECT_THAT(unknown.message(), ::testing::HasSubstr("s-unknown"));
}

TEST_P(ResultStoreContractTest, AppendSweepVerdictsIsAllOrNone) {
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-1", 1, "running")).ok());
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-1", {verdictRow(0, "a", "b", "PASS")}).ok());
  // seq 0 again, after a new one: the batch is refused whole, naming the seq.
  Status dup = sweeps().appendSweepVerdicts(
      "s-1", {verdictRow(1, "a", "c", "PASS"), verdictRow(0, "a", "d", "PASS")});
  EXPECT_EQ(dup.code(), Code::kInvalidArgument) << dup.toString();
  EXPECT_THAT(dup.message(), ::testing::HasSubstr("seq 0"));
  VerdictQuery q;
  q.sweep_id = "s-1";
  EXPECT_THAT(seqs(sweeps().sweepVerdicts(q)), ElementsAre(0));
  Status unknown = sweeps().appendSweepVerdicts("s-unknown", {verdictRow(0, "a", "b", "PASS")});
  EXPECT_EQ(unknown.code(), Code::kNotFound) << unknown.toString();
}

TEST_P(ResultStoreContractTest, ReopenKeepsSweepReports) {
  if (!harness_->persistent()) GTEST_SKIP() << "store keeps nothing across a reopen";
  ASSERT_TRUE(sweeps().createSweep(makeSweep("s-keep", 7, "finished")).ok());
  ASSERT_TRUE(sweeps().appendSweepVerdicts("s-keep", {fullVerdictRow(0)}).ok());
  SweepReportSummary s;
  s.suspects = {{"nic", "h1/mlx5_0", 0.25, {"e"}}};
  s.notes = {"kept"};
  s.figures_json = "[]";
  ASSERT_TRUE(sweeps().putSweepReportSummary("s-keep", s).ok());
  Status st = harness_->reopen();
  ASSERT_TRUE(st.ok()) << st.toString();
  VerdictQuery q;
  q.sweep_id = "s-keep";
  auto got = sweeps().sweepVerdicts(q);
  ASSERT_TRUE(got.ok() && got->size() == 1u);
  expectSameVerdict(fullVerdictRow(0), (*got)[0]);
  auto summary = sweeps().sweepReportSummary("s-keep");
  ASSERT_TRUE(summary.ok() && summary->has_value());
  EXPECT_THAT((*summary)->notes, ElementsAre("kept"));
  ASSERT_EQ((*summary)->suspects.size(), 1u);
  EXPECT_EQ((*summary)->suspects[0].name, "h1/mlx5_0");
}

}  // namespace gdrmesh::testing
