// The latency loop's stamps. perftest stamps with the CPU's cycle counter; a clock_gettime is
// dearer (about 20 ns on a server, 370 ns under qemu's TCG, where it is an emulated vDSO
// read: 2 % of a 18 us Soft-RoCE ping-pong, once per iteration on the measured path). So on
// x86-64, when the kernel itself keeps time with the TSC (its clocksource is "tsc": it has
// judged the TSC invariant and synchronised across CPUs), the loop reads the TSC and converts
// ticks to nanoseconds with the rate measured over the run itself against CLOCK_MONOTONIC
// (begin() and end() read both clocks): no frequency from /proc/cpuinfo, whose "cpu MHz" is
// the current frequency on most servers. Elsewhere the ticks are CLOCK_MONOTONIC nanoseconds.
// Header-only: it sits on the measured path.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "worker/transport/verbs/verbs_work_request.h"

namespace gdrmesh::verbs {

// Whether the TSC may stand in for CLOCK_MONOTONIC, given the kernel's current clocksource
// (the text of /sys/devices/system/clocksource/clocksource0/current_clocksource).
inline bool tscUsable(std::string_view clocksource) {
#if defined(__x86_64__)
  while (!clocksource.empty() && (clocksource.back() == '\n' || clocksource.back() == ' ')) {
    clocksource.remove_suffix(1);
  }
  return clocksource == "tsc";
#else
  (void)clocksource;
  return false;
#endif
}

// The host's answer, read once per process.
inline bool hostTscUsable() {
  static const bool kUsable = [] {
    std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string text;
    std::getline(f, text);
    return tscUsable(text);
  }();
  return kUsable;
}

class TickClock {
 public:
  explicit TickClock(bool use_tsc = hostTscUsable()) : tsc_(use_tsc) {}

  bool usesTsc() const { return tsc_; }
  uint64_t ticks() const {
#if defined(__x86_64__)
    if (tsc_) return __rdtsc();
#endif
    return nowNs();
  }
  // Around the stamped span: both clocks, read back to back.
  void begin() {
    ns0_ = nowNs();
    t0_ = ticks();
  }
  void end() {
    t1_ = ticks();
    ns1_ = nowNs();
  }
  // Nanoseconds per tick over [begin, end]; 1 for CLOCK_MONOTONIC ticks (or a span too short
  // to tell). The error is about one clock read over the span: 0.4 us in 18 ms of a
  // 1,000-iteration Soft-RoCE run.
  double nsPerTick() const {
    if (!tsc_ || t1_ <= t0_ || ns1_ <= ns0_) return 1.0;
    return static_cast<double>(ns1_ - ns0_) / static_cast<double>(t1_ - t0_);
  }

 private:
  bool tsc_;
  uint64_t ns0_ = 0, ns1_ = 0, t0_ = 0, t1_ = 0;
};

}  // namespace gdrmesh::verbs
