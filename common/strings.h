// Small string helpers shared by every part.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vfio_gpu {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

// Parses "0x10de", "10de" (hex) into a number; nullopt on garbage or overflow.
std::optional<uint32_t> ParseHex(std::string_view s);
// Parses a decimal integer, allowing a leading '-'; nullopt on garbage.
std::optional<int64_t> ParseInt(std::string_view s);

// "0x%04x"-style formatting without iostreams.
std::string Hex(uint32_t value, int width);

// Canonical PCI address "dddd:bb:dd.f" (lower case). Accepts "bb:dd.f" too (domain 0).
std::optional<std::string> CanonicalBdf(std::string_view s);
bool IsBdf(std::string_view s);

// Quotes a string for JSON/log output.
std::string Quote(std::string_view s);

}  // namespace vfio_gpu
