#include "hostmodel/naming.h"

extern "C" {
#include <pci/pci.h>
}
#include <setjmp.h>

#include <cctype>
#include <cstdarg>
#include <map>
#include <mutex>

#include "common/strings.h"

namespace vfio_gpu {
namespace {

// Datacenter parts by device ID. pci.ids is a community file whose names have produced absurd
// resource names elsewhere, so the parts tenants actually ask for are pinned here.
struct Curated {
  uint16_t vendor;
  uint16_t device;
  const char* name;
};
constexpr Curated kCurated[] = {
    {0x10de, 0x1db4, "GV100GL [Tesla V100 PCIe 16GB]"},
    {0x10de, 0x1db5, "GV100GL [Tesla V100 SXM2 16GB]"},
    {0x10de, 0x1eb8, "TU104GL [Tesla T4]"},
    {0x10de, 0x20b0, "GA100 [A100 SXM4 40GB]"},
    {0x10de, 0x20b2, "GA100 [A100 SXM4 80GB]"},
    {0x10de, 0x20b5, "GA100 [A100 PCIe 80GB]"},
    {0x10de, 0x20b7, "GA100GL [A30 PCIe]"},
    {0x10de, 0x20f1, "GA100 [A100 PCIe 40GB]"},
    {0x10de, 0x1af1, "GA100 [A100 NVSwitch]"},
    {0x10de, 0x2230, "GA102GL [RTX A6000]"},
    {0x10de, 0x2236, "GA102GL [A10]"},
    {0x10de, 0x2237, "GA102GL [A10G]"},
    {0x10de, 0x22a3, "GH100 [H100 NVSwitch]"},
    {0x10de, 0x2330, "GH100 [H100 SXM5 80GB]"},
    {0x10de, 0x2331, "GH100 [H100 PCIe]"},
    {0x10de, 0x2335, "GH100 [H200 SXM 141GB]"},
    {0x10de, 0x26b5, "AD102GL [L40]"},
    {0x10de, 0x26b9, "AD102GL [L40S]"},
    {0x10de, 0x27b8, "AD104GL [L4]"},
    {0x1002, 0x740c, "Aldebaran [Instinct MI250X/MI250]"},
    {0x1002, 0x74a1, "Aqua Vanjaram [Instinct MI300X]"},
};

// libpci's error callback must not return (the library exits otherwise), so we jump back out of it.
// Guarded by the mutex below: one lookup at a time.
jmp_buf g_pci_jump;

[[noreturn]] void PciError(char* /*fmt*/, ...) {
  longjmp(g_pci_jump, 1);
}
void PciQuiet(char* /*fmt*/, ...) {}

class PciIds {
 public:
  static PciIds& Get() {
    static PciIds ids;
    return ids;
  }

  std::string Lookup(uint16_t vendor, uint16_t device) {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t key = (static_cast<uint32_t>(vendor) << 16) | device;
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::string name = LookupLocked(vendor, device);
    cache_[key] = name;
    return name;
  }

 private:
  PciIds() = default;
  ~PciIds() {
    if (pacc_) pci_cleanup(pacc_);
  }

  std::string LookupLocked(uint16_t vendor, uint16_t device) {
    if (broken_) return "";
    if (setjmp(g_pci_jump) != 0) {
      broken_ = true;  // pci.ids missing or unreadable: fall back to numeric names from now on
      return "";
    }
    if (!pacc_) {
      pacc_ = pci_alloc();
      pacc_->error = PciError;
      pacc_->warning = PciQuiet;
      pacc_->debug = PciQuiet;
    }
    char buf[256];
    const char* n = pci_lookup_name(pacc_, buf, sizeof buf,
                                    PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_NUMBERS | PCI_LOOKUP_NO_HWDB,
                                    vendor, device);
    return n ? std::string(n) : "";
  }

  std::mutex mu_;
  pci_access* pacc_ = nullptr;
  bool broken_ = false;
  std::map<uint32_t, std::string> cache_;
};

constexpr size_t kMaxModelPart = 28;

bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}
bool IsAlpha(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

bool ValidCdiPart(const std::string& s, bool allow_dot_middle) {
  if (s.empty() || !IsAlpha(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s)
    if (!(IsAlnum(c) || c == '_' || c == '-' || (allow_dot_middle && c == '.'))) return false;
  return true;
}

}  // namespace

std::string VendorDomain(uint16_t vendor) {
  switch (vendor) {
    case 0x10de:
      return "nvidia.com";
    case 0x1002:
      return "amd.com";
    case 0x8086:
      return "intel.com";
    default:
      return "vfio-gpu.io";
  }
}

std::string ModelName(uint16_t vendor, uint16_t device) {
  for (const auto& c : kCurated)
    if (c.vendor == vendor && c.device == device) return c.name;
  return PciIds::Get().Lookup(vendor, device);
}

std::string ModelResourcePart(uint16_t vendor, uint16_t device) {
  std::string name = ModelName(vendor, device);
  std::string out;
  for (char c : name) {
    if (IsAlnum(c)) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  // The whole resource name ("nvidia.com/" + this) stays within 40 characters (seed 000).
  if (out.size() > kMaxModelPart) {
    out.resize(kMaxModelPart);
    while (!out.empty() && !IsAlnum(out.back())) out.pop_back();
  }
  if (out.empty() || !IsAlpha(out.front())) return "device-" + Hex(device, 4);
  return out;
}

std::string GpuResourceName(const Selection& selection, uint16_t vendor, uint16_t device) {
  if (selection.naming == ResourceNaming::kPerModel)
    return VendorDomain(vendor) + "/" + ModelResourcePart(vendor, device);
  if (!selection.resource_name.empty()) return selection.resource_name;
  return VendorDomain(vendor) + "/pgpu";
}

bool IsValidCdiKind(const std::string& kind) {
  auto slash = kind.find('/');
  if (slash == std::string::npos) return false;
  return ValidCdiPart(kind.substr(0, slash), true) && ValidCdiPart(kind.substr(slash + 1), true);
}

bool IsValidCdiDeviceName(const std::string& name) {
  if (name.empty() || !IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  for (char c : name)
    if (!(IsAlnum(c) || c == '_' || c == '-' || c == '.' || c == ':')) return false;
  return true;
}

bool IsValidResourceName(const std::string& name) {
  auto slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash > 253) return false;
  std::string domain = name.substr(0, slash), part = name.substr(slash + 1);
  if (part.empty() || part.size() > 63 || !IsAlnum(part.front()) || !IsAlnum(part.back()))
    return false;
  for (char c : part)
    if (!(IsAlnum(c) || c == '-' || c == '_' || c == '.')) return false;
  for (char c : domain)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'))
      return false;
  return IsAlnum(domain.front()) && IsAlnum(domain.back());
}

}  // namespace vfio_gpu
