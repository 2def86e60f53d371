// libFuzzer target: the shim's readers of untrusted bytes — the OCI spec (tenant-influenced
// annotations and devices), the runtime options on stdin, Kata TOML — must never crash, hang or
// leak. Built with clang by scripts/fuzz-shim.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "shim-hooks/hooks.h"
#include "shim-hooks/kata_config.h"
#include "shim-hooks/oci_spec.h"
#include "shim-hooks/runtime_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = vfio_gpu::ReadOciSpec(text, "fuzz.json", "fuzz-id");
  if (spec.ok()) {
    vfio_gpu::ShimConfig cfg;
    (void)vfio_gpu::GuardAnnotations(*spec, cfg);
    std::vector<vfio_gpu::Json> entries = spec->DeviceEntries();
    if (!entries.empty()) entries.pop_back();
    spec->SetDevices(entries);
    (void)spec->Dump();
  }
  (void)vfio_gpu::DecodeRuntimeOptions(text);
  (void)vfio_gpu::KataViewFromText("fuzz.toml", text);
  return 0;
}
