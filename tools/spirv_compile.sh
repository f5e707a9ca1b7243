#!/usr/bin/env bash
# One kernel, GLSL -> SPIR-V (Vulkan 1.1), validated, with a depfile of what it includes; called
# by shaders/CMakeLists.txt for each kernel.
#   spirv_compile.sh CACHE GLSLANG SPIRV_VAL SHADERS_DIR SOURCE SPV DEPFILE
# CACHE, where not empty, is a folder shared by the build trees of one checkout (the presets name
# build/spirv-cache). SPIR-V does not depend on the build type or the target, yet CI compiled all
# of shaders/ four times (release, ASan, arm64, Windows: 260 kernels, about a minute of 2 cores
# each, most of it glslang starting). A folder's key is this script, the tools' versions, where
# shaders/ is and every file under it (all a kernel may include), and the kernel's path names its
# entry there: an edit anywhere in shaders/ misses, never a stale kernel, at the cost of compiling
# the rest again once per edit in each shared tree.
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
# The state of everything that makes the SPIR-V: this script (the command), the tools' versions,
# where the sources are (a hit's depfile names them) and what they hold.
key_now() {
  {
    cat "$0"
    "$glslang" --version | sed -n 1p
    "$spirv_val" --version | sed -n 1p
    echo "$shaders"
    tree_hash
  } | sha256sum | cut -c1-64
}
key=$(key_now)
tree="$cache/$key"
rel=${source#"$shaders"/}
entry="$tree/$rel"
# A folder per state; a new one prunes those unused for a day (other branches' kernels). Any cache
# trouble (an unwritable folder, an entry pruned meanwhile) falls back to compiling.
if [[ ! -d "$tree" ]] && mkdir -p "$cache" 2> /dev/null && mkdir "$tree" 2> /dev/null; then
  find "$cache" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2> /dev/null || true
fi
if [[ -f "$entry.spv" ]] && cp "$entry.spv" "$spv.$$" 2> /dev/null && mv "$spv.$$" "$spv" &&
  deps=$(cat "$entry.d" 2> /dev/null); then
  printf '%s: %s\n' "$spv" "$deps" > "$depfile"
  touch "$tree" 2> /dev/null || true
  exit 0
fi
rm -f "$spv.$$"
compile
# Stored only if shaders/ did not change while compiling (a checkout mid-build), best effort.
[[ $(key_now) == "$key" ]] || exit 0
{
  mkdir -p "$(dirname "$entry")" &&
    deps=$(< "$depfile") && [[ $deps == "$spv: "* ]] &&
    printf '%s\n' "${deps#"$spv: "}" > "$entry.d.$$" &&
    cp "$spv" "$entry.spv.$$" &&
    mv "$entry.d.$$" "$entry.d" &&  # the .spv last: its presence means the entry is whole
    mv "$entry.spv.$$" "$entry.spv"
} 2> /dev/null || rm -f "$entry.d.$$" "$entry.spv.$$"
