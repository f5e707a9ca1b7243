#!/usr/bin/env bash
# Ctrl-C drill for `rill generate`: SIGINT during a long prefill (or, on a fast machine, during the
# decoding after it) ends the run cleanly with status 130, the state saved at the position reached;
# that state loads and goes on from there.
#   tests/generate_interrupt.sh RILL_BINARY CONFIG WORK_DIR
set -euo pipefail
rill=$1
config=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
state=$work/state.safetensors
{ yes "a long prompt that takes a while to read, " || true; } | head -c 2000000 > "$work/prompt.txt"
"$rill" generate --random --config "$config" --segment 64 --prompt-file "$work/prompt.txt" --tokens 100000 \
  --save-state "$state" > "$work/out" 2> "$work/err" &
pid=$!
# The handler is in place before the model loads; interrupt once it has (a moment into the prefill).
for _ in $(seq 600); do
  grep -q '^model:' "$work/err" && break
  kill -0 $pid 2>/dev/null || { cat "$work/err"; echo "the run ended before it was interrupted"; exit 1; }
  sleep 0.1
done
sleep 0.5
kill -INT $pid
rc=0
wait $pid || rc=$?
cat "$work/err" | tr '\r' '\n' | grep -v '^prefill \[' || true
[[ $rc == 130 ]] || { echo "exit status $rc, not 130"; exit 1; }
grep -q '^interrupted: ' "$work/err" || { echo "no 'interrupted:' line"; exit 1; }
[[ -f $state ]] || { echo "no state saved"; exit 1; }
# The position the run reported is the saved state's: a run from it starts there.
reported=$(grep -oE 'position [0-9]+' "$work/err" | tail -1 | grep -oE '[0-9]+')
start=$("$rill" generate --random --config "$config" --load-state "$state" --prompt "x" --tokens 1 --json |
  grep -oE '"start_position": [0-9]+' | grep -oE '[0-9]+')
echo "interrupted at position $reported; the saved state starts the next run at $start"
[[ $reported == "$start" ]] || { echo "the saved state is at $start, the run reported $reported"; exit 1; }
# Going on from that state and saving over it: a prompt interrupted while it is read leaves the
# loaded state whole and puts the part read beside it (STATE.partial); --json says so on stdout.
cp "$state" "$work/state.before"
# 16M tokens: far more than any device reads in the moment before the interrupt.
{ yes "a long prompt that takes a while to read, " || true; } | head -c 16000000 > "$work/long-prompt.txt"
"$rill" generate --random --config "$config" --segment 64 --prompt-file "$work/long-prompt.txt" --tokens 10 \
  --load-state "$state" --save-state "$state" --json > "$work/out" 2> "$work/err" &
pid=$!
# --json keeps stderr quiet: a moment for the tiny model to load (its 2M-token prompt takes far longer).
sleep 1.5
kill -0 $pid 2>/dev/null || { cat "$work/err"; echo "the second run ended before it was interrupted"; exit 1; }
kill -INT $pid
rc=0
wait $pid || rc=$?
[[ $rc == 130 ]] || { echo "second run: exit status $rc, not 130"; exit 1; }
grep -q 'the prefill stopped' "$work/err" || { cat "$work/err"; echo "second run: not stopped in the prefill"; exit 1; }
cmp -s "$state" "$work/state.before" || { echo "the loaded state was overwritten by a part-read prompt"; exit 1; }
[[ -f $state.partial ]] || { echo "no $state.partial"; exit 1; }
grep -q '"interrupted": "prefill"' "$work/out" || { cat "$work/out"; echo "no JSON summary of the interrupted run"; exit 1; }
# Under `rill profile`, Ctrl-C reaches the whole process group; the profiled generate stops cleanly
# and its trace of what ran is profiled (the run's exit status kept), not thrown away. setsid
# makes the profile a group of its own, as a terminal's job is.
setsid "$rill" profile --quick-peaks --trace "$work/trace.json" -- generate --random --config "$config" --segment 64 \
  --prompt-file "$work/long-prompt.txt" --tokens 10 > "$work/profile.out" 2> "$work/profile.err" &
pid=$!
trap 'kill -KILL -- -$pid 2>/dev/null || true' EXIT  # never leave the group running
loaded=0
for _ in $(seq 600); do
  grep -q '^model:' "$work/profile.err" && { loaded=1; break; }
  kill -0 $pid 2>/dev/null || { cat "$work/profile.err"; echo "the profiled run ended before it was interrupted"; exit 1; }
  sleep 0.1
done
(( loaded )) || { cat "$work/profile.err"; echo "the profiled run did not load its model within 60 s"; exit 1; }
sleep 0.5
kill -INT -- -$pid
rc=0
wait $pid || rc=$?
[[ $rc == 130 ]] || { cat "$work/profile.err"; echo "profiled run: exit status $rc, not 130"; exit 1; }
grep -q '^== profile of `rill generate' "$work/profile.out" ||
  { cat "$work/profile.out" "$work/profile.err"; echo "no profile of the interrupted run"; exit 1; }
[[ -s $work/trace.json ]] || { echo "no trace of the interrupted run"; exit 1; }
echo "generate interrupt: stopped cleanly and resumed"
