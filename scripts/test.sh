#!/usr/bin/env bash
# Installs the dependencies, builds everything with AddressSanitizer + UndefinedBehaviorSanitizer,
# and runs the whole test suite (unit, CLI, real containerd, real-kernel e2e, fuzz smoke) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${VFIO_GPU_BUILD_DIR:-build-asan}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVFIO_GPU_SANITIZE=ON \
  -DVFIO_GPU_TESTS=ON -DVFIO_GPU_BENCH=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
exec ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
