#!/usr/bin/env python3
"""Holds `rill bench` records to the speed goals of issues 12 and 13 (set for an NVIDIA H100).

    tools/bench_goals.py DIR_OR_FILE [...]     # e.g. a tools/gpu-check.sh folder, or its bench files

Records made under a forced plan (a file with `kernel_plan`) are left out: a goal is met by what the
device runs by default. With --forced, each forced plan's file follows alone, on the goals it has
records for (whether that plan, made the default, would meet them); its records' ratios to PyTorch,
which the plan steps do not time, come from the default run's peer for the same work. For each goal: met, not met, or
no record, with how many records it covers, the worst of them and the range. Exit status 0 whatever the verdicts (2 for
bad arguments): it reports, it does not judge a run.
"""
import argparse
import pathlib
import sys

from bench_compare import key_of, load, shape_text  # this script's folder: one definition of each

# Each goal: the records it covers (op, variant or None for any, a test of the shape), the figure
# read from a record (None where the record lacks it) and the bound it must meet.
LA_HEADS = {(4, 64), (8, 32)}  # B1 H4 D64 and the LM's H8 D32
LM_SHAPES = {(1024, 1024, 1024), (4096, 4096, 4096), (65536, 512, 256), (65536, 256, 512)}  # m n k


def peer(r, peak):
    return r.get("speedup_vs_peer")


def fma_fraction(r, peak):
    f = peak.get("fma_f32_gflops")
    return r["gflops"] / f if f and isinstance(r.get("gflops"), (int, float)) else None


def copy_fraction(r, peak):
    c = peak.get("copy_gbps")
    return r["gbps"] / c if c and isinstance(r.get("gbps"), (int, float)) else None


def field(name):
    return lambda r, peak: r.get(name)


def la_shape(s, from_n):
    return (s.get("heads"), s.get("dk")) in LA_HEADS and s.get("dk") == s.get("dv") and s.get("n", 0) >= from_n


def mnk(s):
    return (s.get("m"), s.get("n"), s.get("k"))


GOALS = [
    ("12", "causal linear attention forward, N 16K-1M: >= 2x the same chunked algorithm in PyTorch",
     "linear_attention_causal", "chunked_parallel", lambda s: la_shape(s, 16384), peer, ">=", 2.0),
    ("12", "causal linear attention forward, N 64K-1M: >= 25 % of the f32 FMA peak",
     "linear_attention_causal", "chunked_parallel", lambda s: la_shape(s, 65536), fma_fraction, ">=", 0.25),
    ("12", "causal linear attention backward, N 16K-1M: >= 1x PyTorch autograd of the same",
     "linear_attention_causal_bwd", "chunked_parallel", lambda s: la_shape(s, 16384), peer, ">=", 1.0),
    ("12", "block attention forward, blocks 32-256, heads 32-128: >= 1x SDPA", "block_attention_fwd", None,
     lambda s: True, peer, ">=", 1.0),
    ("12", "block attention backward: >= 0.5x autograd of SDPA", "block_attention_bwd", None, lambda s: True, peer,
     ">=", 0.5),
    ("12", "f32 matmul at 1024^3, 4096^3 and the LM's shapes: >= 0.7x torch.matmul", "matmul", "gpu",
     lambda s: s.get("dtype") == "f32" and mnk(s) in LM_SHAPES, peer, ">=", 0.7),
    ("12", "f16 matmul at 4096^3 (cooperative matrices where the device has them): >= 0.5x torch.matmul", "matmul",
     "gpu", lambda s: s.get("dtype") == "f16" and mnk(s) == (4096, 4096, 4096), peer, ">=", 0.5),
    ("12", "RMSNorm backward: >= 50 % of the copy bandwidth at every shape", "rmsnorm_bwd", None, lambda s: True,
     copy_fraction, ">=", 0.5),
    ("12", "RMSNorm forward: ahead of torch", "rmsnorm_fwd", None, lambda s: True, peer, ">=", 1.0),
    ("13", "ICL training, Vladymyrov setting: >= 10,000 steps/s", "icl_train", "vladymyrov", lambda s: True,
     field("steps_per_s"), ">=", 10000),
    ("13", "ICL training, Ahn setting 1: >= 20,000 steps/s", "icl_train", "ahn1", lambda s: True,
     field("steps_per_s"), ">=", 20000),
    ("13", "a grid of Vladymyrov models: >= 20,000 model-steps/s", "icl_grid", "vladymyrov", lambda s: True,
     field("model_steps_per_s"), ">=", 20000),
    ("13", "evaluation of 100,000 tasks: well under a second (ms)", "icl_eval", None,
     lambda s: s.get("tasks") == 100000, field("median_ms"), "<=", 1000),
    ("13", "TransNormer prefill, prompts of 16K and more: >= 1,000,000 tokens/s", "lm_prefill", "transnormer",
     lambda s: s.get("tokens", 0) >= 16384, field("tokens_per_s"), ">=", 1e6),
    ("13", "TransNormer decode: <= 0.15 ms per token", "lm_decode", "transnormer", lambda s: True,
     field("median_ms"), "<=", 0.15),
    ("13", "TransNormer decode: <= 20 dispatches per token", "lm_decode", "transnormer", lambda s: True,
     field("dispatches"), "<=", 20),
]


def bench_files(paths):
    files = []
    for p in map(pathlib.Path, paths):
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    return files


def borrow_peers(records, default):
    """Forced plans' steps run without peers: a record without its own ratio gets one from the default
    run's peer for the same work, on the clock that run used (the GPU's: the peer's CUDA events against
    this record's span of dispatches; else both wall times). Returns how many it gave one."""
    peers = {key_of(r): r for r, _, _ in default if "peer_ms" in r or "peer_device_ms" in r}
    given = 0
    for r in records:
        d = peers.get(key_of(r))
        if d is None or isinstance(r.get("speedup_vs_peer"), (int, float)):
            continue
        if d.get("peer_clock") == "gpu" and r.get("gpu_span_ms") and d.get("peer_device_ms"):
            r["speedup_vs_peer"] = d["peer_device_ms"] / r["gpu_span_ms"]
        elif d.get("peer_clock") != "gpu" and r.get("host_ms") and d.get("peer_ms"):
            r["speedup_vs_peer"] = d["peer_ms"] / r["host_ms"]
        else:
            continue
        given += 1
    return given


def board(found, quiet_missing=False):
    """A line (and a detail line) per goal over `found`: (record, its file's peaks, file name)."""
    for issue, text, op, variant, shape_ok, figure, sense, bound in GOALS:
        values = []
        for r, peak, name in found:
            if r.get("op") != op or (variant and r.get("variant") != variant) or r.get("skipped"):
                continue
            if not shape_ok(r.get("shape") or {}):
                continue
            v = figure(r, peak)
            if isinstance(v, (int, float)):
                values.append((v, r, name))
        if not values:
            if not quiet_missing:
                print(f"[{issue}] no record    {text}")
            continue
        worst = min(values, key=lambda x: x[0]) if sense == ">=" else max(values, key=lambda x: x[0])
        met = worst[0] >= bound if sense == ">=" else worst[0] <= bound
        low, high = min(v for v, _, _ in values), max(v for v, _, _ in values)
        print(f"[{issue}] {'MET       ' if met else 'NOT MET   '} {text}\n"
              f"      {len(values)} records, {low:.4g} to {high:.4g}; worst {worst[0]:.4g} "
              f"({worst[1].get('variant')}, {shape_text(worst[1].get('shape'))}; {worst[2]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", help="bench files or folders of them")
    ap.add_argument("--forced", action="store_true",
                    help="then each forced plan's file alone, on the goals it has records for")
    args = ap.parse_args()
    for p in args.paths:
        if not pathlib.Path(p).exists():
            ap.error(f"{p}: no such file or folder")
    default, forced = [], []  # (record, its file's peaks, file name); (plan, file name, those)
    for path in bench_files(args.paths):
        records, plan, peak = load(path)
        if plan is None:
            default.extend((r, peak, path.name) for r in records)
        elif records:
            forced.append((plan, path.name, [(r, peak, path.name) for r in records]))
    if not default and not (args.forced and forced):
        ap.error("no bench records made without a forced plan in " + " ".join(args.paths))
    print("The device's own plans:")
    board(default)
    for plan, name, found in forced if args.forced else []:
        given = borrow_peers([r for r, _, _ in found], default)
        borrowed = f" ({given} ratios to the default run's peers)" if given else ""
        print(f"Under {plan} ({name}), its records alone{borrowed}:")
        board(found, quiet_missing=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
