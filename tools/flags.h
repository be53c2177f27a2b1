// Flag helpers shared by the tools: a flag is bound to the field of the configuration struct it
// sets, so its default is the struct's and is stated nowhere else.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/units.h"

namespace yb::tools {

// A size flag ("4 GB", "16MB", "1048576") that sets `target`; its help shows target's value now.
inline CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            auto size = ParseSize(text);
            if (!size.ok()) throw CLI::ValidationError(name, size.status().message());
            target = *size;
          },
          help)
      ->default_str(FormatBytes(target));
}

// The security flags every daemon and the CLI share (docs/security.md), bound to the fields they set.
inline void AddSecurityFlags(CLI::App& app, std::string& auth_secret_file, std::string& tls_cert, std::string& tls_key,
                             std::string& tls_ca, bool& wire_macs) {
  app.add_option("--wire_macs", wire_macs,
                 "with --auth_secret_file and without TLS: every byte after the handshake carries a MAC under a key "
                 "of its connection, so a host on the path cannot change it unseen; every process of a cluster needs "
                 "the same setting (YB_WIRE_MACS)")
      ->capture_default_str();
  app.add_option("--auth_secret_file", auth_secret_file,
                 "file holding the cluster's secret (the same on every node; a tenant's, for a client of one): every "
                 "connection then proves it (YB_AUTH_SECRET_FILE)");
  app.add_option("--tls_cert", tls_cert,
                 "PEM certificate: servers speak TLS with it, clients present it (YB_TLS_CERT)");
  app.add_option("--tls_key", tls_key, "PEM private key of --tls_cert (YB_TLS_KEY)");
  app.add_option("--tls_ca", tls_ca,
                 "PEM CA: clients check servers against it (TLS on); servers then ask clients for a certificate it "
                 "signed, mutual TLS (YB_TLS_CA)");
}

// How etcd is reached (docs/security.md): TLS and etcd's own user. Every tool that talks to etcd.
inline void AddEtcdFlags(CLI::App& app, std::string& ca, std::string& cert, std::string& key, std::string& user,
                         std::string& password_file) {
  app.add_option("--etcd_tls_ca", ca, "PEM CA that etcd's certificate is checked against: etcd over TLS "
                                      "(YB_ETCD_TLS_CA)");
  app.add_option("--etcd_tls_cert", cert, "PEM certificate for etcd's --client-cert-auth (YB_ETCD_TLS_CERT)");
  app.add_option("--etcd_tls_key", key, "PEM key of --etcd_tls_cert (YB_ETCD_TLS_KEY)");
  app.add_option("--etcd_user", user, "etcd user, with etcd's authentication enabled (YB_ETCD_USER)");
  app.add_option("--etcd_password_file", password_file,
                 "file holding that user's password, mode 0600 (YB_ETCD_PASSWORD_FILE)");
}

// --protected_mode, of the daemons that serve (docs/security.md).
inline void AddProtectedModeFlag(CLI::App& app, bool& protected_mode) {
  app.add_option("--protected_mode", protected_mode,
                 "without --auth_secret_file (or client certificates), serve only processes on this host and refuse "
                 "others with a message saying how to proceed; false serves anyone who reaches the ports")
      ->capture_default_str();
}

}  // namespace yb::tools
