#!/usr/bin/env python3
"""House rules no compiler checks; fails naming each breach.

1. Seams: code outside them does not read the clock, sleep or start a thread by itself. New code
takes a Clock (common/clock.h) and runs on a Scheduler (common/scheduler.h) so that its tests run
on the manual clock. The seams' own files may use std::chrono::steady_clock::now,
sleep_for and std::thread; so may tests. The files listed in OWED still do, at most that many times:
the count may only go down (remove a file from the list once it is converted).
2. Locks carry annotations: in the modules clang's thread-safety analysis covers
(scripts/thread_safety.sh), a lock is yb::Mutex, SharedMutex or DeadlineMutex, held by their scoped
holders (common/thread_annotations.h), not a std:: mutex or lock the analysis cannot see.
3. Folders include downward: the graph of which folder includes which (src/<module>, include/,
tools/, python/, bench/, tests/) has no cycle, so the modules stack into layers; the public headers
(include/) include nothing of src/, and nothing below tools/ and python/ includes from them.
4. Docs state the present: no page under docs/ (nor the README) calls something planned or not
yet built; what is not built is said as such where it would be ("Not built: ..."), and the open
work lives in the issues.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATTERN = re.compile(r"steady_clock::now|sleep_for\b|sleep_until\b|std::thread\b(?!::hardware_concurrency)")
# The seams: where time and threads are made for everyone else.
SEAMS = {
    "src/common/clock.h",
    "src/common/scheduler.h",
    "src/common/scheduler.cc",
    "src/common/thread_pool.h",
    "src/common/event_loop.h",
    "src/common/event_loop.cc",
    "src/common/listener.h",
    "src/common/listener.cc",
    "src/common/test_util.h",
    "src/common/worker.h",
    "src/http/admin_http.h",  # cpp-httplib's accept loop runs on a thread of its own
}
# Files not converted yet: file -> the most uses it may keep (none now; a file listed while it is
# being converted may only go down).
OWED: dict[str, int] = {}

# The modules scripts/thread_safety.sh analyses, and the std:: locks it cannot see.
ANALYSED = ("src/master/", "src/ha/", "src/etcd/", "src/client/", "src/rpc/", "src/transfer/", "src/storage/")
PLAIN_LOCK = re.compile(r"std::(?:mutex|shared_mutex|timed_mutex|recursive_mutex|lock_guard|unique_lock|"
                        r"shared_lock|scoped_lock)\b")

STALE = re.compile(r"\b(?:is|are|be|been)\s+planned\b|\(planned\)|\bplanned\s*:|\bnot yet built\b|\bTODO\b",
                   re.IGNORECASE)


def check_docs() -> bool:
    failed = False
    for path in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if STALE.search(line):
                failed = True
                print(f"{path.relative_to(ROOT)}:{n}: says something is planned or not yet built "
                      f"(say what is built, or 'Not built: ...'): {line.strip()}")
    return failed


def check_seams() -> bool:
    failed = False
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix not in (".h", ".cc") or path.name.endswith("_test.cc"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        if rel in SEAMS:
            continue
        lines = [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1)
                 if PATTERN.search(line.split("//")[0])]
        allowed = OWED.get(rel, 0)
        if len(lines) > allowed:
            failed = True
            print(f"{rel}: {len(lines)} direct uses of the clock, sleeps or threads (at most {allowed}): "
                  "take a Clock and a Scheduler (common/clock.h, common/scheduler.h)")
            for n, line in lines:
                print(f"  {rel}:{n}: {line.strip()}")
        elif len(lines) < allowed:
            print(f"{rel}: {len(lines)} uses, fewer than the {allowed} owed: lower its count in {__file__}")
            failed = True
    return failed


def check_locks() -> bool:
    failed = False
    for path in sorted((ROOT / "src").rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix not in (".h", ".cc") or path.name.endswith("_test.cc") or not rel.startswith(ANALYSED):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if PLAIN_LOCK.search(line.split("//")[0]):
                failed = True
                print(f"{rel}:{n}: a lock clang's analysis cannot see: use yb::Mutex (or SharedMutex, "
                      f"DeadlineMutex) and their holders, with GUARDED_BY: {line.strip()}")
    return failed


INCLUDE = re.compile(r'^#include "([^"]+)"')
# Folders no other folder may include from (the mains and the bindings sit on top), tests and
# benchmarks aside.
TOPS = ("tools", "python")


def folder_of(rel: str) -> str:
    parts = rel.split("/")
    return "/".join(parts[:2]) if parts[0] == "src" else parts[0]


def check_layers() -> bool:
    modules = {p.name for p in (ROOT / "src").iterdir() if p.is_dir()}
    edges: dict[str, dict[str, str]] = {}  # folder -> folder it includes -> one line that does
    for top in ("src", "include", "tools", "python", "bench", "tests"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            rel = path.relative_to(ROOT).as_posix()
            here = folder_of(rel)
            for n, line in enumerate(path.read_text(errors="ignore").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                first = m.group(1).split("/")[0]
                target = f"src/{first}" if first in modules else "include" if first == "yuebing" else None
                if target is None:  # beside the file, or in a folder an include path names
                    for base in (path.parent, ROOT / "tools", ROOT / "python", ROOT / "bench", ROOT / "tests"):
                        if (base / m.group(1)).exists():
                            target = folder_of((base / m.group(1)).resolve().relative_to(ROOT).as_posix())
                            break
                if target and target != here:
                    edges.setdefault(here, {}).setdefault(target, f"{rel}:{n}")
    failed = False
    for here, targets in sorted(edges.items()):
        for target, where in sorted(targets.items()):
            # Tests and benchmarks may reach anything; the rest only what lies below them.
            if (target in TOPS and here not in ("tests", "bench")) or (here == "include" and target.startswith("src/")):
                failed = True
                print(f"{where}: {here} includes from {target}, which sits above it")
    # A cycle among folders: a module that includes one that includes it back.
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> bool:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, {})):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                print("include cycle between folders: " + " -> ".join(cycle) + " (" +
                      ", ".join(edges[a][b] for a, b in zip(cycle, cycle[1:])) + ")")
                return True
            if not state.get(nxt) and visit(nxt, path):
                return True
        path.pop()
        state[node] = 2
        return False

    for node in sorted(edges):
        if not state.get(node) and visit(node, []):
            failed = True
            break
    return failed


def main() -> int:
    failed = check_seams()
    failed = check_layers() or failed
    failed = check_locks() or failed
    failed = check_docs() or failed
    if not failed:
        print("house rules: clean (seams, annotated locks, layers, docs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
