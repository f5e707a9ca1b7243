#!/usr/bin/env python3
"""Median GPU time of each kind of dispatch in `rill profile` traces (--trace).

`rill profile`'s own summary groups dispatches by kernel; this splits them further by pipeline
(specialization) and declared FLOPs, so that dispatches of one kernel doing different work are told
apart, e.g. the ICL top layer's forward (which computes only what the loss reads) from the layers
below it. Usage: trace_dispatches.py TRACE.json[.gz] [...] [--match TEXT] (TEXT: part of the
dispatch label, e.g. layer).
Each line also gives the group's first dispatch: on lavapipe, which compiles a pipeline's machine
code when a dispatch first runs it, that is the compile time when Mesa's shader cache is cold
(MESA_SHADER_CACHE_DISABLE=true), and the last line sums the first dispatch of each pipeline.
"""
import argparse
import gzip
import json
import statistics


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--match", default="", help="only dispatches whose label contains this")
    args = parser.parse_args()
    for path in args.traces:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        groups = {}
        for e in events:
            if e.get("cat") != "dispatch" or args.match not in e.get("name", ""):
                continue
            a = e["args"]
            groups.setdefault((e["name"], a["kernel"], a["pipeline"], a["flops"]), []).append(
                (e["ts"], e["dur"] / 1000.0))
        print(path)
        earliest = {}  # pipeline -> its first dispatch (ts, ms), which compiled it
        for (label, kernel, pipeline, flops), runs in sorted(groups.items()):
            first_run = min(runs)
            first = first_run[1]
            earliest[pipeline] = min(earliest.get(pipeline, first_run), first_run)
            ms = [d for _, d in runs]
            print(f"  {label:<16} {kernel:<32} pipeline {pipeline:>3}  flops {flops:>12}  "
                  f"dispatches {len(ms):>4}  median {statistics.median(ms):8.3f} ms  first {first:9.3f} ms")
        print(f"  first dispatches of the {len(earliest)} pipelines: "
              f"{sum(ms for _, ms in earliest.values()) / 1000.0:.2f} s")


if __name__ == "__main__":
    main()
