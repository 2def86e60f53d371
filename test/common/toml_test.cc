#include "common/toml.h"

#include <gtest/gtest.h>

namespace vfio_gpu {
namespace {

TEST(TomlTest, ReadsContainerdStyleTablesKeysAndLines) {
  auto doc = ParseToml(R"(# a comment
version = 2
imports = ["/etc/containerd/conf.d/*.toml",
           'literal\path'] # trailing comment

[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  max_container_log_line_size = 16384
  ratio = 0.5
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
    BinaryName = "ru\"nc\u00e9"
)",
                       "config.toml");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->Find("version")->integer, 2);
  const TomlValue* imports = doc->Find("imports");
  ASSERT_NE(imports, nullptr);
  EXPECT_EQ(imports->Strings(),
            (std::vector<std::string>{"/etc/containerd/conf.d/*.toml", "literal\\path"}));
  EXPECT_EQ(imports->line, 3);
  EXPECT_EQ(imports->end_line, 4);
  const TomlValue* cri = doc->Find({"plugins", "io.containerd.grpc.v1.cri"});
  ASSERT_NE(cri, nullptr);
  EXPECT_TRUE(cri->defined);
  EXPECT_EQ(cri->line, 6);
  EXPECT_TRUE(cri->Find("enable_cdi")->boolean);
  EXPECT_EQ(cri->Find("max_container_log_line_size")->integer, 16384);
  EXPECT_DOUBLE_EQ(cri->Find("ratio")->real, 0.5);
  EXPECT_FALSE(cri->Find("containerd")->defined);  // implied by the runc header only
  const TomlValue* runc = cri->Find({"containerd", "runtimes", "runc", "options"});
  ASSERT_NE(runc, nullptr);
  EXPECT_EQ(runc->Find("BinaryName")->str, "ru\"nc\xc3\xa9");
}

TEST(TomlTest, ReadsTheRestOfToml) {
  auto doc = ParseToml(R"(a.b = 1
hex = 0xff
big = 1_000
neg = -12
s = """
one \
   two"""
l = '''x'y'''
inline = { k = "v", n.m = 2 }
when = 1979-05-27 07:32:00Z
arr = [ [1, 2], ["x"], ]
[[plugin]]
name = "one"
[[plugin]]
name = "two"
)",
                       "t.toml");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->Find({"a", "b"})->integer, 1);
  EXPECT_EQ(doc->Find("hex")->integer, 255);
  EXPECT_EQ(doc->Find("big")->integer, 1000);
  EXPECT_EQ(doc->Find("neg")->integer, -12);
  EXPECT_EQ(doc->Find("s")->str, "one two");
  EXPECT_EQ(doc->Find("l")->str, "x'y");
  EXPECT_EQ(doc->Find({"inline", "k"})->str, "v");
  EXPECT_EQ(doc->Find({"inline", "n", "m"})->integer, 2);
  EXPECT_EQ(doc->Find("when")->type, TomlValue::Type::kDatetime);
  EXPECT_EQ(doc->Find("arr")->array.size(), 2u);
  const TomlValue* plugins = doc->Find("plugin");
  ASSERT_NE(plugins, nullptr);
  ASSERT_EQ(plugins->array.size(), 2u);
  EXPECT_EQ(plugins->array[1].Find("name")->str, "two");
}

TEST(TomlTest, ErrorsNameTheFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c : {
           Case{"a = 1\n[t]\nx = \n", "f.toml:3: expected a value"},
           Case{"[t]\n[t]\n", "f.toml:2: table [t] is defined twice (first at line 1)"},
           Case{"a = 1\na = 2\n", "f.toml:2: key a is defined twice (first at line 1)"},
           Case{"[plugins.\"x\"\n", "f.toml:1: table header [plugins.x is not closed"},
           Case{"a = [1,\n2\n", "f.toml:1: array is never closed"},
           Case{"a = \"x\n", "f.toml:1: string is not closed"},
           Case{"a = yes\n", "f.toml:1: cannot read the value yes"},
           Case{"a = 1 b = 2\n", "f.toml:1: expected the end of the line"},
           Case{"a = 1\n[a.b]\n", "f.toml:2: a is a value (line 1), not a table"},
       }) {
    auto doc = ParseToml(c.text, "f.toml");
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_NE(doc.error().message().find(c.want), std::string::npos)
        << c.text << " -> " << doc.error().message();
  }
}

// Found by the shim's fuzz target: nesting recursed without bound (a stack overflow on a
// malformed Kata configuration). Deep nesting is an error naming the line; sane nesting reads.
TEST(TomlTest, NestingIsBounded) {
  std::string deep = "a = " + std::string(100000, '[') + "\n";
  auto doc = ParseToml(deep, "f.toml");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message().find("f.toml:1: arrays and inline tables nested more than 64"),
            std::string::npos)
      << doc.error().message();
  std::string braces = "a = ";
  for (int i = 0; i < 1000; ++i) braces += "{ b = ";
  EXPECT_FALSE(ParseToml(braces + "\n", "f.toml").ok());
  EXPECT_TRUE(ParseToml("a = [[1, 2], [{ b = [3] }]]\n", "f.toml").ok());
}

TEST(TomlTest, QuotesStrings) {
  EXPECT_EQ(TomlQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  auto doc = ParseToml("k = " + TomlQuote("x\"y\\z\n") + "\n", "q");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->Find("k")->str, "x\"y\\z\n");
}

}  // namespace
}  // namespace vfio_gpu
