// The daemons' log (common/log.h): the two formats of one record, JSON escaping, and the level
// filter of the process's log.
#include "common/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"

namespace gdrmesh {
namespace {

using ::testing::HasSubstr;

LogRecord logRecord(std::string msg, LogLevel level = LogLevel::kInfo) {
  LogRecord r;
  r.unix_ms = 1'790'000'000'123;  // 2026-09-21T14:13:20.123Z
  r.level = level;
  r.component = "coordinator";
  r.msg = std::move(msg);
  return r;
}

TEST(LogFormat, TextReadsAsTheDaemonsLinesDid) {
  EXPECT_EQ(formatLogLine(LogFormat::kText, logRecord("worker a registered from 127.0.0.1")),
            "gdrmesh coordinator: worker a registered from 127.0.0.1");
  EXPECT_EQ(formatLogLine(LogFormat::kText, logRecord("protocol violation", LogLevel::kWarn)),
            "gdrmesh coordinator: WARNING: protocol violation");
  EXPECT_EQ(formatLogLine(LogFormat::kText, logRecord("not stored", LogLevel::kError)),
            "gdrmesh coordinator: ERROR: not stored");
  LogRecord w = logRecord("registered with c:7070");
  w.component = "worker";
  w.subject = "node1";
  w.fields = {{"worker", "node1"}};
  EXPECT_EQ(formatLogLine(LogFormat::kText, w), "gdrmesh worker node1: registered with c:7070");
  // One record, one line.
  EXPECT_EQ(formatLogLine(LogFormat::kText, logRecord("a\nb\rc")), "gdrmesh coordinator: a b c");
}

TEST(LogFormat, JsonHasTheFieldsInOrderAndTheTimeInRfc3339Utc) {
  LogRecord r = logRecord("sweep s-1 finished", LogLevel::kWarn);
  r.fields = {{"sweep", "s-1"}, {"hosts", 8}, {"resumed", false}};
  const std::string line = formatLogLine(LogFormat::kJson, r);
  EXPECT_EQ(line, R"({"ts":"2026-09-21T14:13:20.123Z","level":"warn","component":"coordinator",)"
                  R"("msg":"sweep s-1 finished","sweep":"s-1","hosts":8,"resumed":false})");
}

TEST(LogFormat, JsonEscapesQuotesNewlinesAndControlCharacters) {
  const std::string nasty = std::string("say \"hi\"\\ \n\t\r end") + '\x01' + '\x1f' + "!";
  LogRecord r = logRecord(nasty);
  r.fields = {{"peer", "ipv4:\"1.2.3.4\"\n"}};
  const std::string line = formatLogLine(LogFormat::kJson, r);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  for (char c : line) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << line;
  EXPECT_THAT(line, HasSubstr(R"(say \"hi\"\\ \n\t\r end\u0001\u001f!)"));
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], nasty);
  EXPECT_EQ(j["peer"], "ipv4:\"1.2.3.4\"\n");
}

TEST(LogFormat, JsonReplacesInvalidUtf8AndKeepsItsOwnKeys) {
  LogRecord r = logRecord(std::string("bad \xff\xfe bytes"));
  r.fields = {{"msg", "a field named msg"}, {"level", "x"}};
  const std::string line = formatLogLine(LogFormat::kJson, r);
  const auto j = nlohmann::json::parse(line);  // valid JSON, whatever the bytes were
  EXPECT_THAT(j["msg"].get<std::string>(), HasSubstr("bad "));
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["field.msg"], "a field named msg");
  EXPECT_EQ(j["field.level"], "x");
}

TEST(LogFormat, LevelsAndFormatsParseAndRefuseWithTheChoices) {
  EXPECT_EQ(parseLogLevel("debug").value(), LogLevel::kDebug);
  EXPECT_EQ(parseLogLevel("error").value(), LogLevel::kError);
  EXPECT_EQ(parseLogFormat("json").value(), LogFormat::kJson);
  auto bad = parseLogLevel("verbose");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().toString(), HasSubstr("--log-level verbose"));
  EXPECT_THAT(bad.status().toString(), HasSubstr("debug, info, warn or error"));
  EXPECT_FALSE(parseLogFormat("xml").ok());
}

// The process's log: lines below the level are dropped; the line's time is the component's
// clock's (a ManualClock here), not the system's.
TEST(ProcessLog, FiltersByLevelAndTakesTheTimeFromTheInjectedClock) {
  ManualClock clock(1'790'000'000'123);
  const ComponentLog log("coordinator", &clock, "", {{"ctx", "c"}});
  configureLog(LogFormat::kJson, LogLevel::kWarn);
  EXPECT_FALSE(logEnabled(LogLevel::kInfo));
  EXPECT_TRUE(logEnabled(LogLevel::kWarn));
  ::testing::internal::CaptureStderr();
  log.info("dropped");
  log.debug("dropped too");
  log.warn("kept", {{"sweep", "s-9"}});
  log.error("kept too");
  const std::string err = ::testing::internal::GetCapturedStderr();
  configureLog(LogFormat::kText, LogLevel::kInfo);
  EXPECT_THAT(err, ::testing::Not(HasSubstr("dropped")));
  const auto nl = err.find('\n');
  ASSERT_NE(nl, std::string::npos) << err;
  const auto first = nlohmann::json::parse(err.substr(0, nl));
  EXPECT_EQ(first["ts"], "2026-09-21T14:13:20.123Z");
  EXPECT_EQ(first["msg"], "kept");
  EXPECT_EQ(first["ctx"], "c");
  EXPECT_EQ(first["sweep"], "s-9");
  const auto second = nlohmann::json::parse(err.substr(nl + 1));
  EXPECT_EQ(second["level"], "error");
}

}  // namespace
}  // namespace gdrmesh
