#!/usr/bin/env python3
"""Whether the unity-built targets still build however CMake batches their sources.

A unity batch compiles several sources as one translation unit, which hides two kinds of fault
until a source is added or removed and the batches shift: a source that compiles only because an
earlier neighbour included a header for it, and two sources whose file-local names (anonymous
namespaces, `static` functions, aliases) collide once they share a unit, or whose names a
neighbour's `using namespace` makes ambiguous. So every source of each unity target is compiled
(syntax only) alone (generated ones, such as the shader registry, only with the others), and all
of a target's sources together in one unit, once in each order: every pair of sources then shares
a unit with either one first.

usage: unity_batches.py BUILD_DIR   (a configured unity build with compile_commands.json)
"""
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

UNITY_FILE = re.compile(r"^(?P<target>.*)/Unity/unity_\d+_cxx\.cxx$")
INCLUDE = re.compile(r'^#include "(?P<path>[^"]+)"', re.M)


def syntax_only(command):
    """The unity file's compile command without its source and output, checking syntax only."""
    args, out, skip = shlex.split(command), [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-c"):
            skip = True
        elif not (a.startswith("-O") or a == "-g"):
            out.append(a)
    return out + ["-O0", "-fsyntax-only"]


def main():
    build = os.path.abspath(sys.argv[1])
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    targets = {}  # target dir -> (compile command, directory, sources in batch order)
    for entry in commands:
        match = UNITY_FILE.match(entry["file"])
        if not match:
            continue
        with open(entry["file"]) as f:
            sources = INCLUDE.findall(f.read())
        command, directory, known = targets.setdefault(
            match["target"], (syntax_only(entry["command"]), entry["directory"], []))
        known.extend(sources)
    if not targets:
        print("no unity batches in " + build + " (RILL_UNITY_BUILD=OFF?)")
        return 1

    jobs = []  # (what, compile command, directory)
    for target, (command, directory, sources) in sorted(targets.items()):
        sources.sort()
        for source in sources:
            if not source.startswith(build + os.sep):  # hand-written, not generated in the build
                jobs.append((source, command + [source], directory))
        for order, listed in (("forward", sources), ("reverse", sources[::-1])):
            together = os.path.join(target, "all_sources_in_one_unit_%s.cxx" % order)
            with open(together, "w") as f:
                f.write("".join('#include "%s"\n' % s for s in listed))
            jobs.append(("%s: all %d sources in one unit, %s order" % (os.path.basename(target), len(sources), order),
                         command + ["-x", "c++", together], directory))

    def run(job):
        what, command, directory = job
        done = subprocess.run(command, cwd=directory, capture_output=True, text=True)
        return what, done.returncode, done.stderr

    failed = 0
    # Two at most: CTest gives the test two processors (tests/CMakeLists.txt).
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with ThreadPoolExecutor(max(1, min(2, usable))) as pool:
        for what, rc, errors in pool.map(run, jobs):
            if rc != 0:
                failed += 1
                print("FAILED: " + what)
                print("\n".join(errors.splitlines()[:40]))
    if failed:
        print("%d of %d compilations failed" % (failed, len(jobs)))
        return 1
    print("every source compiles alone and beside all the others, in both orders (%d compilations, %d targets)"
          % (len(jobs), len(targets)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
