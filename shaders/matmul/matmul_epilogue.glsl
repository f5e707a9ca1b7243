// The matmul kernels' epilogue: bias, accumulation and the store of one element of C[batch, M, N]
// (row-major, p.N columns). The includer sets MATMUL_BIAS_BINDING and MATMUL_C_BINDING, declares
// the spec constants HAS_BIAS and ACCUMULATE and the push block p first.
layout(std430, binding = MATMUL_BIAS_BINDING) readonly buffer Bias { sfloat bias[]; };
layout(std430, binding = MATMUL_C_BINDING) buffer C { sfloat c[]; };

void store_c(uint base, uint m, uint n, afloat v) {
  if (HAS_BIAS) v += afloat(bias[n]);
  const uint i = base + m * p.N + n;
  if (ACCUMULATE) v += afloat(c[i]);
  c[i] = to_sfloat(v);
}
