#!/usr/bin/env bash
# The ICL task sampler must give the same bits on every driver (shaders/include/rill_random.glsl).
# SPIR-V lets a driver fuse or reassociate any float operation not decorated NoContraction, and
# lavapipe happens not to, so only this check catches one that slipped through (NVIDIA's compiler
# reassociated one). With "rte", the module must also declare f32 round-to-nearest-even (the
# rounding of the CPU twin, which Vulkan otherwise leaves to the driver).
# Usage: sampler_spirv_precise.sh <spirv-dis> <icl_sample.spv> [rte]
set -euo pipefail
text=$("$1" --raw-id "$2")
if [ "${3:-}" = rte ] && ! grep -qE 'OpExecutionMode %[0-9]+ RoundingModeRTE 32' <<<"$text"; then
  echo "$2 does not declare RoundingModeRTE 32"
  exit 1
fi
marked=$(grep -oE 'OpDecorate %[0-9]+ NoContraction' <<<"$text" | awk '{print $2}' | sort -u)
# Vulkan leaves the precision of GLSL.std.450's functions (exp, log, sqrt, fma...) to the driver.
if grep -qE '= OpExtInst ' <<<"$text"; then
  echo "$2 calls extended instructions, which drivers need not round exactly:"
  grep -E '= OpExtInst ' <<<"$text"
  exit 1
fi
ops=$(grep -E '^ *%[0-9]+ = Op(F(Add|Sub|Mul|Div|Rem|Mod|Negate)|VectorTimesScalar|Dot|MatrixTimes(Scalar|Vector|Matrix)|VectorTimesMatrix|OuterProduct) ' <<<"$text" |
  awk '{print $1}' | sort -u)
count=$(grep -c . <<<"$ops" || true)
if [ "$count" -lt 100 ]; then
  echo "only $count float operations found in $2: is this the sampler?"
  exit 1
fi
unmarked=$(comm -23 <(echo "$ops") <(echo "$marked"))
if [ -n "$unmarked" ]; then
  echo "float operations without NoContraction (give each a precise variable):"
  for id in $unmarked; do grep -E "^ *$id = " <<<"$text"; done
  exit 1
fi
echo "all $count float operations of the sampler carry NoContraction"
