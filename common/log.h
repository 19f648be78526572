// The daemons' log: one seam for every line the coordinator and the worker write about what
// they do (registration, loss, sweeps, suspects, storage trouble, actions taken), on Debian's
// spdlog. Two formats:
//   text  "gdrmesh coordinator: worker a registered from ..." (WARNING: / ERROR: before the
//         message at those levels; no time: journald and terminals add their own)
//   json  one object per line: {"ts":"2026-11-27T06:01:02.345Z","level":"info",
//         "component":"coordinator","msg":"...", then the call site's fields ("sweep", "worker",
//         ...)}, for journald and Kubernetes log collectors (docs/operations.md, "Logs").
// A line's time is the component's injected Clock (unixMs) where it has one, else the system's.
// The CLI's own output to the operator (tables, errors of a command) does not go through here.
//
// Thread contract: configureLog() is called once, before the threads that log start; the rest
// may be called from any thread (spdlog's stderr sink serialises lines).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gdrmesh {

class Clock;

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };
const char* toString(LogLevel level);                       // debug | info | warn | error
const char* toString(LogFormat format);                     // text | json
Result<LogLevel> parseLogLevel(const std::string& text);    // names the flag and the choices
Result<LogFormat> parseLogFormat(const std::string& text);  // likewise

// Structured fields of a line: shown in json only (text has them in its message already).
// A key that is one of the line's own (ts, level, component, msg) is written as "field.KEY".
using LogFields = std::vector<std::pair<std::string, nlohmann::json>>;

struct LogRecord {
  int64_t unix_ms = 0;
  LogLevel level = LogLevel::kInfo;
  std::string component;  // "coordinator", "worker"
  std::string subject;    // text only, after the component ("node1": "gdrmesh worker node1: ")
  std::string msg;
  LogFields fields;
};

// The line, without its newline. json: control characters, quotes and backslashes escaped, and
// invalid UTF-8 replaced, so a line is always one valid JSON object.
std::string formatLogLine(LogFormat format, const LogRecord& record);

// The process's log (stderr): text at info until configured.
void configureLog(LogFormat format, LogLevel level);
LogFormat logFormat();
bool logEnabled(LogLevel level);
void writeLog(const LogRecord& record);  // dropped below the configured level

// One component's handle: its name, the clock its times come from (nullptr: the system's),
// the subject of its text lines and fields put on every json line.
class ComponentLog {
 public:
  explicit ComponentLog(std::string component, const Clock* clock = nullptr,
                        std::string subject = "", LogFields context = {});
  void debug(std::string msg, LogFields fields = {}) const;
  void info(std::string msg, LogFields fields = {}) const;
  void warn(std::string msg, LogFields fields = {}) const;
  void error(std::string msg, LogFields fields = {}) const;
  void at(LogLevel level, std::string msg, LogFields fields = {}) const;

 private:
  std::string component_;
  const Clock* clock_;
  std::string subject_;
  LogFields context_;
};

}  // namespace gdrmesh
