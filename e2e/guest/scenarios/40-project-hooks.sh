# Hooks for the project's own binaries, run against the real kernel once they exist in $E2E_BIN.
# Each reports SKIP (never FAIL) while its binary is missing. Fill these in as the binaries land.

# The plugin against real sysfs and /dev/vfio: Healthy, Unhealthy within 100 ms of an unbind (a real
# uevent), Healthy again after the rebind, without a restart.
if project_bin vfio-gpu-plugin; then
  skip plugin-health "vfio-gpu-plugin is built; its guest scenario is not written yet (e2e/guest/scenarios/)"
else
  skip plugin-health "no vfio-gpu-plugin in ${E2E_BIN:-<no bin dir>} yet"
fi

# The shim's dedup: the same BDF reached twice must be attached once (scenario 30 shows QEMU's refusal
# when it isn't).
if project_bin containerd-shim-vfio-gpu-v2; then
  skip shim-dedup "containerd-shim-vfio-gpu-v2 is built; its guest scenario is not written yet"
else
  skip shim-dedup "no containerd-shim-vfio-gpu-v2 in ${E2E_BIN:-<no bin dir>} yet"
fi
