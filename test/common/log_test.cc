#include "common/log.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/json.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

TEST(LogTest, JsonLinesStayValidWithQuotesAndNewlines) {
  testing::TempDir dir;
  std::string path = dir / "log.jsonl";
  ASSERT_TRUE(SetupLogging(LogFormat::kJson, path));
  spdlog::info("refused \"0000:17:00.0\": group 25\nnot viable");
  spdlog::default_logger()->flush();
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  auto line = text->substr(0, text->find('\n', text->size() - 1));
  auto j = Json::Parse(line, "log line");
  ASSERT_TRUE(j.ok()) << *text;
  EXPECT_EQ(j->Get("msg").AsString(), "refused \"0000:17:00.0\": group 25\nnot viable");
  EXPECT_EQ(j->Get("level").AsString(), "info");
  SilenceLogging();
}

TEST(LogTest, UnknownFormatIsNamed) {
  auto f = ParseLogFormat("xml");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("xml"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu
