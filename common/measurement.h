// Measured figures and how they are computed. Units are fixed and stated in every name:
//   bandwidth in Gb/s (1e9 bit/s) and GB/s (1e9 byte/s), decimal as perftest --report_gbits;
//   message rate in Mpps (1e6 messages/s); latency in microseconds (1e-6 s).
// The definitions are written out in docs/metrics.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gdrmesh {

struct LatencyStats {
  uint64_t samples = 0;
  double min_us = 0, max_us = 0, median_us = 0, mean_us = 0, stdev_us = 0;
  double p99_us = 0, p999_us = 0;
};

// Latency statistics over one-way samples (RTT/2 each, as perftest reports for write and send).
// Percentiles use the nearest-rank method on the sorted samples. Stdev is the population stdev.
LatencyStats computeLatency(std::vector<double> samples_us);

struct BandwidthStats {
  uint64_t bytes = 0;     // payload bytes moved in the measured (post-warm-up) iterations
  uint64_t messages = 0;  // measured messages
  double seconds = 0;     // first post to last completion
  double avg_gbps = 0;    // bytes * 8 / seconds / 1e9
  double peak_gbps = 0;   // best window, see computeBandwidth
  double msg_rate_mpps = 0;
  double avgGBps() const { return avg_gbps / 8.0; }
  double peakGBps() const { return peak_gbps / 8.0; }
};

// Bandwidth from per-message post and completion times (nanoseconds, same monotonic clock).
// Average: all bytes over first post to last completion. Peak: the best rate over any run of
// `window` consecutive messages (window = max(1, min(n, window))), measured from the post of the
// first to the completion of the last, as perftest's peak over a posting window.
BandwidthStats computeBandwidth(uint64_t message_size, const std::vector<uint64_t>& posted_ns,
                                const std::vector<uint64_t>& completed_ns, size_t window);

// Aggregates of a fixed total: bytes, messages and seconds.
BandwidthStats bandwidthFromTotals(uint64_t bytes, uint64_t messages, double seconds);

// Port counter deltas over a test (sysfs /sys/class/infiniband/DEV/ports/N/counters), as
// perftest -W. `valid` is false where they could not be read.
struct PortCounters {
  bool valid = false;
  uint64_t xmit_bytes = 0, rcv_bytes = 0, xmit_packets = 0, rcv_packets = 0;
  uint64_t errors = 0;  // symbol, rcv, xmit_discards, link_downed... summed
};

// Everything one test run measured on the side that measured it.
struct Measurement {
  uint64_t message_size = 0;
  uint64_t iterations = 0;
  uint64_t warmup_iterations = 0;
  bool has_bandwidth = false;
  BandwidthStats bw;
  bool has_latency = false;
  LatencyStats lat;
  double staging_seconds = 0;  // host<->GPU copies of the staged path, included in bw.seconds
  PortCounters counters;
};

}  // namespace gdrmesh
