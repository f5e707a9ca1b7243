#!/usr/bin/env bash
# One-command set-up for a fresh Debian 12 machine: installs what is missing (and nothing when
# everything is there), builds, then runs the main job or every test.
#
#   tools/quickstart.sh run    # build (release) and run the main job: rill train-icl (extra args go to it)
#   tools/quickstart.sh test   # build (release and ASan+UBSan) and run every test
#
# RILL_SKIP_ASAN=1 skips the sanitizer build in `test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/lib/packages.sh

mode="${1:-}"
if [[ "$mode" != "run" && "$mode" != "test" ]]; then
  echo "usage: tools/quickstart.sh run|test" >&2
  exit 2
fi

packages=(
  cmake ninja-build g++ pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  mesa-vulkan-drivers vulkan-validationlayers
  catch2 nlohmann-json3-dev libcli11-dev libsentencepiece-dev
)
install_missing "${packages[@]}"

build() {  # preset
  echo "== building ($1)"
  local start=$SECONDS
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1"
  echo "== built ($1) in $((SECONDS - start)) s"
}

if [[ "$mode" == "run" ]]; then
  build release
  echo "== rill train-icl (the main job: in-context regression trained on the device)"
  build/release/bin/rill train-icl --out build/main-job "${@:2}"
  exit 0
fi

install_missing clang  # the tests build a consumer of the installed C++ API with clang too
start=$SECONDS
build release
echo "== tests (release)"
tests_start=$SECONDS
ctest --preset release
echo "== tests (release) passed in $((SECONDS - tests_start)) s"
if [[ "${RILL_SKIP_ASAN:-0}" != "1" ]]; then
  build asan
  echo "== tests (ASan + UBSan)"
  tests_start=$SECONDS
  ctest --preset asan
  echo "== tests (ASan + UBSan) passed in $((SECONDS - tests_start)) s"
fi
echo "== all tests passed in $((SECONDS - start)) s"
