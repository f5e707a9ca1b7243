// The RMS normalizer 1 / sqrt(ss / n + eps) of a row whose squares sum to ss, shared by every
// RMSNorm kernel (the op's two and fused decoding's two).
//   A row whose sum of squares overflows f32 (elements past about 1.8e19 / sqrt(n)) gets NaN, not
//   the 0 that inversesqrt(inf) gives: its output is then NaN, which the op's caller and the
//   language model's finiteness check see, instead of a row of zeros that passes as an answer.
//   The test is on the bits, which drivers that assume no infinities (fast math) cannot fold away.
#ifndef RILL_RMS_INVERSE_GLSL
#define RILL_RMS_INVERSE_GLSL

float rms_inverse(float ss, float n, float eps) {
  const float mean = ss / n + eps;
  const bool overflowed = (floatBitsToUint(mean) & 0x7f800000u) == 0x7f800000u;  // inf, or NaN from the input
  return overflowed ? uintBitsToFloat(0x7fc00000u) : inversesqrt(mean);
}

#endif
