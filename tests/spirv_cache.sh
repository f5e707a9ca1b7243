#!/usr/bin/env bash
# tools/spirv_compile.sh's shared cache never serves a stale kernel: on a copy of shaders/, a
# kernel compiled into one tree is taken from the cache by another (same bytes, a depfile naming
# the second tree's output), after an edit to a file it includes the cache misses and the edit is
# in the new SPIR-V, and what is compiled after a shader changed under a build's key is not stored.
#   tests/spirv_cache.sh SHADERS_DIR GLSLANG SPIRV_VAL WORK_DIR
set -euo pipefail
shaders=$1 glslang=$2 spirv_val=$3 work=$4
compile=$(dirname "$0")/../tools/spirv_compile.sh
rm -rf "$work"
mkdir -p "$work/a" "$work/b" "$work/c" "$work/d"
cp -r "$shaders" "$work/shaders"
kernel=$work/shaders/util/saxpy.comp
[[ -f $kernel ]] || { echo "no $kernel to compile"; exit 1; }
key() {  # TREE: the build's first step, naming the cache's folder for shaders/ as it is
  bash "$compile" --key "$work/cache" "$glslang" "$spirv_val" "$work/shaders" "$work/$1/key"
}
stored() { find "$work/cache" -name '*.spv' 2> /dev/null | wc -l; }
run() {  # TREE: compile the kernel into $work/TREE, printing whether the cache was used
  local before
  before=$(stored)
  bash "$compile" "$work/$1/key" "$glslang" "$spirv_val" "$work/shaders" "$kernel" "$work/$1/k.spv" "$work/$1/k.spv.d" > /dev/null
  (($(stored) > before)) && echo miss || echo hit
}
key a && key b
[[ $(run a) == miss ]] || { echo "an empty cache was hit"; exit 1; }
[[ $(run b) == hit ]] || { echo "the second tree compiled again"; exit 1; }
cmp "$work/a/k.spv" "$work/b/k.spv" || { echo "the cached kernel differs from the compiled one"; exit 1; }
grep -q "^$work/b/k.spv: .*saxpy.comp .*rill_common.glsl" "$work/b/k.spv.d" ||
  { cat "$work/b/k.spv.d"; echo "the cached depfile does not name the second tree's output and its includes"; exit 1; }
# An edit to an included file (not the kernel itself) that changes the code.
echo 'const float rill_spirv_cache_probe = 3.0;' >> "$work/shaders/include/rill_common.glsl"
key c
[[ $(run c) == miss ]] || { echo "an edited include was served from the cache"; exit 1; }
if cmp -s "$work/a/k.spv" "$work/c/k.spv"; then
  echo "the edit is not in the recompiled kernel"
  exit 1
fi
# A checkout while building: a shader changes after the build made its key. The kernel is
# compiled from what is there now, which the old key does not describe: it must not be stored.
key d
rm -rf "$work/cache"/*/util  # no entry: the kernel is compiled
sleep 0.01
echo 'const float rill_spirv_cache_probe2 = 4.0;' >> "$work/shaders/include/rill_common.glsl"
before=$(stored)
run d > /dev/null
(($(stored) == before)) || { echo "a kernel compiled after a shader changed was stored under the old key"; exit 1; }
if cmp -s "$work/c/k.spv" "$work/d/k.spv"; then
  echo "the kernel compiled after the change does not have it"
  exit 1
fi
echo "spirv cache: a hit across trees, a miss after an edit, nothing stored under a stale key"
