#include "cli/install_checks.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

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

struct LoadedFile {
  std::string path;  // host path
  TomlValue doc;
};

// What containerd reads: config.toml, then, breadth first, the files the `imports` of each file it
// read name (relative entries against that file's directory, `*` entries globbed in name order),
// each once, as its LoadConfig does. Without a config.toml it runs on its built-in defaults, whose
// imports are conf.d/*.toml from 2.2 on (containerd#12323) and nothing before. An existing
// config.toml replaces those defaults, so a conf.d file it does not import is never read, on any
// version.
struct ContainerdView {
  bool has_config = false;
  int layout = 0;  // config version: 2 (containerd 1.x), 3 (2.x), 0 unknown
  std::vector<LoadedFile> loaded;
};

bool AtLeast22(const std::optional<ContainerdVersion>& v) {
  return v && (v->major > 2 || (v->major == 2 && v->minor >= 2));
}

std::vector<std::string> ResolveImport(const std::string& root, const std::string& importer,
                                       const std::string& entry) {
  std::string path = StartsWith(entry, "/") ? entry : Dirname(importer) + "/" + entry;
  if (path.find('*') == std::string::npos) return {path};
  std::string prefix = UnderRoot(root, "");
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(UnderRoot(root, path).c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.push_back(std::string(g.gl_pathv[i]).substr(prefix.size()));
  ::globfree(&g);
  return out;  // glob(3) sorts, as Go's filepath.Glob does
}

ContainerdView LoadContainerd(const std::string& root,
                              const std::optional<ContainerdVersion>& version,
                              std::vector<DoctorCheck>& out) {
  ContainerdView view;
  std::vector<std::string> pending;
  view.has_config = PathExists(UnderRoot(root, kContainerdConfig));
  if (view.has_config) {
    pending.push_back(kContainerdConfig);
  } else {
    if (version) view.layout = version->major >= 2 ? 3 : 2;
    if (AtLeast22(version))
      pending = ResolveImport(root, kContainerdConfig, std::string(kContainerdConfDir) + "/*.toml");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < pending.size(); ++i) {
    const std::string file = pending[i];
    if (!seen.insert(file).second) continue;
    auto text = ReadFile(UnderRoot(root, file));
    if (!text) {
      if (file != kContainerdConfig)
        out.push_back({false, "containerd import " + file + " exists",
                       "an imports entry names it but it cannot be read (" +
                           text.error().message() +
                           "); containerd will not start: create it or remove the entry"});
      continue;
    }
    auto doc = ParseToml(*text, file);
    if (!doc) {
      out.push_back({false, "containerd config " + file + " parses",
                     doc.error().message() + "; containerd will not start with it: fix it"});
      continue;
    }
    if (file == kContainerdConfig) {
      const TomlValue* v = doc->Find("version");
      if (v && v->type == TomlValue::Type::kInt && (v->integer == 2 || v->integer == 3))
        view.layout = static_cast<int>(v->integer);
    }
    if (const TomlValue* imports = doc->Find("imports"))
      for (const auto& entry : imports->Strings())
        for (auto& p : ResolveImport(root, file, entry)) pending.push_back(std::move(p));
    view.loaded.push_back({file, std::move(*doc)});
  }
  return view;
}

bool DefinesOurRuntime(const TomlValue& doc) {
  for (const char* cri : {kCriPluginV2, kCriPluginV3})
    for (const char* name : kRuntimeNames)
      if (doc.Find({"plugins", cri, "containerd", "runtimes", name})) return true;
  return false;
}

// conf.d files of ours (our drop-in, or defining a vfio-gpu runtime) that containerd never reads.
std::vector<std::string> CheckConfD(const std::string& root, const ContainerdView& view,
                                    const std::optional<ContainerdVersion>& version,
                                    std::vector<DoctorCheck>& out) {
  std::vector<std::string> unread;
  auto names = ListDir(UnderRoot(root, kContainerdConfDir));
  if (!names) return unread;
  for (const auto& n : *names) {
    if (!EndsWith(n, ".toml")) continue;
    std::string file = std::string(kContainerdConfDir) + "/" + n;
    bool read = std::any_of(view.loaded.begin(), view.loaded.end(),
                            [&](const LoadedFile& f) { return f.path == file; });
    auto text = ReadFile(UnderRoot(root, file));
    auto doc = text ? ParseToml(*text, file) : Result<TomlValue>(text.error());
    bool ours = file == kContainerdDropIn || (doc && DefinesOurRuntime(*doc));
    if (!ours) continue;
    std::string what = "containerd reads " + file;
    if (read) {
      out.push_back({true, what, ""});
      continue;
    }
    unread.push_back(file);
    std::string add = std::string("add it to `imports` in ") + kContainerdConfig +
                      " (imports = [\"" + kContainerdConfDir +
                      "/*.toml\"] covers every drop-in there) and restart containerd; `vfio-gpu "
                      "install --host-root /` adds the entry";
    std::string fix;
    if (view.layout == 2) {
      fix = (view.has_config ? std::string("no `imports` entry of ") + kContainerdConfig +
                                   " reaches it, and that file is config version 2"
                             : std::string("there is no ") + kContainerdConfig) +
            " (containerd 1.x), where vfio-gpu's runtimes belong in config.toml itself (an "
            "imported file's CRI tables would replace config.toml's whole CRI section): remove " +
            file + " and run `vfio-gpu install --host-root /" +
            (view.has_config ? "" : " --containerd-version X") + "`, which merges them there";
    } else if (view.has_config) {
      fix = std::string("no `imports` entry of ") + kContainerdConfig +
            " reaches it, so containerd never reads it (it reads config.toml and what `imports` "
            "names; 2.2's default import of conf.d/*.toml applies only when there is no "
            "config.toml): " +
            add;
    } else if (version) {
      fix = std::string("there is no ") + kContainerdConfig + ", and containerd " +
            std::to_string(version->major) + "." + std::to_string(version->minor) +
            " reads conf.d/ only through one (2.2 and later import conf.d/*.toml by default): "
            "create it with version = 3 and imports = [\"" +
            kContainerdConfDir +
            "/*.toml\"] and restart containerd; `vfio-gpu install --host-root / "
            "--containerd-version X` writes it";
    } else {
      fix = std::string("there is no ") + kContainerdConfig +
            ", and only containerd 2.2 and later read conf.d/*.toml without one: on 2.2 or later "
            "pass --containerd-version (the output of `containerd --version`) to say so; on "
            "2.0/2.1 create it with version = 3 and imports = [\"" +
            kContainerdConfDir +
            "/*.toml\"] and restart containerd (`vfio-gpu install --host-root / "
            "--containerd-version X` writes it)";
    }
    out.push_back({false, what, fix});
  }
  return unread;
}

// The CRI plugin resolves the CDI names the device plugin allocates only with enable_cdi. 1.x
// (version 2) replaces a plugin's whole section with the last file read that has it, and its
// default is false (1.7; 1.6 knows no CDI at all). 2.x merges the files key by key in the order it
// reads them, so the last file that sets the key decides, and its default is true.
void CheckCdi(const ContainerdView& view, std::vector<DoctorCheck>& out) {
  if (view.layout != 2 && view.layout != 3) return;
  const char* cri = view.layout == 2 ? kCriPluginV2 : kCriPluginV3;
  const LoadedFile* from = nullptr;  // the file that decides
  const TomlValue* value = nullptr;
  for (const auto& f : view.loaded) {
    const TomlValue* v = f.doc.Find({"plugins", cri, "enable_cdi"});
    // 1.x: a file with the section replaces it whole, whether it sets the key or not.
    if (view.layout == 2 ? f.doc.Find({"plugins", cri}) != nullptr : v != nullptr) {
      from = &f;
      value = v;
    }
  }
  bool set = value && value->type == TomlValue::Type::kBool;
  bool on = set ? value->boolean : view.layout == 3;
  std::string table = std::string("[plugins.\"") + cri + "\"]";
  std::string where = from ? from->path : std::string(kContainerdConfig);
  std::string what = "containerd CDI on: enable_cdi in " + table + " (" +
                     (value ? std::string(on ? "true" : "false") + " in " + where + ":" +
                                  std::to_string(value->line)
                            : std::string(view.layout == 2 ? "not set: containerd 1.7's default, "
                                                             "false"
                                                           : "not set: containerd 2.x's default, "
                                                             "true")) +
                     ")";
  out.push_back({on, what,
                 "containerd cannot resolve the CDI devices the device plugin allocates, so GPU "
                 "containers fail to start: set enable_cdi = true in " +
                     table + " of " + where +
                     " and restart containerd (`vfio-gpu install --host-root /` sets it)" +
                     (view.layout == 2 ? "; containerd 1.6 has no CDI: run the plugin with "
                                         "allocate_strategy \"device-specs\" there"
                                       : "")});
}

void CheckContainerd(const std::string& root, const std::optional<ContainerdVersion>& version,
                     bool needs_cdi, std::vector<DoctorCheck>& out,
                     std::optional<RuntimeEntry>& entry) {
  ContainerdView view = LoadContainerd(root, version, out);
  for (const auto& f : view.loaded) {
    for (const char* cri : {kCriPluginV2, kCriPluginV3}) {
      const TomlValue* r = f.doc.Find({"plugins", cri, "containerd", "runtimes", kRuntimeName});
      if (!r || entry) continue;
      RuntimeEntry e{f.path, "", "", "", false};
      if (const TomlValue* t = r->Find("runtime_type")) e.type = t->str;
      if (const TomlValue* c = r->Find({"options", "ConfigPath"})) e.config_path = c->str;
      if (std::string(cri) == kCriPluginV2) {
        const TomlValue* containerd = f.doc.Find({"plugins", cri, "containerd"});
        const TomlValue* name = containerd->Find("default_runtime_name");
        e.default_runtime = name && name->IsString() ? name->str : "runc";
        const TomlValue* runtimes = containerd->Find("runtimes");
        e.default_defined = runtimes && runtimes->Find(e.default_runtime);
      }
      entry = e;
    }
  }
  std::vector<std::string> unread = CheckConfD(root, view, version, out);
  std::string what =
      std::string("containerd runtime ") + kRuntimeName + " with runtime_type " + kRuntimeType;
  if (!entry) {
    out.push_back({false, what,
                   unread.empty() ? std::string("no containerd config under ") + kContainerdConfig +
                                        " or " + kContainerdConfDir + "/ defines it; " + kInstallFix
                                  : "no file containerd reads defines it; " + Join(unread, ", ") +
                                        " does, but containerd does not read it (see that check)"});
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
  if (needs_cdi) CheckCdi(view, out);
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

std::vector<DoctorCheck> RuntimeChecks(const RuntimeCheckOptions& o) {
  const std::string& root = o.root;
  const std::string& cdi_dir = o.cdi_dir;
  std::vector<DoctorCheck> out;
  std::optional<RuntimeEntry> entry;
  CheckContainerd(root, o.containerd_version, o.needs_cdi, out, entry);
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
