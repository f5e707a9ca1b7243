// Embedding backward: dtable[v, j] = sum over t with ids[t] == v of dy[t, j], one invocation per
// (v, j) walking the tokens in order (deterministic, no atomics). ids: [tokens] u32;
// dy: [tokens, dim] sfloat; dtable: [vocab, dim] f32.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 1) readonly buffer Dy { sfloat dy[]; };
layout(std430, binding = 2) writeonly buffer Dtable { float dtable[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { EmbeddingBackwardPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.vocab * p.dim) return;
  const uint v = i / p.dim, j = i % p.dim;
  afloat sum = 0.0;
  for (uint t = 0; t < p.tokens; ++t)
    if (ids[t] == v) sum += afloat(dy[t * p.dim + j]);
  dtable[i] = sum;
}
