// Runtime: a sandbox with GPUs must run on a QEMU configuration that can pass them through. Cloud
// Hypervisor shows its guest no IOMMU groups; a QEMU config with no VFIO ports can't attach them.
#include "shim-hooks/hooks.h"

namespace vfio_gpu {
namespace {

bool PortOn(const std::string& v) {
  return !v.empty() && v != "no-port";
}

}  // namespace

bool KataConfigView::GpuCapable() const {
  return error.empty() && hypervisor == "qemu" && (PortOn(cold_plug_vfio) || PortOn(hot_plug_vfio));
}

std::string KataConfigView::Describe() const {
  if (!error.empty()) return error;
  if (hypervisor.empty()) return path + " names no hypervisor";
  if (hypervisor != "qemu")
    return path + " uses " + hypervisor + ", which cannot pass GPUs through";
  return path + " sets neither cold_plug_vfio nor hot_plug_vfio (cold_plug_vfio=\"" +
         (cold_plug_vfio.empty() ? "no-port" : cold_plug_vfio) + "\", hot_plug_vfio=\"" +
         (hot_plug_vfio.empty() ? "no-port" : hot_plug_vfio) + "\")";
}

RuntimeResult CheckRuntime(const SpecIdentity& id, const std::vector<std::string>& gpus,
                           const KataConfigView& kata, const std::optional<KataConfigView>& target,
                           const ShimConfig& cfg) {
  RuntimeResult out;
  if (id.role == SpecRole::kContainer || gpus.empty()) return out;  // the sandbox decided the VM
  if (kata.GpuCapable()) {
    out.result.decisions.push_back(
        {"runtime", "kept", gpus, -1, "", "GPU-capable: " + kata.path, false});
    return out;
  }
  if (target && target->GpuCapable()) {
    out.switch_to = target->path;
    out.result.decisions.push_back({"runtime", "switched", gpus, -1, "",
                                    kata.Describe() + "; switched to " + target->path +
                                        " through " + kKataConfigPathAnnotation,
                                    false});
    return out;
  }
  std::string msg =
      "vfio-gpu: this pod has GPUs but its Kata configuration cannot pass them "
      "through: " +
      kata.Describe() + "; run it with RuntimeClass " + cfg.gpu_runtime_class +
      " (Kata QEMU GPU configuration with cold_plug_vfio = \"root-port\")";
  if (target)
    msg += "; the configured runtime_switch_config is not usable either: " + target->Describe();
  out.result.decisions.push_back({"runtime", "refused", gpus, -1, "", msg, false});
  out.result.refusal = Refusal{msg, ErrorKind::kInvalid, {}};
  return out;
}

void ApplyRuntimeSwitch(OciSpec& spec, const std::string& config_path) {
  spec.SetAnnotation(kKataConfigPathAnnotation, config_path);
}

}  // namespace vfio_gpu
