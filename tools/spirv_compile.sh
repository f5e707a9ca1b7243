#!/usr/bin/env bash
# GLSL -> SPIR-V (Vulkan 1.1), validated, with a depfile of what each kernel includes; called by
# shaders/CMakeLists.txt. Two forms:
#   spirv_compile.sh --key CACHE GLSLANG SPIRV_VAL SHADERS_DIR KEY_FILE
#       once per build, before any kernel: names CACHE's folder for the present state in KEY_FILE
#   spirv_compile.sh KEY_FILE GLSLANG SPIRV_VAL SHADERS_DIR SOURCE SPV DEPFILE
#       one kernel, taken from that folder or compiled into it (an empty KEY_FILE: just compiled)
# CACHE is a folder shared by the build trees of one checkout (the presets name build/spirv-cache).
# SPIR-V does not depend on the build type or the target, yet CI compiled all of shaders/ four
# times (release, ASan, arm64, Windows: 260 kernels, about a minute of 2 cores each, most of it
# glslang starting). A folder's key is this script, the tools' versions, where shaders/ is and
# every file under it (all a kernel may include), and the kernel's path names its entry there: an
# edit anywhere in shaders/ misses, never a stale kernel. The key costs some 15 processes, so it is
# made once per build (a hit is then a copy, not 0.1-0.5 s of hashing a kernel).
set -euo pipefail

tree_hash() {  # every shader source, by path and content
  (cd "$shaders" && find . -type f \( -name '*.comp' -o -name '*.glsl' \) -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum) | sha256sum | cut -c1-64
}

if [[ ${1-} == --key ]]; then
  cache=$2 glslang=$3 spirv_val=$4 shaders=$5 key_file=$6
  made=$(date +%s.%N)  # before hashing: an edit while hashing is then newer than the key
  # The state of everything that makes the SPIR-V: this script (the command), the tools' versions,
  # where the sources are (a hit's depfile names them) and what they hold.
  key=$({
    cat "$0"
    "$glslang" --version | sed -n 1p
    "$spirv_val" --version | sed -n 1p
    echo "$shaders"
    tree_hash
  } | sha256sum | cut -c1-64)
  folder="$cache/$key"
  # A folder per state; a new one prunes those unused for a day (other branches' kernels). An
  # unusable cache leaves KEY_FILE empty: the kernels are then compiled.
  if [[ ! -d "$folder" ]] && mkdir -p "$cache" 2> /dev/null && mkdir "$folder" 2> /dev/null; then
    find "$cache" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2> /dev/null || true
  fi
  [[ -d $folder ]] && touch "$folder" 2> /dev/null || folder=""
  # Written anew each build, timed when the key was made: a kernel compiled later stores what it
  # compiled only if no shader is newer (the build orders the kernels after this; none depends on
  # the file's time).
  echo "$folder" > "$key_file.$$" && touch -d "@$made" "$key_file.$$" && mv "$key_file.$$" "$key_file"
  exit 0
fi

key_file=$1 glslang=$2 spirv_val=$3 shaders=$4 source=$5 spv=$6 depfile=$7
compile() {
  "$glslang" -V --target-env vulkan1.1 "-I$shaders/include" --depfile "$depfile" -o "$spv" "$source"
  "$spirv_val" --target-env vulkan1.1 "$spv"
}
folder=""
[[ -z $key_file ]] || read -r folder 2> /dev/null < "$key_file" || folder=""
if [[ -z $folder ]]; then
  compile
  exit 0
fi

entry="$folder/${source#"$shaders"/}"
# Any cache trouble (an entry pruned meanwhile, a failed copy) falls back to compiling.
if [[ -f "$entry.spv" ]] && cp "$entry.spv" "$spv.$$" 2> /dev/null && mv "$spv.$$" "$spv" &&
  deps=$(cat "$entry.d" 2> /dev/null); then
  printf '%s: %s\n' "$spv" "$deps" > "$depfile"
  exit 0
fi
rm -f "$spv.$$"
compile
# Stored only if no shader changed since the key was made (a checkout mid-build): by the files'
# times, as the build itself judges them, rather than hashing all of shaders/ for each kernel.
[[ -z $(find "$shaders" -type f \( -name '*.comp' -o -name '*.glsl' \) -newer "$key_file" -print -quit) ]] || exit 0
{
  mkdir -p "$(dirname "$entry")" &&
    deps=$(< "$depfile") && [[ $deps == "$spv: "* ]] &&
    printf '%s\n' "${deps#"$spv: "}" > "$entry.d.$$" &&
    cp "$spv" "$entry.spv.$$" &&
    mv "$entry.d.$$" "$entry.d" &&  # the .spv last: its presence means the entry is whole
    mv "$entry.spv.$$" "$entry.spv"
} 2> /dev/null || rm -f "$entry.d.$$" "$entry.spv.$$"
