#include "cli/install_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli/install_paths.h"
#include "common/files.h"

namespace vfio_gpu::cli {

std::string FileChange::Status() const {
  if (!before && !after) return "absent";
  if (!before) return "created";
  if (!after) return "removed";
  return *before == *after ? "unchanged" : "updated";
}

Result<std::optional<std::string>> ReadIfExists(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return Error("cannot stat " + path + ": " + std::strerror(errno));
  }
  auto text = ReadFile(path);
  if (!text) return text.error();
  return std::optional<std::string>(std::move(*text));
}

namespace {

std::vector<std::string> SplitLines(const std::optional<std::string>& text) {
  std::vector<std::string> lines;
  if (!text) return lines;
  size_t start = 0;
  while (start < text->size()) {
    size_t nl = text->find('\n', start);
    if (nl == std::string::npos) nl = text->size();
    lines.push_back(text->substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// One line of an edit script: ' ' kept, '-' only in a, '+' only in b.
struct Op {
  char kind;
  size_t a, b;  // line indexes (the one that applies)
};

std::vector<Op> EditScript(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // Common prefix and suffix first: config edits are small and local, the rest is an LCS table.
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] =
          a[pre + i] == b[pre + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<Op> ops;
  for (size_t i = 0; i < pre; ++i) ops.push_back({' ', i, i});
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[pre + i] == b[pre + j]) {
      ops.push_back({' ', pre + i++, pre + j++});
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push_back({'-', pre + i++, pre + j});  // removals before additions, as diff(1) does
    } else {
      ops.push_back({'+', pre + i, pre + j++});
    }
  }
  for (size_t k = 0; k < suf; ++k) ops.push_back({' ', pre + n + k, pre + m + k});
  return ops;
}

}  // namespace

std::string UnifiedDiff(const std::string& path, const std::optional<std::string>& before,
                        const std::optional<std::string>& after, bool binary) {
  if (before == after) return "";
  std::string head = "--- " + (before ? "a" + path : std::string("/dev/null")) + "\n+++ " +
                     (after ? "b" + path : std::string("/dev/null")) + "\n";
  // A NUL byte is what diff(1) takes for binary too: never print a file the caller did not mark.
  auto has_nul = [](const std::optional<std::string>& t) {
    return t && t->find('\0') != std::string::npos;
  };
  if (binary || has_nul(before) || has_nul(after)) return head + "Binary files differ\n";
  auto a = SplitLines(before), b = SplitLines(after);
  auto ops = EditScript(a, b);
  std::string out = head;
  constexpr size_t kContext = 3;
  size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext lines after the last change
    // that is no more than 2*kContext kept lines away.
    size_t start = k >= kContext ? k - kContext : 0;
    size_t end = k;
    size_t kept = 0;
    for (size_t x = k; x < ops.size(); ++x) {
      if (ops[x].kind == ' ') {
        if (++kept > 2 * kContext) break;
      } else {
        kept = 0;
        end = x;
      }
    }
    end = std::min(ops.size(), end + kContext + 1);
    size_t a_start = ops[start].a, b_start = ops[start].b, a_len = 0, b_len = 0;
    std::string body;
    for (size_t x = start; x < end; ++x) {
      const Op& op = ops[x];
      if (op.kind != '+') ++a_len;
      if (op.kind != '-') ++b_len;
      body += op.kind;
      body += op.kind == '+' ? b[op.b] : a[op.a];
      body += '\n';
    }
    out += "@@ -" + std::to_string(a_len ? a_start + 1 : a_start) + "," + std::to_string(a_len) +
           " +" + std::to_string(b_len ? b_start + 1 : b_start) + "," + std::to_string(b_len) +
           " @@\n" + body;
    k = end;
  }
  if (before && !before->empty() && before->back() != '\n') out += "\\ No newline at end of a\n";
  if (after && !after->empty() && after->back() != '\n') out += "\\ No newline at end of b\n";
  return out;
}

Status ApplyChange(const FileChange& c) {
  if (!c.Changes()) return Status::Ok();
  if (!c.after) return RemoveFile(c.path);
  if (auto s = MakeDirs(Dirname(c.path), 0755); !s) return s;
  mode_t mode = c.mode;
  struct stat st;
  if (!c.force_mode && c.before && ::stat(c.path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  return WriteFileAtomic(c.path, *c.after, mode);
}

bool DirEmptyAfter(const std::string& dir, const Plan& plan, const std::string& root,
                   std::vector<std::string>* remaining) {
  auto names = ListDir(UnderRoot(root, dir));
  if (!names) return false;
  for (const auto& name : *names) {
    std::string host = dir + "/" + name;
    bool gone = std::any_of(plan.files.begin(), plan.files.end(),
                            [&](const FileChange& f) { return f.host_path == host && !f.after; });
    if (!gone &&
        std::find(plan.remove_dirs.begin(), plan.remove_dirs.end(), host) != plan.remove_dirs.end())
      gone = DirEmptyAfter(host, plan, root, nullptr);
    if (!gone && remaining) remaining->push_back(name);
    if (!gone && !remaining) return false;
  }
  return !remaining || remaining->empty();
}

}  // namespace vfio_gpu::cli
