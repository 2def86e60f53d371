// The pure decision alone (no TLS, no HTTP): what a review costs the webhook's CPU, for a GPU pod
// (patched), a GPU pod on runc (denied) and a pod that asks for no GPU (the common case, which
// should cost little more than parsing the body).
#include <benchmark/benchmark.h>

#include <string>

#include "webhook/review.h"

namespace {

using vfio_gpu::webhook::Config;
using vfio_gpu::webhook::Review;

std::string Pod(const std::string& cls, const std::string& limits) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
         R"("kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"team-a","operation":"CREATE",)"
         R"("userInfo":{"username":"alice"},"object":{"metadata":{"name":"p","labels":{"a":"b"},)"
         R"("annotations":{"prometheus.io/scrape":"true"}},"spec":{)" +
         cls +
         R"("containers":[{"name":"side","image":"envoy","resources":{"limits":{"cpu":"1"}}},)"
         R"({"name":"main","image":"cuda","env":[{"name":"A","value":"1"}],"resources":{"limits":)" +
         limits + R"(}}],"volumes":[{"name":"d","emptyDir":{}}]}}}})";
}

void Run(benchmark::State& state, const std::string& body) {
  Config config;
  for (auto _ : state) benchmark::DoNotOptimize(Review(config, body));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_ReviewGpuPodPatched(benchmark::State& s) {
  Run(s, Pod("", R"({"nvidia.com/pgpu":"8","cpu":"8"})"));
}
void BM_ReviewGpuPodDenied(benchmark::State& s) {
  Run(s, Pod(R"("runtimeClassName":"runc",)", R"({"nvidia.com/pgpu":"8"})"));
}
void BM_ReviewNonGpuPod(benchmark::State& s) {
  Run(s, Pod("", R"({"cpu":"8"})"));
}

BENCHMARK(BM_ReviewGpuPodPatched);
BENCHMARK(BM_ReviewGpuPodDenied);
BENCHMARK(BM_ReviewNonGpuPod);

}  // namespace

BENCHMARK_MAIN();
