// Serving certificate and key read from files that cert-manager (or the kubelet's secret volume
// update, or webhook-selfsigned.sh) replaces on disk. Every TLS handshake asks for the current
// pair; when either file's identity (inode, size, mtime) has changed since the last load, the pair
// is re-read first. A half-rotated pair (new cert, old key) never replaces a working one: the old
// pair keeps serving until both files agree.
#pragma once

#include <openssl/ssl.h>
#include <sys/stat.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

namespace vfio_gpu::webhook {

// A loaded pair; owns its OpenSSL references.
struct KeyPair {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509) * chain = nullptr;  // intermediates after the leaf in the cert file
  std::string subject;               // for logs
  ~KeyPair();
};

// Reads and checks a pair; errors name the file and say what to fix.
Result<std::shared_ptr<const KeyPair>> LoadKeyPair(const std::string& cert_path,
                                                   const std::string& key_path);

class TlsReloader {
 public:
  // Loads the pair once; the webhook refuses to start without a valid one.
  static Result<std::unique_ptr<TlsReloader>> Create(std::string cert_path, std::string key_path);

  // The pair to present now, re-reading the files first if they changed.
  std::shared_ptr<const KeyPair> Current();

  // Sets TLS 1.2 as the minimum, the server options, and the per-handshake certificate callback.
  // `this` must outlive the context.
  bool ConfigureContext(SSL_CTX& ctx);

  uint64_t reloads() const { return reloads_.load(); }
  uint64_t reload_failures() const { return reload_failures_.load(); }

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Identities {
    Identity cert, key;
    bool operator==(const Identities&) const = default;
  };

  TlsReloader(std::string cert_path, std::string key_path)
      : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}
  Identities Stat() const;
  static int CertCallback(SSL* ssl, void* arg);

  const std::string cert_path_;
  const std::string key_path_;
  std::mutex mu_;
  std::shared_ptr<const KeyPair> current_;
  Identities loaded_;  // files as they were when `current_` was read
  Identities failed_;  // files as they were at the last failed reload (not retried)
  bool has_failed_ = false;
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> reload_failures_{0};
};

}  // namespace vfio_gpu::webhook
