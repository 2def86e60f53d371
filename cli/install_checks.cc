#include "cli/install_checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "cdi/spec.h"
#include "cli/install_paths.h"
#include "common/files.h"
#include "common/strings.h"
#include "common/toml.h"

namespace vfio_gpu::cli {
namespace {

constexpr const char* kInstallFix = "run `vfio-gpu install --host-root /` and restart containerd";

struct RuntimeEntry {
  std::string file;         // host path of the file that defines it
  std::string type;         // runtime_type
  std::string config_path;  // options.ConfigPath
  // containerd 1.x (config version 2): the runtimes a file names replace the built-in list, so
  // the default runtime must be named beside ours or the CRI plugin does not load at all.
  std::string default_runtime;  // empty: not a version-2 CRI table
  bool default_defined = false;
};

// config.toml, then conf.d/*.toml in name order (what containerd >= 2.2 imports by default).
std::vector<std::string> ContainerdFiles(const std::string& root) {
  std::vector<std::string> files = {kContainerdConfig};
  if (auto names = ListDir(UnderRoot(root, kContainerdConfDir)))
    for (const auto& n : *names)
      if (EndsWith(n, ".toml")) files.push_back(std::string(kContainerdConfDir) + "/" + n);
  return files;
}

void CheckContainerd(const std::string& root, std::vector<DoctorCheck>& out,
                     std::optional<RuntimeEntry>& entry) {
  for (const auto& file : ContainerdFiles(root)) {
    auto text = ReadFile(UnderRoot(root, file));
    if (!text) continue;
    auto doc = ParseToml(*text, file);
    if (!doc) {
      out.push_back({false, "containerd config " + file + " parses",
                     doc.error().message() + "; containerd will not start with it: fix it"});
      continue;
    }
    for (const char* cri : {kCriPluginV2, kCriPluginV3}) {
      const TomlValue* r = doc->Find({"plugins", cri, "containerd", "runtimes", kRuntimeName});
      if (!r || entry) continue;
      RuntimeEntry e{file, "", "", "", false};
      if (const TomlValue* t = r->Find("runtime_type")) e.type = t->str;
      if (const TomlValue* c = r->Find({"options", "ConfigPath"})) e.config_path = c->str;
      if (std::string(cri) == kCriPluginV2) {
        const TomlValue* containerd = doc->Find({"plugins", cri, "containerd"});
        const TomlValue* name = containerd->Find("default_runtime_name");
        e.default_runtime = name && name->IsString() ? name->str : "runc";
        const TomlValue* runtimes = containerd->Find("runtimes");
        e.default_defined = runtimes && runtimes->Find(e.default_runtime);
      }
      entry = e;
    }
  }
  std::string what =
      std::string("containerd runtime ") + kRuntimeName + " with runtime_type " + kRuntimeType;
  if (!entry) {
    out.push_back({false, what,
                   std::string("no containerd config under ") + kContainerdConfig + " or " +
                       kContainerdConfDir + "/ defines it; " + kInstallFix});
  } else if (entry->type != kRuntimeType) {
    out.push_back({false, what + " (" + entry->file + ")",
                   "its runtime_type is \"" + entry->type + "\"; set \"" + kRuntimeType +
                       "\" (so containerd starts " + kShimBinaryName + "), or " + kInstallFix});
  } else {
    out.push_back({true, what + " (" + entry->file + ")", ""});
  }
  if (entry && !entry->default_runtime.empty())
    out.push_back(
        {entry->default_defined,
         "containerd default runtime \"" + entry->default_runtime + "\" is defined beside " +
             kRuntimeName + " (" + entry->file + ")",
         "containerd 1.x keeps only the runtimes this file names, so its CRI plugin does not "
         "load (\"no corresponding runtime configured\") and the kubelet has no runtime; run "
         "`vfio-gpu install --host-root /` again (it adds runc's entry) and restart containerd"});
}

void CheckShim(const std::string& root, std::vector<DoctorCheck>& out) {
  std::vector<std::string> dirs = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                   "/usr/bin",        "/sbin",          "/bin"};
  if (root.empty() || root == "/")
    if (const char* path = std::getenv("PATH"))
      for (const auto& d : Split(path, ':'))
        if (!d.empty()) dirs.push_back(d);
  for (const auto& d : dirs) {
    std::string p = d + "/" + kShimBinaryName;
    if (::access(UnderRoot(root, p).c_str(), X_OK) == 0) {
      out.push_back({true, std::string("shim binary ") + kShimBinaryName + " (" + p + ")", ""});
      return;
    }
  }
  out.push_back({false, std::string("shim binary ") + kShimBinaryName + " on containerd's PATH",
                 std::string("no executable ") + kShimBinaryName + " in /usr/local/bin or PATH; " +
                     kInstallFix + " (it copies it to " + kShimBinaryPath + ")"});
}

void CheckKata(const std::string& root, const std::optional<RuntimeEntry>& entry,
               std::vector<DoctorCheck>& out) {
  std::string path = entry && !entry->config_path.empty()
                         ? entry->config_path
                         : std::string(kKataPrivateDir) + "/" + kKataGpuConfig;
  auto text = ReadFile(UnderRoot(root, path));
  if (!text) {
    out.push_back({false, "Kata configuration " + path + " (ConfigPath) exists",
                   "Kata's GPU configuration is not there: install Kata with its NVIDIA GPU "
                   "configuration (kata-deploy), then run `vfio-gpu install --host-root /`, which "
                   "copies it to " +
                       std::string(kKataPrivateDir) + "/"});
    return;
  }
  out.push_back({true, "Kata configuration " + path + " (ConfigPath) exists", ""});
  // The file, then config.d/*.toml beside it in name order: later keys win, as in Kata.
  std::vector<std::pair<std::string, std::string>> docs = {{path, *text}};
  std::string dropins = Dirname(path) + "/config.d";
  if (auto names = ListDir(UnderRoot(root, dropins)))
    for (const auto& n : *names)
      if (EndsWith(n, ".toml"))
        if (auto t = ReadFile(UnderRoot(root, dropins + "/" + n)))
          docs.emplace_back(dropins + "/" + n, *t);
  bool qemu = false;
  std::string cold = "no-port", hot = "no-port", cold_from, hot_from;
  for (const auto& [file, content] : docs) {
    auto doc = ParseToml(content, file);
    if (!doc) {
      out.push_back({false, "Kata configuration " + file + " parses",
                     doc.error().message() + "; Kata refuses to start sandboxes with it: fix it"});
      continue;
    }
    const TomlValue* q = doc->Find({"hypervisor", "qemu"});
    if (!q) continue;
    qemu |= file == path;
    if (const TomlValue* v = q->Find("cold_plug_vfio")) cold = v->str, cold_from = file;
    if (const TomlValue* v = q->Find("hot_plug_vfio")) hot = v->str, hot_from = file;
  }
  out.push_back({qemu, "Kata configuration " + path + " is a QEMU one ([hypervisor.qemu])",
                 "point the vfio-gpu runtime's ConfigPath at Kata's QEMU GPU configuration: only "
                 "QEMU passes GPUs through (Cloud Hypervisor's guest sees no IOMMU groups)"});
  bool cold_on = cold != "no-port", hot_on = hot != "no-port";
  std::string what = "Kata VFIO ports: cold_plug_vfio = \"" + cold + "\"" +
                     (cold_from.empty() ? "" : " (" + cold_from + ")") + ", hot_plug_vfio = \"" +
                     hot + "\"" + (hot_from.empty() ? "" : " (" + hot_from + ")");
  if (cold_on && hot_on)
    out.push_back({false, what,
                   "only one of cold_plug_vfio / hot_plug_vfio may be set; set "
                   "hot_plug_vfio = \"no-port\" (Kata refuses both)"});
  else
    out.push_back({cold_on || hot_on, what,
                   "GPUs get no PCIe port in the VM: set cold_plug_vfio = \"root-port\" in "
                   "[hypervisor.qemu] (vfio-gpu install's drop-in " +
                       std::string(kKataDropIn) + " does)"});
}

}  // namespace

std::vector<DoctorCheck> RuntimeChecks(const std::string& root, const std::string& cdi_dir) {
  std::vector<DoctorCheck> out;
  std::optional<RuntimeEntry> entry;
  CheckContainerd(root, out, entry);
  CheckShim(root, out);
  CheckKata(root, entry, out);

  bool cdi = IsDir(UnderRoot(root, cdi_dir));
  out.push_back({cdi, "CDI dir " + cdi_dir + " exists",
                 "vfio-gpu-plugin creates it when it runs (its cdi_dir); it must also be in "
                 "containerd's cdi_spec_dirs"});
  if (cdi) {
    int specs = 0;
    if (auto names = ListDir(UnderRoot(root, cdi_dir)))
      for (const auto& n : *names) specs += StartsWith(n, kCdiFilePrefix);
    out.push_back({specs > 0,
                   "CDI dir " + cdi_dir + " holds vfio-gpu's specs (" + std::to_string(specs) +
                       " " + kCdiFilePrefix + "*)",
                   "start vfio-gpu-plugin (it writes them), or `vfio-gpu cdi generate "
                   "--output-dir " +
                       cdi_dir + "`"});
  }
  struct stat st;
  bool sock =
      ::stat(UnderRoot(root, kPodResourcesSocket).c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  out.push_back({sock, std::string("kubelet pod resources socket ") + kPodResourcesSocket,
                 "Kata asks it which GPUs the pod was given: start the kubelet (the socket is its "
                 "own, under its --root-dir); with a kubelet before 1.34 turn the "
                 "KubeletPodResourcesGet feature gate on"});
  return out;
}

}  // namespace vfio_gpu::cli
