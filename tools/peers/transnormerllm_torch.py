#!/usr/bin/env python3
"""TransNormerLLM (arXiv 2307.14995) in PyTorch, written from the semantics of OpenNLPLab's published
model code (configuration_transnormer.py, modeling_transnormer.py, norm.py), not copied from it.
It reads and writes checkpoint folders in the published Hugging Face layout, so it is both the
reference rill is checked against and the maker of the test checkpoints (none can be downloaded here).

The model, as the published code computes it:
  x = embed[ids] * (1 if no_scale_embedding else sqrt(D))
  per layer i:  h = srms(x); q, k, v, u = split4(h @ qkvu_proj^T)    (rows q | k | v | u)
                q, k = act(q), act(k)                                  (linear_act_fun; v, u untouched)
                LRPE in layers with linear_use_lrpe_list[i]: x -> [x cos(theta p), x sin(theta p)]
                o_t = sum_{s<=t} exp(-slope_h (t - s)) (q_t . k_s) v_s  (per head; no scale, no denominator)
                x = x + (u * srms(o)) @ out_proj^T
                h = srms(x); x = x + ((h @ l1^T) * (h @ l2^T)) @ l3^T   (SGLU: no activation)
  logits = srms(x) @ lm_head^T   (lm_head tied to embed_tokens unless the checkpoint has its own)
srms(x) = x / sqrt(mean(x^2) + 1e-6), no gain. slope_h: ALiBi's slopes, times 1 - i / (L - 1) + 1e-5.

  make --out DIR [--preset tiny|385m] [--seed S] [--format bin|safetensors]
      a random checkpoint folder (config.json, weights) in the published layout
  --model DIR --check EXPORT
      compare with the logits `rill generate --export-logits EXPORT` wrote for the converted model,
      in both the block-wise prefill form and the recurrent decode form; JSON, exit 1 on a mismatch
  --model DIR --time N   time a prefill of N tokens and decoding steps; JSON
Exit code 77 when PyTorch is not installed (tests report that as skipped).
"""
import argparse
import json
import math
import os
import sys
import time

try:
    import torch
except ImportError:
    print(json.dumps({"unavailable": "python3-torch is not installed"}))
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "convert"))
import checkpoint_io  # noqa: E402  (tools/convert/checkpoint_io.py)

# configuration_transnormer.py's defaults (TransnormerConfig).
CONFIG_DEFAULTS = {"vocab_size": 64000, "decoder_embed_dim": 1024, "decoder_layers": 24,
                   "decoder_attention_heads": 8, "hidden_dim": 1024, "glu_dim": 2816, "no_scale_embedding": False,
                   "norm_type": "simplermsnorm", "linear_use_lrpe_list": [], "linear_act_fun": "silu", "bias": False,
                   "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "init_std": 0.02}
PRESETS = {
    # Small enough for tests in double precision; every feature on (LRPE in two layers, SiLU, scaling).
    "tiny": {"vocab_size": 512, "decoder_embed_dim": 32, "hidden_dim": 32, "decoder_layers": 3,
             "decoder_attention_heads": 2, "glu_dim": 48, "linear_use_lrpe_list": [1, 0, 1],
             "linear_act_fun": "swish"},
    # TransNormerLLM-385M's shape (HF OpenNLPLab/TransNormerLLM-385M): the configuration defaults.
    "385m": {"linear_use_lrpe_list": [1] + [0] * 23},
}


def slopes(heads):
    """ALiBi's head slopes: start^(i+1) with start = 2^(-8/n) for n a power of two; otherwise those of
    the largest power of two below, then every other slope of twice that many."""
    def power_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    closest = 2 ** int(math.floor(math.log2(heads)))
    out = power_of_two(closest)
    if closest != heads:
        out += power_of_two(2 * closest)[0::2][:heads - closest]
    return out


def activation(name):
    if name in ("silu", "swish"):
        return torch.nn.functional.silu
    if name == "relu":
        return torch.relu
    if name == "1+elu":
        return lambda x: 1 + torch.nn.functional.elu(x)
    return lambda x: x  # "none" and names the published code does not know


class TransNormerLLM:
    def __init__(self, config, weights, device, dtype):
        c = dict(CONFIG_DEFAULTS, **config)
        if c["norm_type"] != "simplermsnorm":
            raise SystemExit("only norm_type simplermsnorm is modelled here")
        self.c, self.device, self.dtype = c, device, dtype
        self.w = {k: v.to(device=device, dtype=dtype) for k, v in weights.items()}
        if "lm_head.weight" not in self.w:
            self.w["lm_head.weight"] = self.w["model.embed_tokens.weight"]  # tied (the HF default)
        self.D, self.H, self.L = c["decoder_embed_dim"], c["decoder_attention_heads"], c["decoder_layers"]
        self.d = c["hidden_dim"] // self.H
        self.act = activation(c["linear_act_fun"])
        self.scale = 1.0 if c["no_scale_embedding"] else math.sqrt(self.D)
        lrpe = c["linear_use_lrpe_list"]
        self.lrpe = [bool(lrpe[i]) if i < len(lrpe) else False for i in range(self.L)]
        # The slopes are float32 in the published code; each layer scales them by a Python float.
        base = torch.tensor(slopes(self.H), dtype=torch.float32)
        self.slope = [(base * (1 - i / (self.L - 1) + 1e-5)).to(device=device, dtype=dtype) for i in range(self.L)]

    def srms(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def lrpe_apply(self, i, x, first):
        """x [H, n, d] at positions first.. -> [H, n, 2d]; angles in double, exact at any position."""
        theta = self.w["model.layers.%d.token_mixer.lrpe.theta" % i].double()  # [H, 1, d]
        p = torch.arange(first, first + x.shape[1], dtype=torch.float64, device=x.device)[None, :, None]
        angle = theta * p
        return torch.cat([x * torch.cos(angle).to(x.dtype), x * torch.sin(angle).to(x.dtype)], -1)

    def mixer_inputs(self, i, x, first):
        pre = "model.layers.%d." % i
        h = self.srms(x)
        q, k, v, u = (h @ self.w[pre + "token_mixer.qkvu_proj.weight"].T).chunk(4, -1)
        q, k = self.act(q), self.act(k)
        q, k, v = (t.reshape(t.shape[0], self.H, self.d).transpose(0, 1) for t in (q, k, v))  # [H, n, d]
        if self.lrpe[i]:
            q, k = self.lrpe_apply(i, q, first), self.lrpe_apply(i, k, first)
        return q, k, v, u

    def mixer_output(self, i, x, o, u):
        pre = "model.layers.%d." % i
        o = o.transpose(0, 1).reshape(x.shape[0], -1)
        x = x + (u * self.srms(o)) @ self.w[pre + "token_mixer.out_proj.weight"].T
        h = self.srms(x)
        glu = (h @ self.w[pre + "channel_mixer.l1.weight"].T) * (h @ self.w[pre + "channel_mixer.l2.weight"].T)
        return x + glu @ self.w[pre + "channel_mixer.l3.weight"].T

    def logits(self, ids, block=256):
        """Every position's logits, the prefill form: exact block-wise linear attention with decay."""
        x = self.w["model.embed_tokens.weight"][torch.tensor(ids, device=self.device)] * self.scale
        n = len(ids)
        for i in range(self.L):
            q, k, v, u = self.mixer_inputs(i, x, 0)
            s = self.slope[i][:, None, None]  # [H, 1, 1]
            kv = torch.zeros(self.H, q.shape[-1], self.d, device=self.device, dtype=self.dtype)
            o = torch.empty(self.H, n, self.d, device=self.device, dtype=self.dtype)
            for b0 in range(0, n, block):
                m = min(block, n - b0)
                t = torch.arange(m, device=self.device, dtype=self.dtype)
                dist = t[:, None] - t[None, :]
                mask = torch.where(dist >= 0, torch.exp(-s * dist.clamp(min=0)), torch.zeros((), dtype=self.dtype))
                qb, kb, vb = q[:, b0:b0 + m], k[:, b0:b0 + m], v[:, b0:b0 + m]
                o[:, b0:b0 + m] = ((qb @ kb.transpose(1, 2)) * mask) @ vb + (qb * torch.exp(-s * (t[None, :, None] + 1))) @ kv
                kv = torch.exp(-s * m) * kv + (kb * torch.exp(-s * (m - 1 - t)[None, :, None])).transpose(1, 2) @ vb
            x = self.mixer_output(i, x, o, u)
        return self.srms(x) @ self.w["lm_head.weight"].T

    def decode(self, ids):
        """The logits after each token, one token at a time through the recurrent form."""
        kv = [None] * self.L
        rows = []
        for position, token in enumerate(ids):
            x = self.w["model.embed_tokens.weight"][token][None] * self.scale
            for i in range(self.L):
                q, k, v, u = self.mixer_inputs(i, x, position)
                step = k[:, 0, :, None] * v[:, 0, None, :]  # [H, dk, d]
                kv[i] = step if kv[i] is None else torch.exp(-self.slope[i])[:, None, None] * kv[i] + step
                o = (q[:, 0, None, :] @ kv[i])  # [H, 1, d]
                x = self.mixer_output(i, x, o, u)
            rows.append((self.srms(x) @ self.w["lm_head.weight"].T)[0])
        return torch.stack(rows)


def make(args):
    config = dict(CONFIG_DEFAULTS, **PRESETS[args.preset])
    g = torch.Generator().manual_seed(args.seed)
    D, H, L, G, V = (config[k] for k in ("decoder_embed_dim", "decoder_attention_heads", "decoder_layers", "glu_dim",
                                         "vocab_size"))
    Hd = config["hidden_dim"]

    def normal(shape, fan_in):  # unit-scale signals (init_std 0.02 would leave every logit near 0)
        return torch.randn(*shape, generator=g) / math.sqrt(fan_in)
    sd = {"model.embed_tokens.weight": torch.randn(V, D, generator=g)}
    for i in range(L):
        pre = "model.layers.%d." % i
        sd[pre + "token_mixer.qkvu_proj.weight"] = normal((4 * Hd, D), D)
        sd[pre + "token_mixer.out_proj.weight"] = normal((D, Hd), Hd)
        if config["linear_use_lrpe_list"][i]:
            # The published initial angles 10000^(-2c/D), perturbed: they are learned, so rill must read them.
            c = torch.arange(D, dtype=torch.float64)
            theta = 10000.0 ** (-2.0 * c / D) * (1 + 0.2 * torch.rand(D, generator=g, dtype=torch.float64))
            sd[pre + "token_mixer.lrpe.theta"] = theta.float().reshape(H, 1, D // H)
        sd[pre + "channel_mixer.l1.weight"] = normal((G, D), D)
        sd[pre + "channel_mixer.l2.weight"] = normal((G, D), D)
        sd[pre + "channel_mixer.l3.weight"] = normal((D, G), G)
    if args.dtype == "bf16":
        sd = {k: v.bfloat16() for k, v in sd.items()}
        config["torch_dtype"] = "bfloat16"
    os.makedirs(args.out, exist_ok=True)
    if args.format == "bin":
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]  # a tied state_dict holds both names
        torch.save(sd, os.path.join(args.out, "pytorch_model.bin"))
    else:
        checkpoint_io.write_safetensors(os.path.join(args.out, "model.safetensors"), sd)
    config.update({"model_type": "transnormer", "architectures": ["TransnormerForCausalLM"]})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(json.dumps({"made": args.out, "parameters": sum(v.numel() for k, v in sd.items() if k != "lm_head.weight")}))


def check(model, export_path):
    exported, meta = checkpoint_io.read_safetensors(export_path)
    if meta.get("start_position", "0") != "0":
        return {"error": "the export continues a restored state; check a run that starts at position 0"}, False
    tokens = exported["tokens"].tolist()
    rill_logits = exported["logits"].double()
    prompt = len(tokens) - (rill_logits.shape[0] - 1)
    with torch.no_grad():
        ours = model.logits(tokens)[prompt - 1:].double()
        stepped = model.decode(tokens)[prompt - 1:].double()
    scale = ours.abs().max().item()
    rel = (ours - rill_logits).abs().max().item() / scale
    step_rel = (stepped - rill_logits).abs().max().item() / scale
    forms = (stepped - ours).abs().max().item() / scale
    result = {"tokens": len(tokens), "prompt": prompt, "rows": rill_logits.shape[0], "max_abs_logit": scale,
              "relative_error": rel, "relative_error_decode_form": step_rel, "prefill_vs_decode_form": forms,
              "tolerance": 1e-4}
    return result, rel <= 1e-4 and step_rel <= 1e-4


def timing(model, n, decode_steps):
    sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
    tokens = torch.randint(0, model.c["vocab_size"], (n,), generator=torch.Generator().manual_seed(0)).tolist()
    with torch.no_grad():
        model.logits(tokens[:min(n, 256)])  # warm-up
        sync()
        start = time.perf_counter()
        model.logits(tokens)
        sync()
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        model.decode(tokens[:decode_steps])
        sync()
        decode = (time.perf_counter() - start) / decode_steps
    return {"prompt_tokens": n, "prefill_seconds": prefill, "prefill_tokens_per_second": n / prefill,
            "decode_ms_per_token": 1e3 * decode}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        ap = argparse.ArgumentParser(prog="transnormerllm_torch.py make")
        ap.add_argument("--out", required=True)
        ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
        ap.add_argument("--seed", type=int, default=0)
        ap.add_argument("--format", choices=["bin", "safetensors"], default="bin")
        ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
        make(ap.parse_args(sys.argv[2:]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a checkpoint folder in the published layout")
    ap.add_argument("--check")
    ap.add_argument("--time", type=int)
    ap.add_argument("--decode-steps", type=int, default=32)
    args = ap.parse_args()
    config, weights = checkpoint_io.load_published(args.model)
    if args.check:
        model = TransNormerLLM(config, weights, torch.device("cpu"), torch.float64)  # the reference: double
        result, ok = check(model, args.check)
        print(json.dumps(result))
        sys.exit(0 if ok else 1)
    if args.time:
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        torch.backends.cuda.matmul.allow_tf32 = False
        model = TransNormerLLM(config, weights, device, torch.float32)
        result = timing(model, args.time, args.decode_steps)
        result.update({"torch": torch.__version__, "device": device.type, "threads": torch.get_num_threads()})
        print(json.dumps(result))
        return
    ap.error("give --check EXPORT or --time N (or the make command)")


if __name__ == "__main__":
    main()
