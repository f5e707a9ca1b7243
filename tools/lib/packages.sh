# Sourced by the set-up scripts (tools/quickstart.sh, tools/cross/*.sh): install_missing PKG...
# installs with apt the Debian packages that are not installed yet, and nothing when all are.
# A name without an architecture means this machine's own (or an architecture-independent
# package): another architecture's copy does not count, since with the arm64 cross packages in,
# `dpkg-query -W mesa-vulkan-drivers` finds the arm64 Mesa alone and the native one was skipped.
install_missing() {
  local missing=() p native
  native=$(dpkg --print-architecture)
  for p in "$@"; do
    if ! package_installed "$p" "$native"; then missing+=("$p"); fi
  done
  ((${#missing[@]})) || return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

package_installed() {  # NAME[:ARCH] NATIVE_ARCH
  local name=${1%%:*} arch=$2
  [[ $1 == *:* ]] && arch=${1#*:}
  dpkg-query -W -f='${Status} ${Architecture}\n' "$name" 2>/dev/null |
    grep -Eq "^install ok installed ($arch|all)$"
}
