#!/usr/bin/env bash
# Kill drill for `rill repro-icl`: a reproduction with periodic checkpoints is killed (SIGKILL) once
# some runs have finished and another is part-way, then resumed with --resume. The resumed
# reproduction must keep the finished runs, continue the interrupted one from its checkpoint at a
# whole number of intervals (or its last step, trained but not evaluated), and end with exactly
# the CSV of an unbroken reproduction.
#   tests/repro_resume.sh RILL_BINARY WORK_DIR
set -euo pipefail
rill=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
every=7
runs=$work/killed/runs
count() { local files=("$runs"/$1); [[ -e ${files[0]} ]] && echo ${#files[@]} || echo 0; }
# Kill once a run is recorded and another has written a checkpoint. A machine fast enough to finish
# before the kill gets a longer reproduction (both runs use the same options).
for steps in 60 240 960; do
  opts=(--quick --experiments adam-vs-sgd --steps $steps)
  rm -rf "$work/whole" "$work/killed"
  "$rill" repro-icl "${opts[@]}" --out "$work/whole" > "$work/whole.log"
  "$rill" repro-icl "${opts[@]}" --checkpoint-every $every --out "$work/killed" > "$work/killed.log" 2>&1 &
  pid=$!
  caught=0
  while kill -0 $pid 2>/dev/null; do
    if (( $(count '*.result.json') >= 1 && $(count '*.safetensors') >= 1 )); then
      kill -9 $pid 2>/dev/null && caught=1
      break
    fi
    sleep 0.02
  done
  wait $pid 2>/dev/null || true
  (( caught )) && break
  echo "the reproduction of $steps steps per run ended before it was killed; trying a longer one"
done
(( caught )) || { cat "$work/killed.log"; echo "never caught a reproduction part-way"; exit 1; }
finished=$(count '*.result.json')
checkpoints=$(count '*.safetensors')
echo "killed with $finished runs finished and $checkpoints checkpoint(s)"

"$rill" repro-icl "${opts[@]}" --checkpoint-every $every --resume --out "$work/killed" > "$work/resumed.log"
grep -q "resuming .*: $finished runs already finished" "$work/resumed.log" ||
  { cat "$work/resumed.log"; echo "the resume did not keep the $finished finished runs"; exit 1; }
if (( checkpoints > 0 )); then
  line=$(grep 'resumed its checkpoint at step' "$work/resumed.log") ||
    { cat "$work/resumed.log"; echo "the interrupted run did not resume from its checkpoint"; exit 1; }
  step=${line##* }
  # A checkpoint is saved every $every steps, and at the last step before the run's evaluation.
  (( (step % every == 0 || step == steps) && step > 0 )) ||
    { echo "resumed at step $step, neither a whole number of $every-step intervals nor the last step"; exit 1; }
  echo "$line"
fi
cmp "$work/whole/repro-icl.csv" "$work/killed/repro-icl.csv" ||
  { diff "$work/whole/repro-icl.csv" "$work/killed/repro-icl.csv"; echo "the resumed table differs from the unbroken one"; exit 1; }
# The table ends with the paper's finding and how many of the run's comparisons show it.
grep -Eq "^The paper: Adam reaches a lower loss .* This run: [0-9]+ of [0-9]+ comparisons show it" "$work/whole/repro-icl.md" ||
  { cat "$work/whole/repro-icl.md"; echo "the table does not say what the paper found and whether the run shows it"; exit 1; }
left=$(find "$runs" -name '*.safetensors' | wc -l)
(( left == 0 )) || { echo "$left checkpoints left after every run finished"; exit 1; }
# A resume with other settings is refused before any work (its table would mix budgets).
if "$rill" repro-icl --quick --experiments adam-vs-sgd --steps $((steps + 1)) --resume --out "$work/killed" > "$work/other.log" 2>&1 ||
   ! grep -q "was started with" "$work/other.log"; then
  cat "$work/other.log"; echo "a resume with other settings was not refused"; exit 1
fi
# A fresh start into a folder holding a reproduction's runs is refused and keeps them (--restart
# discards them): forgetting --resume once must not lose a long run's results.
before=$(ls "$runs" | sort)
if "$rill" repro-icl "${opts[@]}" --out "$work/killed" > "$work/fresh.log" 2>&1 ||
   ! grep -q "holds .* files of an earlier reproduction" "$work/fresh.log"; then
  cat "$work/fresh.log"; echo "a fresh start over a reproduction's runs was not refused"; exit 1
fi
[[ "$(ls "$runs" | sort)" == "$before" ]] || { echo "the refused start changed $runs"; exit 1; }

# Killed while the grid trains (a periodic checkpoint on disk, no result yet): the resume goes on
# from that checkpoint's step, short of the last, with the spikes seen so far, and ends with the
# unbroken table too. It starts at the budget of the first drill, whose unbroken table is already
# made (training dominates this drill's time); a machine that finishes before the kill gets a
# longer reproduction.
whole_steps=$steps
mid_runs=$work/mid/runs
count_mid() { local files=("$mid_runs"/$1); [[ -e ${files[0]} ]] && echo ${#files[@]} || echo 0; }
caught=0
for steps in $whole_steps $((whole_steps * 4)) $((whole_steps * 16)); do
  mid_opts=(--quick --experiments adam-vs-sgd --steps $steps)
  rm -rf "$work/mid" "$work/mid-whole"
  "$rill" repro-icl "${mid_opts[@]}" --checkpoint-every $every --out "$work/mid" > "$work/mid.log" 2>&1 &
  pid=$!
  while kill -0 $pid 2>/dev/null; do
    if (( $(count_mid '*.safetensors') >= 1 )); then
      kill -9 $pid 2>/dev/null && caught=1
      break
    fi
    sleep 0.01
  done
  wait $pid 2>/dev/null || true
  if (( caught && $(count_mid '*.result.json') == 0 )); then
    "$rill" repro-icl "${mid_opts[@]}" --checkpoint-every $every --resume --out "$work/mid" > "$work/mid-resumed.log"
    line=$(grep -m1 'resumed its checkpoint at step' "$work/mid-resumed.log") ||
      { cat "$work/mid-resumed.log"; echo "the run killed mid-training did not resume from its checkpoint"; exit 1; }
    step=${line##* }
    if (( step < steps )); then
      (( step % every == 0 && step > 0 )) ||
        { echo "resumed mid-training at step $step, not a whole number of $every-step intervals"; exit 1; }
      if (( steps == whole_steps )); then
        cp -r "$work/whole" "$work/mid-whole"
      else
        "$rill" repro-icl "${mid_opts[@]}" --out "$work/mid-whole" > "$work/mid-whole.log"
      fi
      cmp "$work/mid-whole/repro-icl.csv" "$work/mid/repro-icl.csv" ||
        { diff "$work/mid-whole/repro-icl.csv" "$work/mid/repro-icl.csv"; echo "the table resumed mid-training differs from the unbroken one"; exit 1; }
      echo "$line (mid-training, of $steps)"
      break
    fi
  fi
  caught=0
  echo "the reproduction of $steps steps per run was not caught mid-training; trying a longer one"
done
(( caught )) || { echo "never caught a reproduction mid-training"; exit 1; }

echo "repro-icl kill drill passed: the resumed table equals the unbroken one"
