// Activations shared by SiLU and GLU (their numbers: contract/util.glsl) and their derivatives.
#include "contract/util.glsl"

afloat sigmoid(afloat x) { return 1.0 / (1.0 + exp(-x)); }
afloat act(uint kind, afloat x) {
  if (kind == kActSigmoid) return sigmoid(x);
  if (kind == kActSilu) return x * sigmoid(x);
  return x;
}
afloat act_grad(uint kind, afloat x) {
  const afloat s = sigmoid(x);
  if (kind == kActSigmoid) return s * (1.0 - s);
  if (kind == kActSilu) return s * (1.0 + x * (1.0 - s));  // d/dx x s(x) = s + x s (1 - s)
  return 1.0;
}
