#!/usr/bin/env bash
# Installs every build and test dependency of vfio-gpu from Debian 12 packages. Idempotent: packages
# already present are left alone, and apt's lists are refreshed only when something is missing.
# With arguments, installs just those packages the same way (scripts/e2e-guest-setup.sh uses this).
set -euo pipefail

packages=(
  # build
  g++ cmake ninja-build make pkg-config git
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libjson-c-dev libpci-dev pci.ids libspdlog-dev libfmt-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # fuzzing (libFuzzer ships with clang's runtime)
  clang libclang-rt-14-dev
  # real peers for the e2e tests: containerd with runc, QEMU, a kernel and busybox for the guest
  containerd runc qemu-system-x86 busybox-static linux-image-amd64 cpio kmod
  # the admission webhook: HTTPS server, TLS, and curl/openssl as the real client in its tests
  libcpp-httplib-dev libssl-dev openssl curl
  # scripts and tests
  python3 procps iproute2 ca-certificates
)

# kubectl kustomize renders deploy/; a kubectl already on PATH (another vendor's package) is kept,
# since Debian's kubernetes-client would conflict with it.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

if (($#)); then
  packages=("$@")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#packages[@]} packages present"
fi
