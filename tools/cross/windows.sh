#!/usr/bin/env bash
# rill for 64-bit Windows, cross-compiled on any x86-64 Debian 12 machine with MinGW-w64: the
# library (librill.dll and librill.a), the rill tool, the samples and a selection of the tests, which
# `test` runs under Wine (Debian's wine64), on lavapipe through winevulkan and a virtual X server.
#
#   tools/cross/windows.sh setup   # install MinGW-w64, prepare build/windows-staging (root or sudo)
#   tools/cross/windows.sh build   # setup, then cross-compile (preset windows-x64: build/windows-x64)
#   tools/cross/windows.sh test    # setup (and Wine, Xvfb), build, then the selection labelled "windows"
#
# Not in this build: SentencePiece tokenizers (Debian has no MinGW libsentencepiece; byte
# tokenizers work and SentencePiece models are refused with Unimplemented) and most of the test
# suite (tests/CMakeLists.txt says which cases run).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/packages.sh

mode="${1:-}"
staging="$PWD/build/windows-staging"

setup() {
  install_missing g++-mingw-w64-x86-64-posix libvulkan-dev libvulkan-volk-dev nlohmann-json3-dev libcli11-dev \
    catch2 glslang-tools spirv-tools cmake ninja-build
  # Links to the architecture-independent headers only, and the CMake package files (copied: they
  # locate their headers relative to themselves). Catch2: its header only (tests/CMakeLists.txt).
  rm -rf "$staging"
  mkdir -p "$staging/usr/include" "$staging/usr/share/cmake"
  for h in vulkan vk_video volk.h volk.c nlohmann CLI catch2; do ln -s "/usr/include/$h" "$staging/usr/include/$h"; done
  for p in nlohmann_json CLI11; do cp -r "/usr/share/cmake/$p" "$staging/usr/share/cmake/$p"; done
}

# Wine runs the tests, on the host's lavapipe and validation layer (the Linux loader inserts it);
# winevulkan needs Wine's X11 driver, hence a virtual X server (xvfb-run picks a
# free display and stops the server afterwards). The prefix is made before the first test, on the
# same display: a Wine server started without one stays so for the tests that follow it at once.
run_tests() {
  install_missing wine64 xvfb xauth mesa-vulkan-drivers vulkan-validationlayers
  export WINEPREFIX="$PWD/build/windows-x64/wine-prefix"
  echo "== tests (windows-x64 under Wine)"
  xvfb-run -a bash -c 'tools/cross/wine.sh wineboot --init > /dev/null && ctest --preset windows-x64'
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
  test)
    start=$SECONDS
    setup
    build
    run_tests
    echo "== windows tests passed in $((SECONDS - start)) s"
    ;;
  *) echo "usage: tools/cross/windows.sh setup|build|test" >&2; exit 2 ;;
esac
