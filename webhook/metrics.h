// Prometheus counters for /metrics: reviews by outcome and a review-latency histogram. Lock-free
// atomics, so recording costs a few nanoseconds on the request path.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "webhook/review.h"

namespace vfio_gpu::webhook {

class Metrics {
 public:
  // Upper bounds in seconds of the latency histogram's buckets (+Inf is implicit).
  static constexpr std::array<double, 12> kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5};

  void Record(Outcome outcome, double seconds);
  uint64_t Count(Outcome outcome) const;

  // Text exposition format 0.0.4. Reload counters come from the TLS reloader.
  std::string Render(uint64_t cert_reloads, uint64_t cert_reload_failures) const;

 private:
  std::array<std::atomic<uint64_t>, 4> by_outcome_{};
  std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets_{};  // non-cumulative
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> count_{0};
};

}  // namespace vfio_gpu::webhook
