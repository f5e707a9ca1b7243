#!/usr/bin/env bash
# rill built by clang against LLVM's libc++ instead of GCC's libstdc++: the standard library of the
# Android NDK, which cannot be installed here. Debian 12's clang and libc++ are version 14, about what
# NDK r25 ships, so a library feature newer than that (std::source_location was one) fails here
# first. The library and the samples only: tests and the tool stay on libstdc++ (Catch2, CLI11 and
# sentencepiece are built for it), and SentencePiece is off as in an NDK build.
#
#   tools/cross/libcxx.sh build   # installs clang and libc++, builds (preset libcxx: build/libcxx)
#   tools/cross/libcxx.sh test    # the same, then runs the samples on lavapipe and checks what they print
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/packages.sh

mode="${1:-}"
if [[ "$mode" != "build" && "$mode" != "test" ]]; then
  echo "usage: tools/cross/libcxx.sh build|test" >&2
  exit 2
fi

install_missing clang libc++-14-dev libc++abi-14-dev cmake ninja-build pkg-config libvulkan-dev libvulkan-volk-dev \
  glslang-tools spirv-tools mesa-vulkan-drivers
echo "== building (libcxx)"
cmake --preset libcxx >/dev/null
cmake --build --preset libcxx
bin=build/libcxx/bin
# grep reads all of ldd's output (no -q): under pipefail, a grep that stops at the first match can
# leave ldd killed by SIGPIPE, and the pipeline then fails though the line was there.
if ! ldd "$bin/hello_compute" | grep 'libc++\.so' >/dev/null; then
  echo "libcxx: hello_compute is not linked against libc++" >&2
  exit 1
fi
[[ "$mode" == "test" ]] || exit 0

expect() {  # PATTERN COMMAND...: runs COMMAND, which must exit 0 and print a line matching PATTERN
  local out
  out=$("${@:2}" 2>&1) || { echo "$out" >&2; echo "libcxx: '${*:2}' failed" >&2; exit 1; }
  grep -Eq "$1" <<<"$out" || { echo "$out" >&2; echo "libcxx: '${*:2}' did not print /$1/" >&2; exit 1; }
  echo "== ${2##*/}: $(grep -E "$1" <<<"$out" | head -1)"
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
expect 'y\[0\] = 7\.0, y\[999\] = 7\.0' "$bin/hello_compute"
expect '^checkpoint: ' "$bin/icl_regression" 120 "$scratch/icl.safetensors"
expect 'generated 16 tokens, position 27' "$bin/embed_c" --tokens 16 "Hello, rill"
expect 'decode: 64 tokens at position 5000' "$bin/long_context" --bytes 5000 --config tests/data/lm-tiny.json \
  --segment 1024 --tokens 64
echo "== libc++ build: library and samples passed"
