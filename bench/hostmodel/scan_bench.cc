// Full scans of fake trees: the HGX-like board (target: under 2 ms) and a 512-function host.
#include <benchmark/benchmark.h>

#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

void BM_ScanHgx(benchmark::State& state) {
  testing::TempDir dir;
  FakeHost host(dir.path());
  if (!BuildHgxHost(host)) state.SkipWithError("cannot build the HGX tree");
  for (auto _ : state) {
    auto snap = Scan(host.roots(), Selection{});
    if (!snap || snap->units.size() != 12) state.SkipWithError("unexpected scan result");
    benchmark::DoNotOptimize(snap);
  }
}
BENCHMARK(BM_ScanHgx)->Unit(benchmark::kMicrosecond);

void BM_Scan512Functions(benchmark::State& state) {
  testing::TempDir dir;
  FakeHost host(dir.path());
  if (!BuildLargeHost(host, 512)) state.SkipWithError("cannot build the large tree");
  for (auto _ : state) {
    auto snap = Scan(host.roots(), Selection{});
    if (!snap || snap->units.size() != 16) state.SkipWithError("unexpected scan result");
    benchmark::DoNotOptimize(snap);
  }
}
BENCHMARK(BM_Scan512Functions)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vfio_gpu

BENCHMARK_MAIN();
