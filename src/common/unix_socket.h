// Unix domain sockets in the abstract namespace (a name with no file, gone with its last
// descriptor; one namespace per network namespace): how processes of one host find each other
// (the same-host transport, dummy clients). Names are given without the leading zero byte.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <string_view>

namespace yb {

// What a server calls the peer of a Unix socket connection (always a process of this host).
inline constexpr std::string_view kUnixSocketPeer = "unix-socket";

// The address of abstract `name` (cut to what sun_path holds); its length.
socklen_t AbstractUnixAddress(std::string_view name, sockaddr_un* addr);

// The peer of a connected Unix socket may share this process's memory: the same user, or root
// (SO_PEERCRED).
bool SameUserPeer(int fd);

// Sends one message with a descriptor attached (SCM_RIGHTS; -1: none). True when all of it went.
bool SendWithFd(int sock, std::string_view msg, int fd);
// Receives one message of at most `max` bytes into `out`, and a descriptor sent with it into
// `*fd` (-1 when none came; any more than one are closed). False on error or end of stream.
bool RecvWithFd(int sock, std::string& out, size_t max, int* fd);

}  // namespace yb
