#include "hostmodel/published_selection.h"

#include <algorithm>

#include "common/files.h"
#include "common/json.h"

namespace vfio_gpu {

std::string PublishedSelectionPath(const std::string& run_dir) {
  return JoinPath(run_dir, kPublishedSelectionFile);
}

Result<bool> WritePublishedSelection(const std::string& run_dir, const PublishedSelection& p) {
  Json resources = Json::Array();
  std::vector<std::string> sorted = p.resources;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& r : sorted) resources.Append(Json::String(r));
  Json o = Json::Object();
  o.Set("selection", SelectionToJson(p.selection));
  o.Set("resources", std::move(resources));
  std::string text = o.Dump() + "\n";
  std::string path = PublishedSelectionPath(run_dir);
  if (FileHasContent(path, text)) return false;
  if (auto s = MakeDirs(run_dir); !s) return s.error();
  if (auto s = WriteFileAtomic(path, text); !s) return s.error();
  return true;
}

Result<std::optional<PublishedSelection>> ReadPublishedSelection(const std::string& run_dir) {
  std::string path = PublishedSelectionPath(run_dir);
  auto text = ReadFile(path);
  if (!text) {
    if (text.error().kind() == ErrorKind::kNotFound) return std::optional<PublishedSelection>();
    return text.error();
  }
  auto j = Json::Parse(*text, path);
  if (!j) return j.error();
  StrictObject top(*j, path);
  PublishedSelection p;
  if (auto sel = top.Raw("selection")) {
    StrictObject o(*sel, path + " (selection)");
    auto s = ReadSelection(o);
    if (!s) return s.error();
    if (auto f = o.Finish(); !f) return f.error();
    p.selection = std::move(*s);
  } else {
    top.Fail("selection", "is missing");
  }
  if (auto r = top.Strings("resources")) p.resources = std::move(*r);
  if (auto f = top.Finish(); !f) return f.error();
  std::sort(p.resources.begin(), p.resources.end());
  return std::optional<PublishedSelection>(std::move(p));
}

}  // namespace vfio_gpu
