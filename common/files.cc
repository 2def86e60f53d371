#include "common/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "common/strings.h"

namespace vfio_gpu {
namespace {

Error ErrnoError(const std::string& what, const std::string& path, int err) {
  ErrorKind kind = err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kInvalid;
  return Error(what + " " + path + ": " + std::strerror(err), kind);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::string> ReadAttr(const std::string& path) {
  // sysfs attributes are small: one read into a stack buffer is the fast path.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("cannot open", path, errno);
  char buf[4096];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("cannot read", path, errno);
  return std::string(Trim(std::string_view(buf, static_cast<size_t>(n))));
}

Result<std::string> ReadLink(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return ErrnoError("cannot read link", path, errno);
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> LinkBasename(const std::string& path) {
  auto target = ReadLink(path);
  if (!target) return target.error();
  return Basename(*target);
}

Result<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) return ErrnoError("cannot list", path, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> RealPath(const std::string& path) {
  char* p = ::realpath(path.c_str(), nullptr);
  if (!p) return ErrnoError("cannot resolve", path, errno);
  std::string out(p);
  std::free(p);
  return out;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty() || IsDir(path)) return Status::Ok();
  std::string parent = Dirname(path);
  if (parent != path) {
    if (auto s = MakeDirs(parent, mode); !s) return s;
  }
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return ErrnoError("cannot create directory", path, errno);
  return Status::Ok();
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return ErrnoError("cannot remove", path, errno);
  return Status::Ok();
}

std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto pos = p.rfind('/');
  return pos == std::string::npos ? p : p.substr(pos + 1);
}

std::string Dirname(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto pos = p.rfind('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return p.substr(0, pos);
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.back() == '/') return b.front() == '/' ? a + b.substr(1) : a + b;
  return b.front() == '/' ? a + b : a + "/" + b;
}

Status WriteFileAtomic(const std::string& path, const std::string& content, mode_t mode) {
  std::string dir = Dirname(path);
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string tmp = JoinPath(dir, "." + Basename(path) + "." + std::to_string(::getpid()) + "." +
                                      Hex(static_cast<uint32_t>(rng()), 8) + ".tmp");
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (fd.get() < 0) return ErrnoError("cannot create", tmp, errno);
  auto fail = [&](const std::string& what) {
    Error e = ErrnoError(what, tmp, errno);
    ::unlink(tmp.c_str());
    return e;
  };
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    off += static_cast<size_t>(n);
  }
  // The umask may have narrowed the mode given to open(); readers (containerd, Kata) need `mode`.
  if (::fchmod(fd.get(), mode) != 0) return fail("cannot chmod");
  if (::fsync(fd.get()) != 0) return fail("cannot fsync");
  if (::close(fd.release()) != 0) return fail("cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = ErrnoError("cannot rename " + tmp + " to", path, errno);
    ::unlink(tmp.c_str());
    return e;
  }
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) ::fsync(dfd.get());
  return Status::Ok();
}

bool FileHasContent(const std::string& path, const std::string& content) {
  auto cur = ReadFile(path);
  return cur.ok() && *cur == content;
}

}  // namespace vfio_gpu
