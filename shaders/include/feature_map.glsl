// The linear-attention feature maps phi (ops::FeatureMap), chosen by the FEATURE constant:
// the numbers are in contract/attention.glsl. Include after rill_common.glsl.
#include "contract/attention.glsl"
layout(constant_id = 1) const uint FEATURE = 0;

afloat phi(afloat x) {
  if (FEATURE == kFeatureElu1) return x > 0.0 ? x + 1.0 : exp(x);
  if (FEATURE == kFeatureRelu) return max(x, 0.0);
  if (FEATURE == kFeatureSilu) return x / (1.0 + exp(-x));
  return x;
}

// d phi / dx, for the backward passes.
afloat phi_grad(afloat x) {
  if (FEATURE == kFeatureElu1) return x > 0.0 ? 1.0 : exp(x);
  if (FEATURE == kFeatureRelu) return x > 0.0 ? 1.0 : 0.0;
  if (FEATURE == kFeatureSilu) {
    const afloat sg = 1.0 / (1.0 + exp(-x));
    return sg * (1.0 + x * (1.0 - sg));
  }
  return 1.0;
}
