"""How every PyTorch peer of `rill bench` runs, and the record of it.

A peer must be the best a user would run: f32 matmuls with TF32 off on CUDA; on the CPU the BLAS
the system provides (Debian's python3-torch falls back to the reference BLAS unless an optimised
one such as libopenblas0-pthread is installed) and the faster of one thread and every core. On a
few cores neither always wins: OpenBLAS runs its own threads inside each matmul, and PyTorch's
threads beside them can contend with them (a GEMM-bound model), or help (elementwise work).
RILL_PEER_THREADS fixes one count. `describe` says which PyTorch, device, thread count and BLAS a
result came from, for the JSON records.
"""
import json
import math
import os
import re

import torch


def configure():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def thread_counts():
    if torch.cuda.is_available():
        return [torch.get_num_threads()]
    forced = int(os.environ.get("RILL_PEER_THREADS", "0"))
    return [forced] if forced > 0 else sorted({1, os.cpu_count() or 1})


def warmup_ms():
    """rill's busy warm-up before timing a GPU (RILL_BENCH_WARMUP_MS, 300 ms unless set; rill checks
    the value): a peer on a GPU gets the same, so that both are timed at a busy GPU's clocks."""
    try:
        return min(max(float(os.environ.get("RILL_BENCH_WARMUP_MS", "300")), 0.0), 600000.0)
    except ValueError:
        return 300.0


def fastest(run, key):
    """run() -> dict, once per thread count; the result with the smallest `key` (a result without it
    only when every run lacks it), with "threads" set and every run's numbers under "thread_runs"."""
    results = []
    for threads in thread_counts():
        torch.set_num_threads(threads)
        result = dict(run())
        result["threads"] = threads
        results.append(result)
    timed = [r for r in results if isinstance(r.get(key), (int, float))]
    best = dict(min(timed, key=lambda r: r[key]) if timed else results[0])
    if len(results) > 1:
        best["thread_runs"] = [{k: v for k, v in r.items() if isinstance(v, (int, float))} for r in results]
    return best


def blas_in_use():
    torch.matmul(torch.ones(64, 64), torch.ones(64, 64))  # loads the BLAS if it is loaded lazily
    try:
        with open("/proc/self/maps") as f:
            libs = {m.group(1) for m in re.finditer(r"/(lib(?:openblas|blis|mkl_rt|blas)[^/\s]*)", f.read())}
    except OSError:
        return "unknown"
    return ", ".join(sorted(libs)) or "built into torch"


def describe(device):
    counts = thread_counts()
    info = {"torch": torch.__version__, "device": device.type,
            "threads": counts[0] if len(counts) == 1 else "fastest of " + " and ".join(map(str, counts)),
            "blas": blas_in_use()}
    if device.type == "cuda":
        info["device_name"] = torch.cuda.get_device_name()
    return info


def finite_json(value):
    """`value` with every non-finite float as None: strict JSON (a diverged loss must not make the
    whole answer unreadable to rill, whose parser refuses NaN and Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def dumps(value):
    """The one way the peers print their answers: strict JSON, non-finite numbers as null."""
    return json.dumps(finite_json(value), allow_nan=False)


def first_line(error):
    """An exception's first line, or its type's name where it has no message (a bare MemoryError)."""
    return (str(error).splitlines() or [type(error).__name__])[0][:200]
