// Fuzzes the time zone readers of coordinator/orchestrator/cron.h through their in-memory
// entry points: TimeZone::fromTzif (the bytes of a zoneinfo file) and TimeZone::fromPosix (a
// POSIX TZ string, also the footer of a TZif file). The first byte picks the reader. A zone
// that loads is then queried around a few instants and used by nextRun(). Nothing may crash;
// offsets stay within +-26 h.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "coordinator/orchestrator/cron.h"

namespace {

void checkOffset(int32_t off) {
  if (off < -26 * 3600 || off > 26 * 3600) std::abort();
}

void query(const gdrmesh::TimeZone& zone) {
  const int64_t instants[] = {-2208988800, 0, 1795000000, 4102444800};  // 1900, 1970, 2026, 2100
  for (int64_t t : instants) {
    checkOffset(zone.offsetAt(t));
    if (auto p = zone.prevTransition(t)) {
      if (p->at_s > t) std::abort();
      checkOffset(p->after_s);
    }
    if (auto n = zone.nextTransition(t)) {
      if (n->at_s <= t) std::abort();
      checkOffset(n->after_s);
    }
  }
  static const auto every_hour = gdrmesh::parseCron("30 * * * *");
  if (!every_hour.ok()) std::abort();
  (void)gdrmesh::nextRun(*every_hour, zone, 1795000000000);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto zone = (data[0] & 1) ? gdrmesh::TimeZone::fromPosix("Fuzz/Posix", body)
                            : gdrmesh::TimeZone::fromTzif("Fuzz/Tzif", body);
  if (zone.ok()) query(*zone);
  return 0;
}
