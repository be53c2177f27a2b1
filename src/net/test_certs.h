// Test certificates: a CA, and a server and a client certificate it signs, written as PEM files
// into a directory (ca.pem, server.pem, server.key, client.pem, client.key), plus a second CA
// and a certificate signed by it (other-ca.pem, other.pem, other.key) for refusals. For tests
// only: keys are EC P-256, valid for a day.
#pragma once

#include <string>

#include "yuebing/status.h"

namespace yb::net {

Status MakeTestCerts(const std::string& dir);

}  // namespace yb::net
