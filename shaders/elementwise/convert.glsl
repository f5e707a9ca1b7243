// dst = src in the other storage type: f16 -> f32 (exact), or with RILL_TO_F16 f32 -> f16 (rounded
// as the device rounds; from 65520 on +-Inf, NaN stays NaN). RILL_TEXEL_ROWS: 4 elements per
// invocation, src read as texels (elementwise_texels.glsl says why).
#define RILL_STORAGE_F16  // the 16-bit storage extensions, for either side
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

#ifdef RILL_TO_F16
#define dst_t float16_t
#define dst_vec f16vec4
#define src_t float
#define to_dst(v) to_sfloat(v)  // overflow to +-Inf on every device (rill_common.glsl)
#define to_dst_vec(v) to_svec4(v)
#else
#define dst_t float
#define dst_vec vec4
#define src_t float16_t
#define to_dst(v) v  // exact: the assignment widens
#define to_dst_vec(v) v
#endif

#ifdef RILL_TEXEL_ROWS
layout(binding = 0) uniform samplerBuffer src;
layout(std430, binding = 1) writeonly buffer Dst { dst_vec dst[]; };
const uint kVec = 4u;
#else
layout(std430, binding = 0) readonly buffer Src { src_t src[]; };
layout(std430, binding = 1) writeonly buffer Dst { dst_t dst[]; };
const uint kVec = 1u;
#endif
#include "contract/util.glsl"
layout(push_constant) uniform PushBlock { CountPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.n / kVec) return;
#ifdef RILL_TEXEL_ROWS
  dst[i] = to_dst_vec(texelFetch(src, int(i)));
#else
  dst[i] = to_dst(src[i]);
#endif
}
