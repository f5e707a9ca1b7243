#!/usr/bin/env bash
# rill's TransNormer against an independent PyTorch implementation (tools/peers/transnormer_torch.py):
# random models of three configs (every layer kind, decay per head and per layer, feature maps,
# norms, GLU activations, tied and untied heads, and the TransNormerLLM options: the scaled
# embedding, LRPE, the output gate), logits after the prompt and after each generated token. Exit 77 (reported as
# skipped) where python3-torch is not installed.
#   tests/lm_torch_check.sh RILL_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
rill=$1
src=$2
work=$3
py=${RILL_PYTHON:-/usr/bin/python3}  # RILL_PYTHON: another interpreter with PyTorch (a GPU machine's virtualenv)
"$py" -c "import torch" 2>/dev/null || { echo "python3-torch is not installed: not checked"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
configs=(
  '{"width": 32, "heads": 2, "layers": 3, "ffn_width": 48, "layer_kinds": ["diag", "norm", "softmax"],
    "decay": [0.9, 0.75], "block": 8, "chunk": 4, "feature_map": "relu", "glu_activation": "sigmoid"}'
  '{"width": 24, "heads": 3, "layers": 2, "ffn_width": 40, "norm": "srmsnorm", "tie_embeddings": true,
    "block": 16, "chunk": 16, "feature_map": "elu1", "glu_activation": "silu"}'
  '{"width": 32, "heads": 4, "layers": 3, "ffn_width": 48, "layer_kinds": ["norm", "diag", "norm"],
    "decay": "transnormerllm", "block": 8, "chunk": 8, "feature_map": "silu", "norm": "srmsnorm",
    "glu_activation": "identity", "embed_scale": 5.66, "output_gate": true, "lrpe_layers": [0, 2],
    "tie_embeddings": true}'
)
for i in "${!configs[@]}"; do
  echo "${configs[$i]}" > "$work/config$i.json"
  "$rill" generate --random --random-seed $((i + 3)) --config "$work/config$i.json" --tokens 9 --temperature 0.8 \
    --prompt "Linear attention keeps a state of constant size per head; blocks see their own past." \
    --save-config "$work/c$i.json" --save-weights "$work/w$i.safetensors" --export-logits "$work/l$i.safetensors" \
    > /dev/null 2>&1
  "$py" "$src/tools/peers/transnormer_torch.py" --config "$work/c$i.json" --weights "$work/w$i.safetensors" \
    --check "$work/l$i.safetensors"
done
# The timing peer of `rill bench --op lm --lm-precision f16 --peers` on a CPU: f16 weights computed
# in f32 (Debian's PyTorch has no f16 log on a CPU), its logits finite; on the CPU where a GPU is.
CUDA_VISIBLE_DEVICES= "$py" "$src/tools/peers/transnormer_torch.py" --config "$work/c0.json" --weights "$work/w0.safetensors" \
  --time 24 --decode-steps 2 --dtype float16 | grep '"arithmetic": "float32"' >/dev/null  # all read: no SIGPIPE
echo "rill matches the PyTorch TransNormer"
