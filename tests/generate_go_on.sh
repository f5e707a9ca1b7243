#!/usr/bin/env bash
# `rill generate --load-state` without a prompt goes on from the saved logits: a run cut after 8
# tokens (saved every 4) and continued for 12 writes the same 20 tokens as one uninterrupted run.
#   tests/generate_go_on.sh RILL_BINARY CONFIG WORK_DIR PYTHON3
set -euo pipefail
rill=$1
config=$2
work=$3
python=$4
rm -rf "$work"
mkdir -p "$work"
common=(generate --random --config "$config" --temperature 0.9 --top-p 0.95 --seed 11 --json)
"$rill" "${common[@]}" --prompt hello --tokens 20 > "$work/full.json"
"$rill" "${common[@]}" --prompt hello --tokens 8 --save-state "$work/state" --save-state-every 4 > "$work/part.json"
"$rill" "${common[@]}" --load-state "$work/state" --tokens 12 > "$work/rest.json"
"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
full, part, rest = (json.load(open(f"{work}/{name}.json")) for name in ("full", "part", "rest"))
assert rest["prompt_tokens"] == 0 and rest["start_position"] == part["position"], (rest["start_position"], part["position"])
joined = part["tokens"] + rest["tokens"]
assert joined == full["tokens"], f"cut and continued {joined} != uninterrupted {full['tokens']}"
print(f"generate go on: {len(joined)} tokens, the same as one run")
PY
