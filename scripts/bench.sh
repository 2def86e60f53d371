#!/usr/bin/env bash
# Builds the benchmarks (optimised, no sanitizers) and runs them, one after the other.
#
#   scripts/bench.sh            # all of them
#   scripts/bench.sh plugin     # only those whose name matches (scan, plugin, shim, webhook)
#
# Speed goals are measured here, never asserted by tests. Latency tails are sensitive to whatever
# else the machine runs: when run as root, each bench runs under SCHED_FIFO (`chrt -f 50`, inherited
# by the daemons it forks) so that a build running next to it does not show up as our p99. Set
# VFIO_GPU_BENCH_RT=0 to measure at normal priority. Results are summarised in README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${VFIO_GPU_BENCH_BUILD:-$here/build-bench}"
filter="${1:-}"

"$here/scripts/install-deps.sh"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVFIO_GPU_BENCH=ON -DVFIO_GPU_TESTS=OFF -DVFIO_GPU_SANITIZE=OFF >/dev/null
benches=(scan_bench plugin_bench bench_shim bench_webhook_review bench_webhook_latency)
ninja -C "$build" -j"$(nproc)" "${benches[@]}"

rt=()
if [[ "${VFIO_GPU_BENCH_RT:-1}" != 0 && $(id -u) == 0 ]] && command -v chrt >/dev/null; then
  rt=(chrt -f 50)
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  priority: ${rt[*]:-normal}"
for b in "${benches[@]}"; do
  [[ -z "$filter" || "$b" == *"$filter"* ]] || continue
  echo "== $b"
  # The daemons' own logs go to stderr; the summaries go to stdout.
  "${rt[@]}" "$build/bin/$b" 2>/dev/null
done
