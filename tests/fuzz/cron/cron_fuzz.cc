// Fuzzes cron expressions (coordinator/orchestrator/cron.h): schedules come from the cluster
// config file. A parsed expression must fire (parseCron rejects one that never can), so
// nextRun() in UTC must find a run, strictly after the start, on a whole minute.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "coordinator/orchestrator/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto expr = gdrmesh::parseCron(text);
  if (!expr.ok()) return 0;
  const int64_t start_ms = 1795000000123;  // 2026-11-18, mid-minute
  auto next = gdrmesh::nextRun(*expr, gdrmesh::TimeZone::utc(), start_ms);
  if (!next.ok() || *next <= start_ms || *next % 60000 != 0) std::abort();
  return 0;
}
