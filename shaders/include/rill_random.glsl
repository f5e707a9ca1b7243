// Counter-based random numbers (Philox4x32-10) and the distributions rill's task samplers draw.
//
// This file is compiled twice: as GLSL by the kernels and as C++ by the CPU sampler
// (engine/ref/icl_sampler.cpp includes it after a small prelude that defines uint, uvec2, uvec4,
// vec4, umulExtended, floatBitsToUint, uintBitsToFloat and an empty `precise`). So GPU and CPU
// draw bit-identical numbers, it keeps to the subset both languages share and to operations
// Vulkan requires to be exact:
//   - only +, -, * on floats (correctly rounded in Vulkan), comparisons, integer and bit ops,
//     and int <-> float conversions of values below 2^24;
//   - no division and no built-in exp/log/sqrt/sin/cos, whose precision differs by driver:
//     the functions below are polynomials and Newton steps built from the exact operations;
//   - every float temporary is `precise` (SPIR-V NoContraction) so no driver fuses a*b+c into
//     an fma or reassociates a sum; the C++ side is compiled with -ffp-contract=off for the same
//     reason. A value passed straight into a call is not covered by the callee's `precise`: give
//     it a precise variable of its own (tests/sampler_spirv_precise.sh checks every float op);
//   - float literals carry the f suffix (in C++ an unsuffixed literal is a double);
//   - no intermediate is ever a denormal: drivers differ in whether they keep or flush denormal
//     results and inputs (NVIDIA's flushes f32 denormals by default; lavapipe and the CPU keep
//     them), so square roots work on inputs scaled by an exact power of two into [2^-64, 2^64) and
//     every product that could fall below 2^-126 is flushed to zero explicitly on both sides.
//     engine/ref's sampler is tested bit-identical with the CPU's flush-to-zero mode on and off.
// Accuracy is a few float ulps, plenty for sampling; bit-identity is the point.
#ifndef RILL_RANDOM_GLSL
#define RILL_RANDOM_GLSL

// ---- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) ----
uvec4 rill_philox_round(uvec4 ctr, uvec2 key) {
  uint hi0;
  uint lo0;
  uint hi1;
  uint lo1;
  umulExtended(0xD2511F53u, ctr.x, hi0, lo0);
  umulExtended(0xCD9E8D57u, ctr.z, hi1, lo1);
  return uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
}

// Four independent 32-bit words for one (key, counter); ten rounds.
uvec4 rill_philox(uvec4 ctr, uvec2 key) {
  for (int r = 0; r < 10; ++r) {
    ctr = rill_philox_round(ctr, key);
    key = uvec2(key.x + 0x9E3779B9u, key.y + 0xBB67AE85u);
  }
  return ctr;
}

// ---- exact-operation math ----

// Drivers may flush denormal results to zero (lavapipe and most GPUs do, the CPU does not): flush
// them explicitly wherever one can arise so both sides agree.
float rill_flush_denormal(float x) {
  return (x < 1.17549435e-38f && x > -1.17549435e-38f) ? 0.0f : x;
}

// Uniform in the open interval (0, 1): the top 24 bits, centred in their cell (exact in float).
float rill_uniform(uint bits) {
  precise float u = float(bits >> 8u) * 5.9604644775390625e-8f + 2.98023223876953125e-8f;
  return u;
}

// rill_uniform moved down by half a cell, into [0, 1). Its own precise result: an unmarked
// subtraction could be reassociated with rill_uniform's addition (SPIR-V allows that without
// NoContraction), which rounds differently; NVIDIA's compiler did, and its tokens differed.
float rill_uniform_from_zero(uint bits) {
  precise float u = rill_uniform(bits) - 2.98023223876953125e-8f;
  return u;
}

// Exact powers of two, built from their bits (a scale by one changes no rounding).
float rill_pow2(int e) { return uintBitsToFloat(uint(e + 127) << 23u); }

// The exponent that moves a normal x > 0 into [2^-64, 2^64): +-64 outside that range, else 0.
int rill_sqrt_range_shift(float x) {
  if (x < 5.42101086242752217e-20f) return 64;   // 2^-64
  if (x >= 1.84467440737095516e19f) return -64;  // 2^64
  return 0;
}

// 1/sqrt(x) for x in [2^-64, 2^64): a bit-level first guess, then four Newton steps. In this range
// no intermediate comes near the denormals.
float rill_rsqrt_in_range(float x) {
  precise float y = uintBitsToFloat(0x5F3759DFu - (floatBitsToUint(x) >> 1u));
  precise float hx = 0.5f * x;
  for (int i = 0; i < 4; ++i) {
    precise float yy = y * y;
    precise float corr = 1.5f - hx * yy;
    y = y * corr;
  }
  return y;
}

// 1/sqrt(x) for normal x > 0: 1/sqrt(x 2^2s) 2^s with x 2^2s in range (both scalings exact).
float rill_rsqrt(float x) {
  int shift = rill_sqrt_range_shift(x);
  precise float scaled = x * rill_pow2(shift);
  precise float y = rill_rsqrt_in_range(scaled) * rill_pow2(shift / 2);
  return y;
}

// sqrt(x) for x >= 0 (0 for 0 and for denormals): sqrt(x 2^2s) 2^-s, one refinement step on the
// scaled value (its residual x - s^2 is about 2^-23 x, a denormal for small unscaled x).
float rill_sqrt(float x) {
  if (x < 1.17549435e-38f) return 0.0f;
  int shift = rill_sqrt_range_shift(x);
  precise float xs = x * rill_pow2(shift);
  precise float y = rill_rsqrt_in_range(xs);
  precise float s = xs * y;
  precise float residual = xs - s * s;
  precise float refined = s + 0.5f * y * residual;
  precise float result = refined * rill_pow2(-(shift / 2));
  return result;
}

// 1/a for a in [1.7, 2.42]: a linear first guess within 1.5%, then three Newton steps.
float rill_reciprocal_near2(float a) {
  precise float r = 0.98528f - 0.24264f * a;
  for (int i = 0; i < 3; ++i) {
    precise float e = 2.0f - a * r;
    r = r * e;
  }
  return r;
}

// Natural log for normal x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
// s = (m - 1) / (m + 1), |s| <= 0.1716, odd series to s^11.
float rill_log(float x) {
  uint bits = floatBitsToUint(x);
  int e = int((bits >> 23u) & 0xFFu) - 127;
  precise float m = uintBitsToFloat((bits & 0x007FFFFFu) | 0x3F800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e = e + 1;
  }
  precise float f = m - 1.0f;
  precise float s = f * rill_reciprocal_near2(m + 1.0f);
  precise float s2 = s * s;
  precise float p = 0.09090909f;
  p = p * s2 + 0.11111111f;
  p = p * s2 + 0.14285715f;
  p = p * s2 + 0.2f;
  p = p * s2 + 0.33333334f;
  p = p * s2 + 1.0f;
  precise float log_m = 2.0f * s * p;
  precise float fe = float(e);
  precise float result = fe * 0.693145751953125f + (fe * 1.42860682030941723212e-6f + log_m);
  return result;
}

// exp(x): x = k ln2 + r, |r| <= ln2/2, Taylor series of e^r to r^8, times 2^k built from bits.
// Returns 0 below e^-87 (so never a denormal) and overflows to +inf above 2^128.
float rill_exp(float x) {
  if (x < -87.0f) return 0.0f;
  if (x > 88.7f) return uintBitsToFloat(0x7F800000u);
  precise float t = x * 1.44269504f;
  int k = int(t < 0.0f ? t - 0.5f : t + 0.5f);
  precise float fk = float(k);
  precise float r = (x - fk * 0.693145751953125f) - fk * 1.42860682030941723212e-6f;
  precise float p = 2.48015873e-5f;
  p = p * r + 1.98412698e-4f;
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // k may reach -126 or 128 at the edges; split the power so each factor is a normal float.
  int k1 = k / 2;
  int k2 = k - k1;
  precise float scaled = p * rill_pow2(k1) * rill_pow2(k2);
  return scaled;
}

// (sin, cos) of 2 pi u for u in [0, 1): quarter turns are exact in u, the rest is a polynomial on
// [-pi/4, pi/4].
vec4 rill_sincos_turns(float u) {
  precise float t = u * 4.0f;
  int q = int(t);
  precise float frac = t - float(q);
  if (frac >= 0.5f) {
    frac = frac - 1.0f;
    q = q + 1;
  }
  precise float a = frac * 1.57079637f;
  precise float a2 = a * a;
  precise float sp = -2.50521084e-8f;
  sp = sp * a2 + 2.75573192e-6f;
  sp = sp * a2 - 1.98412698e-4f;
  sp = sp * a2 + 8.33333333e-3f;
  sp = sp * a2 - 1.66666667e-1f;
  sp = sp * a2 + 1.0f;
  precise float s = a * sp;
  precise float c = -2.75573192e-7f;
  c = c * a2 + 2.48015873e-5f;
  c = c * a2 - 1.38888889e-3f;
  c = c * a2 + 4.16666667e-2f;
  c = c * a2 - 0.5f;
  c = c * a2 + 1.0f;
  int quadrant = q & 3;
  if (quadrant == 0) return vec4(s, c, 0.0f, 0.0f);
  if (quadrant == 1) return vec4(c, -s, 0.0f, 0.0f);
  if (quadrant == 2) return vec4(-s, -c, 0.0f, 0.0f);
  return vec4(-c, s, 0.0f, 0.0f);
}

// ---- distributions ----

// Four standard normals from one Philox output (two Box-Muller pairs).
vec4 rill_normal4(uvec4 bits) {
  precise float r0 = rill_sqrt(-2.0f * rill_log(rill_uniform(bits.x)));
  precise float r1 = rill_sqrt(-2.0f * rill_log(rill_uniform(bits.z)));
  vec4 sc0 = rill_sincos_turns(rill_uniform_from_zero(bits.y));
  vec4 sc1 = rill_sincos_turns(rill_uniform_from_zero(bits.w));
  precise float n0 = r0 * sc0.y;
  precise float n1 = r0 * sc0.x;
  precise float n2 = r1 * sc1.y;
  precise float n3 = r1 * sc1.x;
  // A quarter turn gives sin or cos -0, and the sign of a zero is not kept by every driver
  // (SignedZeroInfNanPreserve is not declared): +0 on both sides.
  return vec4(rill_flush_denormal(n0), rill_flush_denormal(n1), rill_flush_denormal(n2), rill_flush_denormal(n3));
}

// Constants of a Gamma(shape, scale) sampler, computed once on the host (where division and
// sqrt are exact enough and the same floats reach GPU and CPU).
struct RillGammaParams {
  float shape;      // k > 0
  float scale;      // theta > 0
  float inv_shape;  // 1/k, used when k < 1
  float mt_d;       // Marsaglia-Tsang d = max(k, k + 1 when k < 1) - 1/3
  float mt_c;       // 1 / sqrt(9 d)
};

// One Gamma(shape, scale) draw by Marsaglia and Tsang's squeeze-free method ("A simple method for
// generating gamma variables", 2000); for shape < 1 a Gamma(shape + 1) draw times U^(1/shape).
// Attempt a (of at most `attempts`) uses counter `ctr` with ctr.x = base + a. Acceptance is above
// 95% per attempt, so running out of attempts (then the result is the mode-like d) is astronomically
// rare and still deterministic.
float rill_gamma(RillGammaParams g, uvec4 ctr, uvec2 key, int attempts) {
  uint base = ctr.x;
  for (int a = 0; a < attempts; ++a) {
    uvec4 bits = rill_philox(uvec4(base + uint(a), ctr.y, ctr.z, ctr.w), key);
    precise float radius = rill_sqrt(-2.0f * rill_log(rill_uniform(bits.x)));
    precise float x = radius * rill_sincos_turns(rill_uniform_from_zero(bits.y)).y;
    precise float v = 1.0f + g.mt_c * x;
    if (v <= 0.0f) continue;
    v = v * v * v;
    if (v < 1.17549435e-38f) continue;  // a denormal cube: drivers may flush it, so reject it on both sides
    precise float lhs = rill_log(rill_uniform(bits.z));
    precise float rhs = 0.5f * x * x + g.mt_d * (1.0f - v + rill_log(v));
    if (lhs < rhs) {
      precise float unscaled = g.mt_d * v;  // accepted cubes exceed 1e-14: never a denormal
      precise float draw = rill_flush_denormal(unscaled * g.scale);
      if (g.shape < 1.0f) {
        precise float boost = rill_exp(rill_log(rill_uniform(bits.w)) * g.inv_shape);
        draw = rill_flush_denormal(draw * boost);
      }
      return draw;
    }
  }
  precise float fallback = g.mt_d * g.scale;
  return rill_flush_denormal(fallback);
}

#endif  // RILL_RANDOM_GLSL
