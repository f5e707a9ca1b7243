#!/usr/bin/env bash
# One kernel, GLSL -> SPIR-V (Vulkan 1.1), validated, with a depfile of what it includes; called
# by shaders/CMakeLists.txt for each kernel.
#   spirv_compile.sh CACHE GLSLANG SPIRV_VAL SHADERS_DIR SOURCE SPV DEPFILE
# CACHE, where not empty, is a folder shared by the build trees of one checkout (the presets name
# build/spirv-cache). SPIR-V does not depend on the build type or the target, yet CI compiled all
# of shaders/ four times (release, ASan, arm64, Windows: 260 kernels, about a minute of 2 cores
# each, most of it glslang starting). The key is the kernel's path, glslang's version and every
# file under shaders/ (all a kernel may include), so an edit anywhere in shaders/ misses: never a
# stale kernel, at the cost of compiling the rest again once per edit in each shared tree.
set -euo pipefail
cache=$1 glslang=$2 spirv_val=$3 shaders=$4 source=$5 spv=$6 depfile=$7

compile() {
  "$glslang" -V --target-env vulkan1.1 "-I$shaders/include" --depfile "$depfile" -o "$spv" "$source"
  "$spirv_val" --target-env vulkan1.1 "$spv"
}
if [[ -z "$cache" ]]; then
  compile
  exit 0
fi

tree_hash() {  # every shader source, by path and content (one hash per build command: ~10 ms)
  (cd "$shaders" && find . -type f \( -name '*.comp' -o -name '*.glsl' \) -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum) | sha256sum | cut -c1-64
}
# A folder per state of shaders/; a new one prunes those unused for a day (other branches' kernels).
tree="$cache/$( {
  "$glslang" --version | sed -n 1p
  tree_hash
} | sha256sum | cut -c1-64)"
if mkdir -p "$cache" && mkdir "$tree" 2>/dev/null; then
  find "$cache" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} +
fi
touch "$tree"
entry="$tree/$(echo "${source#"$shaders"/}" | tr / _)"

if [[ ! -f "$entry.spv" ]]; then
  compile
  # The depfile's dependencies without its target (the output path differs per build tree).
  sed -e '1s|^[^:]*: ||' "$depfile" > "$entry.d.$$"
  cp "$spv" "$entry.spv.$$"
  mv "$entry.d.$$" "$entry.d"  # the .spv last: its presence means the entry is whole
  mv "$entry.spv.$$" "$entry.spv"
  exit 0
fi
cp "$entry.spv" "$spv.$$" && mv "$spv.$$" "$spv"
{ printf '%s: ' "$spv"; cat "$entry.d"; } > "$depfile"
