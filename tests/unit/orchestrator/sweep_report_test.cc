// The stored sweep report: written one element at a time and read back one verdict at a time,
// byte-for-byte the format a whole-document dump gave (reports stored before still parse).
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "coordinator/orchestrator/sweep_manager.h"

namespace gdrmesh {
namespace {

PairVerdict verdict(int i) {
  PairVerdict v;
  v.test_id = "t-" + std::to_string(i);
  v.src = "h" + std::to_string(i) + "/mlx5_0";
  v.dst = "h\"odd\\name\n" + std::to_string(i);  // escapes must survive
  v.message_size = 65536u * static_cast<uint64_t>(i + 1);
  v.verdict =
      i % 3 == 0 ? VerdictKind::kFail : (i % 3 == 1 ? VerdictKind::kPass : VerdictKind::kSkip);
  if (i % 3 == 0) v.reasons = {"bandwidth 12.5 Gb/s < 25 Gb/s (bandwidth_gbps_min)", "ünïcode ✓"};
  v.value = 12.5 + i;
  v.unit = "Gb/s";
  v.topo_class = i % 2 ? "PIX" : "";
  v.retest = i % 4 == 3;
  v.op = i % 2 ? Op::kRead : Op::kSend;
  v.mode = i % 5 == 0 ? Mode::kLatency : Mode::kBandwidth;
  return v;
}

// The whole-document dump the report was written with before.
std::string domDump(const std::vector<PairVerdict>& verdicts, const std::vector<Suspect>& suspects,
                    const std::vector<std::string>& notes) {
  nlohmann::json j;
  j["verdicts"] = nlohmann::json::array();
  for (const auto& v : verdicts) {
    j["verdicts"].push_back({{"test_id", v.test_id},
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
  j["suspects"] = nlohmann::json::array();
  for (const auto& s : suspects) {
    j["suspects"].push_back(
        {{"kind", s.kind}, {"name", s.name}, {"score", s.score}, {"evidence", s.evidence}});
  }
  j["notes"] = notes;
  return j.dump();
}

TEST(SweepReportTest, WrittenAsTheWholeDocumentDumpWasAndReadBack) {
  std::vector<PairVerdict> verdicts;
  for (int i = 0; i < 50; ++i) verdicts.push_back(verdict(i));
  std::vector<Suspect> suspects = {{"host", "h3", 1.0, {"failed with 3 of 3 partners: h1, h2"}},
                                   {"link", "h1<->h2", 0.25, {}}};
  std::vector<std::string> notes = {"retested 2 pairs", "line\nbreak"};
  const std::string text = sweepReportJson(verdicts, suspects, notes);
  EXPECT_EQ(text, domDump(verdicts, suspects, notes));

  const auto back = parseSweepReportJson(text);
  ASSERT_EQ(back.verdicts.size(), verdicts.size());
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const auto& a = verdicts[i];
    const auto& b = back.verdicts[i];
    EXPECT_EQ(b.test_id, a.test_id);
    EXPECT_EQ(b.src, a.src);
    EXPECT_EQ(b.dst, a.dst);
    EXPECT_EQ(b.message_size, a.message_size);
    EXPECT_EQ(b.verdict, a.verdict) << i;
    EXPECT_EQ(b.reasons, a.reasons);
    EXPECT_DOUBLE_EQ(b.value, a.value);
    EXPECT_EQ(b.unit, a.unit);
    EXPECT_EQ(b.topo_class, a.topo_class);
    EXPECT_EQ(b.retest, a.retest) << i;
    EXPECT_EQ(b.op, a.op) << i;  // what the test ran: the figures summary groups by it
    EXPECT_EQ(b.mode, a.mode) << i;
  }
  // A report stored before verdicts said their op and mode reads as write bw.
  const auto old = parseSweepReportJson(
      R"({"notes":[],"suspects":[],"verdicts":[{"dst":"b","size":4,"src":"a","verdict":"PASS"}]})");
  ASSERT_EQ(old.verdicts.size(), 1u);
  EXPECT_EQ(old.verdicts[0].op, Op::kWrite);
  EXPECT_EQ(old.verdicts[0].mode, Mode::kBandwidth);
  ASSERT_EQ(back.suspects.size(), 2u);
  EXPECT_EQ(back.suspects[0].name, "h3");
  EXPECT_EQ(back.suspects[0].evidence, suspects[0].evidence);
  EXPECT_DOUBLE_EQ(back.suspects[1].score, 0.25);
  EXPECT_EQ(back.notes, notes);
}

// The field-by-field writer against the DOM dump where they could part: numbers nlohmann
// formats its own way (NaN and infinities become null, integral doubles keep ".0", exponents),
// every byte that needs or might need escaping, and empty strings and lists.
TEST(SweepReportTest, NumbersAndEscapesAsTheDomDumpWritesThem) {
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      25.0,
                                      1e-7,
                                      1.5e300,
                                      -3.25,
                                      0.1 + 0.2,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::denorm_min()};
  const std::vector<std::string> texts = {
      "",         "plain",       "tab\there",      std::string("nul\0in", 6),
      "\x01\x1f", "del\x7f",     "quote\"",        "back\\slash",
      "/slash",   "caf\xc3\xa9", "\xe2\x9c\x93 ok"};
  std::vector<PairVerdict> verdicts;
  for (size_t i = 0; i < values.size() * texts.size(); ++i) {
    PairVerdict v;
    v.value = values[i % values.size()];
    const std::string& t = texts[i % texts.size()];
    v.test_id = t;
    v.src = texts[(i + 1) % texts.size()];
    v.dst = texts[(i + 2) % texts.size()];
    v.unit = t;
    v.topo_class = t;
    if (i % 2) v.reasons = {t, texts[(i + 3) % texts.size()]};
    v.message_size = i % 3 ? std::numeric_limits<uint64_t>::max() : i;
    v.verdict = i % 2 ? VerdictKind::kPass : VerdictKind::kFail;
    v.retest = i % 5 == 0;
    verdicts.push_back(v);
  }
  EXPECT_EQ(sweepReportJson(verdicts, {}, texts), domDump(verdicts, {}, texts));
}

// Invalid UTF-8 is refused as the DOM dump refused it (the workers' texts are cleaned before).
TEST(SweepReportTest, InvalidUtf8IsRefusedAsBefore) {
  PairVerdict v;
  v.src = "bad\xff";
  EXPECT_THROW(domDump({v}, {}, {}), nlohmann::json::type_error);
  EXPECT_THROW(sweepReportJson({v}, {}, {}), nlohmann::json::type_error);
}

TEST(SweepReportTest, AnEmptyReportRoundTrips) {
  const std::string text = sweepReportJson({}, {}, {});
  EXPECT_EQ(text, domDump({}, {}, {}));
  const auto back = parseSweepReportJson(text);
  EXPECT_TRUE(back.verdicts.empty());
  EXPECT_TRUE(back.suspects.empty());
  EXPECT_TRUE(back.notes.empty());
}

TEST(SweepReportTest, TextThatIsNotAReportGivesNothing) {
  for (const std::string bad : {"", "[]", "{\"verdicts\":[{\"test_id\":\"t-1\"}", "not json",
                                "{\"verdicts\":[{\"test_id\":\"t-1\"}]} trailing"}) {
    const auto back = parseSweepReportJson(bad);
    EXPECT_TRUE(back.verdicts.empty()) << bad;
    EXPECT_TRUE(back.suspects.empty()) << bad;
  }
}

TEST(SweepReportTest, FieldsOfTheWrongTypeTakeTheirDefaults) {
  const auto back = parseSweepReportJson(
      R"({"verdicts":[{"test_id":7,"size":"big","verdict":"MAYBE","retest":"yes","reasons":"r"},3],)"
      R"("suspects":[{"kind":"host","score":"high"}],"notes":"n"})");
  ASSERT_EQ(back.verdicts.size(), 1u);  // the bare 3 is not a verdict
  EXPECT_EQ(back.verdicts[0].test_id, "");
  EXPECT_EQ(back.verdicts[0].message_size, 0u);
  EXPECT_EQ(back.verdicts[0].verdict, VerdictKind::kSkip);
  EXPECT_FALSE(back.verdicts[0].retest);
  EXPECT_TRUE(back.verdicts[0].reasons.empty());
  ASSERT_EQ(back.suspects.size(), 1u);
  EXPECT_DOUBLE_EQ(back.suspects[0].score, 0.0);
  EXPECT_TRUE(back.notes.empty());
}

// Duplicate keys: the later one wins, as in a DOM read; a field overwritten by a value of the
// wrong type takes its default; nested containers where a value belongs are skipped.
TEST(SweepReportTest, LaterDuplicatesWinAndNestedJunkIsSkipped) {
  const auto back = parseSweepReportJson(
      R"({"verdicts":[{"test_id":"a","test_id":"b","size":5,"size":{"x":[1,2]},)"
      R"("reasons":["r1"],"reasons":["r2","r3"],"value":1.5,"unit":["Gb/s"],"verdict":"FAIL",)"
      R"("extra":{"verdicts":[{"test_id":"inner"}]},"retest":true}],)"
      R"("suspects":[{"kind":"nic","evidence":["e1",{"no":1},"e2"],"score":2}],)"
      R"("notes":["n1",7,"n2"],"notes":["n3"],"other":{"notes":["x"]}})");
  ASSERT_EQ(back.verdicts.size(), 1u);
  const PairVerdict& v = back.verdicts[0];
  EXPECT_EQ(v.test_id, "b");
  EXPECT_EQ(v.message_size, 0u);
  EXPECT_EQ(v.reasons, (std::vector<std::string>{"r2", "r3"}));
  EXPECT_DOUBLE_EQ(v.value, 1.5);
  EXPECT_EQ(v.unit, "");
  EXPECT_EQ(v.verdict, VerdictKind::kFail);
  EXPECT_TRUE(v.retest);
  ASSERT_EQ(back.suspects.size(), 1u);
  EXPECT_EQ(back.suspects[0].kind, "nic");
  EXPECT_EQ(back.suspects[0].evidence, (std::vector<std::string>{"e1", "e2"}));
  EXPECT_DOUBLE_EQ(back.suspects[0].score, 2.0);
  EXPECT_EQ(back.notes, std::vector<std::string>{"n3"});
}

TEST(SweepReportTest, ManyVerdictsRoundTrip) {
  std::vector<PairVerdict> verdicts;
  for (int i = 0; i < 20000; ++i) verdicts.push_back(verdict(i));
  const auto back = parseSweepReportJson(sweepReportJson(verdicts, {}, {}));
  ASSERT_EQ(back.verdicts.size(), verdicts.size());
  EXPECT_EQ(back.verdicts.back().test_id, "t-19999");
}

}  // namespace
}  // namespace gdrmesh
