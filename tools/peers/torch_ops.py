#!/usr/bin/env python3
"""PyTorch peers of rill's kernels, for `rill bench --peers`.

Reads a JSON list of requests ({"op": ..., "shape": {...}, "reps": n}) from the file given as the
first argument and prints one JSON object: "peer" (PyTorch version, device, threads, BLAS) and
"results", one entry per request in order ({"median_ms": wall ms per call, "device_ms": the CUDA
events' ms (on CUDA), "peer_form": ...} or {"unavailable": reason}). Runs on CUDA when PyTorch sees
a GPU (each op first busy for RILL_BENCH_WARMUP_MS, 300 ms, as rill's own ops are), else on the
CPU, as peer_env.py sets PyTorch up (TF32 off, the system's BLAS, the faster of one thread and every
core) and describes it. Each peer is what a user would run for the same work:
  matmul                   torch.matmul
  rmsnorm_fwd / _bwd       torch.nn.functional.rms_norm where PyTorch has it (2.4+), else
                           x * rsqrt(mean(x^2) + eps) * g in f32 arithmetic; and its autograd backward
  linear_attention_causal  the same chunked algorithm (C = 64): masked (Q K^T) V inside chunks, Q times
                           the exclusive prefix sum of the chunk states K^T V across them
  linear_attention_causal_bwd  autograd of that (dq, dk and dv from dO)
  linear_attention_noncausal   Q (K^T V)
  block_attention_fwd      scaled_dot_product_attention on the blocks (a batched softmax where the
                           installed PyTorch has none)
  block_attention_bwd      autograd of that (dq, dk and dv from dO)
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

import peer_env

DEVICE = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
DTYPES = {"f32": torch.float32, "f16": torch.float16}
EPS = 1e-6
SLOW_MS = 20000.0  # a first run slower than this is timed once


def sync():
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def timed(fn, reps):
    """{"median_ms": wall time per call, launch and synchronize included} and, on CUDA,
    "device_ms": the GPU's time from the call's first kernel to its last (CUDA events), the clock
    rill's own median_ms uses (timestamps around its dispatches)."""
    start = time.perf_counter()
    fn()  # warm-up (and allocation)
    sync()
    first = (time.perf_counter() - start) * 1e3
    if first > SLOW_MS:
        return {"median_ms": first}
    if DEVICE.type == "cuda":
        busy = time.perf_counter()
        while (time.perf_counter() - busy) * 1e3 < peer_env.warmup_ms():
            fn()
            sync()
    walls, device = [], []
    for _ in range(max(reps, 1)):
        if DEVICE.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter()
        if DEVICE.type == "cuda":
            begin.record()
        fn()
        if DEVICE.type == "cuda":
            end.record()
        sync()
        walls.append((time.perf_counter() - start) * 1e3)
        if DEVICE.type == "cuda":
            device.append(begin.elapsed_time(end))
    result = {"median_ms": median(walls)}
    if device:
        result["device_ms"] = median(device)
    return result


def peer_result(fn, reps, form):
    return dict(timed(fn, reps), peer_form=form)


def rand(*shape, dtype=torch.float32):
    return (torch.rand(*shape, device=DEVICE) * 2 - 1).to(dtype)


def fused_rmsnorm(x):
    """PyTorch 2.4+ has F.rms_norm (one fused kernel on recent CUDA builds): what a user would run.
    Not for f16 on the CPU, where the peer computes in f32 on f16 storage, as rill does."""
    return hasattr(F, "rms_norm") and not (x.dtype == torch.float16 and x.device.type == "cpu")


def rmsnorm(x, g):
    if fused_rmsnorm(x):
        return F.rms_norm(x, (x.shape[-1],), g, EPS)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * g.float()).to(x.dtype)


def rmsnorm_form(x):
    return "torch.nn.functional.rms_norm" if fused_rmsnorm(x) else "rmsnorm in f32 arithmetic (composite)"


def chunked_linear_attention(q, k, v, chunk=64):
    b, h, n, d = q.shape
    pad = (-n) % chunk
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    nc = (n + pad) // chunk
    qc, kc, vc = (t.reshape(b, h, nc, chunk, d) for t in (q, k, v))
    mask = torch.ones(chunk, chunk, device=q.device, dtype=q.dtype).tril()
    intra = ((qc @ kc.transpose(-1, -2)) * mask) @ vc
    states = kc.transpose(-1, -2) @ vc
    before = states.cumsum(2) - states
    return (intra + qc @ before).reshape(b, h, nc * chunk, d)[:, :, :n]


def block_attention(q, k, v, block, causal):
    b, h, n, d = q.shape
    blocks = n // block
    qb, kb, vb = (t.reshape(b * h * blocks, block, d) for t in (q, k, v))
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(qb, kb, vb, is_causal=causal), "scaled_dot_product_attention"
    scores = qb @ kb.transpose(-1, -2) / d**0.5
    if causal:
        scores = scores.masked_fill(torch.ones(block, block, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(scores, -1) @ vb, "batched softmax (no scaled_dot_product_attention here)"


def peer(op, shape, reps):
    dtype = DTYPES.get(shape.get("dtype", "f32"))
    if dtype is None:
        return {"unavailable": "dtype " + str(shape.get("dtype"))}
    # PyTorch's CPU build has no f16 matmul: there the peer stores f16 and computes in f32, as rill does.
    widen = dtype == torch.float16 and DEVICE.type == "cpu"
    if op == "matmul":
        a, b = rand(shape["m"], shape["k"], dtype=dtype), rand(shape["k"], shape["n"], dtype=dtype)
        if widen:
            fn = lambda: torch.matmul(a.float(), b.float()).half()
            return peer_result(fn, reps, "torch.matmul in f32 on f16 storage")
        return peer_result(lambda: torch.matmul(a, b), reps, "torch.matmul")
    if op in ("rmsnorm_fwd", "rmsnorm_bwd"):
        x, g = rand(shape["rows"], shape["dim"], dtype=dtype), rand(shape["dim"], dtype=dtype)
        if op == "rmsnorm_fwd":
            return peer_result(lambda: rmsnorm(x, g), reps, rmsnorm_form(x))
        x.requires_grad_(True)
        g.requires_grad_(True)
        y = rmsnorm(x, g)
        dy = rand(shape["rows"], shape["dim"], dtype=dtype)
        fn = lambda: torch.autograd.grad(y, (x, g), dy, retain_graph=True)
        return peer_result(fn, reps, "autograd of " + rmsnorm_form(x) + " (dx and dgain)")
    if op == "linear_attention_causal":
        h, n, d = shape["heads"], shape["n"], shape["dk"]
        q, k, v = (rand(1, h, n, d) for _ in range(3))
        with torch.no_grad():
            return peer_result(lambda: chunked_linear_attention(q, k, v), reps,
                               "chunked linear attention in PyTorch (C = 64)")
    if op == "linear_attention_noncausal":
        h, n, d = shape["heads"], shape["n"], shape["dk"]
        q, k, v = (rand(1, h, n, d) for _ in range(3))
        with torch.no_grad():
            return peer_result(lambda: q @ (k.transpose(-1, -2) @ v), reps, "Q (K^T V) in PyTorch")
    if op == "linear_attention_causal_bwd":
        h, n, d = shape["heads"], shape["n"], shape["dk"]
        q, k, v = (rand(1, h, n, d).requires_grad_(True) for _ in range(3))
        o, do = chunked_linear_attention(q, k, v), rand(1, h, n, d)
        fn = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
        return peer_result(fn, reps, "autograd of chunked linear attention (C = 64)")
    if op == "block_attention_fwd":
        h, n, d, block = shape["heads"], shape["n"], shape["d"], shape["block"]
        q, k, v = (rand(1, h, n, d, dtype=dtype) for _ in range(3))
        causal = shape.get("causal", True)
        with torch.no_grad():
            form = block_attention(q[:, :, :block].float(), k[:, :, :block].float(), v[:, :, :block].float(), block,
                                   causal)[1]
            if widen:
                fn = lambda: block_attention(q.float(), k.float(), v.float(), block, causal)[0].half()
                return peer_result(fn, reps, form + " in f32 on f16 storage")
            return peer_result(lambda: block_attention(q, k, v, block, causal), reps, form)
    if op == "block_attention_bwd":
        h, n, d, block = shape["heads"], shape["n"], shape["d"], shape["block"]
        causal = shape.get("causal", True)
        # CPU f16: the gradients in f32 from f16-stored inputs, as rill computes them.
        work = torch.float32 if widen else dtype
        q, k, v = (rand(1, h, n, d, dtype=dtype).to(work).requires_grad_(True) for _ in range(3))
        o, form = block_attention(q, k, v, block, causal)
        do = rand(*o.shape, dtype=dtype).to(work)
        fn = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
        return peer_result(fn, reps, "autograd of " + form + (" in f32 on f16 storage" if widen else ""))
    return {"unavailable": "no PyTorch peer for op " + op}


def main():
    with open(sys.argv[1]) as f:
        requests = json.load(f)
    peer_env.configure()
    torch.manual_seed(0)
    info = peer_env.describe(DEVICE)
    cache, results = {}, []
    for r in requests:
        key = json.dumps([r["op"], r["shape"]], sort_keys=True)
        if key not in cache:
            try:
                cache[key] = peer_env.fastest(lambda: peer(r["op"], r["shape"], r.get("reps", 5)), "median_ms")
            except Exception as e:  # e.g. an f16 op the CPU build lacks, or out of memory: this op alone
                cache[key] = {"unavailable": peer_env.first_line(e)}
        results.append(cache[key])
    print(peer_env.dumps({"peer": info, "results": results}))


if __name__ == "__main__":
    main()
