#!/usr/bin/env python3
"""tools/bench_compare.py on made-up bench files: ratios, verdicts, the summary, and in --folder mode
the base each forced plan is compared with. Prints "bench_compare: all N checks passed"."""
import json
import pathlib
import subprocess
import sys
import tempfile

tool = pathlib.Path(__file__).resolve().parent.parent / "tools" / "bench_compare.py"


def record(op, n, ms, peer=None, kernels=None):
    r = {"op": op, "variant": "v", "shape": {"n": n}, "median_ms": ms}
    if peer is not None:
        r["speedup_vs_peer"] = peer
    if kernels:
        r["kernels"] = kernels
    return r


def write(folder, name, records, plan=None):
    doc = {"device": "made up", "records": records}
    if plan:
        doc["kernel_plan"] = plan
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def run(*args):
    done = subprocess.run([sys.executable, str(tool), *map(str, args)], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


checks = 0


def expect(condition, what, output):
    global checks
    checks += 1
    if not condition:
        print(f"FAILED: {what}\n--- output:\n{output}")
        sys.exit(1)


with tempfile.TemporaryDirectory() as tmp:
    d = pathlib.Path(tmp)
    regs = lambda ms, n: {"k/main": {"ms": ms, "compiler": {"Register Count": n}}}
    base = write(d, "default.json", [record("op_a", 1, 2.0, kernels=regs(1.5, 64)), record("op_a", 2, 4.0),
                                     record("op_b", 1, 1.0), record("op_c", 1, 0.0)])
    # A decoy without a plan that shares one record with the forced file: the base must be the
    # unforced file sharing the most.
    write(d, "decoy.json", [record("op_a", 1, 9.0)])
    forced = write(d, "plan_x.json", [record("op_a", 1, 1.0, peer=1.5, kernels=regs(0.5, 96)), record("op_a", 2, 8.0),
                                      record("op_b", 1, 1.02), record("op_d", 1, 3.0)], plan="x=1")
    lonely = write(d, "plan_y.json", [record("op_z", 1, 1.0)], plan="y=2")

    rc, out = run(base, forced)
    expect(rc == 0, "exit status 0", out)
    expect("op_a v n 1: 2 -> 1 ms, 2.00x faster  vs peer 1.50" in out, "a record twice as fast, with its peer", out)
    expect("op_a v n 2: 4 -> 8 ms, 0.50x slower" in out, "a record half as fast", out)
    expect("op_b v n 1: 1 -> 1.02 ms, 0.98x same" in out, "a record within the threshold", out)
    expect("op_c" not in out and "op_d" not in out, "records without a time or a match are left out", out)
    expect("3 records: geometric mean 0.993x (same); 1 faster, 1 same, 1 slower" in out, "the summary", out)
    expect("plan_x.json (plan x=1) against default.json" in out, "the header names the plan and the base", out)

    rc, out = run("--threshold", "0.01", base, forced)
    expect("0.98x slower" in out, "--threshold moves the verdict", out)

    rc, out = run("--kernels", base, forced)
    expect("k/main: 1.5 ms (64 regs) -> 0.5 ms (96 regs)" in out, "--kernels: times and registers", out)

    rc, out = run("--folder", d)
    expect(rc == 0, "--folder: exit status 0", out)
    expect("plan_x.json (plan x=1) against default.json" in out, "--folder: the base shares the most records", out)
    expect("plan_y.json (plan y=2) against no unforced file with the same records" in out,
           "--folder: a forced file without a base is named", out)
    expect("decoy.json" not in out.split("against")[0], "--folder: unforced files are bases only", out)

    rc, out = run("--brief", "--folder", d)
    expect("op_a" not in out and "geometric mean 0.993x" in out, "--brief: the summary lines alone", out)

    rc, out = run(base)
    expect(rc == 2 and "at least one OTHER" in out, "one file alone is refused", out)
    (d / "broken.json").write_text("{")
    rc, out = run(base, d / "broken.json")
    expect(rc == 2 and "no bench records" in out, "a file that is no bench record is refused", out)
    rc, out = run("--folder", d / "nothing")
    expect(rc == 2 and "not a folder" in out, "a missing folder is refused", out)
    rc, out = run("--threshold", "-1", base, forced)
    expect(rc == 2 and "must not be negative" in out, "a negative threshold is refused", out)

print(f"bench_compare: all {checks} checks passed")
