#include "net/test_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>

namespace yb::net {
namespace {

struct Freer {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, Freer>;
using Cert = std::unique_ptr<X509, Freer>;

Key NewKey() { return Key(EVP_EC_gen("P-256")); }

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value)) {
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
}

// A certificate for `key` named `cn`, signed by `issuer_key` (itself when no issuer is given).
Cert NewCert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, bool ca, long serial) {
  Cert c(X509_new());
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), 86400);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(c.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : c.get();
  if (ca) {
    AddExt(c.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(c.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExt(c.get(), signer, NID_basic_constraints, "CA:FALSE");
    AddExt(c.get(), signer, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  }
  X509_sign(c.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return c;
}

bool Write(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  bool ok = cert ? PEM_write_X509(f, cert) == 1 : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

Status MakeTestCerts(const std::string& dir) {
  Key ca_key = NewKey(), server_key = NewKey(), client_key = NewKey(), other_ca_key = NewKey(), other_key = NewKey();
  if (!ca_key || !server_key || !client_key || !other_ca_key || !other_key) {
    return Status(Code::kInternal, "cannot make test keys");
  }
  Cert ca = NewCert(ca_key.get(), "yuebing test CA", nullptr, nullptr, true, 1);
  Cert server = NewCert(server_key.get(), "localhost", ca.get(), ca_key.get(), false, 2);
  Cert client = NewCert(client_key.get(), "yuebing test client", ca.get(), ca_key.get(), false, 3);
  Cert other_ca = NewCert(other_ca_key.get(), "another CA", nullptr, nullptr, true, 4);
  Cert other = NewCert(other_key.get(), "localhost", other_ca.get(), other_ca_key.get(), false, 5);
  const bool ok = Write(dir + "/ca.pem", ca.get(), nullptr) && Write(dir + "/server.pem", server.get(), nullptr) &&
                  Write(dir + "/server.key", nullptr, server_key.get()) &&
                  Write(dir + "/client.pem", client.get(), nullptr) &&
                  Write(dir + "/client.key", nullptr, client_key.get()) &&
                  Write(dir + "/other-ca.pem", other_ca.get(), nullptr) &&
                  Write(dir + "/other.pem", other.get(), nullptr) && Write(dir + "/other.key", nullptr, other_key.get());
  return ok ? Status::OK() : Status(Code::kInternal, "cannot write test certificates into " + dir);
}

}  // namespace yb::net
