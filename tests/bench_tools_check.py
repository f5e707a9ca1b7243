#!/usr/bin/env python3
"""tools/bench_compare.py and tools/bench_goals.py on made-up bench files: the comparer's ratios,
verdicts, summary and, in --folder mode, the base each forced plan is compared with; the goals'
verdicts, the FMA share they compute and the forced plans they leave out. Prints "bench tools: all
N checks passed"."""
import json
import pathlib
import subprocess
import sys
import tempfile

tools = pathlib.Path(__file__).resolve().parent.parent / "tools"


def record(op, n, ms, peer=None, kernels=None):
    r = {"op": op, "variant": "v", "shape": {"n": n}, "median_ms": ms}
    if peer is not None:
        r["speedup_vs_peer"] = peer
    if kernels:
        r["kernels"] = kernels
    return r


def write(folder, name, records, plan=None, peak=None):
    doc = {"device": "made up", "records": records}
    if peak:
        doc["device_peak"] = peak
    if plan:
        doc["kernel_plan"] = plan
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def run(*args, tool="bench_compare.py"):
    done = subprocess.run([sys.executable, str(tools / tool), *map(str, args)], capture_output=True, text=True)
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

with tempfile.TemporaryDirectory() as tmp:
    d = pathlib.Path(tmp)
    la = lambda n, peer, gflops: {"op": "linear_attention_causal", "variant": "chunked_parallel", "median_ms": 1.0,
                                  "shape": {"dk": 64, "dv": 64, "heads": 4, "n": n}, "speedup_vs_peer": peer,
                                  "gflops": gflops}
    peak = {"fma_f32_gflops": 2000.0, "copy_gbps": 100.0}
    write(d, "la.json", [la(1024, 0.1, 10.0), la(16384, 2.5, 100.0), la(65536, 2.1, 600.0)], peak=peak)
    write(d, "icl.json", [{"op": "icl_train", "variant": "ahn1", "shape": {}, "median_ms": 0.01, "steps_per_s": 25000.0},
                          {"op": "icl_grid", "variant": "vladymyrov", "shape": {}, "median_ms": 1.0,
                           "model_steps_per_s": 15000.0}])
    # A forced plan that would meet the grid's goal: left out unless --forced.
    write(d, "plan_fast.json", [{"op": "icl_grid", "variant": "vladymyrov", "shape": {}, "median_ms": 0.5,
                                 "model_steps_per_s": 30000.0}], plan="icl_block=4")

    rc, out = run(d, tool="bench_goals.py")
    lines = out.splitlines()
    verdict_of = lambda text: next((l for l in lines if text in l), "")
    expect(rc == 0, "goals: exit status 0", out)
    expect(verdict_of(">= 2x the same chunked").startswith("[12] MET"), "goals: N 1K is outside the 2x goal's range",
           out)
    expect("2 records, 2.1 to 2.5; worst 2.1" in out, "goals: the records a goal covers and its worst", out)
    expect(verdict_of("25 % of the f32 FMA peak").startswith("[12] MET"), "goals: 600 of 2000 GFLOP/s is 30 %", out)
    expect("1 records, 0.3 to 0.3" in out, "goals: the FMA share from the file's peaks", out)
    expect(verdict_of("Ahn setting 1").startswith("[13] MET"), "goals: a met rate", out)
    expect(verdict_of("model-steps/s").startswith("[13] NOT MET"), "goals: an unmet rate, the forced plan left out",
           out)
    expect(verdict_of("decode: <= 0.15").startswith("[13] no record"), "goals: a goal without records", out)
    rc, out = run("--forced", d, tool="bench_goals.py")
    expect("Under icl_block=4 (plan_fast.json), its records alone:\n[13] MET        a grid" in out,
           "goals: --forced holds each forced plan's records alone to the goals", out)
    expect("no record" not in out.split("Under icl_block=4")[-1],
           "goals: --forced adds no 'no record' lines for the forced plan", out)
    # A forced plan's record without a peer borrows the default run's, on the GPU's clock: 4 / 2.
    timed = dict(la(16384, None, 100.0), gpu_span_ms=2.0)
    del timed["speedup_vs_peer"]
    write(d, "plan_la.json", [timed], plan="la_x=1", peak=peak)
    write(d, "la.json", [dict(la(1024, 0.1, 10.0), peer_clock="gpu", peer_device_ms=0.1), la(16384, 2.5, 100.0),
                         dict(la(16384, 2.5, 100.0), variant="other", peer_clock="gpu", peer_device_ms=9.0),
                         la(65536, 2.1, 600.0)], peak=peak)
    rc, out = run("--forced", d, tool="bench_goals.py")
    expect("[12] MET" in out.split("Under la_x=1")[0], "goals: the default run's ratio is its own", out)
    tail = out.split("Under la_x=1 (plan_la.json), its records alone")[-1]
    expect(tail.startswith(":") and "2x the same" not in tail, "goals: no peer of another variant is borrowed", out)
    write(d, "la.json", [dict(la(16384, 2.5, 100.0), peer_clock="gpu", peer_device_ms=8.0), la(65536, 2.1, 600.0)],
          peak=peak)
    rc, out = run("--forced", d, tool="bench_goals.py")
    tail = out.split("Under la_x=1 (plan_la.json), its records alone")[-1]
    expect(tail.startswith(" (1 ratios to the default run's peers):") and "1 records, 4 to 4" in tail,
           "goals: the borrowed ratio, peer over span", out)

    rc, out = run(d / "missing", tool="bench_goals.py")
    expect(rc == 2 and "no such file" in out, "goals: a missing path is refused", out)
    (d / "empty").mkdir()
    rc, out = run(d / "empty", tool="bench_goals.py")
    expect(rc == 2 and "no bench records" in out, "goals: a folder without records is refused", out)

print(f"bench tools: all {checks} checks passed")
