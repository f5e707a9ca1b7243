// f16 bit patterns read from 32-bit words as f32 (packed weights, packed_weights.glsl and the
// fused decoding kernels): integer arithmetic only, so no 16-bit storage or arithmetic is needed.
#ifndef RILL_HALF_BITS_GLSL
#define RILL_HALF_BITS_GLSL

// f16 bits to f32, exactly as unpackHalf2x16 but in integer arithmetic: LLVM 15's AArch64 back end
// aborts on the vector form of unpackHalf2x16 (lavapipe on arm64; vk/quirks.cpp), and these kernels
// wait on memory, not on the few integer operations.
float rill_half_bits_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16u;
  const uint e = (h >> 10u) & 0x1fu;
  const uint m = h & 0x3ffu;
  const float subnormal = float(m) * (1.0 / 16777216.0);  // m * 2^-24, exact; zero when m is
  const uint bits = e == 31u ? (0x7f800000u | (m << 13u)) : (((e + 112u) << 23u) | (m << 13u));
  return e == 0u ? (sign != 0u ? -subnormal : subnormal) : uintBitsToFloat(sign | bits);
}

vec2 rill_unpack_half2(uint word) {
  return vec2(rill_half_bits_to_float(word & 0xffffu), rill_half_bits_to_float(word >> 16u));
}

#endif  // RILL_HALF_BITS_GLSL
