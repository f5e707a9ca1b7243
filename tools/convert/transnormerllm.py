#!/usr/bin/env python3
"""Converts a published TransNormerLLM checkpoint folder (OpenNLPLab's Hugging Face layout: config.json,
pytorch_model*.bin or model*.safetensors, tokenizer.model) into a rill model folder: config.json
(rill::lm::ModelConfig), model.safetensors (rill's weight names and layouts, F32, F16 or BF16) and the
tokenizer.model copied as it is.

  tools/convert/transnormerllm.py --model PUBLISHED_DIR --out RILL_DIR [--dtype f32|f16|bf16]

Every expected tensor must be present with its shape; a tensor the converter does not know, a
configuration rill does not run (biases, LayerNorm, hidden_dim != decoder_embed_dim, an unknown
activation) and a non-finite weight are errors that name it. Exit status 0 on success, 1 on an error
(one line on stderr), 77 when PyTorch is missing.

The mapping (published name -> rill name), with D = decoder_embed_dim, H heads of Dh = D / H:
  model.embed_tokens.weight [V, D]                    -> embed [V, D]
  layers.i.token_mixer.qkvu_proj.weight [4D, D]      -> layers.i.wq / wk / wv [H, D, Dh] (rows q | k | v),
                                                        layers.i.wgate [D, D] (rows u), transposed
  layers.i.token_mixer.out_proj.weight [D, D]        -> layers.i.wo [D, D] (transposed)
  layers.i.token_mixer.lrpe.theta [H, 1, Dh]         -> layers.i.lrpe_theta [H, Dh]
  layers.i.channel_mixer.l1 / l2 / l3.weight         -> layers.i.wu / wg [D, F], wd [F, D] (transposed)
  lm_head.weight [V, D]                              -> tied to embed when absent or equal, else head [D, V]
LRPE angles stay F32 whatever --dtype says: they multiply the position, so a 16-bit angle would be
radians off after a few thousand tokens. Tensors are converted and written one at a time.
"""
import argparse
import json
import math
import os
import sys

try:
    import torch
except ImportError:
    print("python3-torch is not installed", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_io import (CheckpointError, load_published, write_bytes_atomic, write_safetensors,  # noqa: E402
                           write_text_atomic)

ACTIVATIONS = {"silu": "silu", "swish": "silu", "relu": "relu", "1+elu": "elu1", "none": "identity",
               "noact": "identity"}
OUT_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def setting(config, key, default):
    value = config.get(key, default)
    return default if value is None else value


def rill_config(c):
    """The rill config of a published config (configuration_transnormer.py's keys and defaults)."""
    def whole(key, default):
        v = setting(c, key, default)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CheckpointError("config.json: '%s' must be a positive integer, got %r" % (key, v))
        return v
    D, H, L = whole("decoder_embed_dim", 1024), whole("decoder_attention_heads", 8), whole("decoder_layers", 24)
    V, hidden = whole("vocab_size", 64000), whole("hidden_dim", D)
    F = D if setting(c, "glu_dim", 2816) == -1 else whole("glu_dim", 2816)  # -1: the published GLU's D
    if hidden != D:
        raise CheckpointError("config.json: hidden_dim %d differs from decoder_embed_dim %d; rill's heads need them equal"
                              % (hidden, D))
    if D % H:
        raise CheckpointError("config.json: decoder_embed_dim %d is not a multiple of %d heads" % (D, H))
    if setting(c, "bias", False):
        raise CheckpointError("config.json: 'bias' is true; rill's TransNormerLLM has no biases")
    if setting(c, "norm_type", "simplermsnorm") != "simplermsnorm":
        raise CheckpointError("config.json: norm_type '%s' is not supported (only simplermsnorm)" % c["norm_type"])
    act = setting(c, "linear_act_fun", "silu")
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise CheckpointError("config.json: linear_act_fun '%s' is not one of %s" % (act, ", ".join(sorted(ACTIVATIONS))))
    lrpe = setting(c, "linear_use_lrpe_list", [])
    if not isinstance(lrpe, list) or len(lrpe) > L:
        raise CheckpointError("config.json: linear_use_lrpe_list must be a list of at most %d flags" % L)
    if L < 2:
        raise CheckpointError("config.json: decoder_layers must be at least 2 (the decay schedule divides by L - 1)")
    return {
        "vocab": V, "width": D, "heads": H, "ffn_width": F, "layers": L, "layer_kinds": ["norm"] * L,
        "chunk": 64, "feature_map": ACTIVATIONS[act], "decay": "transnormerllm", "norm": "srmsnorm", "norm_eps": 1e-6,
        "glu_activation": "identity", "embed_scale": 1.0 if setting(c, "no_scale_embedding", False) else math.sqrt(D),
        "output_gate": True, "lrpe_layers": [i for i, flag in enumerate(lrpe) if flag],
    }


def convert_weights(rc, state, c_published):
    D, H, L, F, V = rc["width"], rc["heads"], rc["layers"], rc["ffn_width"], rc["vocab"]
    Dh = D // H
    used, out = set(), {}

    def take(name, shape):
        if name not in state:
            raise CheckpointError("missing tensor '%s' %s" % (name, list(shape)))
        t = state[name]
        if list(t.shape) != list(shape):
            raise CheckpointError("tensor '%s' has shape %s, expected %s" % (name, list(t.shape), list(shape)))
        if not t.is_floating_point():
            raise CheckpointError("tensor '%s' is %s, not floating point" % (name, t.dtype))
        bad = (~torch.isfinite(t)).nonzero()  # in the stored dtype: no float64 copy of a large model
        if len(bad):
            raise CheckpointError("tensor '%s' holds a non-finite value at %s" % (name, bad[0].tolist()))
        used.add(name)
        return t

    embed = take("model.embed_tokens.weight", (V, D))
    out["embed"] = embed
    for i in range(L):
        pre, to = "model.layers.%d." % i, "layers.%d." % i
        qkvu = take(pre + "token_mixer.qkvu_proj.weight", (4 * D, D))
        for part, name in enumerate(("wq", "wk", "wv")):
            rows = qkvu[part * D:(part + 1) * D]  # [H * Dh, D]: head h owns rows h Dh .. (h + 1) Dh
            out[to + name] = rows.reshape(H, Dh, D).transpose(1, 2)
        if i in rc["lrpe_layers"]:
            out[to + "lrpe_theta"] = take(pre + "token_mixer.lrpe.theta", (H, 1, Dh)).reshape(H, Dh)
        out[to + "wgate"] = qkvu[3 * D:].T
        out[to + "wo"] = take(pre + "token_mixer.out_proj.weight", (D, D)).T
        out[to + "wu"] = take(pre + "channel_mixer.l1.weight", (F, D)).T
        out[to + "wg"] = take(pre + "channel_mixer.l2.weight", (F, D)).T
        out[to + "wd"] = take(pre + "channel_mixer.l3.weight", (D, F)).T
    rc["tie_embeddings"] = True
    if "lm_head.weight" in state:
        head = take("lm_head.weight", (V, D))
        if not torch.equal(head, embed):
            rc["tie_embeddings"] = False
            out["head"] = head.T
            if setting(c_published, "tie_word_embeddings", True):
                print("transnormerllm.py: warning: lm_head.weight differs from the embedding but config.json does "
                      "not set tie_word_embeddings to false; converted as a separate head (the file's values)",
                      file=sys.stderr)
    # The published model ignores this bookkeeping entry when it loads (_keys_to_ignore_on_load_unexpected).
    used.update(k for k in state if k == "decoder.version" or k.endswith(".decoder.version"))
    unknown = sorted(set(state) - used)
    if unknown:
        raise CheckpointError("unknown tensors (not part of TransNormerLLM as rill reads it): %s" %
                              ", ".join(unknown[:8]) + (" and %d more" % (len(unknown) - 8) if len(unknown) > 8 else ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the published checkpoint folder")
    ap.add_argument("--out", required=True, help="the rill model folder to write")
    ap.add_argument("--dtype", choices=sorted(OUT_DTYPES), default="f32", help="weight storage type")
    args = ap.parse_args()
    try:
        # The same folder reached another way (a link, a mount) would be overwritten in place.
        if os.path.realpath(args.model) == os.path.realpath(args.out) or (
                os.path.isdir(args.out) and os.path.samefile(args.model, args.out)):
            raise CheckpointError("--out must differ from --model")
        config, state = load_published(args.model)
        rc = rill_config(config)
        weights = convert_weights(rc, state, config)
        dtypes = {k: torch.float32 if k.endswith(".lrpe_theta") else OUT_DTYPES[args.dtype] for k in weights}
        for k, v in weights.items():  # a value past the storage type's range would be stored infinite
            if v.dtype != dtypes[k]:
                bad = (~torch.isfinite(v.to(dtypes[k]))).nonzero()
                if len(bad):
                    raise CheckpointError("'%s' holds %g at %s, past %s's range: convert with a wider --dtype" %
                                          (k, v[tuple(bad[0].tolist())].item(), bad[0].tolist(), args.dtype))
        os.makedirs(args.out, exist_ok=True)
        # config.json goes last and is removed first: a conversion cut off part way leaves no config
        # beside weights or a tokenizer of another model.
        out_config = os.path.join(args.out, "config.json")
        if os.path.lexists(out_config):
            os.remove(out_config)
        write_safetensors(os.path.join(args.out, "model.safetensors"), weights,
                          {"rill.converted_from": "TransNormerLLM"}, dtypes)
        # A tokenizer.model of an earlier conversion into --out would pass for this model's.
        tokenizer, out_tokenizer = os.path.join(args.model, "tokenizer.model"), os.path.join(args.out, "tokenizer.model")
        if os.path.exists(tokenizer):
            with open(tokenizer, "rb") as f:
                write_bytes_atomic(out_tokenizer, f.read())
        elif os.path.lexists(out_tokenizer):
            os.remove(out_tokenizer)
        write_text_atomic(out_config, json.dumps(rc, indent=1) + "\n")
    except (CheckpointError, OSError) as e:
        print("transnormerllm.py: %s" % e, file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"converted": args.model, "out": args.out, "dtype": args.dtype, "tensors": len(weights),
                      "tied": rc["tie_embeddings"], "lrpe_layers": rc["lrpe_layers"],
                      "tokenizer": os.path.exists(os.path.join(args.out, "tokenizer.model"))}))


if __name__ == "__main__":
    main()
