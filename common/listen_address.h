// "host:port" listen addresses for the plugin's metrics endpoint, parsed once so the config reader
// can refuse a bad one at start (naming its key) and the server binds exactly what was parsed.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/result.h"

namespace vfio_gpu {

struct ListenAddress {
  // kAny (":9477", "0.0.0.0:9477" is IPv4 only): every address, IPv6 and IPv4 where the host has
  // IPv6, IPv4 alone where it does not (seed 003's node boots with ipv6.disable=1).
  enum class Family { kAny, kIpv4, kIpv6 };
  Family family = Family::kAny;
  std::string host;  // the literal, brackets removed; empty for kAny
  uint16_t port = 0;
};

// ":9477", "0.0.0.0:9477", "127.0.0.1:9477", "localhost:9477", "[::]:9477", "[::1]:9477".
// Errors say what is wrong and show the accepted forms.
Result<ListenAddress> ParseListenAddress(const std::string& address);

}  // namespace vfio_gpu
