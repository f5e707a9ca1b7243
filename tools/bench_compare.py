#!/usr/bin/env python3
"""Compares `rill bench` records: which of two runs, or of a forced plan and the device's own, is faster.

    tools/bench_compare.py BASE.json OTHER.json [OTHER.json ...]
    tools/bench_compare.py --folder DIR      # a tools/gpu-check.sh folder (or gpu-check.tgz unpacked)

Records match by op, variant and shape. For each match it prints both medians, base / other
(above 1 the other is faster) and a verdict against --threshold (5 %, as `rill tune` keeps a choice),
then the other's ratio to its PyTorch peer where the record has one; per file, the geometric mean
of the ratios (--brief: that line alone). With --kernels, each record's kernels' times and the driver's register counts (GPU
runs record them) follow. In --folder mode every file made under a forced plan (its `kernel_plan`)
is compared with the file made without one that shares the most records with it: the plan steps of
a GPU call against the call's default steps, without naming which is which.
"""
import argparse
import json
import math
import pathlib
import sys


def load(path):
    """The file's records, its forced plan (None without one) and its device peaks ({} without them);
    ([], None, {}) for what is no bench file."""
    try:
        data = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return [], None, {}
    if isinstance(data, dict):
        records, plan = data.get("records", []), data.get("kernel_plan") or None
        peak = data.get("device_peak") if isinstance(data.get("device_peak"), dict) else {}
    else:
        records, plan, peak = data, None, {}
    if not isinstance(records, list):
        return [], None, {}
    return [r for r in records if isinstance(r, dict) and "op" in r], plan, peak


def key_of(r):
    # An LM record's shape names its weights' storage; `weights` is absent from older records.
    return (r.get("op"), r.get("variant"), json.dumps(r.get("shape"), sort_keys=True))


def timed(records):
    """Records with a median time, by key (a record without one, such as a skipped size, is left out)."""
    out = {}
    for r in records:
        ms = r.get("median_ms")
        if isinstance(ms, (int, float)) and ms > 0:
            out[key_of(r)] = r
    return out


def shape_text(shape):
    if not isinstance(shape, dict):
        return str(shape)
    flat = {k: v for k, v in shape.items() if not isinstance(v, (dict, list))}
    return " ".join(f"{k} {v}" for k, v in flat.items())


def verdict(ratio, threshold):
    if ratio > 1 + threshold:
        return "faster"
    if ratio < 1 / (1 + threshold):
        return "slower"
    return "same"


def kernel_lines(base, other):
    lines = []
    names = sorted(set(base.get("kernels", {})) | set(other.get("kernels", {})))
    for name in names:
        parts = []
        for side in (base, other):
            k = side.get("kernels", {}).get(name)
            if not isinstance(k, dict):
                parts.append("-")
                continue
            regs = k.get("compiler", {}).get("Register Count")
            parts.append(f"{k.get('ms', 0):.4g} ms" + (f" ({int(regs)} regs)" if regs is not None else ""))
        lines.append(f"      {name}: {parts[0]} -> {parts[1]}")
    return lines


def compare(base_records, other_records, threshold, kernels):
    """Lines of the comparison and the ratios (base median over other median) of the matched records."""
    base, other = timed(base_records), timed(other_records)
    lines, ratios = [], []
    for key, o in other.items():
        b = base.get(key)
        if b is None:
            continue
        ratio = b["median_ms"] / o["median_ms"]
        ratios.append(ratio)
        peer = o.get("speedup_vs_peer")
        peer_text = f"  vs peer {peer:.2f}" if isinstance(peer, (int, float)) else ""
        lines.append(f"  {key[0]} {key[1]} {shape_text(o.get('shape'))}: "
                     f"{b['median_ms']:.4g} -> {o['median_ms']:.4g} ms, {ratio:.2f}x "
                     f"{verdict(ratio, threshold)}{peer_text}")
        if kernels:
            lines.extend(kernel_lines(b, o))
    return lines, ratios


def summary(ratios, threshold):
    if not ratios:
        return "  no record in common"
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    counts = {v: sum(1 for r in ratios if verdict(r, threshold) == v) for v in ("faster", "same", "slower")}
    return (f"  {len(ratios)} records: geometric mean {mean:.3f}x ({verdict(mean, threshold)}); "
            f"{counts['faster']} faster, {counts['same']} same, {counts['slower']} slower")


def folder_pairs(folder):
    """(base file, other file) for every forced-plan file of the folder, its base the unforced file
    sharing the most timed records with it."""
    files = {p: load(p)[:2] for p in sorted(pathlib.Path(folder).glob("*.json"))}
    unforced = {p: timed(r) for p, (r, plan) in files.items() if r and plan is None}
    pairs = []
    for path, (records, plan) in files.items():
        if not records or plan is None:
            continue
        keys = set(timed(records))
        best = max(unforced, key=lambda p: len(keys & set(unforced[p])), default=None)
        if best is not None and keys & set(unforced[best]):
            pairs.append((best, path))
        else:
            pairs.append((None, path))
    return pairs, {p: plan for p, (_, plan) in files.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="BASE then OTHER files")
    ap.add_argument("--folder", help="compare every forced-plan file in this folder with its unforced base")
    ap.add_argument("--threshold", type=float, default=0.05, help="relative difference called faster or slower")
    ap.add_argument("--kernels", action="store_true", help="each record's kernels' times and register counts")
    ap.add_argument("--brief", action="store_true", help="per file its summary line only")
    args = ap.parse_args()
    if args.threshold < 0:
        ap.error("--threshold must not be negative")
    if bool(args.folder) == bool(args.files):
        ap.error("give either BASE and OTHER files or --folder")
    if args.folder:
        if not pathlib.Path(args.folder).is_dir():
            ap.error(f"--folder {args.folder}: not a folder")
        pairs, plans = folder_pairs(args.folder)
        if not pairs:
            print(f"no forced-plan bench file in {args.folder}")
            return 0
    else:
        if len(args.files) < 2:
            ap.error("give a BASE file and at least one OTHER file")
        for f in args.files:
            if not load(f)[0]:
                ap.error(f"{f}: no bench records (not a file rill bench wrote)")
        pairs = [(args.files[0], f) for f in args.files[1:]]
        plans = {pathlib.Path(f): load(f)[1] for f in args.files}
    for base, other in pairs:
        plan = plans.get(pathlib.Path(other))
        print(f"{pathlib.Path(other).name}{f' (plan {plan})' if plan else ''} against "
              f"{pathlib.Path(base).name if base else 'no unforced file with the same records'}:")
        if base is None:
            continue
        lines, ratios = compare(load(base)[0], load(other)[0], args.threshold, args.kernels)
        print("\n".join(([] if args.brief else lines) + [summary(ratios, args.threshold)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
