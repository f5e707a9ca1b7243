#!/usr/bin/env bash
# One device call's worth of GPU checks, for a machine set up by ../shared/gpu (pack.sh, run.sh):
#
#   bash .gpu/run.sh bash tools/gpu-check.sh [step ...]     # default: every step, in this order
#
# Steps: info la block matmul rmsnorm icl lm tests (the default set), and on request: lm_packed (the
# LM with int8 and int4 weights), la_par (the
# linear-attention bench's parallel form alone, with its peers), sampler (the
# bit-exactness test), profile_lm (a 64K-token prompt and 64 decoded tokens), profile_icl (300
# Vladymyrov-setting steps), profile_icl_grid (the ICL bench, its grid of models included, under
# the profiler), limits (the Mali limit profile's whole-suite run, open-file limit raised),
# gpu_tests (the matmul, sampler and fused-decoding tests), matmul_sweep and decode_sweep (the bench
# with two shared stages (slices 16 and 32 deep), at each forced matmul tile, unsplit along K, with
# strided accumulators and with slices 32 deep, on
# the goals' products / at each decoding grid from 256 x 32, with weight loads 1 and 8 rows at a
# time), segment_sweep (LM prefill in longer segments and
# forced matmul tiles), icl_sweep (ICL training with the top layer computed whole rather than only
# what the loss reads, with the layers a task per invocation, and with the workgroup kernels at 1-8
# tasks per workgroup), icl_blocks (ICL training with the workgroup kernels' products in blocks of
# 2 x 2 to 4 x 4 outputs per invocation), la_plans (linear attention with output blocks over neighbouring columns,
# with the scores in a walk of their own, and both),
# la_pairs (linear attention's output pass in row-block pairs over the chunk's values resident, at
# chunks of 64 and 32 and tiles of 16), la_sweep (linear attention at tile depths 4 and 16,
# with the state scan one serial walk, with windows of 256 chunks, with spans of 1 and 8 chunks and
# with chunks of 32 and 16 positions, alone and with tiles as deep), block_sweep (block attention with the result rounds of its
# products walked together and apart, in workgroups of 128, and at tile depths 8 and 32),
# matmul_probe (products around the LM's slow 65536 x 256 x 512, to find which dimension makes it slow,
# and three of them with slices 32 deep),
# coop (the cooperative-matrix matmul's tests, the matmul bench with two shared stages per k
# slice, with 2 x 4 and 4 x 2 subgroups and with slices of 64 k steps, to compare with the default run's f16
# records, and the LM in f16, whose projections take them),
# wait_spin (the submit round trip and decoding with the host polling fences 0 and 200 us),
# plan:<ops>:<plan> (rill bench --op <ops> with RILL_KERNEL_PLAN=<plan>, at the sweeps' sizes),
# cache_order (the pipeline-cache tests, then one after), tune (rill tune: the tuning file with every
# timing), repro_full (Table 1 at the paper's budget, one seed, L 1-4 at sigma_max 1 and 3; resumable). Each runs under its own time limit (so one slow
# step cannot eat the call) and writes <step>.json and <step>.log; all of them come back in
# $OUT/gpu-check.tgz, and a one-line-per-record summary is printed at the end. PyTorch peers run
# with the machine's python3 (RILL_PYTHON), which on the GPU machines is a virtualenv's.
set -u
# Every bench record's kernels carry the driver's compiler statistics (registers, spills): what
# limits how many workgroups the GPU keeps in flight.
export RILL_PIPELINE_STATISTICS=1
out=${OUT:-/tmp/out}
work=$(mktemp -d)
mkdir -p "$out"
if [ -z "${RILL_PYTHON:-}" ]; then  # the first python3 that has PyTorch
  for py in "$(command -v python3)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    if [ -x "$py" ] && "$py" -c "import torch" 2>/dev/null; then export RILL_PYTHON=$py; break; fi
  done
fi
echo "peers: ${RILL_PYTHON:-no python3 with torch}"
rill=build/release/bin/rill
# The products issue 12 sets goals for: square f32 and f16, and the LM's tall ones (tokens x 512 x
# 256 and tokens x 256 x 512): the sweeps time these alone, both dtypes and kernel families each.
goal_shapes=1024x1024x1024,4096x4096x4096,65536x512x256,65536x256x512
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(info la block matmul rmsnorm icl lm tests)

failed=()  # the steps that failed, were cut off or are unknown: the script's exit status says so
run_step() {  # name, limit in seconds, command...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$work/$name.json" 2>"$work/$name.log"
  local rc=$?
  echo "== $name: rc $rc in $((SECONDS - start)) s (limit $limit s)$([ $rc -eq 124 ] && echo ': cut off by its limit')"
  [ $rc -eq 0 ] || { tail -n 5 "$work/$name.log"; failed+=("$name (rc $rc)"); }
  tar -czf "$out/gpu-check.tgz" -C "$work" .  # after every step: a call cut short still brings back the rest
}

for s in "${steps[@]}"; do
  case $s in
    info) run_step info 20 "$rill" info ;;
    la) run_step la 180 "$rill" bench --op linear_attention --peers ;;
    # The parallel form only (the GPUs' own; the serial kernel and the CPU scan take most of `la`).
    la_par) run_step la_par 90 "$rill" bench --op linear_attention --peers --la-forms chunked_parallel ;;
    block) run_step block 90 "$rill" bench --op block_attention --peers ;;  # blocks 32-256, heads 32-128: 35 s in run 9
    matmul) run_step matmul 45 "$rill" bench --op matmul --peers ;;
    rmsnorm) run_step rmsnorm 20 "$rill" bench --op rmsnorm --peers ;;
    icl) run_step icl 40 "$rill" bench --op icl --no-torch ;;
    lm) run_step lm 60 "$rill" bench --op lm --peers --lm-no-baseline --lm-max-tokens 1048576 ;;
    # The LM with packed weights: int8 and int4 (f32 activations; their matmul and fused decoding).
    lm_packed) for ws in int8 int4; do
                 run_step "lm_$ws" 60 "$rill" bench --op lm --lm-no-baseline --lm-weight-storage $ws \
                   --lm-max-tokens 262144
               done ;;
    # The limit profiles' whole-suite runs took longer than this step on the H200 (run6): `limits`.
    # The whole suite but the three limit-profile runs (the limits step runs one) and the checks of
    # the build itself (label toolchain: they need the compiler and spirv-dis, absent there).
    tests) run_step tests 120 ctest --test-dir build/release -j16 -LE toolchain -E "limit_profile_" \
             --timeout 120 --output-on-failure ;;
    sampler) run_step sampler 60 env RILL_TEST=1 build/release/bin/rill_tests \
               "icl: the GPU task sampler matches its CPU twin bit for bit" ;;
    profile_lm) yes "hello world, a long prompt " | head -c 65536 >"$work/prompt.txt"
                run_step profile_lm 60 "$rill" profile --trace "$work/lm-trace.json" -- generate --random \
                  --prompt-file "$work/prompt.txt" --tokens 64 ;;
    profile_icl) run_step profile_icl 60 "$rill" profile --trace "$work/icl-trace.json" -- train-icl \
                   --setting vladymyrov --steps 300 --optimizers adam ;;
    # The grid of 21 Vladymyrov models (14,165 model-steps/s in run 9 against a goal of 20,000):
    # which of its five dispatches per step takes the time, and the drivers' register counts.
    profile_icl_grid) run_step profile_icl_grid 90 "$rill" profile --trace "$work/icl-grid-trace.json" -- bench \
                        --op icl --no-torch ;;
    limits) run_step limits 60 bash -c 'ulimit -n 65536; echo "open files: $(ulimit -n)";
              RILL_TEST=1 RILL_LIMIT_PROFILE=mali build/release/bin/rill_tests' ;;
    gpu_tests) run_step gpu_tests 90 env RILL_TEST=1 build/release/bin/rill_tests \
                 "[matmul],icl: the GPU task sampler*,lm fused decoding equals the per-op graph*" ;;
    # The LM's 65536 x 256 x 512 (m x n x k) product ran 3.1-4.4 ms on the H200 at every tile while
    # 65536 x 512 x 256 ran 0.72-0.79: the same FLOPs and k steps, A's rows 2 KiB apart instead of 1.
    # Which dimension does it (K, N, M, a power-of-two row stride)? Each product at the plan's tile.
    matmul_probe) run_step matmul_probe 90 "$rill" bench --op matmul --peers --matmul-shapes \
                    65536x256x512,65536x512x256,65536x256x256,65536x512x512,65536x256x1024,32768x256x512,65536x256x520,65536x264x512
                  # The same products with slices 32 deep: one wait on memory per 32 k steps.
                  run_step matmul_probe_depth_32 60 env RILL_KERNEL_PLAN=matmul_depth=32 "$rill" bench --op matmul \
                    --matmul-shapes 65536x256x512,65536x512x256,65536x256x1024 ;;
    matmul_sweep) for plan in matmul_buffers=2 matmul_buffers=2,matmul_depth=32 matmul_tile=4x4 matmul_tile=8x4 \
                              matmul_splits=1 matmul_layout=strided matmul_depth=32; do
                    name=${plan#matmul_}
                    run_step "matmul_${name//=/_}" 40 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op matmul \
                      --matmul-shapes "$goal_shapes"
                  done ;;
    decode_sweep) for grid in 256x32 512x8 512x16 1024x16; do  # 128x64 ran 0.48 ms/token against 256x16's 0.27 (run 3)
                    run_step "decode_$grid" 30 env RILL_KERNEL_PLAN="lm_decode_grid=$grid" "$rill" bench --op lm \
                      --lm-no-baseline --lm-max-tokens 4096
                  done
                  # Weight loads a row at a time (as before the plan's batches of 4), and 8 at a time.
                  for rows in 1 8; do
                    run_step "decode_rows_$rows" 30 env RILL_KERNEL_PLAN="lm_decode_rows=$rows" "$rill" bench \
                      --op lm --lm-no-baseline --lm-max-tokens 4096
                  done
                  # The shortest serial walks: a head's 256 input rows over 32 slices of 8, one batch each.
                  run_step decode_1024x16_rows_8 30 env RILL_KERNEL_PLAN="lm_decode_grid=1024x16,lm_decode_rows=8" \
                    "$rill" bench --op lm --lm-no-baseline --lm-max-tokens 4096 ;;
    # Waits that poll the fence 200 us before sleeping (the plan's default on discrete GPUs) against
    # sleeping at once: the submit round trip and a decoded token, each way.
    wait_spin) for spin in off 200; do
                 run_step "wait_spin_$spin" 40 env RILL_KERNEL_PLAN="wait_spin_us=$spin" "$rill" bench --op dispatch,lm \
                   --lm-no-baseline --lm-max-tokens 4096
               done ;;
    cache_order) run_step cache_order 30 env RILL_TEST=1 build/release/bin/rill_tests \
                   "a saved pipeline cache is loaded*,truncated*,cache payloads whose*,independent dispatches get*" ;;
    segment_sweep) run_step lm_segment_8192 60 "$rill" bench --op lm --lm-no-baseline --lm-segment 8192
                   for plan in matmul_tile=2x2 matmul_tile=8x8; do
                     for segment in 2048 8192; do
                       run_step "lm_${plan#*=}_$segment" 30 env RILL_KERNEL_PLAN=$plan "$rill" bench --op lm \
                         --lm-no-baseline --lm-max-tokens 65536 --lm-segment $segment
                     done
                   done ;;
    # Plan choices of the parallel form's output pass against the default (fused scores since run
    # 9): its blocks over neighbouring columns, its scores in a walk of their own, and both. (Spans
    # of 8 chunks and windows of 256 ran within 2 % of the default in run 8: la_sweep.)
    la_plans) for plan in la_columns=grouped la_scores=separate la_scores=separate,la_columns=grouped; do
                step=${plan//=/_}
                run_step "${step//,/+}" 60 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op linear_attention \
                  --la-forms chunked_parallel
              done ;;
    # The output pass's row-block pairs over the chunk's values resident (balanced causal work, no
    # barrier in its walk): at the caller's chunks of 64, at 32, and with tiles of 16 (the resident
    # values' 16 KiB hold the walk's tiles at 16 as at 8; FINDINGS.md). Against la_par's records.
    la_pairs) for plan in la_rows=paired la_rows=paired,la_chunk=32 la_rows=paired,la_tile=16; do
                step=${plan//=/_}
                run_step "${step//,/+}" 60 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op linear_attention \
                  --la-forms chunked_parallel
              done ;;
    la_sweep) for tile in 4 16; do  # the parallel linear-attention passes' tile depth (8 in the default run)
                run_step "la_tile_$tile" 60 env RILL_KERNEL_PLAN="la_tile=$tile" "$rill" bench --op linear_attention \
                  --la-forms chunked_parallel
              done
              # the state scan as one serial walk per window (the default cuts it into ~sqrt(window) runs)
              run_step la_scan_serial 60 env RILL_KERNEL_PLAN=la_scan_groups=1 "$rill" bench --op linear_attention \
                --la-forms chunked_parallel
              # windows of 256 chunks: 16 MiB of chunk states (4 heads of 64) instead of 64, within L2
              run_step la_window_256 60 env RILL_KERNEL_PLAN=la_window=256 "$rill" bench --op linear_attention \
                --la-forms chunked_parallel
              # the states pass a chunk per workgroup with the scan over every chunk (as before spans),
              # and spans of 8 chunks (the plan takes 2 to 4 from N 64K)
              for span in 1 8; do
                run_step "la_span_$span" 60 env RILL_KERNEL_PLAN="la_span=$span" "$rill" bench --op linear_attention \
                  --la-forms chunked_parallel
              done
              # chunks of 32 and 16 positions (the callers' 64 in the default run): a position's causal
              # scores and value rows halve or quarter, its share of the chunk states' writes and
              # reads doubles or quadruples, and the output pass's workgroup shrinks with the chunk
              for chunk in 32 16; do
                run_step "la_chunk_$chunk" 60 env RILL_KERNEL_PLAN="la_chunk=$chunk" "$rill" bench \
                  --op linear_attention --la-forms chunked_parallel
              done
              # and with tiles as deep as those chunks: the output pass's causal walk over the values
              # is one tile, unpaced by barriers (run 9's records: the mask's zeros cost as much as
              # the rest in walks of tiles of 8, FINDINGS.md)
              for chunk in 32 16; do
                run_step "la_chunk_${chunk}_tile_$chunk" 60 env RILL_KERNEL_PLAN="la_chunk=$chunk,la_tile=$chunk" \
                  "$rill" bench --op linear_attention --la-forms chunked_parallel
              done ;;
    coop) run_step coop_tests 60 env RILL_TEST=1 build/release/bin/rill_tests "*cooperative*"
          # Two alternating shared stages per k slice (one barrier each; the default's one stage ran
          # faster in run 8); then twice the subgroups per block (each half the fragments: fewer
          # registers, more warps). (matmul_coop=off ran 4096^3 f16 in 5.75 ms, run 5.)
          run_step matmul_coop_buffers_2 45 env RILL_KERNEL_PLAN=matmul_coop_buffers=2 "$rill" bench --op matmul \
            --matmul-shapes "$goal_shapes"
          for groups in 2x4 4x2; do
            run_step "matmul_coop_groups_$groups" 45 env RILL_KERNEL_PLAN="matmul_coop_groups=$groups" "$rill" \
              bench --op matmul --matmul-shapes "$goal_shapes"
          done
          # Slices of 64 k steps (half the barriers and waits per k; the next slice's registers
          # double), with the plan's 4 subgroups and with 8 (half the registers each).
          for plan in matmul_coop_depth=64 matmul_coop_depth=64,matmul_coop_groups=2x4; do
            run_step "${plan//[=,]/_}" 45 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op matmul \
              --matmul-shapes "$goal_shapes"
          done
          # The default model in f16 (its NormAttention outputs kept in f32: before, they overflowed
          # past 2K positions), beside the f32 figures of the `lm` step.
          run_step lm_f16 60 "$rill" bench --op lm --peers --lm-no-baseline --lm-precision f16 \
            --lm-max-tokens 262144 ;;
    # The tiled kernels (blocks up to 64) with every round of result blocks in one walk of the
    # operand's tiles (heads of 128: two rounds), the flash ones (past 64) with a walk per round,
    # workgroups of 128 (more per multiprocessor, twice the rounds), then the tile depths (16 in
    # the default run).
    block_sweep) for plan in block_rounds=fused block_rounds=separate block_workgroup=128 \
                             block_workgroup=128,block_rounds=fused block_tile=8 block_tile=32; do
                   run_step "block_${plan//[=,]/_}" 60 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op block_attention
                 done ;;
    icl_sweep) run_step icl_top_full 40 env RILL_KERNEL_PLAN=icl_top_layer=full "$rill" bench --op icl --no-torch
               run_step icl_per_task 40 env RILL_KERNEL_PLAN=icl_layers=per-task "$rill" bench --op icl --no-torch
               # The workgroup layer kernels as they were (a task per workgroup, a layer per
               # dispatch), then several tasks per workgroup with every layer in one dispatch.
               for plan in icl_tasks_per_workgroup=1,icl_layers_per_dispatch=1 icl_tasks_per_workgroup=2 \
                           icl_tasks_per_workgroup=4 icl_tasks_per_workgroup=8; do
                 run_step "icl_${plan//[=,]/_}" 40 env RILL_KERNEL_PLAN="icl_layers=per-workgroup,$plan" \
                   "$rill" bench --op icl --no-torch
               done ;;
    # The workgroup layer kernels' products in blocks of outputs per invocation (icl_block), to
    # compare with the default run's `icl` records (the grid of 21 models is the goal they chase).
    icl_blocks) for plan in icl_block=2 icl_block=3 icl_block=3,icl_tasks_per_workgroup=8 icl_block=4; do
                  run_step "icl_${plan//[=,]/_}" 40 env RILL_KERNEL_PLAN="icl_layers=per-workgroup,$plan" \
                    "$rill" bench --op icl --no-torch
                done ;;
    tune) run_step tune 300 "$rill" tune --out "$work/tuning.json" ;;  # the tuning file comes back in the tgz
    # Issue 13's Table 1 at the paper's budget, one seed: rows L 1-4 (the cells the goal holds to
    # 10%) in the two single-sigma columns first. Resumable: REPRO_DIR (a folder kept between
    # calls) continues where a cut-off call stopped; the table comes back in the tgz either way.
    repro_full) dir=${REPRO_DIR:-$work/repro-full}
                resume=(); [ -d "$dir/runs" ] && resume=(--resume)
                run_step repro_full 540 "$rill" repro-icl --full --seeds 1 --experiments table1 \
                  --rows full:1-4 diag:1-4 gd++:1-4 --columns 1 3 --checkpoint-every 20000 "${resume[@]}" --out "$dir"
                # The table, and the runs (checkpoints, results: small) to carry into REPRO_DIR on
                # a fresh machine: tar -xzf repro-runs.tgz -C REPRO_DIR.
                cp "$dir"/repro-icl.md "$dir"/repro-icl.csv "$work"/ 2>/dev/null
                tar -czf "$work/repro-runs.tgz" -C "$dir" runs 2>/dev/null
                tar -czf "$out/gpu-check.tgz" -C "$work" . ;;  # run_step packed before these
    # Any one plan choice against the default run's records: plan:<ops>:<RILL_KERNEL_PLAN>, e.g.
    # plan:linear_attention:la_scores=separate,la_columns=grouped (each op timed at the sweeps' sizes).
    plan:*:*) ops=${s#plan:}; ops=${ops%%:*}; plan=${s#plan:"$ops":}
              args=()
              [[ ,$ops, == *,linear_attention,* ]] && args+=(--la-forms chunked_parallel)
              [[ ,$ops, == *,matmul,* ]] && args+=(--matmul-shapes "$goal_shapes")
              [[ ,$ops, == *,lm,* ]] && args+=(--lm-no-baseline --lm-max-tokens 65536)
              [[ ,$ops, == *,icl,* ]] && args+=(--no-torch)
              name=${plan//[=,]/_}
              run_step "plan_$name" 60 env RILL_KERNEL_PLAN="$plan" "$rill" bench --op "$ops" "${args[@]}" ;;
    *) echo "unknown step $s"; failed+=("$s (unknown)") ;;
  esac
done

python3 - "$work" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        data = json.loads(path.read_text())
    except ValueError:
        continue
    records = data.get("records", data) if isinstance(data, dict) else data
    for r in records if isinstance(records, list) else []:
        if not isinstance(r, dict):
            continue
        keep = {k: r[k] for k in ("op", "variant", "shape", "median_ms", "peer_ms", "speedup_vs_peer",
                                  "peak_fraction", "steps_per_s", "model_steps_per_s", "tokens_per_s",
                                  "ms_per_token", "skipped") if k in r}
        print(path.stem, json.dumps(keep, separators=(",", ":"))[:300])
PY
# Each forced plan's records against the call's default run of the same work: one line per plan
# here, every record (with its kernels and registers) in compare.txt in the tgz.
python3 tools/bench_compare.py --kernels --folder "$work" >"$work/compare.txt" 2>&1
python3 tools/bench_compare.py --brief --folder "$work" 2>&1
# The issues' goals against this call's records (the default plans'; each forced plan alone, with
# the default run's peers, in goals.txt).
python3 tools/bench_goals.py --forced "$work" >"$work/goals.txt" 2>&1
python3 tools/bench_goals.py "$work" 2>&1 | grep -v "no record"
tar -czf "$out/gpu-check.tgz" -C "$work" .
grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" "$work/tests.json" 2>/dev/null | head -30
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: ${#failed[@]} step(s) failed: ${failed[*]}"
  exit 1
fi
