#include "common/measurement.h"

#include <algorithm>
#include <cmath>

namespace gdrmesh {
namespace {

double nearestRank(const std::vector<double>& sorted, double q) {
  // Nearest-rank: the smallest value with at least q of the samples at or below it.
  auto n = sorted.size();
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted[rank - 1];
}

}  // namespace

LatencyStats computeLatency(std::vector<double> samples_us) {
  LatencyStats s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  const auto n = samples_us.size();
  s.samples = n;
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.median_us = (n % 2 == 1) ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
  // Welford for a numerically stable mean and variance.
  double mean = 0, m2 = 0;
  uint64_t k = 0;
  for (double x : samples_us) {
    ++k;
    double d = x - mean;
    mean += d / static_cast<double>(k);
    m2 += d * (x - mean);
  }
  s.mean_us = mean;
  s.stdev_us = std::sqrt(m2 / static_cast<double>(n));
  s.p99_us = nearestRank(samples_us, 0.99);
  s.p999_us = nearestRank(samples_us, 0.999);
  return s;
}

BandwidthStats bandwidthFromTotals(uint64_t bytes, uint64_t messages, double seconds) {
  BandwidthStats b;
  b.bytes = bytes;
  b.messages = messages;
  b.seconds = seconds;
  if (seconds > 0) {
    b.avg_gbps = static_cast<double>(bytes) * 8.0 / seconds / 1e9;
    b.peak_gbps = b.avg_gbps;
    b.msg_rate_mpps = static_cast<double>(messages) / seconds / 1e6;
  }
  return b;
}

BandwidthStats computeBandwidth(uint64_t message_size, const std::vector<uint64_t>& posted_ns,
                                const std::vector<uint64_t>& completed_ns, size_t window) {
  const size_t n = std::min(posted_ns.size(), completed_ns.size());
  if (n == 0) return {};
  const double seconds = static_cast<double>(completed_ns[n - 1] - posted_ns[0]) / 1e9;
  BandwidthStats b = bandwidthFromTotals(message_size * n, n, seconds);
  window = std::max<size_t>(1, std::min(window, n));
  double best_ns_per_msg = 0;
  for (size_t i = 0; i + window <= n; ++i) {
    uint64_t t = completed_ns[i + window - 1] - posted_ns[i];
    double per = static_cast<double>(t) / static_cast<double>(window);
    if (t > 0 && (best_ns_per_msg == 0 || per < best_ns_per_msg)) best_ns_per_msg = per;
  }
  if (best_ns_per_msg > 0) {
    b.peak_gbps = static_cast<double>(message_size) * 8.0 / best_ns_per_msg;
  }
  b.peak_gbps = std::max(b.peak_gbps, b.avg_gbps);
  return b;
}

}  // namespace gdrmesh
