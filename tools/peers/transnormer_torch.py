#!/usr/bin/env python3
"""The TransNormer language model of rill (rill::lm) in PyTorch: a second, independent implementation.

It reads the same config (JSON) and weights (safetensors) as rill and follows the model of
engine/ref/transnormer.cpp: token embedding; per layer a token mixer on u = Norm(x) (DiagAttention:
softmax attention inside aligned blocks; NormAttention: causal linear attention with per-head decay
and a feature map, no denominator, then a norm; softmax: full causal attention), x += mixed Wo; a
GLU channel mixer x += (g Wu * act(g Wg)) Wd on g = Norm(x); a final norm and the head (or the tied
embedding). Linear attention runs in the chunked form (C = the config's chunk) and block attention
block by block, as a user of PyTorch would write them. The TransNormerLLM options of the config are
followed too: the embedding times embed_scale, a SiLU feature map, per-layer decay (a list per
layer, or "transnormerllm": ALiBi's slopes scaled per layer), LRPE on q and k in lrpe_layers
([x cos(theta p), x sin(theta p)]), the output gate (u Wgate) * o and the identity GLU.

  --check EXPORT   compare with the logits `rill generate --export-logits EXPORT` wrote (prefill and
                   every decoding step) for the same model; prints JSON, exits 1 on a mismatch
  --time N         time a prefill of N tokens and decoding steps after it; prints JSON
Exit code 77 when PyTorch is not installed (tests report that as skipped).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print(json.dumps({"unavailable": "python3-torch is not installed"}))
    sys.exit(77)

DEFAULTS = {"vocab": 256, "width": 256, "heads": 8, "ffn_width": 512, "layers": 6, "block": 64, "chunk": 64,
            "feature_map": "elu1", "decay": [], "norm": "rmsnorm", "norm_eps": 1e-6, "glu_activation": "silu",
            "tie_embeddings": False, "layer_kinds": [], "embed_scale": 1.0, "output_gate": False, "lrpe_layers": []}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "convert"))
from checkpoint_io import read_safetensors  # noqa: E402  (tools/convert/checkpoint_io.py)
from transnormerllm_torch import slopes  # noqa: E402  (ALiBi's head slopes, as the published code forms them)
import peer_env  # noqa: E402


def load_config(path):
    with open(path) as f:
        c = dict(DEFAULTS, **json.load(f))
    if not c["layer_kinds"]:
        c["layer_kinds"] = ["diag" if i < c["layers"] // 2 else "norm" for i in range(c["layers"])]
    return c


def layer_decays(c):
    """Each layer's per-head decay [H] (or None: no decay) from the config's "decay"."""
    h, layers, d = c["heads"], c["layers"], c["decay"]
    if d == "transnormerllm":  # lambda = exp(-s_h (1 - l / (L - 1) + 1e-5))
        return [[math.exp(-s * (1 - l / (layers - 1) + 1e-5)) for s in slopes(h)] for l in range(layers)]
    if not d:
        return [None] * layers
    if isinstance(d[0], list):
        return d
    if len(d) == h:
        return [d] * layers
    return [d[l * h:(l + 1) * h] for l in range(layers)]  # flat, layer-major

def feature(name, x):
    if name == "elu1":
        return torch.where(x > 0, x + 1, torch.exp(x))
    if name == "relu":
        return torch.relu(x)
    if name == "silu":
        return x * torch.sigmoid(x)
    return x


def activation(name, x):
    if name == "silu":
        return x * torch.sigmoid(x)
    if name == "sigmoid":
        return torch.sigmoid(x)
    return x


class TransNormer:
    def __init__(self, config, weights, device, dtype):
        self.c = config
        self.w = {k: v.to(device=device, dtype=dtype) for k, v in weights.items()}
        self.device, self.dtype = device, dtype
        self.decay = [None if d is None else torch.tensor(d, device=device, dtype=dtype) for d in layer_decays(config)]

    def norm(self, x, gain_name):
        c = self.c
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["norm_eps"])
        return y * self.w[gain_name] if c["norm"] == "rmsnorm" else y

    def heads(self, u, name):  # u [N, D] @ w [H, D, Dh] -> [H, N, Dh]
        return torch.einsum("nd,hde->hne", u, self.w[name])

    def block_attention(self, q, k, v, block):
        h, n, d = q.shape
        pad = (-n) % block
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        nb = (n + pad) // block
        qb, kb, vb = (t.reshape(h, nb, block, d) for t in (q, k, v))
        scores = qb @ kb.transpose(-1, -2) / math.sqrt(d)
        mask = torch.ones(block, block, dtype=torch.bool, device=q.device).triu(1)
        p = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        return (p @ vb).reshape(h, nb * block, d)[:, :n]

    def lrpe(self, layer, x, first):
        """x [H, n, d] at positions first.. -> [H, n, 2d]: [x cos(theta p), x sin(theta p)]."""
        theta = self.w["layers.%d.lrpe_theta" % layer].reshape(x.shape[0], 1, -1).double()  # [H, 1, d]
        p = torch.arange(first, first + x.shape[1], dtype=torch.float64, device=x.device)[None, :, None]
        angle = theta * p
        return torch.cat([x * torch.cos(angle).to(x.dtype), x * torch.sin(angle).to(x.dtype)], -1)

    def features(self, layer, q, k, first):
        """phi(q), phi(k) of a NormAttention layer, with LRPE where the config asks for it."""
        c = self.c
        q, k = feature(c["feature_map"], q), feature(c["feature_map"], k)
        if layer in c["lrpe_layers"]:
            q, k = self.lrpe(layer, q, first), self.lrpe(layer, k, first)
        return q, k

    def linear_attention(self, layer, q, k, v):
        """Causal, chunked: within a chunk the decayed, masked (phi(Q) phi(K)^T) V; across chunks phi(Q) S."""
        c = self.c
        q, k = self.features(layer, q, k, 0)
        h, n, d = q.shape
        dv = v.shape[-1]
        C = c["chunk"]
        pad = (-n) % C
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        nc = (n + pad) // C
        qc, kc = (t.reshape(h, nc, C, d) for t in (q, k))
        vc = v.reshape(h, nc, C, dv)
        t = torch.arange(C, device=q.device, dtype=q.dtype)
        mask = torch.ones(C, C, device=q.device, dtype=torch.bool).tril()
        if self.decay[layer] is None:
            intra = ((qc @ kc.transpose(-1, -2)) * mask) @ vc
            states = kc.transpose(-1, -2) @ vc
            before = states.cumsum(1) - states
            return (intra + qc @ before).reshape(h, nc * C, dv)[:, :n]
        log_l = torch.log(self.decay[layer])[:, None]  # [H, 1]
        # lambda^(t-s) for s <= t, 0 above: exponents past the diagonal are positive and overflow
        # (f16 at lambda 0.61 and 64-token chunks), and inf * 0 would be NaN.
        ahead = (t[:, None] - t[None, :]).clamp(min=0)
        within = torch.exp(ahead * log_l[:, :, None]).masked_fill(~mask, 0)
        intra = ((qc @ kc.transpose(-1, -2)) * within[:, None]) @ vc
        k_weight = torch.exp((C - 1 - t) * log_l)[:, None, :, None]  # lambda^(C-1-s)
        q_weight = torch.exp((t + 1) * log_l)[:, None, :, None]      # lambda^(t+1)
        states = (kc * k_weight).transpose(-1, -2) @ vc
        carry = torch.exp(C * log_l)[:, :, None]  # lambda^C per head
        before, s = [], torch.zeros(h, d, dv, device=q.device, dtype=q.dtype)
        for j in range(nc):
            before.append(s)
            s = carry * s + states[:, j]
        inter = (qc * q_weight) @ torch.stack(before, 1)
        return (intra + inter).reshape(h, nc * C, dv)[:, :n]

    def logits(self, tokens, last_only=False):
        """Logits at every position, or (last_only: what a prefill returns) after the last token."""
        c, w = self.c, self.w
        ids = torch.tensor(tokens, device=self.device)
        valid = ids < c["vocab"]
        x = w["embed"][ids.clamp(max=c["vocab"] - 1)] * valid[:, None] * c["embed_scale"]
        n = x.shape[0]
        for i, kind in enumerate(c["layer_kinds"]):
            p = "layers.%d." % i
            u = self.norm(x, p + "attn_norm")
            q, k, v = self.heads(u, p + "wq"), self.heads(u, p + "wk"), self.heads(u, p + "wv")
            if kind == "diag":
                o = self.block_attention(q, k, v, c["block"])
            elif kind == "softmax":
                o = self.block_attention(q, k, v, n)
            else:
                o = self.linear_attention(i, q, k, v)
            o = o.transpose(0, 1).reshape(n, c["width"])  # heads side by side
            if kind == "norm":
                o = self.norm(o, p + "out_norm")
            if c["output_gate"]:
                o = o * (u @ w[p + "wgate"])
            x = x + o @ w[p + "wo"]
            g = self.norm(x, p + "ffn_norm")
            x = x + ((g @ w[p + "wu"]) * activation(c["glu_activation"], g @ w[p + "wg"])) @ w[p + "wd"]
        xn = self.norm(x[-1:] if last_only else x, "final_norm")
        return xn @ (w["embed"].T if c["tie_embeddings"] else w["head"])


class DecodeState:
    """What decoding keeps per layer: the linear-attention state (NormAttention), the current block's
    keys and values (DiagAttention) or every key and value (softmax)."""

    def __init__(self, model):
        c, h = model.c, model.c["heads"]
        d = c["width"] // h
        dk = {i: 2 * d if i in c["lrpe_layers"] else d for i in range(c["layers"])}
        self.state = {i: torch.zeros(h, dk[i], d, device=model.device, dtype=model.dtype)
                      for i, kind in enumerate(c["layer_kinds"]) if kind == "norm"}
        self.keys = {i: [] for i, kind in enumerate(c["layer_kinds"]) if kind != "norm"}
        self.values = {i: [] for i in self.keys}


def decode_step(model, token, position, s):
    """Logits after `token` at `position`, one token at a time (constant cost for NormAttention)."""
    c, w = model.c, model.w
    x = w["embed"][min(token, c["vocab"] - 1)][None] * (token < c["vocab"]) * c["embed_scale"]
    for i, kind in enumerate(c["layer_kinds"]):
        p = "layers.%d." % i
        u = model.norm(x, p + "attn_norm")
        q, k, v = (model.heads(u, p + n)[:, 0] for n in ("wq", "wk", "wv"))  # [H, Dh]
        if kind == "norm":
            fq, fk = (t[:, 0] for t in model.features(i, q[:, None], k[:, None], position))
            lam = model.decay[i][:, None, None] if model.decay[i] is not None else 1.0
            s.state[i] = lam * s.state[i] + fk[:, :, None] * v[:, None, :]
            o = model.norm((fq[:, None, :] @ s.state[i])[:, 0].reshape(1, -1), p + "out_norm")
        else:
            if kind == "diag" and position % c["block"] == 0:
                s.keys[i], s.values[i] = [], []
            s.keys[i].append(k)
            s.values[i].append(v)
            keys, values = torch.stack(s.keys[i], 1), torch.stack(s.values[i], 1)  # [H, T, Dh]
            p_att = torch.softmax((keys @ q[:, :, None])[:, :, 0] / math.sqrt(q.shape[1]), -1)
            o = (p_att[:, None, :] @ values)[:, 0].reshape(1, -1)
        if c["output_gate"]:
            o = o * (u @ w[p + "wgate"])
        x = x + o @ w[p + "wo"]
        g = model.norm(x, p + "ffn_norm")
        x = x + ((g @ w[p + "wu"]) * activation(c["glu_activation"], g @ w[p + "wg"])) @ w[p + "wd"]
    xn = model.norm(x, "final_norm")
    return (xn @ (w["embed"].T if c["tie_embeddings"] else w["head"]))[0]


def check(model, export_path):
    exported, meta = read_safetensors(export_path)
    if meta.get("start_position", "0") != "0":
        return {"error": "the export continues a restored state; check a run that starts at position 0"}, False
    tokens = exported["tokens"].tolist()
    rill_logits = exported["logits"].double()
    rows = rill_logits.shape[0]
    prompt = len(tokens) - (rows - 1)
    with torch.no_grad():
        ours = model.logits(tokens)[prompt - 1:].double().cpu()  # after the prompt, then after each token
    scale = ours.abs().max().item()
    err = (ours - rill_logits).abs().max().item()
    rel = err / max(scale, 1e-30)
    # The recurrent form, token by token, must agree too (it is what --time decodes with).
    with torch.no_grad():
        state, stepped = DecodeState(model), []
        for position, token in enumerate(tokens):
            row = decode_step(model, token, position, state)
            if position >= prompt - 1:
                stepped.append(row.double().cpu())
    step_err = (torch.stack(stepped) - rill_logits).abs().max().item() / max(scale, 1e-30)
    result = {"tokens": len(tokens), "prompt": prompt, "rows": rows, "max_abs_error": err, "max_abs_logit": scale,
              "relative_error": rel, "relative_error_decode_form": step_err, "tolerance": 1e-4}
    return result, rel <= 1e-4 and step_err <= 1e-4


def timing(model, n, decode_steps):
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, model.c["vocab"], (n,), generator=gen).tolist()
    with torch.no_grad():
        # Warm-up on the same prompt (the allocator's growth and the kernels' first choices at this
        # shape), then on a GPU busy for as long as rill's own warm-up (RILL_BENCH_WARMUP_MS, 300 ms)
        # so that both are timed at a busy GPU's clocks.
        busy = time.perf_counter()
        while True:
            model.logits(tokens, last_only=True)
            sync()
            if model.device.type != "cuda" or (time.perf_counter() - busy) * 1e3 >= peer_env.warmup_ms():
                break
        start = time.perf_counter()
        out = model.logits(tokens, last_only=True)  # as rill's prefill: the next token's logits only
        sync()
        prefill = time.perf_counter() - start
        if not bool(torch.isfinite(out).all()):  # a peer that computes NaN is no peer to time against
            sys.exit("transnormer_torch: the prefill's logits are not finite (%s)" % model.dtype)
        # Decoding at position n. Its cost does not depend on the state's values (NormAttention keeps a
        # fixed-size state, DiagAttention at most a block), so a fresh state at position n times it.
        # Softmax layers attend over every earlier key, which a fresh state lacks: not timed.
        softmax = "softmax" in model.c["layer_kinds"]
        state, times = DecodeState(model), []
        for i in range(0 if softmax else decode_steps):
            start = time.perf_counter()
            decode_step(model, tokens[i % n], n + i, state)
            sync()
            times.append(time.perf_counter() - start)
    times.sort()
    result = {"prompt_tokens": n, "prefill_seconds": prefill, "prefill_tokens_per_second": n / prefill,
              "decode_ms_per_token": 1e3 * statistics.median(times) if times else None}
    if softmax:
        result["decode_unavailable"] = "softmax layers: this peer's decoding starts from an empty key cache"
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--check")
    ap.add_argument("--time", type=int)
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--dtype", choices=["float32", "float16"], default="float32",
                    help="--time: the weights' and activations' type (rill's --lm-precision)")
    args = ap.parse_args()
    config = load_config(args.config)
    weights, _ = read_safetensors(args.weights)
    if args.check:
        model = TransNormer(config, weights, torch.device("cpu"), torch.float64)  # the reference: double
        result, ok = check(model, args.check)
        print(json.dumps(result))
        sys.exit(0 if ok else 1)
    if args.time:
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        peer_env.configure()
        dtype = getattr(torch, args.dtype)
        # On a CPU, f16 arithmetic is slow or missing in PyTorch, and rill's f16 models compute in
        # f32 anyway: f16-rounded weights, f32 arithmetic.
        widen = dtype == torch.float16 and device.type == "cpu"
        if widen:
            weights = {k: v.to(torch.float16) for k, v in weights.items()}
        model = TransNormer(config, weights, device, torch.float32 if widen else dtype)
        # Prefill and decoding each at its faster thread count.
        result = peer_env.fastest(lambda: timing(model, args.time, args.decode_steps), "prefill_seconds")
        runs = [r for r in result.get("thread_runs", [result]) if r.get("decode_ms_per_token") is not None]
        if runs:
            decode = min(runs, key=lambda r: r["decode_ms_per_token"])
            result.update({"decode_ms_per_token": decode["decode_ms_per_token"], "decode_threads": decode["threads"]})
        result.update({k: v for k, v in peer_env.describe(device).items() if k != "threads"})
        result["dtype"] = args.dtype
        result["arithmetic"] = "float32" if widen else args.dtype
        print(peer_env.dumps(result))
        return
    ap.error("give --check EXPORT or --time N")


if __name__ == "__main__":
    main()
