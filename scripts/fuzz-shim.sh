#!/bin/sh
# Builds the shim's spec-reader fuzz target with clang + libFuzzer (+ASan/UBSan) and runs it
# briefly. The main build uses g++, so this compiles the few sources it needs by itself.
#   scripts/fuzz-shim.sh [OUT_DIR] [SECONDS]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-fuzz-shim}
secs=${2:-20}
mkdir -p "$out/corpus"
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root" $(pkg-config --cflags json-c) \
  "$root/test/shim/fuzz_spec_reader.cc" \
  "$root/shim-hooks/oci_spec.cc" "$root/shim-hooks/runtime_options.cc" \
  "$root/shim-hooks/kata_config.cc" "$root/shim-hooks/annotation_guard.cc" \
  "$root/common/json.cc" "$root/common/strings.cc" "$root/common/files.cc" "$root/common/toml.cc" \
  $(pkg-config --libs json-c) -o "$out/fuzz_spec_reader"
# Seeds: realistic specs and runtime options.
printf '%s' '{"annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-name":"p","io.kubernetes.cri.sandbox-namespace":"n","io.katacontainers.config.hypervisor.path":"/x","cdi.k8s.io/gpu":"nvidia.com/pgpu=0"},"linux":{"devices":[{"path":"/dev/vfio/25","type":"c","major":241,"minor":25},{"path":"/dev/vfio/devices/vfio3","type":"c","major":511,"minor":3}]}}' > "$out/corpus/seed-spec.json"
printf '[hypervisor.qemu]\ncold_plug_vfio = "root-port"\nenable_annotations = ["a",\n "b"]\n' > "$out/corpus/seed.toml"
exec "$out/fuzz_spec_reader" -artifact_prefix="$out/" -max_total_time="$secs" -max_len=65536 -print_final_stats=1 "$out/corpus"
