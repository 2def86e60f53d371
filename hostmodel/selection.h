// What counts as a GPU on this node and how its resources are named: the discovery half of the
// configuration that `vfio-gpu` and `vfio-gpu-plugin` both read with --config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace vfio_gpu {

enum class ResourceNaming {
  kSingle,    // every GPU of a vendor under one resource, e.g. nvidia.com/pgpu (the default)
  kPerModel,  // one resource per model, e.g. nvidia.com/GA102GL_A10
};

struct Selection {
  // PCI vendor IDs whose GPUs we take. Default NVIDIA only; AMD 0x1002 and Intel 0x8086 by config.
  std::vector<uint16_t> vendors = {0x10de};
  // Class-code prefixes that make a device a GPU, as hex strings of 2, 4 or 6 digits ("0x0300"
  // matches class 0x0300xx). Default: VGA and 3D controllers.
  std::vector<std::string> gpu_classes = {"0x0300", "0x0302"};
  ResourceNaming naming = ResourceNaming::kSingle;
  // Resource name for single naming. Empty: "<vendor domain>/pgpu" (nvidia.com, amd.com,
  // intel.com; other vendors "vfio-gpu.io").
  std::string resource_name;
  std::string nvswitch_resource_name = "nvidia.com/nvswitch";
  // Only these BDFs / device IDs ("10de:2236") when non-empty; never the denied ones.
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  // Extra CDI device names per unit (PCI-order index and "group-<N>"), for users who wrote
  // `cdi.k8s.io/gpu: nvidia.com/pgpu=0`. Off by default.
  bool cdi_aliases = false;

  bool IsGpuClass(uint32_t class_code) const;
  bool IsSelectedVendor(uint16_t vendor) const;
  // allow/deny applied to a device.
  bool Allows(const std::string& bdf, uint16_t vendor, uint16_t device) const;
};

// The keys of Selection as they appear in a JSON config file.
inline const std::vector<std::string> kSelectionKeys = {
    "vendors", "gpu_classes", "resource_naming", "resource_name", "nvswitch_resource_name",
    "allow",   "deny",        "cdi_aliases"};

// Reads the selection keys out of a config object being read strictly; other keys are the caller's.
Result<Selection> ReadSelection(StrictObject& config);
// The selection as those keys, every one written out: ReadSelection reads it back to an equal
// selection. The plugin publishes it for the shim (plugin/published.h).
Json SelectionToJson(const Selection& s);

}  // namespace vfio_gpu
