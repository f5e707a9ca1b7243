// Contracts of the utility, elementwise and benchmark kernels (see prelude.glsl).
#ifndef RILL_CONTRACT_UTIL_GLSL
#define RILL_CONTRACT_UTIL_GLSL
#include "contract/prelude.glsl"

// Kernels with one invocation per element of n.
RILL_PUSH_STRUCT(CountPush) {
  uint n;
};

// util/fill.
RILL_PUSH_STRUCT(FillPush) {
  uint n;
  float value;
};

// util/saxpy: y = a * x + y.
RILL_PUSH_STRUCT(SaxpyPush) {
  uint n;
  float a;
};

// bench/fma_*: the seed keeps the compiler from folding the chains.
RILL_PUSH_STRUCT(SeedPush) {
  float seed;
};

// elementwise/binary's OP.
const uint kBinaryAdd = 0u;
const uint kBinaryMul = 1u;

// The activations of elementwise/glu and silu (ACT; ops::GluActivation has the same numbers).
const uint kActIdentity = 0u;
const uint kActSigmoid = 1u;
const uint kActSilu = 2u;

#endif  // RILL_CONTRACT_UTIL_GLSL
