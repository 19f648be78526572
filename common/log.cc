#include "common/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <memory>

#include "common/clock.h"
#include "common/units.h"

namespace gdrmesh {

namespace {

spdlog::level::level_enum spdlogLevelOf(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// The process's logger: spdlog's thread-safe stderr sink, the line already formatted ("%v"),
// flushed at every line (a daemon killed by a signal loses nothing it logged). Never destroyed:
// a thread that logs while the process exits finds it still there.
spdlog::logger& processLogger() {
  static spdlog::logger* const kLogger = [] {
    auto* l = new spdlog::logger("gdrmesh", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *kLogger;
}

std::atomic<LogFormat> g_log_format{LogFormat::kText};

}  // namespace

const char* toString(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

const char* toString(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

Result<LogLevel> parseLogLevel(const std::string& text) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == toString(l)) return l;
  }
  return invalidArgument("--log-level " + text + ": no such level",
                         "give debug, info, warn or error");
}

Result<LogFormat> parseLogFormat(const std::string& text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return invalidArgument("--log-format " + text + ": no such format", "give text or json");
}

std::string formatLogLine(LogFormat format, const LogRecord& record) {
  if (format == LogFormat::kText) {
    std::string line = "gdrmesh " + record.component;
    if (!record.subject.empty()) line += " " + record.subject;
    line += ": ";
    if (record.level == LogLevel::kWarn) line += "WARNING: ";
    if (record.level == LogLevel::kError) line += "ERROR: ";
    if (record.level == LogLevel::kDebug) line += "debug: ";
    line += record.msg;
    // One line per record: a newline inside a message would split it for readers of the log.
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return line;
  }
  nlohmann::ordered_json j;
  j["ts"] = formatRfc3339(record.unix_ms);
  j["level"] = toString(record.level);
  j["component"] = record.component;
  j["msg"] = record.msg;
  for (const auto& [key, value] : record.fields) {
    const bool own = key == "ts" || key == "level" || key == "component" || key == "msg";
    j[own ? "field." + key : key] = value;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void configureLog(LogFormat format, LogLevel level) {
  g_log_format.store(format);
  processLogger().set_level(spdlogLevelOf(level));
}

LogFormat logFormat() {
  return g_log_format.load();
}

bool logEnabled(LogLevel level) {
  return processLogger().should_log(spdlogLevelOf(level));
}

void writeLog(const LogRecord& record) {
  spdlog::logger& logger = processLogger();
  const spdlog::level::level_enum level = spdlogLevelOf(record.level);
  if (!logger.should_log(level)) return;
  logger.log(level, formatLogLine(logFormat(), record));
}

ComponentLog::ComponentLog(std::string component, const Clock* clock, std::string subject,
                           LogFields context)
    : component_(std::move(component)),
      clock_(clock),
      subject_(std::move(subject)),
      context_(std::move(context)) {}

void ComponentLog::at(LogLevel level, std::string msg, LogFields fields) const {
  if (!logEnabled(level)) return;
  LogRecord r;
  r.unix_ms = clock_ != nullptr ? clock_->unixMs() : nowUnixMs();
  r.level = level;
  r.component = component_;
  r.subject = subject_;
  r.msg = std::move(msg);
  r.fields = context_;
  for (auto& f : fields) r.fields.push_back(std::move(f));
  writeLog(r);
}

void ComponentLog::debug(std::string msg, LogFields fields) const {
  at(LogLevel::kDebug, std::move(msg), std::move(fields));
}
void ComponentLog::info(std::string msg, LogFields fields) const {
  at(LogLevel::kInfo, std::move(msg), std::move(fields));
}
void ComponentLog::warn(std::string msg, LogFields fields) const {
  at(LogLevel::kWarn, std::move(msg), std::move(fields));
}
void ComponentLog::error(std::string msg, LogFields fields) const {
  at(LogLevel::kError, std::move(msg), std::move(fields));
}

}  // namespace gdrmesh
