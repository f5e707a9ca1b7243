#!/usr/bin/env bash
# What rill's weight forms cost a trained model: trains the small byte-level TransNormer of
# tools/peers/train_transnormer.py, then scores its held-out text with `rill score` for every weight
# form and group size, and with f16 activations. Writes train.json and score-<form>.json here.
#   tools/rill/bench-lm-lavapipe/trained-byte-model/run.sh [RILL] [STEPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
rill=${1:-$repo/build/release/bin/rill}
steps=${2:-1500}
model=$(mktemp -d)
trap 'rm -rf "$model"' EXIT
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$repo/tools/peers/train_transnormer.py" --out "$model" --steps "$steps" \
  > "$here/train.json"
score() {  # name, then rill score's weight options
  local name=$1
  shift
  "$rill" score --config "$model/config.json" --weights "$model/model.safetensors" \
    --text-file "$model/held_out.txt" "$@" > "$here/score-$name.json"
}
score f32
score f16 --weight-storage f16
score f16-activations --f16  # activations and weights in f16 (NormAttention outputs in f32)
score int8-g64 --weight-storage int8 --int8-group 64
score int8-g128 --weight-storage int8 --int8-group 128
score int4-g16 --weight-storage int4 --int4-group 16
score int4-g32 --weight-storage int4 --int4-group 32
score int4-g64 --weight-storage int4 --int4-group 64
score int4-g128 --weight-storage int4 --int4-group 128
for f in "$here"/score-*.json; do
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print("%-10s %.5f nats/token  %.4f bits/byte  weights %d bytes" % (sys.argv[1].split("score-")[1][:-5], j["nll_nats_per_token"], j["bits_per_byte"], j["weight_bytes"]))' "$f"
done
