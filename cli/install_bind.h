// `vfio-gpu install --bind-gpus`: hands the configured GPUs and the rest of their IOMMU groups
// (bridges excepted) to vfio-pci the kernel's way: driver_override, unbind, drivers_probe.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"

namespace vfio_gpu::cli {

// Every sysfs write goes through this, so a test can record the writes and play the kernel.
class SysfsWriter {
 public:
  virtual ~SysfsWriter() = default;
  virtual Status Write(const std::string& path, const std::string& value) = 0;
};

// open(O_WRONLY|O_TRUNC) + write, like `echo value > path`; never creates a file (sysfs attributes
// exist or the kernel does not offer them).
class FileSysfsWriter final : public SysfsWriter {
 public:
  Status Write(const std::string& path, const std::string& value) override;
};

struct BindAction {
  enum class Result { kAlready, kBound, kWouldBind, kFailed, kRefused };
  std::string bdf;
  std::string role;  // "GPU" or "group mate of 0000:17:00.0"
  int group = -1;
  std::string was;  // the driver before ("" = none)
  Result result = Result::kAlready;
  std::string message;  // kFailed / kRefused: what went wrong and what to do
};

// Binds (or, with dry_run, only plans) every selected GPU and its group mates. Devices already on
// a vfio driver are left alone. Network and storage controllers that share a GPU's group are never
// unbound automatically (that could cut the node off): they are reported as refused, and so is the
// rest of their group, naming them (it could not be passed through anyway).
std::vector<BindAction> BindGpus(const HostRoots& roots, const Selection& selection,
                                 SysfsWriter& writer, bool dry_run);

std::string Describe(const BindAction& action);

}  // namespace vfio_gpu::cli
