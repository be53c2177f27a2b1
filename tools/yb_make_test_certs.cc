// yb-make-test-certs DIR: writes the test certificates of net/test_certs.h into DIR (a CA, a
// server and a client certificate it signs, and another CA's). For the multi-process tests; built
// with the tests only.
#include <cstdio>

#include "net/test_certs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: yb-make-test-certs DIR\n");
    return 2;
  }
  yb::Status st = yb::net::MakeTestCerts(argv[1]);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
