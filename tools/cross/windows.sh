#!/usr/bin/env bash
# rill for 64-bit Windows, cross-compiled on any x86-64 Debian 12 machine with MinGW-w64: the
# library (librill.dll and librill.a), the rill tool and the samples. Nothing runs here (there is no
# Windows to run them on); the build proves the code stays portable.
#
#   tools/cross/windows.sh setup   # install MinGW-w64, prepare build/windows-staging (root or sudo)
#   tools/cross/windows.sh build   # setup, then cross-compile (preset windows-x64: build/windows-x64)
#
# Not in this build: SentencePiece tokenizers (Debian has no MinGW libsentencepiece; byte
# tokenizers work and SentencePiece models are refused with Unimplemented) and the test suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/packages.sh

mode="${1:-}"
staging="$PWD/build/windows-staging"

setup() {
  install_missing g++-mingw-w64-x86-64-posix libvulkan-dev libvulkan-volk-dev nlohmann-json3-dev libcli11-dev \
    glslang-tools spirv-tools cmake ninja-build
  # Links to the architecture-independent headers only, and the CMake package files (copied: they
  # locate their headers relative to themselves).
  rm -rf "$staging"
  mkdir -p "$staging/usr/include" "$staging/usr/share/cmake"
  for h in vulkan vk_video volk.h volk.c nlohmann CLI; do ln -s "/usr/include/$h" "$staging/usr/include/$h"; done
  for p in nlohmann_json CLI11; do cp -r "/usr/share/cmake/$p" "$staging/usr/share/cmake/$p"; done
}

build() {
  echo "== building (windows-x64)"
  cmake --preset windows-x64 "-DRILL_CROSS_STAGING=$staging" >/dev/null
  cmake --build --preset windows-x64
  echo "== built for Windows: $(cd build/windows-x64/bin && ls -- *.exe *.dll 2>/dev/null | tr '\n' ' ')"
}

case "$mode" in
  setup) setup ;;
  build) setup; build ;;
  *) echo "usage: tools/cross/windows.sh setup|build" >&2; exit 2 ;;
esac
