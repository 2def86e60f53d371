// containerd-shim-vfio-gpu-v2 as containerd runs it: the binary, started in the bundle with the
// shim v2 argv, the runtime options on stdin, and a recording stand-in as the downstream shim.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <random>
#include <string>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "test/shim/spec_fixtures.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::Dev;

class ShimBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<FakeHost>(tmp_.path() + "/host");
    ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
    rec_ = tmp_.path() + "/rec";
    ASSERT_TRUE(MakeDirs(rec_).ok());
    // The downstream stand-in records what it was given and answers like a shim: an address.
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/downstream",
                                "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + rec_ + "/argv\npwd > " +
                                    rec_ + "/cwd\nprintf '%s' \"$SHIM_TEST_ENV\" > " + rec_ +
                                    "/env\ncat > " + rec_ + "/stdin\necho unix:///run/fake.sock\n",
                                0755)
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/gpu.toml",
                                "[hypervisor.qemu]\ncold_plug_vfio = \"root-port\"\n")
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/shim.json",
                                R"({"downstream_shim":")" + tmp_.path() +
                                    R"(/downstream","sysfs_root":")" + host_->roots().sysfs +
                                    R"(","dev_root":")" + host_->roots().dev + R"(","run_dir":")" +
                                    tmp_.path() + R"(/run","authorize":"off",)" +
                                    R"("kata_config_path":")" + tmp_.path() + R"(/gpu.toml"})")
                    .ok());
    bundle_ = tmp_.path() + "/bundle";
    ASSERT_TRUE(MakeDirs(bundle_).ok());
  }
  // A plain `ctr run` spec (no CRI annotations): its own sandbox.
  void WriteSpec(const std::string& devices) {
    ASSERT_TRUE(WriteFileAtomic(bundle_ + "/config.json",
                                R"({"ociVersion":"1.0.2","process":{"args":["sh"],"cwd":"/"},)"
                                R"("root":{"path":"rootfs"},"linux":{"devices":)" +
                                    devices + "}}")
                    .ok());
  }
  testing::Outcome Start(const std::string& stdin_file) {
    return testing::RunCommand("cd " + bundle_ + " && SHIM_TEST_ENV=kept VFIO_GPU_SHIM_CONFIG=" +
                                   tmp_.path() + "/shim.json " + VFIO_GPU_SHIM +
                                   " -namespace default -address /run/containerd/containerd.sock"
                                   " -publish-binary /usr/bin/containerd -id c1 start < " +
                                   stdin_file,
                               tmp_.path() + "/stderr");
  }
  std::string Rec(const std::string& name) {
    auto t = ReadFile(rec_ + "/" + name);
    return t ? *t : "<missing>";
  }

  testing::TempDir tmp_;
  std::unique_ptr<FakeHost> host_;
  std::string rec_, bundle_;
};

// The runtime options on stdin are protobuf bytes (NULs and all): the downstream must get them
// unchanged, with the same argv, environment and working directory; the shim itself prints nothing
// (containerd parses the downstream's reply from stdout and stderr together).
TEST_F(ShimBinaryTest, DownstreamGetsTheSameArgvEnvCwdAndStdinBytes) {
  WriteSpec("[]");
  std::string options(100 * 1024, '\0');
  std::mt19937 rng(7);
  for (auto& c : options) c = static_cast<char>(rng() & 0xff);
  ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/options.bin", options).ok());
  auto r = Start(tmp_.path() + "/options.bin");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "unix:///run/fake.sock\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Rec("stdin"), options);
  EXPECT_EQ(Rec("argv"),
            "-namespace\ndefault\n-address\n/run/containerd/containerd.sock\n-publish-binary\n"
            "/usr/bin/containerd\n-id\nc1\nstart\n");
  EXPECT_EQ(Rec("env"), "kept");
  EXPECT_EQ(Rec("cwd"), bundle_ + "\n");
}

// A refusal is one line for containerd to show, a non-zero exit, and no downstream start.
TEST_F(ShimBinaryTest, RefusalIsOneLineAndTheDownstreamNeverRuns) {
  WriteSpec("[" + Dev("/dev/vfio/999", 241, 999) + "]");
  auto r = Start("/dev/null");
  EXPECT_NE(r.code, 0);
  std::string all = r.out + r.err;
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.find('\n'), all.size() - 1) << all;
  EXPECT_NE(all.find("IOMMU group 999"), std::string::npos) << all;
  EXPECT_FALSE(PathExists(rec_ + "/argv"));
}

// The hooks claimed the GPU but the downstream shim can't be executed: containerd will never call
// delete for this start, so its claims go back at once and the message says what to fix.
TEST_F(ShimBinaryTest, ClaimsAreReleasedWhenTheDownstreamCannotBeExecuted) {
  ASSERT_EQ(::chmod((tmp_.path() + "/downstream").c_str(), 0644), 0);
  WriteSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]");
  auto r = Start("/dev/null");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("cannot exec downstream shim " + tmp_.path() + "/downstream"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("downstream_shim"), std::string::npos) << r.out;
  EXPECT_FALSE(PathExists(tmp_.path() + "/run/ledger/0000:17:00.0"));
}

// On a node the group nodes are character devices, and a spec may carry their numbers at another
// path: the shim sees through it, claims the GPU once and hands Kata the group node.
TEST_F(ShimBinaryTest, AliasOfARealGroupNodeCollapsesToItAndIsClaimed) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  std::string node = host_->roots().VfioGroupNode(25);
  ::unlink(node.c_str());
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(241, 25)), 0);
  WriteSpec("[" + Dev("/dev/gpu0", 241, 25) + "," + Dev("/dev/vfio/25", 241, 25) + "]");
  auto r = Start("/dev/null");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto spec = Json::ParseFile(bundle_ + "/config.json");
  ASSERT_TRUE(spec.ok());
  Json devices = spec->Get("linux").Get("devices");
  ASSERT_EQ(devices.size(), 1u) << spec->Dump();
  EXPECT_EQ(devices.At(0).Get("path").AsString(), "/dev/vfio/25");
  EXPECT_EQ(devices.At(0).Get("minor").AsInt(), 25);
  EXPECT_TRUE(PathExists(tmp_.path() + "/run/ledger/0000:17:00.0"));

  // The same numbers under another group's path: refused, naming both.
  WriteSpec("[" + Dev("/dev/vfio/182", 241, 25) + "]");
  auto bad = Start("/dev/null");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE((bad.out + bad.err).find("carries device numbers 241:25"), std::string::npos)
      << bad.out << bad.err;
}

}  // namespace
}  // namespace vfio_gpu
