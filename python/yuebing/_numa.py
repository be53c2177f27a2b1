"""bind_to_numa_node(node): Mooncake's module-level call (LMCache's Mooncake connector makes it for
the NUMA node of its GPU before setup): the calling thread runs on that node's CPUs, and its new
memory comes from that node first (falling back to others), as numa_run_on_node and
numa_set_preferred do. Without NUMA, or for a node this machine does not have, a warning and
nothing else, as Mooncake's."""
import ctypes
import logging
import os
import platform

_log = logging.getLogger("yuebing")
_NODES = "/sys/devices/system/node"
_MPOL_PREFERRED = 1
_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}  # the syscall's number per architecture


def _cpus(cpulist):
    cpus = set()
    for part in cpulist.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def bind_to_numa_node(node):
    if not os.path.isdir(_NODES):
        _log.warning("NUMA is not available on this system; binding skipped")
        return
    path = os.path.join(_NODES, f"node{int(node)}", "cpulist")
    if node < 0 or not os.path.exists(path):
        online = open(os.path.join(_NODES, "online")).read().strip()
        _log.warning("Invalid NUMA node: %d. Valid: %s", node, online)
        return
    with open(path) as f:
        cpus = _cpus(f.read())
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        _log.warning("binding to the CPUs of NUMA node %d failed: %s", node, e)
    number = _SET_MEMPOLICY.get(platform.machine())
    if number is None:
        return
    mask = ctypes.c_ulong(1 << int(node)) if node < 64 else None
    if mask is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, _MPOL_PREFERRED, ctypes.byref(mask), ctypes.c_ulong(64)) != 0:
        _log.warning("preferring NUMA node %d for memory failed: %s", node, os.strerror(ctypes.get_errno()))
