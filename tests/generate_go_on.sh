#!/usr/bin/env bash
# `rill generate --load-state` without a prompt goes on from the saved logits: a run cut after 8
# tokens (saved every 4) and continued for 12 writes the same 20 tokens as one uninterrupted run,
# and the logits it starts from are, bit for bit, the uninterrupted run's before its 9th token.
#   tests/generate_go_on.sh RILL_BINARY CONFIG WORK_DIR PYTHON3
set -euo pipefail
rill=$1
config=$2
work=$3
python=$4
rm -rf "$work"
mkdir -p "$work"
common=(generate --random --config "$config" --temperature 0.9 --top-p 0.95 --seed 11 --json)
"$rill" "${common[@]}" --prompt hello --tokens 20 --export-logits "$work/full.st" > "$work/full.json"
"$rill" "${common[@]}" --prompt hello --tokens 8 --save-state "$work/state" --save-state-every 4 > "$work/part.json"
"$rill" "${common[@]}" --load-state "$work/state" --tokens 12 --export-logits "$work/rest.st" > "$work/rest.json"
"$python" - "$work" <<'PY'
import json, struct, sys
work = sys.argv[1]

def logits(path):  # the "logits" tensor of an --export-logits file: rows of raw f32 bytes
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    entry = json.loads(data[8:8 + size])["logits"]
    assert entry["dtype"] == "F32", entry
    begin, end = entry["data_offsets"]
    rows, vocab = entry["shape"]
    raw = data[8 + size + begin:8 + size + end]
    return [raw[r * vocab * 4:(r + 1) * vocab * 4] for r in range(rows)]

full, part, rest = (json.load(open(f"{work}/{name}.json")) for name in ("full", "part", "rest"))
assert rest["prompt_tokens"] == 0 and rest["start_position"] == part["position"], (rest["start_position"], part["position"])
joined = part["tokens"] + rest["tokens"]
assert joined == full["tokens"], f"cut and continued {joined} != uninterrupted {full['tokens']}"
cut = len(part["tokens"])
assert logits(f"{work}/rest.st")[0] == logits(f"{work}/full.st")[cut], "the saved logits differ from the run's"
print(f"generate go on: {len(joined)} tokens, the same as one run")
PY
