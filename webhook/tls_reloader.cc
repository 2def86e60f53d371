#include "webhook/tls_reloader.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include "common/files.h"

namespace vfio_gpu::webhook {

namespace {

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no PEM data found";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr MemBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

}  // namespace

KeyPair::~KeyPair() {
  X509_free(cert);
  EVP_PKEY_free(key);
  if (chain) sk_X509_pop_free(chain, X509_free);
}

Result<std::shared_ptr<const KeyPair>> LoadKeyPair(const std::string& cert_path,
                                                   const std::string& key_path) {
  auto cert_text = ReadFile(cert_path);
  if (!cert_text) return cert_text.error().Wrap("cannot read TLS certificate");
  auto key_text = ReadFile(key_path);
  if (!key_text) return key_text.error().Wrap("cannot read TLS key");

  auto pair = std::make_shared<KeyPair>();
  ERR_clear_error();
  BioPtr cb = MemBio(*cert_text);
  pair->cert = PEM_read_bio_X509_AUX(cb.get(), nullptr, nullptr, nullptr);
  if (pair->cert == nullptr)
    return Error("TLS certificate " + cert_path + " holds no PEM certificate (" + OpenSslError() +
                 "); give --tls-cert a PEM file starting with the server certificate");
  pair->chain = sk_X509_new_null();
  while (X509* extra = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr))
    sk_X509_push(pair->chain, extra);
  ERR_clear_error();  // the loop ends on a "no start line" error, which is expected

  BioPtr kb = MemBio(*key_text);
  pair->key = PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr);
  if (pair->key == nullptr)
    return Error("TLS key " + key_path + " holds no unencrypted PEM private key (" +
                 OpenSslError() + "); give --tls-key the key of the certificate");
  if (X509_check_private_key(pair->cert, pair->key) != 1) {
    ERR_clear_error();
    return Error(
        "TLS key " + key_path + " does not belong to certificate " + cert_path +
        "; if they are being rotated, the webhook keeps its previous pair until both match");
  }
  char name[256];
  X509_NAME_oneline(X509_get_subject_name(pair->cert), name, sizeof name);
  pair->subject = name;
  return std::shared_ptr<const KeyPair>(std::move(pair));
}

Result<std::unique_ptr<TlsReloader>> TlsReloader::Create(std::string cert_path,
                                                         std::string key_path) {
  std::unique_ptr<TlsReloader> r(new TlsReloader(std::move(cert_path), std::move(key_path)));
  Identities before = r->Stat();
  auto pair = LoadKeyPair(r->cert_path_, r->key_path_);
  if (!pair) return pair.error();
  r->current_ = *pair;
  r->loaded_ = before;
  return r;
}

TlsReloader::Identities TlsReloader::Stat() const {
  auto one = [](const std::string& path) {
    struct stat st {};
    Identity id;
    if (stat(path.c_str(), &st) != 0) return id;  // a missing file reads as "changed", then fails
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = st.st_size;
    id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    id.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    return id;
  };
  return {one(cert_path_), one(key_path_)};
}

std::shared_ptr<const KeyPair> TlsReloader::Current() {
  Identities now = Stat();
  std::lock_guard<std::mutex> lock(mu_);
  if (now == loaded_ || (has_failed_ && now == failed_)) return current_;
  auto pair = LoadKeyPair(cert_path_, key_path_);
  if (!pair) {
    // Logged once per state of the files; the next change on disk is tried again.
    failed_ = now;
    has_failed_ = true;
    reload_failures_.fetch_add(1);
    spdlog::warn("TLS reload failed, still serving {}: {}", current_->subject,
                 pair.error().message());
    return current_;
  }
  current_ = *pair;
  loaded_ = now;
  has_failed_ = false;
  reloads_.fetch_add(1);
  spdlog::info("TLS certificate reloaded from {}: now serving {}", cert_path_, current_->subject);
  return current_;
}

int TlsReloader::CertCallback(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsReloader*>(arg);
  std::shared_ptr<const KeyPair> pair = self->Current();
  // SSL_use_cert_and_key takes its own references, so a later reload can free `pair`.
  return SSL_use_cert_and_key(ssl, pair->cert, pair->key, pair->chain, 1) == 1 ? 1 : 0;
}

bool TlsReloader::ConfigureContext(SSL_CTX& ctx) {
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
  // TLS 1.2 suites: forward-secret AEAD only (the API server's Go client offers these).
  if (SSL_CTX_set_cipher_list(&ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) return false;
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cert_cb(&ctx, &TlsReloader::CertCallback, this);
  return true;
}

}  // namespace vfio_gpu::webhook
