#!/usr/bin/env python3
"""Copies a lavapipe tuning file kept in the repository, re-keyed to this host's thread count.

A CPU driver's tuning file names the host threads it was measured under (a plan faster on 2 cores
need not be on 64), so the kept file matches only machines of its own core count; a test that
reads it through `rill info --tuning` takes this copy. Run without LP_NUM_THREADS in the
environment (the key then holds the cores alone).
  tests/tuning_for_this_host.py KEPT.json OUT.json
"""
import json
import os
import sys

kept, out = sys.argv[1], sys.argv[2]
with open(kept, encoding="utf-8") as f:
    tuning = json.load(f)
tuning["device"]["host_threads"] = "threads%d" % os.cpu_count()  # as std::thread::hardware_concurrency
with open(out, "w", encoding="utf-8") as f:
    json.dump(tuning, f, indent=2)
