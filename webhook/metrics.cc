#include "webhook/metrics.h"

#include <cstdio>

namespace vfio_gpu::webhook {

namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void Metrics::Record(Outcome outcome, double seconds) {
  by_outcome_[static_cast<size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Metrics::Count(Outcome outcome) const {
  return by_outcome_[static_cast<size_t>(outcome)].load(std::memory_order_relaxed);
}

std::string Metrics::Render(uint64_t cert_reloads, uint64_t cert_reload_failures) const {
  std::string out;
  out += "# HELP vfio_gpu_webhook_reviews_total AdmissionReviews answered, by outcome.\n";
  out += "# TYPE vfio_gpu_webhook_reviews_total counter\n";
  for (Outcome o : {Outcome::kAllowed, Outcome::kPatched, Outcome::kDenied, Outcome::kInvalid}) {
    out += "vfio_gpu_webhook_reviews_total{outcome=\"";
    out += OutcomeName(o);
    out += "\"} " + std::to_string(Count(o)) + "\n";
  }
  out +=
      "# HELP vfio_gpu_webhook_review_duration_seconds Time from a complete request body to the "
      "response, TLS excluded.\n";
  out += "# TYPE vfio_gpu_webhook_review_duration_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += "vfio_gpu_webhook_review_duration_seconds_bucket{le=\"" + Num(kBuckets[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_[kBuckets.size()].load(std::memory_order_relaxed);
  out += "vfio_gpu_webhook_review_duration_seconds_bucket{le=\"+Inf\"} " +
         std::to_string(cumulative) + "\n";
  out += "vfio_gpu_webhook_review_duration_seconds_sum " +
         Num(static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9) + "\n";
  out += "vfio_gpu_webhook_review_duration_seconds_count " +
         std::to_string(count_.load(std::memory_order_relaxed)) + "\n";
  out +=
      "# HELP vfio_gpu_webhook_cert_reloads_total Serving certificate reloads from disk, by "
      "result.\n";
  out += "# TYPE vfio_gpu_webhook_cert_reloads_total counter\n";
  out +=
      "vfio_gpu_webhook_cert_reloads_total{result=\"ok\"} " + std::to_string(cert_reloads) + "\n";
  out += "vfio_gpu_webhook_cert_reloads_total{result=\"error\"} " +
         std::to_string(cert_reload_failures) + "\n";
  return out;
}

}  // namespace vfio_gpu::webhook
