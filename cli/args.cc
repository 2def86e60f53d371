#include "cli/args.h"

namespace vfio_gpu::cli {

std::optional<std::string> Args::Value(const std::string& name) {
  std::string flag = "--" + name;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    if (args_[i] == flag) {
      used_[i] = true;
      if (i + 1 >= args_.size() || used_[i + 1]) {
        missing_value_ = flag + " needs a value";
        return std::nullopt;
      }
      used_[i + 1] = true;
      return args_[i + 1];
    }
    if (args_[i].rfind(flag + "=", 0) == 0) {
      used_[i] = true;
      return args_[i].substr(flag.size() + 1);
    }
  }
  return std::nullopt;
}

bool Args::Flag(const std::string& name) {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!used_[i] && args_[i] == "--" + name) {
      used_[i] = true;
      return true;
    }
  }
  return false;
}

std::optional<std::string> Args::Positional() {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    if (args_[i].rfind("--", 0) == 0) continue;
    used_[i] = true;
    return args_[i];
  }
  return std::nullopt;
}

std::optional<std::string> Args::Leftover() const {
  if (missing_value_) return missing_value_;
  for (size_t i = 0; i < args_.size(); ++i)
    if (!used_[i]) return "unknown argument \"" + args_[i] + "\"";
  return std::nullopt;
}

}  // namespace vfio_gpu::cli
