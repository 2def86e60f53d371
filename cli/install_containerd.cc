#include "cli/install_containerd.h"

#include <fnmatch.h>

#include <algorithm>

#include "cli/install_embedded.h"
#include "cli/install_paths.h"
#include "common/strings.h"
#include "common/toml.h"

namespace vfio_gpu::cli {
namespace {

constexpr std::string_view kBegin =
    "# >>> vfio-gpu: added by `vfio-gpu install`, removed by `vfio-gpu uninstall`";
constexpr std::string_view kEnd = "# <<< vfio-gpu";
constexpr std::string_view kKept = "#~ ";  // an operator's line we replaced
constexpr std::string_view kNewFile = " [new-file]";
constexpr std::string_view kNoEol = " [no-eol]";

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::vector<std::string> Block(const std::vector<std::string>& replaced,
                               const std::vector<std::string>& added, std::string_view flags = "") {
  std::vector<std::string> out = {std::string(kBegin) + std::string(flags)};
  for (const auto& r : replaced) out.push_back(std::string(kKept) + r);
  out.insert(out.end(), added.begin(), added.end());
  out.emplace_back(kEnd);
  return out;
}

struct Edit {
  size_t first;  // 0-based line index
  size_t count;  // lines replaced; 0 inserts before `first`
  std::vector<std::string> lines;
};

void ApplyEdits(std::vector<std::string>& lines, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.first > b.first; });
  for (const auto& e : edits) {
    std::vector<std::string> replaced(lines.begin() + static_cast<long>(e.first),
                                      lines.begin() + static_cast<long>(e.first + e.count));
    auto block = Block(replaced, e.lines);
    lines.erase(lines.begin() + static_cast<long>(e.first),
                lines.begin() + static_cast<long>(e.first + e.count));
    lines.insert(lines.begin() + static_cast<long>(e.first), block.begin(), block.end());
  }
}

// Flags for a block appended at the end of `pristine`.
std::string EndFlags(const std::optional<std::string>& pristine) {
  if (!pristine) return std::string(kNewFile);
  if (!pristine->empty() && pristine->back() != '\n') return std::string(kNoEol);
  return "";
}

bool SameValue(const TomlValue& a, const TomlValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case TomlValue::Type::kString:
    case TomlValue::Type::kDatetime:
      return a.str == b.str;
    case TomlValue::Type::kInt:
      return a.integer == b.integer;
    case TomlValue::Type::kFloat:
      return a.real == b.real;
    case TomlValue::Type::kBool:
      return a.boolean == b.boolean;
    case TomlValue::Type::kArray:
      if (a.array.size() != b.array.size()) return false;
      for (size_t i = 0; i < a.array.size(); ++i)
        if (!SameValue(a.array[i], b.array[i])) return false;
      return true;
    case TomlValue::Type::kTable:
      return false;
  }
  return false;
}

Error Malformed(const Error& e) {
  return Error(e.message() + "; fix the file by hand (vfio-gpu did not change it)");
}

Result<int> ConfigVersion(const TomlValue& doc, const std::string& source) {
  const TomlValue* v = doc.Find("version");
  if (!v)
    return Error(source +
                 ": has no `version` key, so containerd reads it as config version 1, whose plugin "
                 "names differ; migrate it (`containerd config migrate`, or set version = 2 for "
                 "containerd 1.x, version = 3 for 2.x) and run vfio-gpu install again");
  if (v->type != TomlValue::Type::kInt || (v->integer != 2 && v->integer != 3))
    return Error(source + ":" + std::to_string(v->line) +
                 ": config version must be 2 (containerd 1.x) or 3 (containerd 2.x); migrate it "
                 "with `containerd config migrate`");
  return static_cast<int>(v->integer);
}

FileChange ConfigChange(const std::string& path, std::optional<std::string> before,
                        std::optional<std::string> after) {
  FileChange c;
  c.host_path = kContainerdConfig;
  c.path = path;
  c.before = std::move(before);
  c.after = std::move(after);
  c.restart = Restart::kContainerd;
  return c;
}

// containerd 1.x decodes `containerd.runtimes` of config.toml over its defaults and the map
// replaces the built-in one: a config naming only our runtimes loses `runc`, and with
// default_runtime_name = "runc" (the default) the CRI plugin then fails to load. Another default
// name is the operator's to define (their file already had to), so only runc is added back.
bool NeedsDefaultRunc(const TomlValue* cri) {
  const TomlValue* containerd = cri ? cri->Find("containerd") : nullptr;
  const TomlValue* name = containerd ? containerd->Find("default_runtime_name") : nullptr;
  if (name && (!name->IsString() || name->str != "runc")) return false;
  const TomlValue* runtimes = containerd ? containerd->Find("runtimes") : nullptr;
  return !(runtimes && runtimes->Find("runc"));
}

}  // namespace

std::optional<ContainerdVersion> ParseContainerdVersion(std::string_view text) {
  if (!text.empty() && text[0] == 'v') text.remove_prefix(1);
  auto parts = Split(text, '.');
  if (parts.size() < 2) return std::nullopt;
  auto major = ParseInt(parts[0]);
  auto minor = ParseInt(Split(parts[1], '-')[0]);
  if (!major || !minor || *major < 1 || *minor < 0) return std::nullopt;
  return ContainerdVersion{static_cast<int>(*major), static_cast<int>(*minor)};
}

Result<std::optional<std::string>> StripMarkedBlocks(const std::optional<std::string>& text,
                                                     const std::string& source) {
  if (!text) return std::optional<std::string>();
  std::vector<std::string> out;
  bool in_block = false, new_file = false, no_eol = false;
  size_t opened = 0;
  auto lines = SplitLines(*text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (StartsWith(line, "# >>> vfio-gpu")) {
      if (in_block)
        return Error(source + ":" + std::to_string(opened + 1) +
                     ": the vfio-gpu block opened here is not closed (\"" + std::string(kEnd) +
                     "\") before the next one; repair it by hand");
      in_block = true;
      opened = i;
      new_file |= line.find(kNewFile) != std::string::npos;
      no_eol |= line.find(kNoEol) != std::string::npos;
    } else if (Trim(line) == kEnd) {
      if (!in_block)
        return Error(source + ":" + std::to_string(i + 1) +
                     ": a vfio-gpu block ends here that never began; repair it by hand");
      in_block = false;
    } else if (!in_block) {
      out.push_back(line);
    } else if (StartsWith(line, kKept)) {
      out.push_back(line.substr(kKept.size()));
    } else if (line == Trim(kKept)) {
      out.emplace_back();
    }
  }
  if (in_block)
    return Error(source + ":" + std::to_string(opened + 1) +
                 ": the vfio-gpu block opened here is never closed (\"" + std::string(kEnd) +
                 "\"); repair it by hand");
  if (new_file && out.empty()) return std::optional<std::string>();
  std::string result = JoinLines(out);
  bool had_eol = !text->empty() && text->back() == '\n';
  if ((no_eol || !had_eol) && !result.empty()) result.pop_back();
  return std::optional<std::string>(std::move(result));
}

Result<std::string> MergeV2(const std::optional<std::string>& pristine, std::string_view dropin,
                            const std::string& source) {
  std::string text = pristine.value_or("");
  auto doc = ParseToml(text, source);
  if (!doc) return Malformed(doc.error());
  bool empty = doc->table.empty();
  if (!empty) {
    auto v = ConfigVersion(*doc, source);
    if (!v) return v.error();
    if (*v != 2) return Error(source + ": config version " + std::to_string(*v) + ", not 2");
  }
  auto drop = ParseToml(dropin, "embedded containerd/v2/50-vfio-gpu.toml");
  if (!drop) return Error("vfio-gpu was built with a broken drop-in: " + drop.error().message());
  const TomlValue* cri = doc->Find({"plugins", kCriPluginV2});
  const TomlValue* runtimes = cri ? cri->Find({"containerd", "runtimes"}) : nullptr;
  for (const char* name : kRuntimeNames) {
    if (const TomlValue* r = runtimes ? runtimes->Find(name) : nullptr)
      return Error(source + ":" + std::to_string(r->line) + ": runtime \"" + name +
                   "\" is already defined here, outside vfio-gpu's marked block; remove it "
                   "(vfio-gpu install manages it) and run install again");
  }

  // The drop-in in chunks: each table header with the comment lines right above it.
  auto dlines = SplitLines(std::string(dropin));
  std::vector<size_t> starts;
  for (size_t i = 0; i < dlines.size(); ++i) {
    if (!StartsWith(Trim(dlines[i]), "[")) continue;
    size_t s = i;
    while (s > 0 && StartsWith(Trim(dlines[s - 1]), "#")) --s;
    starts.push_back(s);
  }
  starts.push_back(dlines.size());
  const std::string cri_header = std::string("[plugins.\"") + kCriPluginV2 + "\"]";
  const TomlValue* dcri = drop->Find({"plugins", kCriPluginV2});

  auto lines = SplitLines(text);
  std::vector<Edit> edits;
  std::vector<std::string> appended = {
      "# The vfio-gpu runtimes (vfio-gpu's containerd/v2/50-vfio-gpu.toml), merged into this file",
      "# because containerd 1.x replaces a whole plugin section with an imported file's.",
  };
  if (empty) appended.insert(appended.end(), {"version = 2", ""});
  std::vector<std::string> cri_inserts;
  for (size_t c = 0; c + 1 < starts.size(); ++c) {
    std::vector<std::string> chunk(dlines.begin() + static_cast<long>(starts[c]),
                                   dlines.begin() + static_cast<long>(starts[c + 1]));
    bool is_cri = std::any_of(chunk.begin(), chunk.end(),
                              [&](const std::string& l) { return Trim(l) == cri_header; });
    if (!(is_cri && cri && cri->defined && dcri)) {
      appended.insert(appended.end(), chunk.begin(), chunk.end());
      continue;
    }
    // The operator's config.toml has this table: set its keys in place.
    for (const auto& [key, want] : dcri->table) {
      if (want.IsTable()) continue;
      std::vector<std::string> want_lines(dlines.begin() + want.line - 1,
                                          dlines.begin() + want.end_line);
      const TomlValue* have = cri->Find(key);
      if (!have) {
        cri_inserts.insert(cri_inserts.end(), want_lines.begin(), want_lines.end());
      } else if (!SameValue(*have, want)) {
        edits.push_back({static_cast<size_t>(have->line - 1),
                         static_cast<size_t>(have->end_line - have->line + 1), want_lines});
      }
    }
  }
  if (!cri_inserts.empty()) edits.push_back({static_cast<size_t>(cri->line), 0, cri_inserts});
  while (!appended.empty() && Trim(appended.back()).empty()) appended.pop_back();
  if (NeedsDefaultRunc(cri)) {
    appended.insert(
        appended.end(),
        {"",
         "# containerd 1.x: once config.toml names any CRI runtime, the names replace the built-in",
         "# list, so the default runtime (runc) must be named too or the CRI plugin refuses to "
         "load",
         "# (\"no corresponding runtime configured in `containerd.runtimes` for `containerd`",
         "# `default_runtime_name = \"runc\"`\": the kubelet loses its runtime). This file did not",
         "# name it (Debian's own config.toml does not), so containerd's default is added back.",
         std::string("[plugins.\"") + kCriPluginV2 + "\".containerd.runtimes.runc]",
         "  runtime_type = \"io.containerd.runc.v2\""});
  }
  ApplyEdits(lines, edits);
  auto block = Block({}, appended, EndFlags(pristine));
  lines.insert(lines.end(), block.begin(), block.end());
  std::string result = JoinLines(lines);

  // Never hand containerd a file we cannot read back ourselves.
  auto check = ParseToml(result, source + " (as vfio-gpu would write it)");
  if (!check)
    return Error(
        "merging the vfio-gpu runtimes would make an invalid file, so it was not written: " +
        check.error().message());
  const TomlValue* rt = check->Find(
      {"plugins", kCriPluginV2, "containerd", "runtimes", kRuntimeName, "runtime_type"});
  if (!rt || rt->str != kRuntimeType)
    return Error(source + ": merging did not produce the vfio-gpu runtime; not written");
  if (NeedsDefaultRunc(check->Find({"plugins", kCriPluginV2})))
    return Error(source +
                 ": merging would leave containerd's default runtime (runc) undefined, "
                 "which disables the CRI plugin; not written");
  return result;
}

Result<std::optional<std::string>> EnsureImport(const std::optional<std::string>& pristine,
                                                const std::string& import_path,
                                                std::optional<ContainerdVersion> version,
                                                const std::string& source) {
  std::string text = pristine.value_or("");
  auto doc = ParseToml(text, source);
  if (!doc) return Malformed(doc.error());
  // containerd >= 2.2 imports /etc/containerd/conf.d/*.toml only through its built-in default
  // configuration, i.e. when there is no config.toml. A config.toml that exists (even empty, or
  // without `imports`) replaces that default: containerd then loads only the files its `imports`
  // names (LoadConfig follows the imports of the files it loads), so it needs ours whatever the
  // version.
  bool default_conf_d =
      version && (version->major > 2 || (version->major == 2 && version->minor >= 2));
  if (!pristine && default_conf_d) return pristine;
  std::string import_line = "imports = [" + TomlQuote(import_path) + "]";
  auto lines = SplitLines(text);
  if (doc->table.empty()) {
    auto block = Block({}, {"version = 3", import_line}, EndFlags(pristine));
    lines.insert(lines.end(), block.begin(), block.end());
    return std::optional<std::string>(JoinLines(lines));
  }
  auto v = ConfigVersion(*doc, source);
  if (!v) return v.error();
  if (*v != 3) return Error(source + ": config version " + std::to_string(*v) + ", not 3");
  std::vector<Edit> edits;
  if (const TomlValue* imports = doc->Find("imports")) {
    if (imports->type != TomlValue::Type::kArray)
      return Error(source + ":" + std::to_string(imports->line) +
                   ": imports must be an array of paths; fix the file by hand");
    std::vector<std::string> quoted;
    for (const auto& entry : imports->Strings()) {
      // containerd resolves relative imports against config.toml's directory.
      std::string full = StartsWith(entry, "/") ? entry : "/etc/containerd/" + entry;
      if (::fnmatch(full.c_str(), import_path.c_str(), FNM_PATHNAME) == 0) return pristine;
      quoted.push_back(TomlQuote(entry));
    }
    quoted.push_back(TomlQuote(import_path));
    edits.push_back({static_cast<size_t>(imports->line - 1),
                     static_cast<size_t>(imports->end_line - imports->line + 1),
                     {"imports = [" + Join(quoted, ", ") + "]"}});
  } else {
    const TomlValue* ver = doc->Find("version");
    edits.push_back({static_cast<size_t>(ver->end_line), 0, {import_line}});
  }
  ApplyEdits(lines, edits);
  std::string result = JoinLines(lines);
  if (!pristine->empty() && pristine->back() != '\n') result.pop_back();
  auto check = ParseToml(result, source + " (as vfio-gpu would write it)");
  if (!check)
    return Error("adding the import would make an invalid file, so it was not written: " +
                 check.error().message());
  return std::optional<std::string>(std::move(result));
}

Result<std::vector<FileChange>> PlanContainerdInstall(const std::string& root,
                                                      std::optional<ContainerdVersion> version) {
  std::string cfg = UnderRoot(root, kContainerdConfig);
  auto current = ReadIfExists(cfg);
  if (!current) return current.error();
  auto pristine = StripMarkedBlocks(*current, cfg);
  if (!pristine) return pristine.error();
  auto doc = ParseToml(pristine->value_or(""), cfg);
  if (!doc) return Malformed(doc.error());
  int layout = 0;
  if (!doc->table.empty()) {
    auto v = ConfigVersion(*doc, cfg);
    if (!v) return v.error();
    layout = *v;
  } else if (version) {
    layout = version->major >= 2 ? 3 : 2;
  } else {
    return Error(
        cfg + (*pristine ? " is empty" : " does not exist") +
        ", so its config version cannot tell containerd 1.x from 2.x; pass "
        "--containerd-version (the output of `containerd --version`, e.g. 1.7.27 or 2.1.4)");
  }

  FileChange config = ConfigChange(cfg, *current, std::nullopt);
  FileChange dropin = ConfigChange(UnderRoot(root, kContainerdDropIn), std::nullopt, std::nullopt);
  dropin.host_path = kContainerdDropIn;
  dropin.restart = Restart::kContainerd;
  auto old_dropin = ReadIfExists(dropin.path);
  if (!old_dropin) return old_dropin.error();
  dropin.before = *old_dropin;

  if (layout == 2) {
    auto merged = MergeV2(*pristine, Embedded("containerd/v2/50-vfio-gpu.toml"), cfg);
    if (!merged) return merged.error();
    config.after = std::move(*merged);
    // Imported on 1.x, a conf.d file with CRI tables would replace config.toml's CRI section.
    if (dropin.before) dropin.note = "not used with config version 2 (containerd 1.x)";
  } else {
    auto edited = EnsureImport(*pristine, kContainerdDropIn, version, cfg);
    if (!edited) return edited.error();
    config.after = std::move(*edited);
    dropin.after = std::string(Embedded("containerd/v3/50-vfio-gpu.toml"));
  }
  return std::vector<FileChange>{std::move(config), std::move(dropin)};
}

Result<std::vector<FileChange>> PlanContainerdUninstall(const std::string& root) {
  std::string cfg = UnderRoot(root, kContainerdConfig);
  auto current = ReadIfExists(cfg);
  if (!current) return current.error();
  auto pristine = StripMarkedBlocks(*current, cfg);
  if (!pristine) return pristine.error();
  FileChange config = ConfigChange(cfg, *current, *pristine);
  FileChange dropin = ConfigChange(UnderRoot(root, kContainerdDropIn), std::nullopt, std::nullopt);
  dropin.host_path = kContainerdDropIn;
  dropin.restart = Restart::kContainerd;
  auto old_dropin = ReadIfExists(dropin.path);
  if (!old_dropin) return old_dropin.error();
  dropin.before = *old_dropin;
  return std::vector<FileChange>{std::move(config), std::move(dropin)};
}

}  // namespace vfio_gpu::cli
