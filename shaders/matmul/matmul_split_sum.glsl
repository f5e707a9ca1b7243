// The second pass of a matmul split along K (matmul_shared.glsl with SPLITS > 1): each element of C
// is the sum of the splits' f32 partial products in split order (deterministic), then the bias,
// accumulation and storage rounding of any matmul. One invocation per element of C.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SPLITS = 2;
layout(constant_id = 2) const bool HAS_BIAS = false;
layout(constant_id = 3) const bool ACCUMULATE = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };  // [SPLITS, batches, M, N]
#include "contract/matmul.glsl"
layout(push_constant) uniform PushBlock { MatmulPush p; };
#define MATMUL_BIAS_BINDING 1
#define MATMUL_C_BINDING 2
#include "matmul_epilogue.glsl"

void main() {
  const uint total = p.batches * p.M * p.N;
  const uint group = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint i = group * WG + gl_LocalInvocationID.x;
  if (i >= total) return;
  float v = 0.0;
  for (uint s = 0u; s < SPLITS; ++s) v += partial[s * total + i];
  store_c(0u, i / p.N, i % p.N, v);
}
