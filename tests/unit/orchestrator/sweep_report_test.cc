// A sweep's report as the store keeps it (sweep_report_rows.h, sweep_summary.h): verdicts and
// suspects to rows and back, and the figures' stored document.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "coordinator/orchestrator/figure_json.h"
#include "coordinator/orchestrator/sweep_report_rows.h"
#include "coordinator/orchestrator/sweep_summary.h"

namespace gdrmesh {
namespace {

PairVerdict verdict(int i) {
  PairVerdict v;
  v.test_id = "t-" + std::to_string(i);
  v.src = "h" + std::to_string(i % 4) + "/mlx5_0";
  v.dst = "h\"odd\\name\n" + std::to_string(i);
  v.message_size = 65536u * static_cast<uint64_t>(i + 1);
  v.verdict =
      i % 3 == 0 ? VerdictKind::kFail : (i % 3 == 1 ? VerdictKind::kPass : VerdictKind::kSkip);
  if (i % 3 == 0) v.reasons = {"bandwidth 12.5 Gb/s < 25 Gb/s (bandwidth_gbps_min)", "ünïcode ✓"};
  v.value = 12.5 + i / 3.0;
  v.unit = i % 5 == 0 ? "us" : "Gb/s";
  v.topo_class = i % 2 ? "PIX" : "";
  v.retest = i % 4 == 3;
  v.op = i % 2 ? Op::kRead : Op::kSend;
  v.mode = i % 5 == 0 ? Mode::kLatency : Mode::kBandwidth;
  return v;
}

uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

TEST(SweepReportRows, AVerdictRoundTripsThroughItsRow) {
  for (int i = 0; i < 12; ++i) {
    const PairVerdict v = verdict(i);
    const VerdictRecord r = verdictRecordOf(v, 40 + static_cast<uint64_t>(i));
    EXPECT_EQ(r.seq, 40u + static_cast<uint64_t>(i));
    EXPECT_EQ(r.verdict, toString(v.verdict));
    const PairVerdict back = pairVerdictOf(r);
    EXPECT_EQ(back.test_id, v.test_id);
    EXPECT_EQ(back.src, v.src);
    EXPECT_EQ(back.dst, v.dst);
    EXPECT_EQ(back.message_size, v.message_size);
    EXPECT_EQ(back.verdict, v.verdict);
    EXPECT_EQ(back.reasons, v.reasons);
    EXPECT_EQ(bitsOf(back.value), bitsOf(v.value));
    EXPECT_EQ(back.unit, v.unit);
    EXPECT_EQ(back.topo_class, v.topo_class);
    EXPECT_EQ(back.retest, v.retest);
    EXPECT_EQ(back.op, v.op);
    EXPECT_EQ(back.mode, v.mode);
  }
}

TEST(SweepReportRows, AFigureThatIsNotFiniteIsStoredAsZero) {
  PairVerdict v = verdict(1);
  v.value = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(verdictRecordOf(v, 0).value, 0.0);
  v.value = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(verdictRecordOf(v, 0).value, 0.0);
}

TEST(SweepReportRows, ASuspectRoundTripsThroughItsRow) {
  const Suspect s{"link", "h1/mlx5_0<->h3/mlx5_0", 0.8333333333333334, {"a", "b"}};
  const Suspect back = suspectOf(suspectRecordOf(s));
  EXPECT_EQ(back.kind, s.kind);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(bitsOf(back.score), bitsOf(s.score));
  EXPECT_EQ(back.evidence, s.evidence);
  EXPECT_EQ(verdictWord(VerdictFilter::kFailed), "FAIL");
  EXPECT_EQ(verdictWord(VerdictFilter::kAll), "");
}

TEST(SweepReportRows, FiguresRoundTripExactlyThroughTheirDocument) {
  std::vector<PairVerdict> verdicts;
  for (int i = 0; i < 60; ++i) verdicts.push_back(verdict(i));
  const std::vector<FigureSummary> want = summariseFigures(verdicts);
  ASSERT_GT(want.size(), 1u);
  const auto got = figuresFromJson(figuresJson(want));
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const FigureSummary& a = want[i];
    const FigureSummary& b = (*got)[i];
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.mode, b.mode);
    EXPECT_EQ(a.message_size, b.message_size);
    EXPECT_EQ(a.unit, b.unit);
    EXPECT_EQ(a.pairs, b.pairs);
    EXPECT_EQ(bitsOf(a.min), bitsOf(b.min));
    EXPECT_EQ(bitsOf(a.median), bitsOf(b.median));
    EXPECT_EQ(bitsOf(a.max), bitsOf(b.max));
    ASSERT_EQ(a.worst.size(), b.worst.size());
    for (size_t k = 0; k < a.worst.size(); ++k) {
      EXPECT_EQ(a.worst[k].src, b.worst[k].src);
      EXPECT_EQ(a.worst[k].dst, b.worst[k].dst);
      EXPECT_EQ(bitsOf(a.worst[k].value), bitsOf(b.worst[k].value));
    }
    ASSERT_EQ(a.worst_hosts.size(), b.worst_hosts.size());
    for (size_t k = 0; k < a.worst_hosts.size(); ++k) {
      EXPECT_EQ(a.worst_hosts[k].host, b.worst_hosts[k].host);
      EXPECT_EQ(bitsOf(a.worst_hosts[k].median), bitsOf(b.worst_hosts[k].median));
      EXPECT_EQ(a.worst_hosts[k].pairs, b.worst_hosts[k].pairs);
    }
  }
  // One verdict at a time gives what the whole list gives.
  FigureAccumulator acc;
  for (const auto& v : verdicts) acc.add(v);
  EXPECT_EQ(figuresJson(acc.result()), figuresJson(want));
}

// Issue #19 (D4): a stored report keeps its figures in the one encoding `-o json` prints and the
// API serves (figureJson), not in a compact form of its own.
TEST(SweepReportRows, FiguresAreStoredInTheSharedEncoding) {
  std::vector<PairVerdict> verdicts;
  for (int i = 0; i < 12; ++i) verdicts.push_back(verdict(i));
  const std::vector<FigureSummary> figures = summariseFigures(verdicts);
  ASSERT_GT(figures.size(), 1u);
  nlohmann::ordered_json want = nlohmann::ordered_json::array();
  for (const auto& f : figures) want.push_back(figureJson(f));
  EXPECT_EQ(figuresJson(figures), want.dump());
  EXPECT_NE(figuresJson(figures).find(R"("message_size":)"), std::string::npos);
}

// The rows builds before the shared encoding stored ("size", worst pairs and hosts as arrays,
// null for a figure that was not finite) still read.
TEST(SweepReportRows, FiguresStoredInTheOlderCompactFormStillRead) {
  const auto got =
      figuresFromJson(R"([{"max":30.5,"median":20.25,"min":null,"mode":"bw","op":"read","pairs":3,)"
                      R"("size":65536,"unit":"Gb/s","worst":[["h1/mlx5_0","h2/mlx5_0",10.125]],)"
                      R"("worst_hosts":[["h2",15.5,2]]}])");
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 1u);
  const FigureSummary& f = got->front();
  EXPECT_EQ(f.op, Op::kRead);
  EXPECT_EQ(f.mode, Mode::kBandwidth);
  EXPECT_EQ(f.message_size, 65536u);
  EXPECT_EQ(f.unit, "Gb/s");
  EXPECT_EQ(f.pairs, 3u);
  EXPECT_TRUE(std::isnan(f.min));
  EXPECT_EQ(f.median, 20.25);
  EXPECT_EQ(f.max, 30.5);
  ASSERT_EQ(f.worst.size(), 1u);
  EXPECT_EQ(f.worst[0].src, "h1/mlx5_0");
  EXPECT_EQ(f.worst[0].dst, "h2/mlx5_0");
  EXPECT_EQ(f.worst[0].value, 10.125);
  ASSERT_EQ(f.worst_hosts.size(), 1u);
  EXPECT_EQ(f.worst_hosts[0].host, "h2");
  EXPECT_EQ(f.worst_hosts[0].median, 15.5);
  EXPECT_EQ(f.worst_hosts[0].pairs, 2u);
  // Read back and stored again, it is in the shared encoding.
  EXPECT_EQ(figuresJson(*got), "[" + figureJson(f).dump() + "]");
}

TEST(SweepReportRows, TextThatIsNotAFiguresDocumentIsNone) {
  EXPECT_FALSE(figuresFromJson("").has_value());  // a converted report: summed up when read
  EXPECT_FALSE(figuresFromJson("not json").has_value());
  EXPECT_FALSE(figuresFromJson("{}").has_value());
  EXPECT_FALSE(figuresFromJson("[1]").has_value());
  EXPECT_FALSE(figuresFromJson(R"([{"size":"big"}])").has_value());
  const auto none = figuresFromJson("[]");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace gdrmesh
