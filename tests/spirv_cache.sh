#!/usr/bin/env bash
# tools/spirv_compile.sh's shared cache never serves a stale kernel: on a copy of shaders/, a
# kernel compiled into one tree is taken from the cache by another (same bytes, a depfile naming
# the second tree's output), and after an edit to a file it includes the cache misses and the
# edit is in the new SPIR-V.
#   tests/spirv_cache.sh SHADERS_DIR GLSLANG SPIRV_VAL WORK_DIR
set -euo pipefail
shaders=$1 glslang=$2 spirv_val=$3 work=$4
compile=$(dirname "$0")/../tools/spirv_compile.sh
rm -rf "$work"
mkdir -p "$work/a" "$work/b" "$work/c"
cp -r "$shaders" "$work/shaders"
kernel=$work/shaders/util/saxpy.comp
[[ -f $kernel ]] || { echo "no $kernel to compile"; exit 1; }
run() {  # TREE: compile the kernel into $work/TREE, printing whether the cache was used
  local before
  before=$(find "$work/cache" -name '*.spv' 2> /dev/null | wc -l)
  bash "$compile" "$work/cache" "$glslang" "$spirv_val" "$work/shaders" "$kernel" "$work/$1/k.spv" "$work/$1/k.spv.d" > /dev/null
  (($(find "$work/cache" -name '*.spv' | wc -l) > before)) && echo miss || echo hit
}
[[ $(run a) == miss ]] || { echo "an empty cache was hit"; exit 1; }
[[ $(run b) == hit ]] || { echo "the second tree compiled again"; exit 1; }
cmp "$work/a/k.spv" "$work/b/k.spv" || { echo "the cached kernel differs from the compiled one"; exit 1; }
grep -q "^$work/b/k.spv: .*saxpy.comp .*rill_common.glsl" "$work/b/k.spv.d" ||
  { cat "$work/b/k.spv.d"; echo "the cached depfile does not name the second tree's output and its includes"; exit 1; }
# An edit to an included file (not the kernel itself) that changes the code.
echo 'const float rill_spirv_cache_probe = 3.0;' >> "$work/shaders/include/rill_common.glsl"
[[ $(run c) == miss ]] || { echo "an edited include was served from the cache"; exit 1; }
if cmp -s "$work/a/k.spv" "$work/c/k.spv"; then
  echo "the edit is not in the recompiled kernel"
  exit 1
fi
echo "spirv cache: a hit across trees, a miss after an edit"
