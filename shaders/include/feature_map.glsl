// The linear-attention feature maps phi (ops::FeatureMap), chosen by the FEATURE constant:
// 0 identity, 1 elu(x) + 1, 2 relu, 3 silu (x sigmoid(x)). Include after rill_common.glsl.
layout(constant_id = 1) const uint FEATURE = 0;

afloat phi(afloat x) {
  if (FEATURE == 1) return x > 0.0 ? x + 1.0 : exp(x);
  if (FEATURE == 2) return max(x, 0.0);
  if (FEATURE == 3) return x / (1.0 + exp(-x));
  return x;
}
