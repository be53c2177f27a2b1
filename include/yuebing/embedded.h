// Embedded mode: a master inside the calling process, for programs that need no yb-master
// (single-process use, tests, demos). Its code lives in the yb_embedded library (the C API's
// libyuebing.so and the Python package carry it), so a client that talks to a yb-master does not
// carry a master.
#pragma once

namespace yb {

// Lets Client::Connect take master_server_addr "embedded" or "embedded:NAME": the clients of this
// process that name the same cluster share one master and reach each other's segments by memcpy.
// The master goes away with the last of them. Idempotent; thread-safe.
void EnableEmbeddedMaster();

}  // namespace yb
