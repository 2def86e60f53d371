// Resolves fully-qualified CDI names (`nvidia.com/pgpu=0000:17:00.0`, or an alias such as
// `nvidia.com/pgpu=0`) of the kinds we govern to the device nodes their specs inject, by reading
// the spec files in the CDI dirs the way container runtimes do: /etc/cdi then /var/run/cdi, a later
// dir winning for the same name. JSON spec files only (ours are JSON); .yaml files are skipped and
// reported in problems().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vfio_gpu {

struct CdiQualifiedName {
  std::string kind;  // vendor/class
  std::string name;  // device
};

// Parses "vendor/class=device" with CDI's character rules; nullopt when malformed.
std::optional<CdiQualifiedName> ParseCdiName(const std::string& s);

struct CdiDeviceEntry {
  std::string qualified;                  // "nvidia.com/pgpu=0000:17:00.0"
  std::vector<std::string> device_paths;  // container paths of its deviceNodes
  std::string file;                       // the spec file it came from
};

class CdiRegistry {
 public:
  // Reads every *.json spec in `dirs` whose kind is one of `kinds`.
  static CdiRegistry Load(const std::vector<std::string>& dirs,
                          const std::vector<std::string>& kinds);

  const CdiDeviceEntry* Find(const std::string& qualified) const;
  // The unit ID (a device name that is a PCI address, as the plugin names units) whose device
  // injects /dev/vfio/<group>: how a vanished group is traced back to its GPU.
  std::optional<std::string> UnitOfGroup(int group) const;
  const std::vector<std::string>& problems() const { return problems_; }
  size_t size() const { return devices_.size(); }

 private:
  std::map<std::string, CdiDeviceEntry> devices_;
  std::vector<std::string> problems_;
};

// Group number of a container path "/dev/vfio/<N>"; nullopt for anything else.
std::optional<int> VfioGroupOfPath(const std::string& path);

}  // namespace vfio_gpu
