#include "common/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/strings.h"

namespace vfio_gpu {

Result<ListenAddress> ParseListenAddress(const std::string& address) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("\"" + address + "\" " + why +
                 "; use \":9477\", \"127.0.0.1:9477\", \"[::1]:9477\" or \"\" to turn it off");
  };
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad("has no port");
  std::string host = address.substr(0, colon);
  std::string port_text = address.substr(colon + 1);
  auto port = ParseInt(port_text);
  if (port_text.empty() || !port || *port < 0 || *port > 65535)
    return bad("has no valid port (0..65535)");
  ListenAddress a;
  a.port = static_cast<uint16_t>(*port);
  if (host.empty()) return a;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("has an unclosed [IPv6 address]");
    a.host = host.substr(1, host.size() - 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, a.host.c_str(), &v6) != 1)
      return bad("has \"" + a.host + "\", which is not an IPv6 address");
    a.family = ListenAddress::Family::kIpv6;
    return a;
  }
  a.host = host == "localhost" ? "127.0.0.1" : host;
  in_addr v4{};
  if (inet_pton(AF_INET, a.host.c_str(), &v4) != 1)
    return bad("has \"" + host + "\", which is not an IPv4 address (IPv6 goes in brackets)");
  a.family = ListenAddress::Family::kIpv4;
  return a;
}

}  // namespace vfio_gpu
