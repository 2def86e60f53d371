// A small TOML reader for the configuration files we inspect and edit on a host: containerd's
// config.toml and drop-ins, Kata's configuration and its config.d/ drop-ins. It reads TOML 1.0
// (tables, arrays of tables, dotted and quoted keys, strings of all four kinds, integers, floats,
// booleans, arrays, inline tables, comments); date-times are kept as their text. It records the
// line span of every value so an installer can edit a file line by line, and it refuses what TOML
// refuses (a key or table defined twice), naming the file and line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace vfio_gpu {

struct TomlValue {
  enum class Type { kString, kInt, kFloat, kBool, kDatetime, kArray, kTable };

  Type type = Type::kTable;
  std::string str;  // kString, and kDatetime's text
  int64_t integer = 0;
  double real = 0;
  bool boolean = false;
  std::vector<TomlValue> array;                          // kArray (also an array of tables)
  std::vector<std::pair<std::string, TomlValue>> table;  // kTable, in file order
  int line = 0;              // 1-based: a table's [header] line, or the first line of `key = value`
  int end_line = 0;          // the last line of `key = value` (multi-line arrays and strings)
  bool defined = false;      // a table with its own [header] (not only implied by [a.b.c])
  bool table_array = false;  // an array built by [[header]]

  // Declared here, defined in toml.cc: a table holds pairs of TomlValue, and clang (with
  // libstdc++) cannot instantiate the implicit members while the type is still incomplete.
  TomlValue();
  ~TomlValue();
  TomlValue(const TomlValue&);
  TomlValue(TomlValue&&) noexcept;
  TomlValue& operator=(const TomlValue&);
  TomlValue& operator=(TomlValue&&) noexcept;

  bool IsTable() const { return type == Type::kTable; }
  bool IsString() const { return type == Type::kString; }
  // The child named `key` of a table; nullptr when absent or not a table.
  const TomlValue* Find(std::string_view key) const;
  // Follows a path of keys: Find({"plugins", "io.containerd.grpc.v1.cri", "containerd"}).
  const TomlValue* Find(std::initializer_list<std::string_view> path) const;
  // An array's string elements (others skipped).
  std::vector<std::string> Strings() const;
};

// Parses a whole document into its root table. Errors read "<source>:<line>: <what>".
Result<TomlValue> ParseToml(std::string_view text, const std::string& source);

// Quotes a string as a TOML basic string ("..." with escapes).
std::string TomlQuote(std::string_view s);

}  // namespace vfio_gpu
