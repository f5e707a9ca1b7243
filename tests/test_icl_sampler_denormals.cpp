// The task sampler's draws do not depend on how the processor treats denormals. GPU drivers differ
// here (NVIDIA's flushes f32 denormal results and inputs by default; lavapipe and the CPU keep
// them), and the sampler promises the same bits on every device, so its CPU twin is run with the
// CPU's flush-to-zero and denormals-are-zero modes on and off and must give identical bits.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "icl_sampler.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace {

namespace ref = rill::ref::icl;

// Switches the calling thread to flush-to-zero + denormals-are-zero for its lifetime.
class FlushDenormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr bool kSupported = true;
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }  // FTZ (bit 15) | DAZ (bit 6)
  ~FlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#elif defined(__aarch64__)
  static constexpr bool kSupported = true;
  FlushDenormals() {
    asm volatile("mrs %0, fpcr" : "=r"(saved_));
    const uint64_t flushing = saved_ | (uint64_t{1} << 24);  // FZ
    asm volatile("msr fpcr, %0" : : "r"(flushing));
  }
  ~FlushDenormals() { asm volatile("msr fpcr, %0" : : "r"(saved_)); }

 private:
  uint64_t saved_;
#else
  static constexpr bool kSupported = false;
#endif
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A denormal really is flushed in the mode (else the tests below would prove nothing).
bool mode_flushes() {
  volatile float tiny = 1e-30f;
  volatile float product = tiny * 1e-10f;  // 1e-40: a denormal unless flushed
  return product == 0.0f;
}

}  // namespace

TEST_CASE("icl sampler: draws are the same bits with denormals flushed or kept", "[icl]") {
  if (!FlushDenormals::kSupported) {
    WARN("not checked: the test has no flush-to-zero control for this processor");
    return;
  }
  {
    FlushDenormals flush;
    REQUIRE(mode_flushes());
  }
  REQUIRE_FALSE(mode_flushes());

  struct Case {
    const char* what;
    uint32_t d, n, data, noise;
    float sigma_max, gamma_shape, gamma_scale;
  };
  // Heavy tails at the papers' Gamma(0.1, 10) put about 1 radius in 1500 below 1e-31, where the
  // square roots' residuals used to be denormals; the tiny scales and noise levels push products
  // below 2^-126 on purpose.
  for (const Case& c :
       {Case{"heavy tails", 5, 20, 1, 0, 0.0f, 0.1f, 10.0f},
        Case{"heavy tails, uniform noise", 7, 13, 1, 1, 2.0f, 0.1f, 10.0f},
        Case{"tiny radius scale", 3, 9, 1, 0, 0.0f, 0.1f, 1e-36f}, Case{"tiny noise", 4, 11, 0, 1, 1e-37f, 0.1f, 10.0f},
        Case{"heavy tails, shape 0.02", 2, 30, 1, 1, 1e-30f, 0.02f, 1.0f}}) {
    INFO(c.what);
    ref::SamplerSpec spec;
    spec.seed = 0x5EEDull;
    spec.d = c.d;
    spec.n = c.n;
    spec.data_kind = c.data;
    spec.noise_kind = c.noise;
    spec.sigma_max = c.sigma_max;
    spec.gamma_shape = c.gamma_shape;
    spec.gamma_scale = c.gamma_scale;
    const uint32_t tasks = 3000;
    const ref::TaskBatch kept = ref::sample_tasks(spec, 1, 0, tasks);
    ref::TaskBatch flushed;
    {
      FlushDenormals flush;
      flushed = ref::sample_tasks(spec, 1, 0, tasks);
    }
    CHECK(same_bits(kept.tokens, flushed.tokens));
    CHECK(same_bits(kept.targets, flushed.targets));
    CHECK(same_bits(kept.sigmas, flushed.sigmas));
  }
}

TEST_CASE("icl sampler: Gamma draws reach the tiny radii the denormal test is about", "[icl]") {
  // The test above would pass trivially if no draw came near the denormals: count them.
  const ref::GammaConstants g = ref::gamma_constants(0.1f, 10.0f);
  int below_2m64 = 0, below_1em31 = 0;
  for (uint32_t i = 0; i < 20000; ++i) {
    const float r2 = ref::gamma_draw(g, {i * 16u, 1u, 2u, 3u}, 7, 16);
    below_2m64 += r2 > 0.0f && r2 < 5.42101086e-20f;
    below_1em31 += r2 > 0.0f && r2 < 1e-31f;
  }
  CHECK(below_2m64 > 20);
  CHECK(below_1em31 > 3);
}

TEST_CASE("icl sampler: the exact-operation square root is accurate from 2^-126 to 2^127", "[icl]") {
  if (!FlushDenormals::kSupported) WARN("flush-to-zero half not checked: no control for this processor");
  for (int e = -126; e <= 127; ++e) {
    for (float m : {1.0f, 1.2345678f, 1.5f, 1.9999999f}) {
      const float x = std::ldexp(m, e);
      const double want = std::sqrt(double(x));
      float got = ref::exact_sqrt(x), got_flushed;
      {
        FlushDenormals flush;
        got_flushed = ref::exact_sqrt(x);
      }
      INFO("x = " << x);
      CHECK(std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(got_flushed));
      CHECK(std::abs(double(got) - want) <= 2.0 * want * 0x1p-24);  // within two ulps
    }
  }
  CHECK(ref::exact_sqrt(0.0f) == 0.0f);
  CHECK(ref::exact_sqrt(1e-40f) == 0.0f);  // denormal inputs count as zero on every device
}
