#!/usr/bin/env bash
# `rill generate` runs that cannot go on keep what they made: a reader that goes away (a closed
# pipe) and a session that is full end the run with status 1 after the state is saved, the
# session's own position in it (an interrupted prompt's STATE.partial: generate_interrupt.sh).
#   tests/generate_stops.sh RILL_BINARY CONFIG WORK_DIR
set -uo pipefail
rill=$1
config=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$1"; cat "$work/err" 2>/dev/null; exit 1; }
position_of() {  # the position a run from the state starts at
  "$rill" generate --random --config "$2" --load-state "$1" --tokens 0 --json |
    grep -oE '"start_position": [0-9]+' | grep -oE '[0-9]+'
}

# A closed pipe: the writes fail (SIGPIPE is ignored), the state is saved, status 1.
"$rill" generate --random --config "$config" --prompt "hello" --tokens 20000 --save-state "$work/piped.st" \
  2> "$work/err" | head -c 40 > /dev/null
rc=${PIPESTATUS[0]}
[[ $rc == 1 ]] || fail "closed pipe: exit status $rc, not 1"
grep -q 'could not be written' "$work/err" || fail "closed pipe: no message"
[[ -f $work/piped.st ]] || fail "closed pipe: no state saved"
piped=$(position_of "$work/piped.st" "$config")
(( piped > 5 && piped < 20005 )) || fail "closed pipe: the state is at position $piped"

# A full session (a softmax layer holds 4096 positions): status 1, the state saved at 4096.
full_config=$work/softmax.json
echo '{"width": 32, "heads": 4, "layers": 1, "layer_kinds": ["softmax"], "ffn_width": 64}' > "$full_config"
head -c 4090 /dev/zero | tr '\0' 'a' > "$work/prompt.txt"
"$rill" generate --random --config "$full_config" --prompt-file "$work/prompt.txt" --tokens 50 \
  --save-state "$work/full.st" --json > "$work/full.json" 2> "$work/err"
rc=$?
[[ $rc == 1 ]] || fail "full session: exit status $rc, not 1"
grep -q 'the state was saved' "$work/err" || fail "full session: no message"
grep -q '"stopped_by": "the session is full at position 4096' "$work/full.json" || fail "full session: --json does not say why it stopped"
[[ $(position_of "$work/full.st" "$full_config") == 4096 ]] || fail "full session: the state is not at 4096"
echo "generate stops: a closed pipe at position $piped and a full session at 4096 kept their states"
