#include "shim-hooks/runtime_options.h"

#include <cstdint>
#include <vector>

#include "common/strings.h"

namespace vfio_gpu {
namespace {

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  std::string_view bytes;
};

bool ReadVarint(std::string_view& in, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    out |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Splits a message into fields; false on malformed input.
bool Fields(std::string_view in, std::vector<Field>& out) {
  while (!in.empty()) {
    uint64_t key = 0;
    if (!ReadVarint(in, key)) return false;
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.number == 0) return false;
    switch (f.wire) {
      case 0:
        if (!ReadVarint(in, f.varint)) return false;
        break;
      case 1:
        if (in.size() < 8) return false;
        in.remove_prefix(8);
        break;
      case 2: {
        uint64_t len = 0;
        if (!ReadVarint(in, len) || len > in.size()) return false;
        f.bytes = in.substr(0, len);
        in.remove_prefix(len);
        break;
      }
      case 5:
        if (in.size() < 4) return false;
        in.remove_prefix(4);
        break;
      default:
        return false;
    }
    out.push_back(f);
  }
  return true;
}

bool IsRuntimeOptionsType(std::string_view url) {
  return EndsWith(url, "runtimeoptions.v1.Options");
}

std::optional<RuntimeOptions> FromAny(std::string_view any) {
  std::vector<Field> fields;
  if (!Fields(any, fields)) return std::nullopt;
  std::string_view url, value;
  for (const auto& f : fields) {
    if (f.wire != 2) continue;
    if (f.number == 1) url = f.bytes;
    if (f.number == 2) value = f.bytes;
  }
  if (!IsRuntimeOptionsType(url)) return std::nullopt;
  std::vector<Field> inner;
  if (!Fields(value, inner)) return std::nullopt;
  RuntimeOptions o;
  o.type_url = std::string(url);
  for (const auto& f : inner) {
    if (f.wire != 2) continue;
    if (f.number == 2) o.config_path = std::string(f.bytes);
    if (f.number == 3) o.config_body = std::string(f.bytes);
  }
  return o;
}

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutBytes(std::string& out, uint32_t number, std::string_view bytes) {
  PutVarint(out, (static_cast<uint64_t>(number) << 3) | 2);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

}  // namespace

std::optional<RuntimeOptions> DecodeRuntimeOptions(std::string_view bytes) {
  if (bytes.empty()) return std::nullopt;
  if (auto o = FromAny(bytes)) return o;
  // BootstrapParams: repeated Extension extensions = 8; Extension { Any value = 1; }.
  std::vector<Field> fields;
  if (!Fields(bytes, fields)) return std::nullopt;
  for (const auto& f : fields) {
    if (f.number != 8 || f.wire != 2) continue;
    std::vector<Field> ext;
    if (!Fields(f.bytes, ext)) continue;
    for (const auto& e : ext)
      if (e.number == 1 && e.wire == 2)
        if (auto o = FromAny(e.bytes)) return o;
  }
  return std::nullopt;
}

std::string EncodeRuntimeOptionsAny(const RuntimeOptions& o) {
  std::string inner;
  if (!o.config_path.empty()) PutBytes(inner, 2, o.config_path);
  if (!o.config_body.empty()) PutBytes(inner, 3, o.config_body);
  std::string any;
  PutBytes(any, 1, o.type_url.empty() ? "runtimeoptions.v1.Options" : o.type_url);
  PutBytes(any, 2, inner);
  return any;
}

std::string EncodeBootstrapParams(const std::string& instance_id, const std::string& ns,
                                  const RuntimeOptions& o) {
  std::string out;
  PutBytes(out, 1, instance_id);
  PutBytes(out, 2, ns);
  PutVarint(out, (3 << 3) | 0);
  PutVarint(out, 0);
  std::string ext;
  PutBytes(ext, 1, EncodeRuntimeOptionsAny(o));
  PutBytes(out, 8, ext);
  return out;
}

}  // namespace vfio_gpu
