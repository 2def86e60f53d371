#include "common/strings.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace vfio_gpu {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::optional<uint32_t> ParseHex(std::string_view s) {
  s = Trim(s);
  if (StartsWith(s, "0x") || StartsWith(s, "0X")) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return std::nullopt;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseInt(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string Hex(uint32_t value, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", width, value);
  return buf;
}

namespace {
bool AllHex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return !s.empty();
}
}  // namespace

std::optional<std::string> CanonicalBdf(std::string_view s) {
  // dddd:bb:dd.f or bb:dd.f
  std::string str(s);
  if (str.size() == 7) str = "0000:" + str;
  if (str.size() != 12 || str[4] != ':' || str[7] != ':' || str[10] != '.') return std::nullopt;
  if (!AllHex(std::string_view(str).substr(0, 4)) || !AllHex(std::string_view(str).substr(5, 2)) ||
      !AllHex(std::string_view(str).substr(8, 2)) || str[11] < '0' || str[11] > '7')
    return std::nullopt;
  for (char& c : str) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto dev = ParseHex(std::string_view(str).substr(8, 2));
  if (!dev || *dev > 0x1f) return std::nullopt;
  return str;
}

bool IsBdf(std::string_view s) {
  return s.size() == 12 && CanonicalBdf(s).has_value();
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace vfio_gpu
