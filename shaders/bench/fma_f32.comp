// FMA-bound microbenchmark: 8 independent vec4 FMA chains per invocation, ITERATIONS deep.
// FLOPs = invocations * ITERATIONS * 8 chains * 4 lanes * 2. out: [invocations] vec4.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint ITERATIONS = 512;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Out { vec4 out_data[]; };
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { SeedPush p; };

void main() {
  const uint i = rill_global_index();
  vec4 a0 = vec4(p.seed + float(i)), a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0;
  vec4 a4 = a0 + 4.0, a5 = a0 + 5.0, a6 = a0 + 6.0, a7 = a0 + 7.0;
  const vec4 m = vec4(0.9999), c = vec4(1e-4);
  for (uint k = 0; k < ITERATIONS; ++k) {
    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
  }
  out_data[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}
