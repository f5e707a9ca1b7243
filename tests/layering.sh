#!/usr/bin/env bash
# The engine's layers and the one direction their includes may point (ARCHITECTURE.md, "Layers").
# Each folder of engine/src is a layer; the runtime is the files directly in engine/src. A file may
# include its own layer and the layers listed for it, nothing above. The lower layers see only the
# vocabulary of the public headers (values, not the Context, Tensor or Sequence classes).
# Prints every include that points the wrong way and fails if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
  [platform]=""
  [core]="platform"
  [vk]="core platform contract"
  [profile]="core platform"
  [runtime]="vk profile core platform"
  [ops]="runtime vk profile core platform contract"
  [icl]="ops runtime vk profile core platform contract"
  [lm]="ops runtime vk profile core platform contract"
  [capi]="icl lm ops runtime vk profile core platform"
)
# Public headers the lower layers may use: plain values and the APIs those layers implement.
lower_public="status.hpp types.hpp log.hpp export.hpp device.hpp half.hpp files.hpp profile.hpp safetensors.hpp version.hpp"
lower_layers="platform core vk profile"
runtime_files=" $(cd engine/src && ls ./*.cpp ./*.hpp | sed 's|^\./||' | tr '\n' ' ')"

layer_of_include() {  # the layer an include "x/y.hpp" or "y.hpp" names, or "public"
  case "$1" in
    rill/*) echo public ;;
    */*) echo "${1%%/*}" ;;
    *) if [[ "$runtime_files" == *" $1 "* ]]; then echo runtime; else echo other; fi ;;
  esac
}

bad=0
while IFS= read -r file; do
  rel=${file#engine/src/}
  if [[ "$rel" == */* ]]; then layer=${rel%%/*}; else layer=runtime; fi
  [[ -v "allowed[$layer]" ]] || { echo "layering: $file is in no known layer ($layer)"; bad=1; continue; }
  while IFS= read -r inc; do
    target=$(layer_of_include "$inc")
    if [[ "$target" == public ]]; then
      if [[ " $lower_layers " == *" $layer "* && " $lower_public " != *" ${inc#rill/} "* ]]; then
        echo "layering: $file ($layer) includes $inc, a public class header above its layer"; bad=1
      fi
      continue
    fi
    [[ "$target" == "$layer" || "$target" == other ]] && continue
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "layering: $file ($layer) includes $inc ($target), a layer above or beside it"; bad=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find engine/src -name '*.cpp' -o -name '*.hpp' | sort)

# The CPU references and the tool see only the public API.
while IFS= read -r hit; do
  echo "layering: $hit reaches into engine internals"; bad=1
done < <(grep -Hn '^#include "\(core\|vk\|ops\|profile\|platform\|icl\|lm\|capi\)/' engine/ref/*.cpp engine/ref/*.hpp tools/rill/*.cpp tools/rill/*.hpp || true)

if [[ $bad == 0 ]]; then echo "layering: every include points down"; fi
exit $bad
