// The terminal matrix: glyphs, references, rails, folding at 1024 hosts, colour only on a TTY.
#include "cli/report/matrix.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

namespace gdrmesh::report {
namespace {

std::string host(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "h%04d", i);
  return buf;
}

PairVerdict verdict(const std::string& src, const std::string& dst, VerdictKind k, double gbps,
                    uint64_t size = 1 << 20) {
  PairVerdict v;
  v.test_id = src + ">" + dst + ":" + std::to_string(size);
  v.src = src;
  v.dst = dst;
  v.message_size = size;
  v.verdict = k;
  v.value = gbps;
  v.unit = gbps > 0 ? "Gb/s" : "";
  if (k == VerdictKind::kFail) v.reasons = {"status: FAILED: peer lost"};
  return v;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// 16 hosts, all pairs in one direction at 100 Gb/s, except h0003->h0007 failed, h0004->h0009
// skipped and h0001->h0002 at 75.
std::vector<PairVerdict> sixteen() {
  std::vector<PairVerdict> v;
  for (int a = 1; a <= 16; ++a) {
    for (int b = a + 1; b <= 16; ++b) {
      VerdictKind k = VerdictKind::kPass;
      double gbps = 100;
      if (a == 3 && b == 7) k = VerdictKind::kFail, gbps = 0;
      if (a == 4 && b == 9) k = VerdictKind::kSkip, gbps = 0;
      if (a == 1 && b == 2) gbps = 75;
      v.push_back(verdict(host(a), host(b), k, gbps));
    }
  }
  return v;
}

TEST(Matrix, SixteenHostsReadableWithGlyphsAndLegend) {
  const auto v = sixteen();
  auto ms = buildMatrices(v, {});
  ASSERT_EQ(ms.size(), 1u);
  const Matrix& m = ms[0];
  ASSERT_EQ(m.hosts.size(), 16u);
  EXPECT_EQ(m.cells.size(), 120u);
  EXPECT_EQ(m.count(CellKind::kFail), 1u);
  EXPECT_EQ(m.count(CellKind::kSkip), 1u);
  EXPECT_EQ(cellGlyph(m.cells.at({2, 6})), 'X');
  EXPECT_EQ(cellGlyph(m.cells.at({3, 8})), 's');
  EXPECT_EQ(cellGlyph(m.cells.at({0, 1})), '7') << "75 of a best cell of 100";
  EXPECT_EQ(cellGlyph(m.cells.at({0, 2})), '+');
  EXPECT_EQ(cellGlyph(MatrixCell{}), '.');

  const std::string text = renderTerminal(ms, {}, TerminalOptions{false, 40});
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "no ANSI when not a TTY";
  auto ls = lines(text);
  // The row of h0003: number, name, 16 cells of which the 7th is X.
  const std::string* row3 = nullptr;
  for (const auto& l : ls) {
    if (l.rfind(" 3 h0003", 0) == 0) row3 = &l;
  }
  ASSERT_NE(row3, nullptr) << text;
  const std::string cells = row3->substr(std::string(" 3 h0003").size());
  EXPECT_EQ(cells, " . . . + + + X + + + + + + + + +") << text;
  EXPECT_NE(text.find("1 fail, 1 skip"), std::string::npos) << text;
  EXPECT_NE(text.find("legend"), std::string::npos);
  EXPECT_NE(text.find("X  failed"), std::string::npos);
  EXPECT_NE(text.find("best cell 100 Gb/s"), std::string::npos) << text;
  for (const auto& l : ls) EXPECT_LE(l.size(), 100u) << "fits a terminal: " << l;
  EXPECT_EQ(text.find("folded"), std::string::npos) << "16 hosts are all drawn";
}

TEST(Matrix, ColourOnlyWhenAsked) {
  const auto v = sixteen();
  auto ms = buildMatrices(v, {});
  const std::string text = renderTerminal(ms, {}, TerminalOptions{true, 40});
  EXPECT_NE(text.find("\x1b[1;97;41mX\x1b[0m"), std::string::npos) << "failures in red";
}

TEST(Matrix, UseColourFollowsTtyAndNoColor) {
  EXPECT_TRUE(useColour(true, nullptr));
  EXPECT_TRUE(useColour(true, ""));
  EXPECT_FALSE(useColour(true, "1"));
  EXPECT_FALSE(useColour(false, nullptr));
}

TEST(Matrix, ThresholdIsTheReferenceWhenTheConfigSetsOne) {
  std::vector<PairVerdict> v{verdict("a", "b", VerdictKind::kPass, 60),
                             verdict("a", "c", VerdictKind::kPass, 40),
                             verdict("b", "c", VerdictKind::kFail, 20)};
  ClusterConfig cfg;
  cfg.thresholds.bandwidth_gbps_min = 50;
  MatrixOptions o;
  o.config = &cfg;
  auto ms = buildMatrices(v, o);
  ASSERT_EQ(ms.size(), 1u);
  const auto& ab = ms[0].cells.at({0, 1});
  EXPECT_TRUE(ab.reference_is_threshold);
  EXPECT_DOUBLE_EQ(ab.reference, 50);
  EXPECT_EQ(cellGlyph(ab), '+');
  EXPECT_EQ(cellGlyph(ms[0].cells.at({0, 2})), '8') << "40 of 50";
  EXPECT_EQ(cellGlyph(ms[0].cells.at({1, 2})), 'X') << "a failure is X whatever its figure";
  EXPECT_NE(referenceText(ms[0]).find("bandwidth_gbps_min 50 Gb/s"), std::string::npos)
      << referenceText(ms[0]);

  // A host class with a stricter threshold applies to the pairs of its hosts.
  HostClass fast;
  fast.name = "fast";
  fast.match = "a";
  fast.thresholds.bandwidth_gbps_min = 80;
  cfg.host_classes.push_back(fast);
  ms = buildMatrices(v, o);
  EXPECT_EQ(cellGlyph(ms[0].cells.at({0, 1})), '7') << "60 of a's 80";
}

TEST(Matrix, LatencyIsBetterWhenLower) {
  PairVerdict a = verdict("a", "b", VerdictKind::kPass, 0),
              b = verdict("a", "c", VerdictKind::kPass, 0);
  a.value = 2, a.unit = "us";
  b.value = 4, b.unit = "us";
  std::vector<PairVerdict> v{a, b};
  auto ms = buildMatrices(v, {});
  EXPECT_EQ(cellGlyph(ms[0].cells.at({0, 1})), '+');
  EXPECT_EQ(cellGlyph(ms[0].cells.at({0, 2})), '5') << "best 2 us over 4 us";
}

TEST(Matrix, FailureSpeaksForItsPairOverEverySize) {
  std::vector<PairVerdict> v{verdict("a", "b", VerdictKind::kPass, 90, 1 << 20),
                             verdict("a", "b", VerdictKind::kFail, 10, 4096),
                             verdict("a", "b", VerdictKind::kSkip, 0, 1 << 22)};
  auto ms = buildMatrices(v, {});
  EXPECT_EQ(cellGlyph(ms[0].cells.at({0, 1})), 'X');
}

TEST(Matrix, OneMatrixPerRailWhenHostsHaveSeveralNics) {
  std::vector<PairVerdict> v;
  for (const char* nic : {"mlx5_0", "mlx5_1"}) {
    v.push_back(verdict(std::string("a/") + nic, std::string("b/") + nic, VerdictKind::kPass, 100));
    v.push_back(verdict(std::string("a/") + nic, std::string("c/") + nic,
                        std::string(nic) == "mlx5_1" ? VerdictKind::kFail : VerdictKind::kPass,
                        100));
  }
  auto ms = buildMatrices(v, {});
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].rail, "mlx5_0");
  EXPECT_EQ(ms[1].rail, "mlx5_1");
  EXPECT_EQ(ms[0].hosts, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ms[0].count(CellKind::kFail), 0u);
  EXPECT_EQ(ms[1].count(CellKind::kFail), 1u);
  const std::string text = renderTerminal(ms, {}, TerminalOptions{});
  EXPECT_NE(text.find("rail mlx5_0: 3 hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("rail mlx5_1: 3 hosts"), std::string::npos) << text;

  // One NIC per host (or none): one matrix without a rail name.
  std::vector<PairVerdict> single{verdict("a/mlx5_0", "b/mlx5_0", VerdictKind::kPass, 1)};
  auto one = buildMatrices(single, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rail, "");
}

// 1024 hosts, three partners each (a random-pattern sweep): 3072 pairs, two failures and a
// suspect. Only their hosts are drawn; the rest are folded and counted.
TEST(Matrix, At1024HostsOnlyProblemHostsAreDrawn) {
  std::vector<PairVerdict> v;
  for (int i = 0; i < 1024; ++i) {
    for (int step : {1, 7, 31}) {
      const int j = (i + step) % 1024;
      const bool fail = (i == 100 && step == 1) || (i == 200 && step == 7);
      v.push_back(verdict(host(i), host(j), fail ? VerdictKind::kFail : VerdictKind::kPass,
                          fail ? 0 : 100));
    }
  }
  Suspect s;
  s.kind = "host";
  s.name = host(500);
  s.score = 0.9;
  auto ms = buildMatrices(v, {});
  ASSERT_EQ(ms.size(), 1u);
  ASSERT_EQ(ms[0].hosts.size(), 1024u);
  auto sel = selectHosts(ms[0], {s}, 40);
  EXPECT_EQ(sel.shown, (std::vector<size_t>{100, 101, 200, 207, 500}));
  EXPECT_EQ(sel.folded, 1019u);
  EXPECT_EQ(sel.hidden_problems, 0u);

  const std::string text = renderTerminal(ms, {s}, TerminalOptions{false, 40});
  EXPECT_LT(text.size(), 4096u) << "a few lines, never megabytes";
  EXPECT_NE(text.find("showing 5 of 1024 hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("1019 hosts folded"), std::string::npos) << text;
  EXPECT_NE(text.find(" 101 h0100"), std::string::npos) << "rows keep their sweep-wide numbers";
}

TEST(Matrix, ManyProblemHostsAreCappedAndCounted) {
  std::vector<PairVerdict> v;
  for (int i = 0; i < 1024; ++i) {
    v.push_back(verdict(host(i), host((i + 1) % 1024),
                        i % 4 == 0 ? VerdictKind::kFail : VerdictKind::kPass, 100));
  }
  auto ms = buildMatrices(v, {});
  auto sel = selectHosts(ms[0], {}, 40);
  EXPECT_EQ(sel.shown.size(), 40u);
  EXPECT_EQ(sel.hidden_problems, 512u - 40u);
  EXPECT_EQ(sel.folded, 512u);
  const std::string text = renderTerminal(ms, {}, TerminalOptions{false, 100000});
  EXPECT_LT(text.size(), 64u * 1024u) << "the cap holds whatever --max-hosts asks";
  EXPECT_NE(text.find("more hosts with problems not drawn"), std::string::npos);
}

TEST(Matrix, NoVerdictsSaysSo) {
  EXPECT_EQ(renderTerminal({}, {}, TerminalOptions{}), "no verdicts: nothing to draw\n");
}

}  // namespace
}  // namespace gdrmesh::report
