#!/usr/bin/env bash
# The test suite on 64-bit ARM, on any x86-64 Debian 12 machine: cross-compiled with Debian's
# toolchain, run under qemu-user against arm64 lavapipe (Mesa's CPU Vulkan driver).
#
#   tools/cross/arm64.sh setup   # add the arm64 architecture, install the cross packages (root or sudo)
#   tools/cross/arm64.sh build   # cross-compile (preset arm64: build/arm64)
#   tools/cross/arm64.sh test    # setup, build, then the arm64 test selection under qemu
#
# Which tests run, and why not all: tests/CMakeLists.txt (label "arm64").
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/packages.sh

mode="${1:-}"
staging="$PWD/build/arm64-staging"

setup() {
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  local packages=(crossbuild-essential-arm64 qemu-user libvulkan-dev:arm64 mesa-vulkan-drivers:arm64
                  vulkan-validationlayers:arm64)
  if ! dpkg --print-foreign-architectures | grep -x arm64 >/dev/null; then
    echo "== adding the arm64 architecture"
    $sudo dpkg --add-architecture arm64
    $sudo apt-get update -qq
  fi
  install_missing "${packages[@]}"
  # libsentencepiece-dev:arm64 would replace the native package: unpack it into the build tree.
  if [[ ! -f "$staging/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc" ]]; then
    echo "== staging sentencepiece for arm64 in $staging"
    local debs
    debs=$(mktemp -d)
    (cd "$debs" && apt-get download -qq libsentencepiece0:arm64 libsentencepiece-dev:arm64)
    mkdir -p "$staging"
    for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$staging"; done
    rm -rf "$debs"
    sed -i "s|^prefix=.*|prefix=$staging/usr|" "$staging/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc"
  fi
}

build() {
  echo "== building (arm64)"
  cmake --preset arm64 "-DRILL_CROSS_STAGING=$staging" >/dev/null
  cmake --build --preset arm64
}

case "$mode" in
  setup) setup ;;
  build) setup; build ;;
  test)
    start=$SECONDS
    setup
    build
    echo "== tests (arm64 under qemu-user)"
    ctest --preset arm64
    echo "== arm64 tests passed in $((SECONDS - start)) s"
    ;;
  *) echo "usage: tools/cross/arm64.sh setup|build|test" >&2; exit 2 ;;
esac
