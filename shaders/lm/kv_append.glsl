// Appends the keys and values of positions pos + r (r < NQ) to a per-head cache: row
// (pos + r) % BLOCK (a block cache for DiagAttention; NQ = 1) or pos + r (BLOCK = 0: a growing
// cache, the softmax baseline), where pos is read from a buffer so that one recorded sequence
// replays at every position. k [H, NQ, Dk], v [H, NQ, Dv], cache_k [H, cap, Dk],
// cache_v [H, cap, Dv]; one invocation per (head, row, column).
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(constant_id = 1) const uint BLOCK = 0;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer K { sfloat k[]; };
layout(std430, binding = 1) readonly buffer V { sfloat v[]; };
layout(std430, binding = 2) readonly buffer Pos { uint pos[]; };
layout(std430, binding = 3) writeonly buffer CacheK { sfloat cache_k[]; };
layout(std430, binding = 4) writeonly buffer CacheV { sfloat cache_v[]; };
#include "contract/lm.glsl"
layout(push_constant) uniform PushBlock { KvAppendPush p; };

void main() {
  const uint i = rill_global_index();
  const uint width = max(p.dk, p.dv);
  if (i >= p.heads * p.nq * width) return;
  const uint c = i % width, r = (i / width) % p.nq, h = i / (width * p.nq);
  const uint row = BLOCK > 0 ? (pos[0] + r) % BLOCK : pos[0] + r;
  if (row >= p.cap) return;  // the host keeps positions below the capacity; never write outside
  if (c < p.dk) cache_k[(h * p.cap + row) * p.dk + c] = k[(h * p.nq + r) * p.dk + c];
  if (c < p.dv) cache_v[(h * p.cap + row) * p.dv + c] = v[(h * p.nq + r) * p.dv + c];
}
