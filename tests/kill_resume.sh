#!/usr/bin/env bash
# Kill drill: a training run with periodic checkpoints is killed with SIGKILL at random moments, three
# times, each time resumed from its checkpoint. Every resume must load, start at a whole number of
# checkpoint intervals (nothing lost but the steps since the last checkpoint) and be further along
# than the one before; no temporary file may be left beside the checkpoint once a later write ran.
#   tests/kill_resume.sh RILL_BINARY WORK_DIR
set -euo pipefail
rill=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
ck=$work/run.safetensors
every=20
common=(--steps 1000000 --eval-every 1000000 --eval-tasks 16 --checkpoint "$ck" --checkpoint-every $every)
last=0
for round in 1 2 3; do
  inode=$( [[ -f $ck ]] && stat -c %i "$ck" || echo none )
  if [[ $round == 1 ]]; then
    "$rill" train-icl --d 2 --n 3 --layers 1 --batch 16 --optimizers adam "${common[@]}" > "$work/out$round" 2>&1 &
  else
    "$rill" train-icl --resume "$ck" "${common[@]}" > "$work/out$round" 2>&1 &
  fi
  pid=$!
  # Wait for the first checkpoint of this round (each atomic write is a new file: a new inode), then
  # kill at a random moment after it.
  for _ in $(seq 600); do
    [[ -f $ck ]] && [[ $(stat -c %i "$ck") != "$inode" ]] && break
    kill -0 $pid 2>/dev/null || { cat "$work/out$round"; echo "round $round: the run ended before it was killed"; exit 1; }
    sleep 0.1
  done
  sleep "0.$(( RANDOM % 9 + 1 ))"
  kill -9 $pid
  wait $pid 2>/dev/null || true
  # The checkpoint resumes, at a whole number of intervals, further along than before.
  line=$("$rill" train-icl --resume "$ck" --steps 1 --eval-every 1 --eval-tasks 16 2>&1 | grep ' at step ')
  step=${line##* }
  echo "round $round: killed, resumed at step $step"
  (( step % every == 0 )) || { echo "step $step is not a multiple of $every"; exit 1; }
  (( step > last )) || { echo "step $step is not past the previous round's $last"; exit 1; }
  last=$step
done
# Temporaries a killed writer left are removed by the next write once a minute old (a younger one
# may be a live writer's): age them (and one made here, so that there is one), write once more.
touch "$ck.tmp.zz9999"
find "$work" -name 'run.safetensors.tmp.*' -exec touch -d '-2 min' {} +
"$rill" train-icl --resume "$ck" --checkpoint "$ck" --steps 1 --eval-every 1 --eval-tasks 16 > /dev/null 2>&1 ||
  { echo "the last resume failed"; exit 1; }
leftovers=$(find "$work" -name 'run.safetensors.tmp.*' | wc -l)
(( leftovers == 0 )) || { echo "stale temporaries left: $leftovers"; exit 1; }
echo "kill drill passed: 3 kills, last resume at step $last"
