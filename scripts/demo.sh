#!/usr/bin/env bash
# Installs the dependencies, builds vfio-gpu, and runs the main job on the embedded demo host
# (seed 003's node: 4x A10 on vfio-pci). No GPU and no cluster needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DVFIO_GPU_TESTS=OFF -DVFIO_GPU_BENCH=OFF >/dev/null
cmake --build build-release -j "$(nproc)"
exec build-release/bin/vfio-gpu demo "$@"
