// Cross-entropy backward through the softmax: dlogits[r, c] = (probs[r, c] - [c == target_r]) * dloss[r].
// probs, dlogits: [rows, vocab] sfloat; targets: [rows] u32; dloss: [rows] f32. A target past the
// vocabulary makes its row NaN, as the forward makes its loss (probs * dloss was finite and wrong).
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Probs { sfloat probs[]; };
layout(std430, binding = 1) readonly buffer Targets { uint targets[]; };
layout(std430, binding = 2) readonly buffer Dloss { float dloss[]; };
layout(std430, binding = 3) writeonly buffer Dlogits { sfloat dlogits[]; };
#include "contract/norm.glsl"
layout(push_constant) uniform PushBlock { SoftmaxPush p; };

void main() {
  const uint i = rill_global_index();
  if (i >= p.rows * p.vocab) return;
  const uint r = i / p.vocab, c = i % p.vocab;
  const uint target = targets[r];
  if (target >= p.vocab) {
    dlogits[i] = to_sfloat(afloat(uintBitsToFloat(0x7FC00000u)));  // a quiet NaN, not folded as 0.0 / 0.0 may be
    return;
  }
  const afloat onehot = target == c ? 1.0 : 0.0;
  dlogits[i] = to_sfloat((afloat(probs[i]) - onehot) * dloss[r]);
}
