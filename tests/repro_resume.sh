#!/usr/bin/env bash
# Kill drill for `rill repro-icl`: a reproduction with periodic checkpoints is killed (SIGKILL) once
# some runs have finished and another is part-way, then resumed with --resume. The resumed
# reproduction must keep the finished runs, continue the interrupted one from its checkpoint at a
# whole number of intervals, and end with exactly the CSV of an unbroken reproduction.
#   tests/repro_resume.sh RILL_BINARY WORK_DIR
set -euo pipefail
rill=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
every=7
opts=(--quick --experiments adam-vs-sgd --steps 60)
"$rill" repro-icl "${opts[@]}" --out "$work/whole" > "$work/whole.log"

"$rill" repro-icl "${opts[@]}" --checkpoint-every $every --out "$work/killed" > "$work/killed.log" 2>&1 &
pid=$!
runs=$work/killed/runs
# Kill once two runs are recorded and a third has written a checkpoint.
for _ in $(seq 1200); do
  finished=$(find "$runs" -name '*.result.json' 2>/dev/null | wc -l)
  checkpoints=$(find "$runs" -name '*.safetensors' 2>/dev/null | wc -l)
  (( finished >= 2 && checkpoints >= 1 )) && break
  kill -0 $pid 2>/dev/null || { cat "$work/killed.log"; echo "the reproduction ended before it was killed"; exit 1; }
  sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
finished=$(find "$runs" -name '*.result.json' | wc -l)
checkpoints=$(find "$runs" -name '*.safetensors' | wc -l)
echo "killed with $finished runs finished and $checkpoints checkpoint(s)"

"$rill" repro-icl "${opts[@]}" --checkpoint-every $every --resume --out "$work/killed" > "$work/resumed.log"
grep -q "resuming .*: $finished runs already finished" "$work/resumed.log" ||
  { cat "$work/resumed.log"; echo "the resume did not keep the $finished finished runs"; exit 1; }
if (( checkpoints > 0 )); then
  line=$(grep 'resumed its checkpoint at step' "$work/resumed.log") ||
    { cat "$work/resumed.log"; echo "the interrupted run did not resume from its checkpoint"; exit 1; }
  step=${line##* }
  (( step % every == 0 && step > 0 )) || { echo "resumed at step $step, not a whole number of $every-step intervals"; exit 1; }
  echo "$line"
fi
cmp "$work/whole/repro-icl.csv" "$work/killed/repro-icl.csv" ||
  { diff "$work/whole/repro-icl.csv" "$work/killed/repro-icl.csv"; echo "the resumed table differs from the unbroken one"; exit 1; }
left=$(find "$runs" -name '*.safetensors' | wc -l)
(( left == 0 )) || { echo "$left checkpoints left after every run finished"; exit 1; }
# A resume with other settings is refused before any work (its table would mix budgets).
if "$rill" repro-icl --quick --experiments adam-vs-sgd --steps 61 --resume --out "$work/killed" > "$work/other.log" 2>&1 ||
   ! grep -q "was started with" "$work/other.log"; then
  cat "$work/other.log"; echo "a resume with other settings was not refused"; exit 1
fi
echo "repro-icl kill drill passed: the resumed table equals the unbroken one"
