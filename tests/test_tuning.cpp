// Tuning files (rill/tuning.hpp) and the plans' use of their choices: taken where they fit,
// dropped where they do not, under the forced choices; files read as untrusted input.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel_plan.hpp"
#include "op_test.hpp"
#include "plan_devices.hpp"
#include "rill/ops/linear_attention.hpp"
#include "rill/tuning.hpp"
#include "scoped_env.hpp"
#include "temp_path.hpp"

namespace {

using namespace rill::ops::plan;

// The traits a context with this tuning file's plan and these forced choices plans with.
DeviceTraits tuned(DeviceTraits d, const std::string& tuning, const std::string& forced = "") {
  d.forced = parse_overrides(forced).value();
  d.tuned = parse_overrides(forced, parse_overrides(tuning).value()).value();  // as a context merges them
  return d;
}

LinearAttentionShape la_shape(uint64_t n, uint32_t dim) {
  return {.heads = 4, .n = n, .dk = dim, .dv = dim, .chunk = 64};
}

rill::DeviceInfo some_device() {
  rill::DeviceInfo d;
  d.name = "Test GPU";
  d.vendor_id = 0x10de;
  d.device_id = 0x2335;
  d.driver_version = 42;
  return d;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("tuned plan choices are taken where they fit, dropped where they do not, under forced ones", "[plan]") {
  using rill_test::h100_like;
  using rill_test::mali_like;
  // A tile depth that fits: taken. Forced over tuned: the forced one.
  CHECK(linear_attention_forward(tuned(h100_like(), "la_tile=32"), la_shape(16384, 64)).value().tile == 32);
  CHECK(linear_attention_forward(tuned(h100_like(), "la_tile=32", "la_tile=4"), la_shape(16384, 64)).value().tile == 4);
  // Where it does not fit (a phone's 16 KiB), the plan without it, not the forced form's refusal.
  const auto phone = linear_attention_forward(tuned(mali_like(), "la_tile=32"), la_shape(16384, 64));
  const auto phone_untuned = linear_attention_forward(mali_like(), la_shape(16384, 64));
  REQUIRE(phone.is_ok());
  CHECK(phone->algorithm == phone_untuned->algorithm);
  CHECK(phone->tile == phone_untuned->tile);
  // Block attention's tile depth: the same.
  CHECK(block_attention_forward(tuned(h100_like(), "block_tile=32"), {.block = 64}).tile == 32);
  CHECK(block_attention_forward(tuned(mali_like(), "block_tile=32"), {.block = 64}).tile ==
        block_attention_forward(mali_like(), {.block = 64}).tile);
  CHECK(block_attention_forward(tuned(mali_like(), "block_tile=32"), {.block = 64}).tiled ==
        block_attention_forward(mali_like(), {.block = 64}).tiled);
  // Decoding: 8 columns per invocation where the widths divide, the plan's own where they do not
  // (250 logits), where forcing them is refused.
  const LmDecodeShape model, odd{.vocab = 250};
  CHECK(lm_decode(tuned(h100_like(), "lm_decode_columns=8"), model).value().lane_groups == 2);
  const auto odd_plan = lm_decode(tuned(h100_like(), "lm_decode_columns=8"), odd);
  REQUIRE(odd_plan.is_ok());
  CHECK(odd_plan->fused);
  CHECK(odd_plan->lane_groups == lm_decode(h100_like(), odd).value().lane_groups);
  // A tuned per-op graph is a choice, kept.
  CHECK_FALSE(lm_decode(tuned(h100_like(), "lm_decode=per-op"), model).value().fused);
  // ICL: more tasks per workgroup than the shared memory holds: the plan's own.
  const IclLayersShape icl{.width = 11, .tokens = 21, .layer_params = 242};
  const auto many = icl_layers(tuned(h100_like(), "icl_tasks_per_workgroup=64"), icl);
  REQUIRE(many.is_ok());
  CHECK(many->tasks_per_workgroup == icl_layers(h100_like(), icl).value().tasks_per_workgroup);
  CHECK(icl_layers(tuned(h100_like(), "icl_tasks_per_workgroup=2"), icl).value().tasks_per_workgroup == 2);
  // The matmul's layout is taken; native cooperative matrices only where the device has them.
  const MatmulShape product{.m = 4096, .n = 4096, .k = 4096, .f16 = true, .rows_vectorizable = true};
  CHECK_FALSE(matmul(tuned(h100_like(), "matmul_layout=strided"), product).grouped);
  CHECK_FALSE(cooperative_matmul(tuned(h100_like(), "matmul_coop=native"), product).has_value());
  DeviceTraits coop = h100_like();
  coop.cooperative_matrix_f16 = {16, 16, 16};
  CHECK_FALSE(cooperative_matmul(tuned(coop, "matmul_coop=off"), product).has_value());
  CHECK(cooperative_matmul(coop, product).has_value());
  // What a tuning file may hold: the device's preferences, not the shape-following matmul tiles.
  CHECK(tunable_key("la_tile"));
  CHECK(tunable_key("lm_decode_grid"));
  CHECK(tunable_key("lm_decode_rows"));
  CHECK_FALSE(tunable_key("matmul_tile"));
  CHECK_FALSE(tunable_key("matmul_splits"));
}

TEST_CASE("tuning files round-trip and refuse foreign, malformed and untunable contents", "[tuning]") {
  const std::string path = rill_test::temp_path("tuning.json");
  const rill::DeviceInfo device = some_device();
  const rill::TuningFile file{.kernel_plan = "la_tile=32,lm_decode_grid=256x32",
                              .family = "gpu",
                              .measurements = {{"lm prefill", "", 12.5}, {"lm prefill", "la_tile=32", 10.25}}};
  REQUIRE(rill::write_tuning_file(path, device, file).is_ok());
  auto back = rill::read_tuning_file(path, device);
  REQUIRE(back.is_ok());
  CHECK(back->kernel_plan == file.kernel_plan);
  CHECK(back->family == "gpu");
  REQUIRE(back->measurements.size() == 2);
  CHECK(back->measurements[1].kernel_plan == "la_tile=32");
  CHECK(back->measurements[1].ms == 10.25);

  // Another device, driver or limit profile: refused as foreign.
  for (auto change : {+[](rill::DeviceInfo& d) { d.driver_version += 1; }, +[](rill::DeviceInfo& d) { d.name += "2"; },
                      +[](rill::DeviceInfo& d) { d.limit_profile = "mali"; },
                      // lavapipe names its Mesa release only here (its driver version is 1 in each)
                      +[](rill::DeviceInfo& d) { d.driver_info = "Mesa 23.0.0 (LLVM 15.0.6)"; }}) {
    rill::DeviceInfo other = device;
    change(other);
    CHECK(rill::read_tuning_file(path, other).status().code() == rill::StatusCode::kFailedPrecondition);
  }
  {  // A CPU driver's file made under other host threads (its name does not tell them): foreign.
    rill::DeviceInfo cpu = device;
    cpu.type = rill::DeviceType::kCpu;
    const std::string cpu_path = path + ".cpu";
    {
      rill_test::ScopedEnv threads("LP_NUM_THREADS", "3");
      REQUIRE(rill::write_tuning_file(cpu_path, cpu, file).is_ok());
      CHECK(rill::read_tuning_file(cpu_path, cpu).is_ok());
    }
    for (const char* other : {"5", static_cast<const char*>(nullptr)}) {
      rill_test::ScopedEnv threads("LP_NUM_THREADS", other);
      const auto foreign = rill::read_tuning_file(cpu_path, cpu);
      CHECK(foreign.status().code() == rill::StatusCode::kFailedPrecondition);
      CHECK_THAT(foreign.status().message(), Catch::Contains("threads"));
    }
  }
  // Plans a file may not hold, refused when written.
  for (const char* plan : {"matmul_tile=8x8", "la_tile=5", "matmul_coop=emulated", "la_tile"}) {
    INFO(plan);
    rill::TuningFile bad = file;
    bad.kernel_plan = plan;
    CHECK(rill::write_tuning_file(path + ".bad", device, bad).code() == rill::StatusCode::kInvalidArgument);
  }
  rill::TuningFile bad_family = file;
  bad_family.family = "npu";
  CHECK(rill::write_tuning_file(path + ".bad", device, bad_family).code() == rill::StatusCode::kInvalidArgument);
  // Measurements the reader would refuse, and text JSON cannot hold: refused, never thrown.
  for (double ms : {double(NAN), double(INFINITY), -1.0}) {
    rill::TuningFile bad = file;
    bad.measurements[0].ms = ms;
    CHECK(rill::write_tuning_file(path + ".bad", device, bad).code() == rill::StatusCode::kInvalidArgument);
  }
  rill::TuningFile not_utf8 = file;
  not_utf8.measurements[0].job = "lm \xff prefill";
  CHECK(rill::write_tuning_file(path + ".bad", device, not_utf8).code() == rill::StatusCode::kInvalidArgument);
  CHECK_FALSE(std::filesystem::exists(path + ".bad"));

  // Edited or damaged files, refused when read.
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  const std::pair<std::string, rill::StatusCode> damaged[] = {
      {text.substr(0, text.size() / 2), rill::StatusCode::kDataLoss},
      {replaced("\"la_tile=32,", "\"matmul_splits=4,"), rill::StatusCode::kInvalidArgument},
      {replaced("\"rill-tuning\"", "\"other\""), rill::StatusCode::kDataLoss},
      {replaced("\"version\": 1", "\"version\": 2"), rill::StatusCode::kDataLoss},
      {replaced("\"version\": 1", "\"version\": 4294967297"), rill::StatusCode::kDataLoss},
      {replaced("\"version\": 1", "\"version\": 1.5"), rill::StatusCode::kDataLoss},
      {replaced("12.5", "-1"), rill::StatusCode::kDataLoss},
      {replaced("\"family\": \"gpu\"", "\"family\": \"gpu\", \"family\": \"cpu\""), rill::StatusCode::kDataLoss},
      {replaced("\"family\": \"gpu\"", "\"family\": 7"), rill::StatusCode::kDataLoss},
      {"[]", rill::StatusCode::kDataLoss},
      // Copying or printing 200,000 levels would overflow the stack: refused before parsing.
      {replaced("\"device\": {", "\"device\": " + std::string(200000, '[') + "{"), rill::StatusCode::kDataLoss},
      {std::string(2 << 20, ' '), rill::StatusCode::kOutOfRange},
  };
  for (const auto& [contents, code] : damaged) {
    INFO(contents.substr(0, 200));
    write_text(path, contents);
    CHECK(rill::read_tuning_file(path, device).status().code() == code);
  }
  CHECK(rill::read_tuning_file(path + ".missing", device).status().code() == rill::StatusCode::kNotFound);
}

GPU_TEST_CASE("a context plans with its tuning file where it was made, and ignores a foreign one", "[tuning][gpu]") {
  const std::string path = rill_test::temp_path("context-tuning.json");
  rill::Context probe = rill_test::make_context();
  // The serial chunked kernel for causal linear attention: not what any device picks by itself.
  REQUIRE(rill::write_tuning_file(path, probe.device(),
                                  {.kernel_plan = "linear_attention=serial", .family = probe.kernel_family()})
              .is_ok());
  auto kernels_of = [](rill::Context& ctx) {
    const int64_t n = 70, d = 8;
    auto q = rill_test::tensor_from(ctx, rill::DType::kF32, {1, 2, n, d}, rill_test::random_vector(2 * n * d, 1));
    auto o = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, n, d});
    auto state = rill_test::empty_tensor(ctx, rill::DType::kF32, {1, 2, d, d});
    auto seq = ctx.sequence({.timestamps = true});
    REQUIRE(seq.is_ok());
    REQUIRE(rill::ops::linear_attention_forward(*seq, q, q, q, o, state, {}).is_ok());
    REQUIRE(seq->run().is_ok());
    auto timings = seq->timings();
    REQUIRE(timings.is_ok());
    std::string names;
    for (const rill::DispatchTiming& t : timings.value()) names += t.kernel + " ";
    return names;
  };
  rill::ContextOptions options = rill_test::validated_options();
  options.tuning_path = path;
  {
    rill::Context ctx = rill_test::make_context(options);
    CHECK(ctx.tuned_plan() == "linear_attention=serial");
    CHECK_THAT(kernels_of(ctx), Catch::Contains("la_chunked"));
  }
  {  // a forced choice wins over the tuned one
    rill::ContextOptions forced = options;
    forced.kernel_plan = "linear_attention=parallel";
    rill::Context ctx = rill_test::make_context(forced);
    CHECK_THAT(kernels_of(ctx), Catch::Contains("la_par_output"));
  }
  {  // measured with the other kernel family: ignored
    rill::ContextOptions other = options;
    other.kernel_variant = probe.kernel_family() == "cpu" ? "gpu" : "cpu";
    rill::Context ctx = rill_test::make_context(other);
    CHECK(ctx.tuned_plan().empty());
  }
  {  // another device's file, or none at the path: ignored
    rill::DeviceInfo elsewhere = probe.device();
    elsewhere.driver_version += 1;
    REQUIRE(rill::write_tuning_file(path, elsewhere,
                                    {.kernel_plan = "linear_attention=serial", .family = probe.kernel_family()})
                .is_ok());
    CHECK(rill_test::make_context(options).tuned_plan().empty());
    options.tuning_path = path + ".missing";
    CHECK(rill_test::make_context(options).tuned_plan().empty());
  }
  rill::Context plain = rill_test::make_context();
  CHECK(plain.tuned_plan().empty());
  CHECK_THAT(kernels_of(plain), !Catch::Contains("la_chunked"));
}
