#!/usr/bin/env python3
"""Copies a lavapipe tuning file kept in the repository, re-keyed to this machine's driver and host.

A tuning file names the driver it was measured with (lavapipe: its Mesa release, in the driver's
description) and, for a CPU driver, the host's usable processors (a plan faster on 2 cores need not be
on 64), so the kept file matches only machines like the one that made it; a test that reads it
through `rill info --tuning` takes this copy. Run without LP_NUM_THREADS in the environment (the
key then holds the cores alone).
  tests/tuning_for_this_host.py RILL KEPT.json OUT.json
"""
import json
import os
import subprocess
import sys

rill, kept, out = sys.argv[1], sys.argv[2], sys.argv[3]
listing = json.loads(subprocess.run([rill, "info", "--json"], check=True, capture_output=True, text=True).stdout)
if listing["chosen"] < 0:
    sys.exit("tuning_for_this_host.py: rill chose no device here")
chosen = listing["devices"][listing["chosen"]]
with open(kept, encoding="utf-8") as f:
    tuning = json.load(f)
tuning["device"]["driver_info"] = chosen["driver_info"]
# As platform::usable_cpus: the processors this process may run on.
usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
tuning["device"]["host_threads"] = "threads%d" % usable
with open(out, "w", encoding="utf-8") as f:
    json.dump(tuning, f, indent=2)
