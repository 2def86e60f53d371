// A small argument reader for the CLI: `--flag VALUE`, `--flag=VALUE` and boolean `--flag`.
// Anything it was not asked about is a usage error (exit 2) that names the argument.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vfio_gpu::cli {

class Args {
 public:
  explicit Args(std::vector<std::string> args)
      : args_(std::move(args)), used_(args_.size(), false) {}

  // The value of --name, if given.
  std::optional<std::string> Value(const std::string& name);
  // Whether --name was given (as a switch).
  bool Flag(const std::string& name);
  // The next positional word, if any.
  std::optional<std::string> Positional();
  // An error message for the first argument nobody consumed, or for a flag missing its value.
  std::optional<std::string> Leftover() const;

 private:
  std::vector<std::string> args_;
  std::vector<bool> used_;
  std::optional<std::string> missing_value_;
};

}  // namespace vfio_gpu::cli
