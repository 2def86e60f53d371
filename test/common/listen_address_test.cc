#include "common/listen_address.h"

#include <gtest/gtest.h>

namespace vfio_gpu {
namespace {

TEST(ListenAddress, AcceptedForms) {
  auto any = ParseListenAddress(":9477");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->family, ListenAddress::Family::kAny);
  EXPECT_EQ(any->port, 9477);
  auto v4 = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->family, ListenAddress::Family::kIpv4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("localhost:9477")->host, "127.0.0.1");
  EXPECT_EQ(ParseListenAddress("0.0.0.0:9477")->family, ListenAddress::Family::kIpv4);
  auto v6 = ParseListenAddress("[::1]:9477");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->family, ListenAddress::Family::kIpv6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(ParseListenAddress("[::]:9477")->family, ListenAddress::Family::kIpv6);
}

TEST(ListenAddress, BadFormsSayWhatIsWrongAndShowTheForms) {
  struct Case {
    const char* in;
    const char* want;
  };
  for (const Case& c : {Case{"9477", "has no port"}, Case{"foo", "has no port"},
                        Case{":", "no valid port"}, Case{":70000", "no valid port"},
                        Case{"host.example:9477", "not an IPv4 address (IPv6 goes in brackets)"},
                        Case{"::1:9477", "not an IPv4 address"}, Case{"[::1:9477", "unclosed"},
                        Case{"[zz]:9477", "not an IPv6 address"}}) {
    auto a = ParseListenAddress(c.in);
    ASSERT_FALSE(a.ok()) << c.in;
    EXPECT_NE(a.error().message().find(c.want), std::string::npos)
        << c.in << " -> " << a.error().message();
    EXPECT_NE(a.error().message().find("\":9477\""), std::string::npos);
  }
}

}  // namespace
}  // namespace vfio_gpu
