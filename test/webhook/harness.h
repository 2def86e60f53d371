// What the webhook's HTTPS tests share: a scratch directory, running real programs (openssl, curl,
// the webhook binary) with their output captured, a test CA and server certificates made by the
// openssl CLI, and curl as the client.
#pragma once

#include <string>
#include <vector>

namespace vfio_gpu::webhook::testing {

// The DNS name the test certificates carry; curl resolves it to 127.0.0.1 with --resolve.
inline constexpr const char* kHost = "webhook.test";

class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

struct Proc {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) in `cwd`, waits for it, returns its exit code and output.
Proc Run(const std::vector<std::string>& argv, const std::string& cwd = "");
// `sh -ec script` in `cwd`.
Proc Shell(const std::string& script, const std::string& cwd);

// `<dir>/<name>.pem` + `.key`: a self-signed CA.
void MakeCa(const std::string& dir, const std::string& name);
// `<dir>/<name>.crt` + `.key`: a P-256 server certificate for kHost and 127.0.0.1 signed by the CA.
void MakeServerCert(const std::string& dir, const std::string& ca, const std::string& name);

struct Reply {
  int curl_exit = -1;
  int status = 0;
  std::string body;
  std::string err;
};

// curl https://webhook.test:<port><path> trusting `ca_file`; `body_file` non-empty -> POST it.
Reply Curl(int port, const std::string& ca_file, const std::string& path,
           const std::string& body_file = "", const std::vector<std::string>& extra = {});

std::string Fixture(const std::string& name);      // contents of fixtures/<name>
std::string FixturePath(const std::string& name);  // its path
std::string Base64Decode(const std::string& s);

}  // namespace vfio_gpu::webhook::testing
