#!/usr/bin/env bash
# `rill score` against PyTorch on a trained model: tools/peers/train_transnormer.py trains a small
# byte-level TransNormer for a few steps (weights with a learned structure, not random ones) and
# scores its held-out text itself in double precision; rill's mean negative log-likelihood of the
# same text (4,096 bytes over two prefill segments, f32) must agree to 1e-5 relative. Exit 77
# (reported as skipped) where python3-torch is not installed.
#   tests/score_torch_check.sh RILL_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
rill=$1
src=$2
work=$3
py=${RILL_PYTHON:-/usr/bin/python3}
"$py" -c "import torch" 2>/dev/null || { echo "python3-torch is not installed: not checked"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
OPENBLAS_NUM_THREADS=1 "$py" "$src/tools/peers/train_transnormer.py" --out "$work" --steps 30 --held-out 4096 \
  --width 64 --heads 2 --ffn-width 128 --layers 2 > "$work/train.json" 2> /dev/null
"$rill" score --config "$work/config.json" --weights "$work/model.safetensors" --text-file "$work/held_out.txt" \
  --segment 2048 > "$work/score.json"
"$py" - "$work/train.json" "$work/score.json" <<'PY'
import json, sys
torch_nll = json.load(open(sys.argv[1]))["held_out_nll_f64"]
rill_nll = json.load(open(sys.argv[2]))["nll_nats_per_token"]
error = abs(rill_nll - torch_nll) / torch_nll
print("held-out nll per token: rill %.9f, PyTorch (f64) %.9f, relative error %.2e" % (rill_nll, torch_nll, error))
sys.exit(0 if error <= 1e-5 else 1)
PY
echo "rill score matches PyTorch"
