#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::TempDir;

TEST(AtomicWriteTest, ReplacesContentWithModeAndLeavesNoTempFiles) {
  TempDir dir;
  std::string path = dir / "spec.json";
  mode_t old = ::umask(077);
  ASSERT_TRUE(WriteFileAtomic(path, "one", 0644));
  ASSERT_TRUE(WriteFileAtomic(path, "two", 0644));
  ::umask(old);
  EXPECT_EQ(*ReadFile(path), "two");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // world-readable whatever the umask
  EXPECT_EQ(*ListDir(dir.path()), std::vector<std::string>{"spec.json"});
}

TEST(AtomicWriteTest, FailureNamesThePathAndKeepsTheOldFile) {
  TempDir dir;
  auto s = WriteFileAtomic(dir / "missing-dir/spec.json", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("missing-dir"), std::string::npos);
}

TEST(AtomicWriteTest, AStaleTempFileFromACrashDoesNotBlockTheNextWrite) {
  TempDir dir;
  // What a writer killed between create and rename leaves behind.
  ASSERT_TRUE(WriteFileAtomic(dir / ".spec.json.1234.deadbeef.tmp", "partial"));
  ASSERT_TRUE(WriteFileAtomic(dir / "spec.json", "whole"));
  EXPECT_EQ(*ReadFile(dir / "spec.json"), "whole");
}

TEST(FilesTest, ReadAttrTrimsAndErrorsNameThePath) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir / "class", "0x030200\n"));
  EXPECT_EQ(*ReadAttr(dir / "class"), "0x030200");
  auto missing = ReadAttr(dir / "vendor");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find(dir / "vendor"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu
