#!/usr/bin/env python3
"""Trains a small byte-level TransNormer (rill's model, tools/peers/transnormer_torch.py) in PyTorch.

For measuring what rill's weight forms (f16, int8, int4) cost a model that has learned something:
random weights have none of a trained model's structure (outlier channels, peaked softmaxes), so
how far packing moves their outputs says little. No checkpoint can be downloaded here, so this
trains one on text every Debian machine has: Python's own reference documentation
(pydoc_data.topics, about 470 KB of English prose with code) unless --text names a file. The last
--held-out bytes are not trained on; the script scores them itself (f32 and f64) so that
`rill score --config C --weights W --text-file H` can be compared with PyTorch on the same text.

Writes the config (JSON), the weights (safetensors, f32) and the held-out text, then prints JSON.
Exit code 77 when PyTorch is not installed.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "convert"))
from checkpoint_io import write_safetensors, write_text_atomic  # noqa: E402
from transnormer_torch import TransNormer, load_config  # noqa: E402


def corpus(path):
    if path:
        with open(path, "rb") as f:
            return f.read()
    from pydoc_data import topics
    return "\n\n".join(topics.topics[k] for k in sorted(topics.topics)).encode("utf-8")


def init_weights(c, generator):
    """Weights named and shaped as rill's weight_specs (engine/src/lm/weights.cpp), f32."""
    D, H, F, V = c["width"], c["heads"], c["ffn_width"], c["vocab"]
    Dh = D // H

    def normal(*shape, std):
        return (torch.randn(*shape, generator=generator) * std).requires_grad_()

    std = 0.02
    out_std = std / math.sqrt(2 * c["layers"])  # residual branches, as GPT-2 scales them
    w = {"embed": normal(V, D, std=std), "final_norm": torch.ones(D, requires_grad=True),
         "head": normal(D, V, std=std)}
    for i, kind in enumerate(c["layer_kinds"]):
        p = "layers.%d." % i
        w[p + "attn_norm"] = torch.ones(D, requires_grad=True)
        for name in ("wq", "wk", "wv"):
            w[p + name] = normal(H, D, Dh, std=std)
        if kind == "norm":
            w[p + "out_norm"] = torch.ones(D, requires_grad=True)
        w[p + "wo"] = normal(D, D, std=out_std)
        w[p + "ffn_norm"] = torch.ones(D, requires_grad=True)
        w[p + "wu"] = normal(D, F, std=std)
        w[p + "wg"] = normal(D, F, std=std)
        w[p + "wd"] = normal(F, D, std=out_std)
    return w


def nll_per_token(model, data):
    """Mean -log p of each byte after the first, over the whole sequence at once (as rill score)."""
    with torch.no_grad():
        logits = model.logits(list(data))
        lp = torch.log_softmax(logits[:-1].double(), -1)
        target = torch.tensor(list(data[1:]))
        return float(-lp[torch.arange(len(target)), target].mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--text", help="training text (default: Python's reference documentation)")
    ap.add_argument("--held-out", type=int, default=32768, help="bytes at the end kept for scoring")
    ap.add_argument("--out", required=True, help="folder for config.json, model.safetensors, held_out.txt")
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn-width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--sequence", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    text = corpus(args.text)
    if len(text) < args.held_out + 4 * args.sequence:
        sys.exit("the text is too short for --held-out and --sequence")
    train, held_out = text[:-args.held_out], text[-args.held_out:]

    os.makedirs(args.out, exist_ok=True)
    config_path = os.path.join(args.out, "config.json")
    c = {"vocab": 256, "width": args.width, "heads": args.heads, "ffn_width": args.ffn_width,
         "layers": args.layers, "block": 64, "chunk": 64,
         "layer_kinds": ["diag"] * (args.layers // 2) + ["norm"] * (args.layers - args.layers // 2)}
    write_text_atomic(config_path, json.dumps(c, indent=2) + "\n")
    config = load_config(config_path)
    generator = torch.Generator().manual_seed(args.seed)
    w = init_weights(config, generator)
    model = TransNormer(config, w, torch.device("cpu"), torch.float32)
    optimizer = torch.optim.AdamW(list(w.values()), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.steps, pct_start=0.05)
    start, curve = time.time(), []
    for step in range(args.steps):
        starts = torch.randint(0, len(train) - args.sequence - 1, (args.batch,), generator=generator).tolist()
        loss = 0.0
        for s in starts:
            chunk = train[s:s + args.sequence + 1]
            logits = model.logits(list(chunk[:-1]))
            loss = loss + torch.nn.functional.cross_entropy(logits, torch.tensor(list(chunk[1:])))
        loss = loss / args.batch
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(w.values()), 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step + 1 == args.steps:
            curve.append([step, float(loss)])
            print("step %d loss %.4f (%.0f s)" % (step, float(loss), time.time() - start), file=sys.stderr)
    weights = {k: v.detach().contiguous() for k, v in w.items()}
    write_safetensors(os.path.join(args.out, "model.safetensors"), weights)
    with open(os.path.join(args.out, "held_out.txt"), "wb") as f:
        f.write(held_out)
    f64 = TransNormer(config, weights, torch.device("cpu"), torch.float64)
    result = {"train_bytes": len(train), "held_out_bytes": len(held_out), "steps": args.steps,
              "batch": args.batch, "sequence": args.sequence, "seconds": time.time() - start,
              "parameters": sum(v.numel() for v in weights.values()), "curve": curve,
              "held_out_nll_f32": nll_per_token(model, held_out),
              "held_out_nll_f64": nll_per_token(f64, held_out), "torch": torch.__version__}
    result["held_out_bits_per_byte_f64"] = result["held_out_nll_f64"] / math.log(2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
