// Limit profiles (device.hpp) and the SPIR-V needs check behind them: a profile only lowers what a
// device offers, a context under one creates no pipeline its class of device could not, and names
// what is missing when asked for one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "kernel_plan.hpp"
#include "rill/lm.hpp"
#include "scoped_env.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/quirks.hpp"
#include "vk/shader_registry.hpp"
#include "vk/spirv_needs.hpp"

namespace {

const rill::vk::ShaderInfo& shader(std::string_view kernel, std::string_view variant = {}) {
  for (const auto& s : rill::vk::shader_registry())
    if (s.kernel == kernel && s.variant == variant) return s;
  FAIL("no kernel " << kernel << " of variant '" << variant << "'");
  std::abort();
}

// The needs of `kernel` (of `variant`) with the named specialization constants set (the others at
// defaults).
rill::vk::ShaderNeeds needs_of_variant(std::string_view kernel, std::string_view variant,
                                       std::vector<std::pair<std::string, uint32_t>> spec = {}) {
  const auto& s = shader(kernel, variant);
  std::vector<uint32_t> ids, values;
  for (const auto& sc : s.spec_constants) {
    ids.push_back(sc.id);
    values.push_back(sc.default_bits);
    for (const auto& [name, value] : spec)
      if (sc.name == name) values.back() = value;
  }
  auto needs = rill::vk::shader_needs(s.spirv_words(), ids, values);
  REQUIRE(needs.is_ok());
  return needs.value();
}

rill::vk::ShaderNeeds needs_of(std::string_view kernel, std::vector<std::pair<std::string, uint32_t>> spec) {
  return needs_of_variant(kernel, {}, std::move(spec));
}

rill::DeviceInfo large_device() {
  rill::DeviceInfo d;
  d.name = "large";
  rill::DeviceCaps& c = d.caps;
  c.subgroup_size = c.min_subgroup_size = 32;
  c.max_subgroup_size = 64;
  c.subgroup_size_control = c.subgroup_arithmetic = true;
  c.storage_buffer_16bit = c.float16_arithmetic = c.storage_buffer_8bit = c.int8_arithmetic = true;
  c.shared_memory_bytes = 65536;
  c.max_workgroup_size = {1024, 1024, 1024};
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_count = {1u << 31, 65535, 65535};
  c.max_storage_buffer_range = 1ull << 32;
  c.max_push_constants_bytes = 256;
  c.unified_memory = true;
  return d;
}

}  // namespace

TEST_CASE("SPIR-V needs: capabilities, and shared memory sized with the specialization", "[registry][limits]") {
  // softmax: rill_partials[WG_SIZE] floats; subgroup arithmetic unless built without it.
  auto sg = needs_of("softmax/softmax_xent_fwd_f32", {{"WG_SIZE", 256}});
  CHECK(sg.subgroup_arithmetic);
  CHECK_FALSE(sg.storage_16bit);
  CHECK(sg.workgroup_memory_bytes == 256 * 4);
  CHECK(needs_of("softmax/softmax_xent_fwd_f32", {{"WG_SIZE", 64}}).workgroup_memory_bytes == 64 * 4);
  auto tree = needs_of("softmax/softmax_xent_fwd_nosubgroup_f32", {{"WG_SIZE", 96}});
  CHECK_FALSE(tree.subgroup_arithmetic);
  CHECK(tree.workgroup_memory_bytes == 96 * 4);
  CHECK(needs_of("softmax/softmax_xent_fwd_f16", {}).storage_16bit);
  // attend: sh_m[32], sh_l[32], sh_acc[32 * DV]; without subgroups rill_partials[WG_SIZE] and
  // sh_channels[16 * WG_SIZE].
  CHECK(needs_of("lm/attend_f32", {{"DV", 128}}).workgroup_memory_bytes == (32 + 32 + 32 * 128) * 4);
  CHECK(needs_of("lm/attend_f32", {{"DV", 24}}).workgroup_memory_bytes == (32 + 32 + 32 * 24) * 4);
  CHECK(needs_of("lm/attend_nosubgroup_f32", {{"WG_SIZE", 128}}).workgroup_memory_bytes == (128 + 16 * 128) * 4);
  // The ICL sampler declaring its rounding, refused by name where the device cannot declare it.
  const auto rte = needs_of("icl/icl_sample_rte", {});
  CHECK(rte.rounding_rte);
  CHECK_FALSE(needs_of("icl/icl_sample", {}).rounding_rte);
  rill::DeviceInfo minimum = large_device();
  minimum.caps.rounding_rte_f32 = true;
  CHECK(rill::vk::check_shader_needs(rte, minimum, "icl/icl_sample_rte").is_ok());
  REQUIRE(rill::apply_limit_profile("vulkan11-minimum", minimum).is_ok());
  const rill::Status refused = rill::vk::check_shader_needs(rte, minimum, "icl/icl_sample_rte");
  CHECK(refused.code() == rill::StatusCode::kUnimplemented);
  CHECK(refused.message().find("f32 rounding declared to nearest even") != std::string::npos);

  const std::vector<uint32_t> none;
  CHECK_FALSE(rill::vk::shader_needs(std::vector<uint32_t>{1, 2, 3}, none, none).is_ok());
  // A header whose first instruction claims more words than the module has.
  CHECK_FALSE(rill::vk::shader_needs(std::vector<uint32_t>{0x07230203u, 0x10000, 0, 10, 0, (50u << 16) | 17u}, none, none).is_ok());

  // A caller's specialization constants that size an array at 0 (SPIR-V has none: a driver's
  // compiler may fail on one) are refused before a pipeline is made.
  const auto& scan = shader("linear_attention/la_par_scan", {});
  std::vector<uint32_t> ids, values;
  for (const auto& sc : scan.spec_constants) {
    ids.push_back(sc.id);
    values.push_back(sc.name == std::string_view("GROUPS") ? 0u : sc.default_bits);
  }
  REQUIRE(std::find(ids.begin(), ids.end(), 13u) != ids.end());  // GROUPS is among them
  const auto zero = rill::vk::shader_needs(scan.spirv_words(), ids, values);
  REQUIRE_FALSE(zero.is_ok());
  CHECK(zero.status().code() == rill::StatusCode::kInvalidArgument);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == 13u) values[i] = 2u;
  CHECK(rill::vk::shader_needs(scan.spirv_words(), ids, values).is_ok());
}

// Vulkan 1.1 promises only basic subgroup operations. The CPU-family kernels shuffle: a CPU driver
// without shuffles gets the GPU family (none of which shuffles), and a shuffling kernel asked for
// by name is refused there, not handed to a driver that cannot run it.
TEST_CASE("SPIR-V needs: subgroup shuffles, which a CPU driver without them is not given", "[registry][limits]") {
  rill::DeviceInfo cpu_driver = large_device();
  cpu_driver.type = rill::DeviceType::kCpu;
  cpu_driver.driver_id = 13;  // VK_DRIVER_ID_MESA_LLVMPIPE
  cpu_driver.driver_info = "Mesa 22.3.6 (LLVM 15.0.6)";
  cpu_driver.caps.subgroup_shuffle = true;
  CHECK(rill::vk::quirk_flags_for(cpu_driver).prefer_cpu_kernels);
  CHECK(rill::ops::plan::traits_of(cpu_driver, "").family == rill::ops::plan::Family::kCpu);
  const auto shuffles = needs_of_variant("matmul/matmul_f32", "cpu");
  CHECK(shuffles.subgroup_shuffle);
  CHECK(rill::vk::check_shader_needs(shuffles, cpu_driver, "matmul/matmul_f32").is_ok());

  cpu_driver.caps.subgroup_shuffle = false;
  CHECK_FALSE(rill::vk::quirk_flags_for(cpu_driver).prefer_cpu_kernels);
  CHECK(rill::ops::plan::traits_of(cpu_driver, "").family == rill::ops::plan::Family::kGpu);
  const rill::Status refused = rill::vk::check_shader_needs(shuffles, cpu_driver, "matmul/matmul_f32");
  CHECK(refused.code() == rill::StatusCode::kUnimplemented);
  CHECK(refused.message().find("subgroup shuffles") != std::string::npos);
  // Only kernels the plan keeps to the CPU family shuffle: the `cpu` variants, the `_cpu` kernels
  // and the decode texel kernels (kernel_plan_models.cpp); the GPU family runs without.
  int shuffling = 0;
  for (const auto& s : rill::vk::shader_registry()) {
    if (!needs_of_variant(s.kernel, s.variant).subgroup_shuffle) continue;
    ++shuffling;
    const bool decode_texels = s.kernel.starts_with("lm/decode_") && s.kernel.find("_tx_") != std::string_view::npos;
    INFO(s.kernel << " " << s.variant);
    CHECK((s.variant == "cpu" || s.kernel.find("_cpu") != std::string_view::npos || decode_texels));
  }
  CHECK(shuffling > 0);
}

// f16 kernels need 16-bit storage, not 16-bit arithmetic: a device with the one and not the other
// runs them (rill offers f16 wherever the storage is there). Only the cooperative-matrix matmul
// (f16 fragments) and the f16 FMA probe compute in f16.
TEST_CASE("SPIR-V needs: f16 kernels store f16 without f16 arithmetic", "[registry][limits]") {
  int f16_kernels = 0;
  for (const auto& s : rill::vk::shader_registry()) {
    const std::string_view kernel = s.kernel;
    if (kernel.find("f16") == std::string_view::npos) continue;
    if (kernel.starts_with("matmul/matmul_coop") || kernel.starts_with("bench/")) continue;
    INFO(kernel << " " << s.variant);
    std::vector<uint32_t> ids, values;  // the defaults: capabilities do not follow them
    for (const auto& sc : s.spec_constants) {
      ids.push_back(sc.id);
      values.push_back(sc.default_bits);
    }
    const auto needs = rill::vk::shader_needs(s.spirv_words(), ids, values);
    REQUIRE(needs.is_ok());
    CHECK_FALSE(needs->float16);
    ++f16_kernels;
  }
  CHECK(f16_kernels > 50);
}

TEST_CASE("limit profiles lower a device's capabilities and never raise them", "[limits]") {
  const rill::DeviceInfo large = large_device();
  REQUIRE(rill::limit_profiles().size() == 4);
  for (const auto& profile : rill::limit_profiles()) {
    INFO(profile.name);
    rill::DeviceInfo d = large;
    REQUIRE(rill::apply_limit_profile(profile.name, d).is_ok());
    CHECK(d.limit_profile == profile.name);
    CHECK(d.caps.shared_memory_bytes <= large.caps.shared_memory_bytes);
    CHECK(d.caps.max_workgroup_invocations <= large.caps.max_workgroup_invocations);
    for (int i = 0; i < 3; ++i) CHECK(d.caps.max_workgroup_size[i] <= d.caps.max_workgroup_invocations);
    CHECK(d.caps.max_storage_buffer_range == (profile.name == "small-bindings" ? 1ull << 16 : 1ull << 27));
    CHECK(d.caps.subgroup_size == 32);  // a device's own
    // Applying it to a device already below it changes nothing.
    rill::DeviceInfo again = d;
    REQUIRE(rill::apply_limit_profile(profile.name, again).is_ok());
    CHECK(again.caps.shared_memory_bytes == d.caps.shared_memory_bytes);
    CHECK(again.caps.max_workgroup_invocations == d.caps.max_workgroup_invocations);
  }
  // small-bindings lowers the storage bindings alone.
  rill::DeviceInfo small = large;
  REQUIRE(rill::apply_limit_profile("small-bindings", small).is_ok());
  CHECK(small.caps.shared_memory_bytes == large.caps.shared_memory_bytes);
  CHECK(small.caps.max_workgroup_invocations == large.caps.max_workgroup_invocations);
  CHECK(small.caps.max_texel_buffer_elements == large.caps.max_texel_buffer_elements);
  CHECK(small.caps.subgroup_arithmetic == large.caps.subgroup_arithmetic);
  CHECK(small.caps.storage_buffer_16bit == large.caps.storage_buffer_16bit);
  rill::DeviceInfo mali = large;
  REQUIRE(rill::apply_limit_profile("mali", mali).is_ok());
  CHECK(mali.caps.shared_memory_bytes == 16384);
  CHECK(mali.caps.max_workgroup_invocations == 256);
  CHECK_FALSE(mali.caps.subgroup_arithmetic);
  CHECK_FALSE(mali.caps.subgroup_size_control);
  CHECK(mali.caps.max_subgroup_size == 32);
  CHECK(mali.caps.storage_buffer_16bit);
  rill::DeviceInfo minimum = large;
  REQUIRE(rill::apply_limit_profile("vulkan11-minimum", minimum).is_ok());
  CHECK(minimum.caps.max_workgroup_invocations == 128);
  CHECK(minimum.caps.max_push_constants_bytes == 128);
  CHECK_FALSE(minimum.caps.storage_buffer_16bit);
  CHECK_FALSE(minimum.caps.float16_arithmetic);
  CHECK_FALSE(minimum.caps.unified_memory);  // staged transfers, as on a discrete GPU
  CHECK(mali.caps.unified_memory);           // kept
  rill::DeviceInfo adreno = large;
  REQUIRE(rill::apply_limit_profile("adreno", adreno).is_ok());
  CHECK(adreno.caps.shared_memory_bytes == 32768);
  CHECK(adreno.caps.subgroup_arithmetic);

  rill::DeviceInfo d = large;
  const rill::Status unknown = rill::apply_limit_profile("iphone", d);
  CHECK(unknown.code() == rill::StatusCode::kInvalidArgument);
  CHECK(unknown.message().find("mali, adreno, vulkan11-minimum") != std::string::npos);
  CHECK(d.limit_profile.empty());

  // The check itself: what a device lacks is named.
  rill::vk::ShaderNeeds needs;
  needs.workgroup_memory_bytes = 20000;
  const rill::Status too_big = rill::vk::check_shader_needs(needs, mali, "k/big");
  CHECK(too_big.code() == rill::StatusCode::kUnimplemented);
  CHECK(too_big.message().find("20000 bytes of shared memory, more than the 16384 of large (limit profile mali)") !=
        std::string::npos);
  CHECK(rill::vk::check_shader_needs(needs, large, "k/big").is_ok());
}

GPU_TEST_CASE("a context under a limit profile refuses kernels beyond it, by name", "[limits][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.limit_profile = "mali";
  auto ctx = rill_test::make_context(options);
  CHECK(ctx.device().limit_profile == "mali");
  CHECK_FALSE(ctx.device().caps.subgroup_arithmetic);
  CHECK(ctx.device().caps.shared_memory_bytes <= 16384);
  auto logits = std::move(ctx.tensor(rill::DType::kF32, {4, 300}, "logits")).value();
  auto probs = std::move(ctx.tensor(rill::DType::kF32, {4, 300}, "probs")).value();
  auto seq = std::move(ctx.sequence()).value();
  rill::Dispatch d{.kernel = "softmax/softmax_xent_fwd_f32",
                   .bindings = {&logits, &logits, &probs, &probs},
                   .push = rill::push_bytes(rill::gpu::SoftmaxPush{4, 300}),
                   .groups = {4, 1, 1},
                   .spec = {rill::spec_uint("WG_SIZE", 64), rill::spec_uint("HAS_TARGETS", 0)}};
  const rill::Status arithmetic = seq.dispatch(d);
  CHECK(arithmetic.code() == rill::StatusCode::kUnimplemented);
  CHECK(arithmetic.message().find("needs subgroup arithmetic") != std::string::npos);
  CHECK(arithmetic.message().find("(limit profile mali)") != std::string::npos);
  // The tree variant runs, and so does the op, which picks it.
  d.kernel = "softmax/softmax_xent_fwd_nosubgroup_f32";
  CHECK(seq.dispatch(d).is_ok());
  CHECK(rill::ops::softmax_forward(seq, logits, probs).is_ok());
  // 256 invocations are within Mali-class limits, 17408 bytes of shared memory are not.
  auto q = std::move(ctx.tensor(rill::DType::kF32, {1, 1, 32}, "q")).value();
  auto cache = std::move(ctx.tensor(rill::DType::kF32, {1, 8, 32}, "cache")).value();
  auto pos = std::move(ctx.tensor(rill::DType::kU32, {1}, "pos")).value();
  const rill::Status shared =
      seq.dispatch({.kernel = "lm/attend_nosubgroup_f32",
                    .bindings = {&q, &cache, &cache, &pos, &q},
                    .push = rill::push_bytes(rill::gpu::AttendPush{1, 8, 1.0f}),
                    .groups = {1, 1, 1},
                    .spec = {rill::spec_uint("WG_SIZE", 256), rill::spec_uint("DK", 32), rill::spec_uint("DV", 32)}});
  CHECK(shared.code() == rill::StatusCode::kUnimplemented);
  CHECK(shared.message().find("17408 bytes of shared memory") != std::string::npos);
}

TEST_CASE("an unknown limit profile fails context creation with the known names", "[limits]") {
  rill::ContextOptions options;
  options.limit_profile = "nokia-3310";
  auto ctx = rill::Context::create(options);
  REQUIRE_FALSE(ctx.is_ok());
  CHECK(ctx.status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(ctx.status().message().find("vulkan11-minimum") != std::string::npos);
}

// What the limit_profile_* runs skip on (test_main.cpp): a profile that changes nothing the kernels
// can see on the device, never one that lowers a limit or removes a feature.
GPU_TEST_CASE("a limit-profile run is skipped only where the profile changes nothing on the device",
              "[limits][gpu][own-limits]") {
  std::string why;
  {
    rill_test::ScopedEnv none("RILL_LIMIT_PROFILE", nullptr);
    CHECK_FALSE(rill_test::limit_profile_changes_nothing(why));
  }
  {
    rill_test::ScopedEnv unknown("RILL_LIMIT_PROFILE", "nokia-3310");
    CHECK_FALSE(rill_test::limit_profile_changes_nothing(why));
  }
  // Every device the suite runs on has more than Vulkan 1.1's minimum and than 64 KiB bindings.
  for (const char* lowering : {"vulkan11-minimum", "small-bindings"}) {
    rill_test::ScopedEnv profile("RILL_LIMIT_PROFILE", lowering);
    CHECK_FALSE(rill_test::limit_profile_changes_nothing(why));
  }
  CHECK(why.empty());
  auto listing = rill::list_devices();
  REQUIRE(listing.is_ok());
  REQUIRE(listing->chosen >= 0);
  const rill::DeviceCaps& caps = listing->devices[size_t(listing->chosen)].caps;
  // "adreno" (limit_profiles.cpp) keeps every feature; its limits, but the workgroup's depth of 64
  // that no kernel reaches (each one's is 1):
  const bool within_adreno = caps.shared_memory_bytes <= 32768 && caps.max_workgroup_invocations <= 1024 &&
                             caps.max_workgroup_size[0] <= 1024 && caps.max_workgroup_size[1] <= 1024 &&
                             caps.max_workgroup_count[0] <= 65535 && caps.max_workgroup_count[1] <= 65535 &&
                             caps.max_workgroup_count[2] <= 65535 && caps.max_storage_buffer_range <= (1u << 27) &&
                             caps.max_push_constants_bytes <= 128 && caps.max_texel_buffer_elements <= (1u << 27);
  INFO("device " << listing->devices[size_t(listing->chosen)].name << " within adreno's limits: " << within_adreno);
  {
    rill_test::ScopedEnv adreno("RILL_LIMIT_PROFILE", "adreno");
    CHECK(rill_test::limit_profile_changes_nothing(why) == within_adreno);
  }
  if (within_adreno) CHECK(why.find("'adreno' leaves the limits of") != std::string::npos);
}

// What the f16 skips in the op tests stand on: without 16-bit storage an f16 op is refused by name
// (not run, not crashed), and a model asked for f16 runs in f32 and says so.
GPU_TEST_CASE("without 16-bit storage f16 ops are refused and models fall back to f32", "[limits][lm][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.limit_profile = "vulkan11-minimum";
  auto ctx = rill_test::make_context(options);
  REQUIRE_FALSE(ctx.device().caps.storage_buffer_16bit);
  CHECK(rill_test::float_dtypes(ctx) == std::vector<rill::DType>{rill::DType::kF32});
  auto x = std::move(ctx.tensor(rill::DType::kF16, {2, 8}, "x")).value();
  auto y = std::move(ctx.tensor(rill::DType::kF16, {2, 8}, "y")).value();
  auto rstd = std::move(ctx.tensor(rill::DType::kF32, {2}, "rstd")).value();
  auto seq = std::move(ctx.sequence()).value();
  const rill::Status refused = rill::ops::rmsnorm_forward(seq, x, nullptr, y, rstd, 1e-5f);
  CHECK(refused.code() == rill::StatusCode::kUnimplemented);
  CHECK(refused.message().find("16-bit storage") != std::string::npos);

  std::vector<std::string> logged;
  rill::set_log_callback([&](rill::MessageSeverity, std::string_view m) { logged.emplace_back(m); });
  rill::lm::ModelConfig config;
  config.vocab = 32;
  config.width = 16;
  config.heads = 2;
  config.ffn_width = 32;
  config.layers = 1;
  config.layer_kinds = {rill::lm::LayerKind::kNorm};
  REQUIRE(config.validate().is_ok());
  auto weights = rill::lm::Weights::random(config, 5);
  REQUIRE(weights.is_ok());
  auto model = rill::lm::Model::create(ctx, *weights, {.precision = rill::lm::Precision::kF16});
  rill::set_log_callback(nullptr);
  REQUIRE(model.is_ok());
  CHECK(model->options().precision == rill::lm::Precision::kF32);
  CHECK(std::count_if(logged.begin(), logged.end(), [](const std::string& m) {
          return m.find("f16 precision needs 16-bit storage") != std::string::npos;
        }) == 1);
  auto session = model->session();
  REQUIRE(session.is_ok());
  const std::vector<uint32_t> tokens = {1, 2, 3};
  CHECK(session->prefill(tokens).is_ok());
}

TEST_CASE("quirks read the LLVM version of Mesa's CPU driver", "[limits]") {
  CHECK(rill::vk::llvm_major_version("Mesa 22.3.6 (LLVM 15.0.6)") == 15);
  CHECK(rill::vk::llvm_major_version("Mesa 24.2.8-1 (LLVM 19.1.7)") == 19);
  CHECK(rill::vk::llvm_major_version("Mesa 22.3.6") == 0);
  CHECK(rill::vk::llvm_major_version("") == 0);
  CHECK(rill::vk::llvm_major_version("LLVM 99999999999999") == 0);
}

GPU_TEST_CASE("quirk version ranges compare Mesa's own version, or the driver's", "[limits][gpu]") {
  using rill::vk::mesa_version;
  const rill::vk::DriverVersions mesa_23 = {.first = mesa_version(23, 0, 0), .last = mesa_version(23, 3, 99)};
  CHECK(mesa_23.contains(mesa_version(23, 1, 4)));
  CHECK_FALSE(mesa_23.contains(mesa_version(22, 3, 6)));
  CHECK_FALSE(mesa_23.contains(mesa_version(24, 0, 0)));
  rill::DeviceInfo lavapipe;
  lavapipe.type = rill::DeviceType::kCpu;
  lavapipe.driver_id = 13;      // VK_DRIVER_ID_MESA_LLVMPIPE
  lavapipe.driver_version = 1;  // what lavapipe reports, whatever the Mesa version
  lavapipe.driver_info = "Mesa 23.1.4 (LLVM 15.0.6)";
  lavapipe.caps.subgroup_shuffle = true;
  CHECK(rill::vk::driver_version_of(lavapipe) == mesa_version(23, 1, 4));
  CHECK(mesa_23.contains(rill::vk::driver_version_of(lavapipe)));
  const rill::vk::QuirkFlags flags = rill::vk::quirk_flags_for(lavapipe);
  CHECK(flags.prefer_cpu_kernels);
  CHECK(flags.max_loop_iterations == 65535);
  // Not a Mesa version string: the driver's own driverVersion.
  rill::DeviceInfo other;
  other.driver_version = 0x12345678;
  for (const char* info : {"", "Mesa", "Mesa x.y", "Mesa 23.", "NVIDIA 550.54"}) {
    other.driver_info = info;
    CHECK(rill::vk::driver_version_of(other) == 0x12345678);
  }
  // The device this test runs on.
  auto ctx = rill_test::make_context();
  unsigned major = 0, minor = 0, patch = 0;
  if (std::sscanf(ctx.device().driver_info.c_str(), "Mesa %u.%u.%u", &major, &minor, &patch) == 3) {
    CHECK(rill::vk::driver_version_of(ctx.device()) == mesa_version(major, minor, patch));
  } else {
    WARN("not a Mesa driver (" << ctx.device().driver_info << "): Mesa parsing not exercised here");
  }
}
