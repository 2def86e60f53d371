// The webhook over real HTTPS: the in-process server on a loopback port, curl as the client, a test
// CA and server certificates made by openssl in a scratch directory. Every fixture the issue lists
// goes through here, and so does certificate rotation on disk.
#include "webhook/server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/files.h"
#include "common/json.h"
#include "common/log.h"
#include "test/webhook/harness.h"

namespace vfio_gpu::webhook {
namespace {

using testing::Base64Decode;
using testing::Curl;
using testing::FixturePath;
using testing::Reply;
using testing::ScratchDir;

class HttpsServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SilenceLogging();
    dir_ = new ScratchDir();
    testing::MakeCa(dir_->path(), "ca");
    testing::MakeServerCert(dir_->path(), "ca", "tls");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    // Each test serves its own copy of the pair, so rotating it never disturbs another test.
    work_ = std::make_unique<ScratchDir>();
    std::filesystem::copy_file(*dir_ / "tls.crt", *work_ / "tls.crt");
    std::filesystem::copy_file(*dir_ / "tls.key", *work_ / "tls.key");
    Start(Config{});
  }
  void TearDown() override { StopServer(); }

  void Start(Config config) {
    auto tls = TlsReloader::Create(*work_ / "tls.crt", *work_ / "tls.key");
    ASSERT_TRUE(tls.ok()) << tls.error().message();
    auto server = Server::Create(std::move(config), std::move(*tls));
    ASSERT_TRUE(server.ok()) << server.error().message();
    server_ = std::move(*server);
    auto port = server_->Bind({"127.0.0.1", 0});
    ASSERT_TRUE(port.ok()) << port.error().message();
    port_ = *port;
    thread_ = std::thread([this] { served_ = server_->Serve(); });
  }
  void StopServer() {
    if (!server_) return;
    server_->Stop();
    thread_.join();
    EXPECT_TRUE(served_.ok());
    server_.reset();
  }

  Reply Post(const std::string& fixture, const std::string& ca = "") {
    return Curl(port_, ca.empty() ? *dir_ / "ca.pem" : ca, "/mutate", FixturePath(fixture));
  }
  Reply Get(const std::string& path, const std::string& ca = "") {
    return Curl(port_, ca.empty() ? *dir_ / "ca.pem" : ca, path);
  }
  static Json ResponseOf(const Reply& r) {
    auto j = Json::Parse(r.body, "reply");
    EXPECT_TRUE(j.ok()) << r.body;
    return j.ok() ? j->Get("response") : Json();
  }
  void ExpectStillServing() {
    Reply h = Get("/healthz");
    EXPECT_EQ(h.status, 200) << h.err;
    EXPECT_EQ(h.body, "ok\n");
  }

  static ScratchDir* dir_;
  std::unique_ptr<ScratchDir> work_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  Status served_;
  int port_ = 0;
};

ScratchDir* HttpsServer::dir_ = nullptr;

TEST_F(HttpsServer, GpuPodWithoutClassIsPatched) {
  Reply r = Post("gpu-no-class.json");
  ASSERT_EQ(r.curl_exit, 0) << r.err;
  EXPECT_EQ(r.status, 200);
  Json resp = ResponseOf(r);
  EXPECT_EQ(resp.Get("uid").AsString(), "7d0c1ee9-0001");
  EXPECT_TRUE(resp.Get("allowed").AsBool());
  EXPECT_EQ(resp.Get("patchType").AsString(), "JSONPatch");
  EXPECT_EQ(Base64Decode(resp.Get("patch").AsString()),
            R"([{"op":"add","path":"/spec/runtimeClassName","value":"kata-qemu-vfio-gpu"}])");
  EXPECT_EQ(resp.Get("warnings").size(), 1u);
}

TEST_F(HttpsServer, GpuPodOnRuncIsDenied) {
  Reply r = Post("gpu-runc.json");
  EXPECT_EQ(r.status, 200);
  Json resp = ResponseOf(r);
  EXPECT_EQ(resp.Get("uid").AsString(), "7d0c1ee9-0002");
  EXPECT_FALSE(resp.Get("allowed").AsBool());
  std::string m = resp.Get("status").Get("message").AsString();
  EXPECT_NE(m.find("\"runc\""), std::string::npos) << m;
  EXPECT_NE(m.find("no VM between the tenant and the host"), std::string::npos) << m;
  EXPECT_NE(m.find("kata-qemu-vfio-gpu"), std::string::npos) << m;
}

TEST_F(HttpsServer, GpuPodOnKataClhIsDenied) {
  Json resp = ResponseOf(Post("gpu-kata-clh.json"));
  EXPECT_FALSE(resp.Get("allowed").AsBool());
  std::string m = resp.Get("status").Get("message").AsString();
  EXPECT_NE(m.find("\"kata-clh\""), std::string::npos) << m;
  EXPECT_NE(m.find("Cloud Hypervisor"), std::string::npos) << m;
}

TEST_F(HttpsServer, GpuPodOnTheGpuClassIsAllowedUnchanged) {
  Json resp = ResponseOf(Post("gpu-class.json"));
  EXPECT_EQ(resp.Get("uid").AsString(), "7d0c1ee9-0004");
  EXPECT_TRUE(resp.Get("allowed").AsBool());
  EXPECT_FALSE(resp.Has("patch"));
}

TEST_F(HttpsServer, InitContainerRequestIsPatched) {
  Json resp = ResponseOf(Post("gpu-init-container.json"));
  EXPECT_TRUE(resp.Get("allowed").AsBool());
  EXPECT_NE(Base64Decode(resp.Get("patch").AsString()).find("kata-qemu-vfio-gpu"),
            std::string::npos);
}

TEST_F(HttpsServer, TenantCdiAnnotationIsDenied) {
  Json resp = ResponseOf(Post("cdi-annotation.json"));
  EXPECT_FALSE(resp.Get("allowed").AsBool());
  EXPECT_NE(resp.Get("status").Get("message").AsString().find("cdi.k8s.io/gpu"), std::string::npos);
}

TEST_F(HttpsServer, NonGpuPodIsAllowedWithoutPatch) {
  Reply r = Post("non-gpu.json");
  Json resp = ResponseOf(r);
  EXPECT_EQ(resp.Get("uid").AsString(), "7d0c1ee9-0007");
  EXPECT_TRUE(resp.Get("allowed").AsBool());
  EXPECT_FALSE(resp.Has("patch"));
  EXPECT_FALSE(resp.Has("warnings"));
}

TEST_F(HttpsServer, MalformedJsonIs400AndTheServerKeepsServing) {
  Reply r = Post("malformed.json");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("invalid AdmissionReview"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("invalid JSON"), std::string::npos) << r.body;
  ExpectStillServing();
}

TEST_F(HttpsServer, WrongKindIs400) {
  Reply r = Post("wrong-kind.json");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("admission.k8s.io/v1beta1"), std::string::npos) << r.body;
  ExpectStillServing();
}

TEST_F(HttpsServer, OversizedBodyIs400AndTheServerKeepsServing) {
  std::string big = *work_ / "big.json";
  {
    std::ofstream f(big);
    f << "{\"pad\":\"" << std::string(kMaxReviewBytes, 'x') << "\"}";
  }
  Reply r = Curl(port_, *dir_ / "ca.pem", "/mutate", big);
  EXPECT_EQ(r.status, 400) << r.err;
  EXPECT_NE(r.body.find("larger than the 3145728-byte limit"), std::string::npos) << r.body;
  // Chunked: no Content-Length to refuse up front, the limit applies while reading.
  Reply chunked =
      Curl(port_, *dir_ / "ca.pem", "/mutate", big, {"-H", "Transfer-Encoding: chunked"});
  EXPECT_EQ(chunked.status, 400) << chunked.err;
  ExpectStillServing();
  EXPECT_EQ(server_->metrics().Count(Outcome::kInvalid), 2u);
}

TEST_F(HttpsServer, HealthzMetricsAndUnknownPaths) {
  ExpectStillServing();
  Post("gpu-no-class.json");
  Post("gpu-runc.json");
  Post("non-gpu.json");
  Post("malformed.json");
  Reply m = Get("/metrics");
  EXPECT_EQ(m.status, 200);
  for (const char* line : {"vfio_gpu_webhook_reviews_total{outcome=\"allowed\"} 1",
                           "vfio_gpu_webhook_reviews_total{outcome=\"patched\"} 1",
                           "vfio_gpu_webhook_reviews_total{outcome=\"denied\"} 1",
                           "vfio_gpu_webhook_reviews_total{outcome=\"invalid\"} 1",
                           "vfio_gpu_webhook_review_duration_seconds_bucket{le=\"+Inf\"} 4",
                           "vfio_gpu_webhook_review_duration_seconds_count 4"})
    EXPECT_NE(m.body.find(line), std::string::npos) << line << "\n" << m.body;
  Reply nf = Get("/nope");
  EXPECT_EQ(nf.status, 404);
  EXPECT_NE(nf.body.find("POST /mutate"), std::string::npos) << nf.body;
}

TEST_F(HttpsServer, RefusesTls11AndPlainHttp) {
  Reply old = Curl(port_, *dir_ / "ca.pem", "/healthz", "",
                   {"--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT@SECLEVEL=0"});
  EXPECT_NE(old.curl_exit, 0);
  EXPECT_NE(old.status, 200);
  Reply tls12 = Curl(port_, *dir_ / "ca.pem", "/healthz", "", {"--tlsv1.2", "--tls-max", "1.2"});
  EXPECT_EQ(tls12.status, 200) << tls12.err;
  testing::Proc plain = testing::Run({"curl", "-sS", "--max-time", "10",
                                      "http://127.0.0.1:" + std::to_string(port_) + "/healthz"});
  EXPECT_NE(plain.exit_code, 0);
  ExpectStillServing();
}

TEST_F(HttpsServer, RotatedCertificateIsServedWithoutRestart) {
  ScratchDir next;
  testing::MakeCa(next.path(), "ca2");
  testing::MakeServerCert(next.path(), "ca2", "tls");
  std::string ca1 = *dir_ / "ca.pem", ca2 = next / "ca2.pem";
  ASSERT_EQ(Get("/healthz", ca1).status, 200);
  EXPECT_NE(Get("/healthz", ca2).curl_exit, 0);  // not trusted yet

  // Half-way through a rotation (new cert, old key) the old pair keeps serving.
  ASSERT_TRUE(WriteFileAtomic(*work_ / "tls.crt", *ReadFile(next / "tls.crt")).ok());
  Reply mid = Get("/healthz", ca1);
  EXPECT_EQ(mid.status, 200) << mid.err;

  ASSERT_TRUE(WriteFileAtomic(*work_ / "tls.key", *ReadFile(next / "tls.key"), 0600).ok());
  Reply after = Get("/healthz", ca2);
  EXPECT_EQ(after.status, 200) << after.err;
  EXPECT_NE(Get("/healthz", ca1).curl_exit, 0);  // the old CA no longer verifies us
  EXPECT_EQ(ResponseOf(Post("gpu-runc.json", ca2)).Get("allowed").AsBool(), false);

  Reply m = Get("/metrics", ca2);
  EXPECT_NE(m.body.find("vfio_gpu_webhook_cert_reloads_total{result=\"ok\"} 1"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("vfio_gpu_webhook_cert_reloads_total{result=\"error\"} 1"),
            std::string::npos)
      << m.body;
}

TEST_F(HttpsServer, KubeletStyleSymlinkSwapIsPickedUp) {
  // A Secret volume: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/, swapped by rename.
  StopServer();
  std::string vol = *work_ / "vol";
  std::filesystem::create_directories(vol + "/..v1");
  std::filesystem::copy_file(*dir_ / "tls.crt", vol + "/..v1/tls.crt");
  std::filesystem::copy_file(*dir_ / "tls.key", vol + "/..v1/tls.key");
  std::filesystem::create_directory_symlink("..v1", vol + "/..data");
  std::filesystem::create_symlink("..data/tls.crt", vol + "/tls.crt");
  std::filesystem::create_symlink("..data/tls.key", vol + "/tls.key");
  auto tls = TlsReloader::Create(vol + "/tls.crt", vol + "/tls.key");
  ASSERT_TRUE(tls.ok()) << tls.error().message();
  auto server = Server::Create(Config{}, std::move(*tls));
  ASSERT_TRUE(server.ok());
  server_ = std::move(*server);
  port_ = *server_->Bind({"127.0.0.1", 0});
  thread_ = std::thread([this] { served_ = server_->Serve(); });
  ASSERT_EQ(Get("/healthz").status, 200);

  ScratchDir next;
  testing::MakeCa(next.path(), "ca2");
  testing::MakeServerCert(next.path(), "ca2", "tls");
  std::filesystem::create_directories(vol + "/..v2");
  std::filesystem::copy_file(next / "tls.crt", vol + "/..v2/tls.crt");
  std::filesystem::copy_file(next / "tls.key", vol + "/..v2/tls.key");
  std::filesystem::create_directory_symlink("..v2", vol + "/..data_tmp");
  std::filesystem::rename(vol + "/..data_tmp", vol + "/..data");
  Reply r = Get("/healthz", next / "ca2.pem");
  EXPECT_EQ(r.status, 200) << r.err;
}

TEST_F(HttpsServer, PairFromWebhookSelfsignedShIsServedForTheServiceName) {
  StopServer();
  std::string out = *work_ / "selfsigned";
  testing::Proc script = testing::Run(
      {std::string(WEBHOOK_SOURCE_DIR) + "/scripts/webhook-selfsigned.sh", "--out", out});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  auto tls = TlsReloader::Create(out + "/tls.crt", out + "/tls.key");
  ASSERT_TRUE(tls.ok()) << tls.error().message();
  auto server = Server::Create(Config{}, std::move(*tls));
  ASSERT_TRUE(server.ok());
  server_ = std::move(*server);
  port_ = *server_->Bind({"127.0.0.1", 0});
  thread_ = std::thread([this] { served_ = server_->Serve(); });
  // The name the API server dials, trusted through the caBundle the script computed.
  std::string host = "vfio-gpu-webhook.vfio-gpu-system.svc", p = std::to_string(port_);
  auto patch = Json::ParseFile(out + "/cabundle-patch.json");
  ASSERT_TRUE(patch.ok());
  ASSERT_TRUE(
      WriteFileAtomic(out + "/bundle.pem", Base64Decode(patch->At(0).Get("value").AsString()))
          .ok());
  testing::Proc curl =
      testing::Run({"curl", "-sS", "--max-time", "20", "--cacert", out + "/bundle.pem", "--resolve",
                    host + ":" + p + ":127.0.0.1", "https://" + host + ":" + p + "/healthz"});
  EXPECT_EQ(curl.exit_code, 0) << curl.err;
  EXPECT_EQ(curl.out, "ok\n");
  EXPECT_FALSE(std::filesystem::exists(out + "/ca.key"));  // nobody can mint more certificates
}

TEST(TlsReloader, RefusesMissingOrMismatchedFilesNamingThem) {
  ScratchDir d;
  testing::MakeCa(d.path(), "ca");
  testing::MakeServerCert(d.path(), "ca", "a");
  testing::MakeServerCert(d.path(), "ca", "b");
  auto missing = TlsReloader::Create(d / "nope.crt", d / "a.key");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("nope.crt"), std::string::npos);
  auto mismatch = TlsReloader::Create(d / "a.crt", d / "b.key");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message().find("does not belong to certificate"), std::string::npos)
      << mismatch.error().message();
  auto swapped = TlsReloader::Create(d / "a.key", d / "a.crt");
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.error().message().find("a.key"), std::string::npos)
      << swapped.error().message();
}

TEST(ListenAddress, Forms) {
  auto a = ParseListenAddress(":8443");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "");
  EXPECT_EQ(a->port, 8443);
  a = ParseListenAddress("[::1]:9443");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  a = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 0);
  for (const char* bad : {"8443", ":http", "::1:8443", "[::1:8443", "host:70000", ":-1"}) {
    auto r = ParseListenAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("--listen"), std::string::npos);
  }
}

}  // namespace
}  // namespace vfio_gpu::webhook
