// ICL training on the GPU against its CPU twins: the sampler bit for bit, whole training runs
// against the reference training loop (engine/ref/icl.hpp), determinism, the non-finite policies
// and configuration errors (the layer kernels' forms: test_icl_layer_kernels.cpp).
#include <cmath>
#include <cstring>
#include <filesystem>

#include "access.hpp"
#include "gpu_test.hpp"
#include "icl.hpp"
#include "icl/checkpoint.hpp"
#include "icl/icl_kernels.hpp"
#include "icl/trainer_impl.hpp"
#include "icl_sampler.hpp"
#include "icl_test.hpp"
#include "op_test.hpp"
#include "rill/icl.hpp"
#include "rill/safetensors.hpp"
#include "scoped_env.hpp"

namespace {

using namespace rill::icl;
namespace ref = rill::ref::icl;

using namespace icl_test;

// The GPU sampler's batch, downloaded into the reference layout.
ref::TaskBatch gpu_batch(rill::Context& ctx, const TrainConfig& c, uint32_t batch, uint32_t step) {
  using namespace rill::icl::detail;
  const Shape shape = Shape::of(c);
  Recorder rec(c, shape);
  auto ws = must(Workspace::create(ctx, shape, batch));
  const ModelState m = must(ModelState::create(ctx, shape, {&c, 1}));
  auto seq = ctx.sequence().value();
  REQUIRE(rec.sample(seq, ws, m, {.step_from_state = false, .step = step}).is_ok());
  auto acts = seq.download(ws.acts).value();
  auto targets = seq.download(ws.targets).value();
  auto sigmas = seq.download(ws.sigmas).value();
  REQUIRE(seq.run().is_ok());
  const std::vector<float> a = seq.read_floats(acts).value();
  ref::TaskBatch out;
  out.d = shape.d;
  out.n = shape.n;
  out.tasks = batch;
  out.tokens.resize(size_t(batch) * shape.token_elems);
  for (uint32_t t = 0; t < batch; ++t)
    for (uint32_t e = 0; e < shape.token_elems; ++e) out.tokens[t * shape.token_elems + e] = a[size_t(e) * batch + t];
  out.targets = seq.read_floats(targets).value();
  out.sigmas = seq.read_floats(sigmas).value();
  return out;
}

}  // namespace

GPU_TEST_CASE("icl: the GPU task sampler matches its CPU twin bit for bit", "[icl]") {
  // Both families: a task per invocation (CPU drivers) and a token per invocation (GPUs); both
  // builds, declaring round-to-nearest-even where the device can and (vulkan11-minimum, which
  // cannot) leaving it to the driver.
  std::vector<rill::Context> contexts = rill_test::both_kernel_families();
  auto minimum = rill_test::validated_options();
  minimum.limit_profile = "vulkan11-minimum";
  contexts.push_back(rill_test::make_context(minimum));
  for (rill::Context& ctx : contexts) {
    INFO("rounding declared: " << ctx.device().caps.rounding_rte_f32);
    struct Case {
      int d, n;
      DataKind data;
      NoiseKind noise;
    };
    for (const Case& k :
         {Case{1, 1, DataKind::kGaussian, NoiseKind::kNone}, Case{3, 7, DataKind::kGaussian, NoiseKind::kUniform},
          Case{5, 20, DataKind::kHeavyTailed, NoiseKind::kNone},
          Case{10, 20, DataKind::kGaussian, NoiseKind::kCategorical},
          Case{7, 13, DataKind::kHeavyTailed, NoiseKind::kUniform}}) {
      TrainConfig c = small_config(k.d, k.n, 1, 1, Parameterization::kFull, Convention::kAhn, 67);
      c.task.data = k.data;
      c.task.noise = k.noise;
      c.task.sigma_max = 2.0f;
      c.task.categories = {1.0f, 3.0f, 5.0f};
      INFO("d=" << k.d << " n=" << k.n << " data=" << int(k.data) << " noise=" << int(k.noise));
      for (uint32_t step : {0u, 5u}) {
        const ref::TaskBatch gpu = gpu_batch(ctx, c, 67, step);
        const ref::TaskBatch cpu = ref::sample_tasks(sampler_spec(c), step, 0, 67);
        CHECK(same_bits(gpu.tokens, cpu.tokens));
        CHECK(same_bits(gpu.targets, cpu.targets));
        CHECK(same_bits(gpu.sigmas, cpu.sigmas));
      }
    }
  }
}

GPU_TEST_CASE("icl: training matches the reference training loop", "[icl]") {
  auto ctx = rill_test::make_context();
  for (OptimizerKind opt : {OptimizerKind::kAdam, OptimizerKind::kSgd}) {
    TrainConfig c = small_config(4, 9, 2, 2, Parameterization::kFull, Convention::kAhn, 29);
    c.optimizer.kind = opt;
    c.optimizer.lr = opt == OptimizerKind::kAdam ? 1e-2f : 2e-2f;
    c.optimizer.clip_norm = 0.5f;
    INFO("optimizer " << name(opt));
    auto trainer = must(Trainer::create(ctx, c));
    std::vector<double> params = to_double(trainer.parameters().value());
    const int steps = 100;
    auto curve = must(trainer.train(steps));
    REQUIRE(curve.size() == size_t(steps));
    CHECK(trainer.step() == steps);

    ref::AdamState adam;
    ref::SgdState sgd;
    for (int s = 0; s < steps; ++s) {
      const ref::TaskBatch batch = ref::sample_tasks(sampler_spec(c), uint32_t(s), 0, uint32_t(c.batch));
      std::vector<double> grad;
      const double loss = ref::loss_and_gradient(ref_shape(c), params, batch.tokens, batch.targets, grad);
      const double norm = ref::clip_global_norm(grad, c.optimizer.clip_norm);
      CHECK(curve[s].step == s);
      CHECK(curve[s].loss == Approx(loss).epsilon(1e-3));
      CHECK(curve[s].grad_norm == Approx(norm).epsilon(1e-3));
      if (opt == OptimizerKind::kAdam)
        ref::adam_step(params, grad, adam, c.optimizer.lr, c.optimizer.beta1, c.optimizer.beta2, c.optimizer.eps);
      else
        ref::sgd_step(params, grad, sgd, c.optimizer.lr, c.optimizer.momentum);
    }
    CHECK(rel_err(params, trainer.parameters().value()) < 2e-3);
    CHECK(curve.back().loss < curve.front().loss);
  }
}

GPU_TEST_CASE("icl: the same seed gives a bitwise-identical loss curve", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(5, 20, 3, 1, Parameterization::kFull, Convention::kAhn, 100);
  auto run = [&](uint64_t seed) {
    c.seed = seed;
    auto trainer = must(Trainer::create(ctx, c));
    auto curve = must(trainer.train(30));
    std::vector<float> losses;
    for (const StepRecord& r : curve) losses.push_back(r.loss);
    return losses;
  };
  const auto a = run(7), b = run(7), other = run(8);
  CHECK(same_bits(a, b));
  CHECK_FALSE(same_bits(a, other));
}

// A finite gradient whose squares pass f32's range (|g| near 1e20) has a finite norm: clipped, it
// trains on. P = 0 and Q = 1e20 (d = 1, one layer): the prediction is 0, the loss y^2, and P's
// gradient 2 y (A Q e_q) about 1e20 (its norm was computed as infinite and the step halted).
GPU_TEST_CASE("icl: a finite gradient past f32's squares is clipped, not halted", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(1, 4, 1, 1, Parameterization::kFull, Convention::kAhn, 16);
  c.optimizer.clip_norm = 1.0f;
  auto trainer = must(Trainer::create(ctx, c));
  std::vector<float> params(trainer.parameters().value().size(), 0.0f);
  REQUIRE(params.size() == 8);  // P (2 x 2), then Q
  for (size_t i = 4; i < 8; ++i) params[i] = 1e20f;
  REQUIRE(trainer.set_parameters(params).is_ok());
  const auto records = must(trainer.train(1));
  REQUIRE(records.size() == 1);
  CHECK(std::isfinite(records[0].loss));
  CHECK(std::isfinite(records[0].grad_norm));
  CHECK(records[0].grad_norm > 1.9e19f);  // its squares pass 3.4e38
  const std::vector<float> after = trainer.parameters().value();
  for (float v : after) CHECK(std::isfinite(v));
  CHECK(after != params);  // a step was taken
  // Unclipped, the step halts as before: Adam's g * g would overflow its moment and freeze the
  // parameters silently.
  c.optimizer.clip_norm = 0.0f;
  auto unclipped = must(Trainer::create(ctx, c));
  REQUIRE(unclipped.set_parameters(params).is_ok());
  CHECK(unclipped.train(1).status().code() == rill::StatusCode::kFailedPrecondition);
}

GPU_TEST_CASE("icl: non-finite losses stop training or skip the batch", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 5, 2, 1, Parameterization::kFull, Convention::kAhn, 16);
  auto trainer = must(Trainer::create(ctx, c));
  REQUIRE(trainer.train(3).is_ok());
  const std::vector<float> before = trainer.parameters().value();
  std::vector<float> huge(before.size(), 1e30f);
  REQUIRE(trainer.set_parameters(huge).is_ok());
  auto stopped = trainer.train(10);
  REQUIRE_FALSE(stopped.is_ok());
  CHECK(stopped.status().message().find("stopped at step 3") != std::string::npos);
  CHECK(stopped.status().message().find("not finite") != std::string::npos);
  CHECK(same_bits(trainer.parameters().value(), huge));  // no update from a non-finite step
  // train_into keeps the records up to the halt, the halting step's (non-finite) one last.
  auto halting = must(Trainer::create(ctx, c));
  std::vector<StepRecord> kept;
  REQUIRE(halting.train_into(3, kept).is_ok());
  REQUIRE(halting.set_parameters(huge).is_ok());
  const rill::Status halt = halting.train_into(10, kept);
  CHECK(halt.code() == rill::StatusCode::kFailedPrecondition);
  REQUIRE(kept.size() == 4);
  CHECK(kept.back().step == 3);
  CHECK_FALSE(std::isfinite(kept.back().loss));
  CHECK(std::isfinite(kept[2].loss));
  // Training a halted model again repeats the halt and no record, nor does its resumed checkpoint
  // (whose loss history is not saved: it made up a record of loss 0).
  CHECK(halting.train_into(10, kept).message() == halt.message());
  {  // Parameters that are not finite are refused by name, the trainer's kept.
    auto diverged = must(Trainer::create(ctx, c));
    const std::vector<float> kept_params = diverged.parameters().value();
    std::vector<float> inf_params(huge.size(), 1.0f);
    inf_params[1] = INFINITY;
    const rill::Status refused = diverged.set_parameters(inf_params);
    CHECK(refused.code() == rill::StatusCode::kInvalidArgument);
    CHECK(refused.message().find("value 1 is not finite") != std::string::npos);
    inf_params[1] = NAN;
    CHECK(diverged.set_parameters(inf_params).code() == rill::StatusCode::kInvalidArgument);
    CHECK(same_bits(diverged.parameters().value(), kept_params));
  }
  CHECK(kept.size() == 4);
  const std::string halted_path = rill_test::temp_path("icl-halted.ckpt");
  REQUIRE(halting.save_checkpoint(halted_path).is_ok());
  auto resumed = must(Trainer::resume(ctx, halted_path));
  CHECK(resumed.step() == halting.step());
  CHECK(resumed.train_into(1, kept).message() == halt.message());
  CHECK(kept.size() == 4);

  c.on_nonfinite = NonFinitePolicy::kSkipBatch;
  auto skipping = must(Trainer::create(ctx, c));
  REQUIRE(skipping.set_parameters(huge).is_ok());
  auto curve = must(skipping.train(5));
  CHECK(curve.size() == 5);
  CHECK(skipping.skipped_batches() == 5);
  CHECK_FALSE(std::isfinite(curve.front().loss));
}

// A finite loss and gradient can still give a step that takes parameters past f32 (SGD at a huge
// learning rate): that step is not taken, the halt says why, and the last finite state is saved.
GPU_TEST_CASE("icl: a step that would overflow the parameters is not taken", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 5, 2, 1, Parameterization::kFull, Convention::kAhn, 16);
  c.optimizer.kind = OptimizerKind::kSgd;
  c.optimizer.lr = 3e38f;
  c.optimizer.clip_norm = 0.0f;
  auto trainer = must(Trainer::create(ctx, c));
  // Parameters of 1: a gradient norm well over 1, so that 3e38 times it passes f32.
  const std::vector<float> before(trainer.parameters().value().size(), 1.0f);
  REQUIRE(trainer.set_parameters(before).is_ok());
  std::vector<StepRecord> kept;
  const rill::Status stopped = trainer.train_into(3, kept);
  INFO(stopped.to_string());
  INFO("first gradient norm " << (kept.empty() ? 0.0f : kept[0].grad_norm));
  CHECK(stopped.code() == rill::StatusCode::kFailedPrecondition);
  CHECK(stopped.message().find("stopped at step 0: the update would take parameters past f32") != std::string::npos);
  REQUIRE(kept.size() == 1);
  CHECK(std::isfinite(kept[0].loss));  // the loss and gradient were finite: the step's values were not
  CHECK(std::isfinite(kept[0].grad_norm));
  CHECK(same_bits(trainer.parameters().value(), before));
  const std::string path = rill_test::temp_path("icl-overflow.ckpt");
  CHECK(trainer.save_checkpoint(path).is_ok());
  // Skipping: every batch that would overflow is skipped, the parameters kept.
  c.on_nonfinite = NonFinitePolicy::kSkipBatch;
  auto skipping = must(Trainer::create(ctx, c));
  REQUIRE(skipping.set_parameters(before).is_ok());
  must(skipping.train(4));
  CHECK(skipping.skipped_batches() == 4);
  CHECK(same_bits(skipping.parameters().value(), before));
}

// A batch whose buffers pass the device's largest binding is refused when the trainer is made, by
// the limit and with what to lower (recording refused it, after the buffers were allocated).
GPU_TEST_CASE("icl: a batch past the device's largest storage binding is refused up front", "[icl][limits]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "small-bindings";  // bindings of 64 KiB
  auto ctx = rill_test::make_context(options);
  TrainConfig c = small_config(3, 5, 2, 1, Parameterization::kFull, Convention::kAhn, 16);
  c.batch = 4000;  // 3 layers' activations of 24 values per task: 1.1 MB
  const auto refused = Trainer::create(ctx, c);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == rill::StatusCode::kOutOfRange);
  CHECK(refused.status().message().find("maxStorageBufferRange") != std::string::npos);
  CHECK(refused.status().message().find("lower the batch") != std::string::npos);
  c.batch = 16;
  auto fits = must(Trainer::create(ctx, c));
  CHECK(fits.train(2).is_ok());
}

// A run the device took whose progress the host did not read (its download failed): the next call
// reads where the device is, so its records are its own steps, none repeated or out of the ring.
GPU_TEST_CASE("icl: a call after a failed progress read records its own steps", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 5, 2, 1, Parameterization::kFull, Convention::kAhn, 16);
  c.read_every = 4;
  auto trainer = must(Trainer::create(ctx, c));
  auto twin = must(Trainer::create(ctx, c));
  must(trainer.train(4));
  must(twin.train(8));
  auto& im = rill::detail::Access::impl_of(trainer);
  REQUIRE(im.step_sequence->run(4).is_ok());  // what train(4) does before its reads
  im.unread = true;                           // as a failed read leaves it
  const auto records = must(trainer.train(3));
  const auto expected = must(twin.train(3));
  REQUIRE(records.size() == 3);
  CHECK(trainer.step() == 11);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(records[i].step == int64_t(8 + i));
    CHECK(records[i].loss == expected[i].loss);
  }
}

TEST_CASE("icl: the papers' presets are the settings they name", "[icl]") {
  const TrainConfig s1 = ahn_setting(AhnSetting::k1), s2 = ahn_setting(AhnSetting::k2),
                    s3 = ahn_setting(AhnSetting::k3);
  CHECK((s1.task.d == 5 && s1.task.n == 20 && s1.task.data == DataKind::kGaussian));
  CHECK((s2.task.d == 5 && s2.task.n == 5 && s2.task.data == DataKind::kGaussian));
  CHECK((s3.task.d == 5 && s3.task.n == 20 && s3.task.data == DataKind::kHeavyTailed));
  for (const TrainConfig& c : {s1, s2, s3}) {
    CHECK((c.model.layers == 3 && c.batch == 1000 && c.optimizer.kind == OptimizerKind::kAdam));
    CHECK(validate(c).is_ok());
  }
  const TrainConfig v = vladymyrov_setting(Parameterization::kDiag, 3.0f);
  CHECK((v.task.d == 10 && v.task.n == 20 && v.task.sigma_max == 3.0f && v.model.param == Parameterization::kDiag));
  CHECK((v.batch == 2048 && v.optimizer.lr == 1e-4f));
  CHECK(validate(v).is_ok());
}

GPU_TEST_CASE("icl: bad configurations get clear errors", "[icl]") {
  auto ctx = rill_test::make_context();
  auto expect_error = [&](TrainConfig c, const char* fragment) {
    auto t = Trainer::create(ctx, c);
    REQUIRE_FALSE(t.is_ok());
    INFO(t.status().message());
    CHECK(t.status().message().find(fragment) != std::string::npos);
  };
  TrainConfig c = ahn_setting(AhnSetting::k1);
  c.task.d = 0;
  expect_error(c, "d must be");
  c = ahn_setting(AhnSetting::k1);
  c.optimizer.lr = std::nanf("");
  expect_error(c, "learning rate");
  c = ahn_setting(AhnSetting::k1);
  c.optimizer.kind = OptimizerKind(7);
  expect_error(c, "unknown optimizer");
  // Every enum is checked: an unknown value ran as another setting, saving unreadable checkpoints.
  c = ahn_setting(AhnSetting::k1);
  c.model.param = Parameterization(3);
  expect_error(c, "unknown parameterization");
  c = ahn_setting(AhnSetting::k1);
  c.model.convention = Convention(2);
  expect_error(c, "unknown convention");
  c = ahn_setting(AhnSetting::k1);
  c.task.data = DataKind(-1);
  expect_error(c, "unknown data kind");
  c = ahn_setting(AhnSetting::k1);
  c.task.noise = NoiseKind(3);
  expect_error(c, "unknown noise kind");
  c = ahn_setting(AhnSetting::k1);
  c.on_nonfinite = NonFinitePolicy(2);
  expect_error(c, "unknown non-finite policy");
  c = ahn_setting(AhnSetting::k1);
  c.task.noise = NoiseKind::kCategorical;
  expect_error(c, "categorical");
  // Numbers the data does not use are still saved in checkpoints: finite, or the run could not be
  // read back.
  c = ahn_setting(AhnSetting::k1);
  REQUIRE(c.task.data != DataKind::kHeavyTailed);
  c.task.gamma_shape = INFINITY;
  expect_error(c, "gamma_shape");
  c = ahn_setting(AhnSetting::k1);
  c.task.categories = {1.0f, std::nanf("")};
  expect_error(c, "sigma values");
  // Bounded where unused too: a checkpoint holding 60,000 of them passed its reader's header cap.
  c = ahn_setting(AhnSetting::k1);
  c.task.categories.assign(7, 1.0f);
  expect_error(c, "at most 6 sigma values, got 7");
  c = ahn_setting(AhnSetting::k1);
  c.optimizer.eps = 1e-40f;
  expect_error(c, "eps must be finite and at least 2^-126");
  // Denormal scales: a GPU that flushes denormal operands would sample other tasks than the CPU.
  c = ahn_setting(AhnSetting::k1);
  c.task.data = DataKind::kHeavyTailed;
  c.task.gamma_scale = 1e-39f;
  expect_error(c, "gamma_scale must be finite and at least 2^-126");
  c = ahn_setting(AhnSetting::k1);
  c.task.noise = NoiseKind::kCategorical;
  c.task.categories = {1.0f, 1e-40f};
  expect_error(c, "not denormal");
  c = ahn_setting(AhnSetting::k1);
  c.task.noise = NoiseKind::kUniform;
  c.task.sigma_max = 1e-40f;
  expect_error(c, "sigma_max must be finite and 0 or at least");
  // 8.6e9 parameters would wrap in the kernels' 32-bit indices.
  c = ahn_setting(AhnSetting::k1);
  c.task.d = 1024;
  c.model.heads = 64;
  c.model.layers = 64;
  expect_error(c, "8606720000 parameters");
  CHECK_FALSE(parse_optimizer("rmsprop").is_ok());
  CHECK_FALSE(parse_parameterization("lowrank").is_ok());
  // Too large for one invocation's work on a driver with a loop limit, or for 32-bit indexing.
  c = ahn_setting(AhnSetting::k1);
  c.task.d = 1000;
  c.task.n = 60000;
  c.batch = 100000;
  auto t = Trainer::create(ctx, c);
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().code() == rill::StatusCode::kOutOfRange);
}

GPU_TEST_CASE("icl: a malformed RILL_ICL_UNROLL_LIMIT is refused by name", "[icl]") {
  auto ctx = rill_test::make_context();
  for (const char* bad : {"", "-1", "abc", "12k", "99999999999999999999999"}) {
    INFO(bad);
    rill_test::ScopedEnv limit("RILL_ICL_UNROLL_LIMIT", bad);
    auto t = Trainer::create(ctx, ahn_setting(AhnSetting::k1));
    REQUIRE_FALSE(t.is_ok());
    CHECK(t.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK_THAT(t.status().message(), Catch::Contains("RILL_ICL_UNROLL_LIMIT='" + std::string(bad) + "'"));
    const std::vector<TrainConfig> configs = {ahn_setting(AhnSetting::k1), ahn_setting(AhnSetting::k1)};
    auto grid = TrainerGrid::create(ctx, configs);
    CHECK(grid.status().code() == rill::StatusCode::kInvalidArgument);
  }
  for (const char* limit : {static_cast<const char*>(nullptr), "0"}) {  // unset: the default (16000)
    rill_test::ScopedEnv set("RILL_ICL_UNROLL_LIMIT", limit);
    auto t = Trainer::create(ctx, ahn_setting(AhnSetting::k1));
    REQUIRE(t.is_ok());
    CHECK(rill::detail::Access::impl_of(*t).recorder.unrolled() == (limit == nullptr));  // ~3,300 per layer
  }
}

GPU_TEST_CASE("icl: evaluation compares the model with ridge baselines", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(4, 12, 1, 1, Parameterization::kDiag, Convention::kVladymyrov, 8);
  auto trainer = must(Trainer::create(ctx, c));
  auto eval = must(trainer.evaluate({.tasks = 400, .sigma = 1.0f}));
  CHECK(eval.tasks == 400);
  // With sigma = 1 and the prior w ~ N(0, I), ridge with lambda = 1 is the Bayes-optimal
  // predictor: least squares cannot beat it on average, nor can an untrained model.
  CHECK(eval.ridge_oracle <= eval.least_squares);
  CHECK(eval.ridge_oracle == Approx(eval.ridge_constant).epsilon(1e-12));
  CHECK(eval.model > eval.ridge_oracle);
  CHECK(eval.adjusted() > 0.0);
  // TUNEDRR is tuned on separate tasks over a grid that contains ADARR (factor 1, no cap).
  CHECK(eval.tunedrr_factor >= 0.25);
  CHECK(eval.tunedrr_factor <= 4.0);
  CHECK(eval.tunedrr <= eval.adarr * 1.05);
  const auto fixed = must(trainer.evaluate({.tasks = 100, .tune_tunedrr = false, .tunedrr_factor = 3.0, .tunedrr_cap = 2.0}));
  CHECK(fixed.tunedrr_factor == 3.0);
  CHECK(fixed.tunedrr_cap == 2.0);
}

GPU_TEST_CASE("icl: evaluation in chunks scores the same tasks as one batch", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 6, 2, 1, Parameterization::kFull, Convention::kVladymyrov, 8);
  auto trainer = must(Trainer::create(ctx, c));
  // 4096 tasks per chunk: three chunks on two workspaces taking turns, the last partly filled. The
  // same tasks drawn as one set and run as one batch give the same predictions, so every mean agrees
  // to rounding of the sums.
  // The evaluation's forward keeps no layer matrices, run_on's does (it has a backward pass): both
  // layers, the top one and the one below, compute the same either way.
  const int tasks = 8192 + 301;
  const rill::icl::EvalOptions o{.tasks = tasks, .seed = 77, .sigma = 0.5f, .tune_tunedrr = false};
  const auto chunked = must(trainer.evaluate(o));
  const auto whole = must(trainer.run_on(must(trainer.sample_task_set(tasks, 77, 0.5f)), o)).report;
  CHECK(chunked.tasks == tasks);
  CHECK(chunked.model == Approx(whole.model).epsilon(1e-12));
  CHECK(chunked.ridge_oracle == Approx(whole.ridge_oracle).epsilon(1e-12));
  CHECK(chunked.least_squares == Approx(whole.least_squares).epsilon(1e-12));
  CHECK(chunked.adarr == Approx(whole.adarr).epsilon(1e-12));
}

GPU_TEST_CASE("icl: evaluating again reuses the baselines and gives what a fresh trainer gives", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 7, 2, 1, Parameterization::kFull, Convention::kVladymyrov, 16);
  c.task.noise = rill::icl::NoiseKind::kUniform;
  c.task.sigma_max = 1.0f;
  const rill::icl::EvalOptions o{.tasks = 4096 + 33, .seed = 5, .tuning_tasks = 64};
  auto again = must(Trainer::create(ctx, c));
  const auto before = must(again.evaluate(o));
  must(again.train(3));
  const auto reused = must(again.evaluate(o));  // the baselines from the first evaluation
  auto fresh = must(Trainer::create(ctx, c));
  must(fresh.train(3));
  const auto scored = must(fresh.evaluate(o));  // everything scored anew
  CHECK(reused.tasks == scored.tasks);
  CHECK(reused.model == scored.model);
  CHECK(reused.model != before.model);  // the model trained in between
  for (const auto* r : {&reused, &before}) {
    CHECK(r->ridge_oracle == scored.ridge_oracle);
    CHECK(r->least_squares == scored.least_squares);
    CHECK(r->ridge_constant == scored.ridge_constant);
    CHECK(r->adarr == scored.adarr);
    CHECK(r->tunedrr == scored.tunedrr);
    CHECK(r->tunedrr_factor == scored.tunedrr_factor);
    CHECK(r->tunedrr_cap == scored.tunedrr_cap);
  }
  // Other tasks (seed, noise, count) or other baseline settings are scored, not taken.
  const auto other_seed = must(again.evaluate({.tasks = o.tasks, .seed = 6, .tuning_tasks = 64}));
  const auto other_sigma = must(again.evaluate({.tasks = o.tasks, .seed = 5, .sigma = 0.5f, .tuning_tasks = 64}));
  const auto other_count = must(again.evaluate({.tasks = 100, .seed = 5, .tuning_tasks = 64}));
  const auto other_lambda =
      must(again.evaluate({.tasks = o.tasks, .seed = 5, .constant_lambda = 2.0, .tuning_tasks = 64}));
  CHECK(other_seed.least_squares != reused.least_squares);
  CHECK(other_sigma.ridge_oracle != reused.ridge_oracle);
  CHECK(other_count.least_squares != reused.least_squares);
  CHECK(other_lambda.ridge_constant != reused.ridge_constant);
  CHECK(other_lambda.least_squares == reused.least_squares);
}

GPU_TEST_CASE("icl: the gradient reduction sums every model's tasks, read as texels or from storage", "[icl]") {
  using namespace rill::icl::detail;
  // Whole numbers, so every order of addition gives the exact sum: a task counted twice or missed
  // (the texel form's first and last texels of a row hold other rows' elements) shows.
  struct Family {
    const char* variant;
    const char* plan;
    bool texels;  // where the device backs 4-element f32 texel views
  };
  for (const Family& f : {Family{"cpu", "", true}, Family{"cpu", "icl_texel=off", false}, Family{"gpu", "", false}}) {
    auto options = rill_test::validated_options();
    options.kernel_variant = f.variant;
    options.kernel_plan = f.plan;
    auto ctx = rill_test::make_context(options);
    const bool subgroups = ctx.device().caps.subgroup_arithmetic;
    const bool texels = f.texels && ctx.device().caps.texel_buffer_f32x4 && subgroups;
    const std::string storage = subgroups ? "icl/icl_grad_reduce" : "icl/icl_grad_reduce_nosubgroup";
    // 8 parameters: rows of 37 or 131 tasks start at every offset within a texel.
    const TrainConfig c = small_config(1, 1, 1, 1, Parameterization::kFull, Convention::kVladymyrov, 8);
    const Shape shape = Shape::of(c);
    const Recorder rec(c, shape);
    for (const uint32_t models : {1u, 3u}) {
      for (const uint32_t tasks : {1u, 3u, 37u, 64u, 131u}) {
        INFO(f.variant << " " << f.plan << ": " << models << " models of " << tasks << " tasks");
        const Workspace ws = must(Workspace::create(ctx, shape, tasks, models));
        const uint64_t per_param = uint64_t(models) * ws.model_stride;
        std::vector<float> partials(ws.partials.element_count()), task_loss(ws.batch);
        for (size_t e = 0; e < partials.size(); ++e) partials[e] = float(int(e % 97) - 48);
        for (size_t t = 0; t < task_loss.size(); ++t) task_loss[t] = float(t % 13);
        REQUIRE(ctx.upload_floats(ws.partials, partials).is_ok());
        REQUIRE(ctx.upload_floats(ws.task_loss, task_loss).is_ok());
        const std::string kernel = rill_test::kernel_of(ctx, [&](rill::Sequence& seq) { return rec.reduce(seq, ws); });
        CHECK(kernel == (texels ? "icl/icl_grad_reduce_tx" : storage));
        auto seq = ctx.sequence().value();
        REQUIRE(rec.reduce(seq, ws).is_ok());
        auto reduced = seq.download(ws.reduced).value();
        REQUIRE(seq.run().is_ok());
        const std::vector<float> got = seq.read_floats(reduced).value();
        std::vector<float> want;
        for (uint32_t m = 0; m < models; ++m) {
          const uint64_t first = uint64_t(m) * ws.model_stride;
          for (uint32_t i = 0; i < shape.params; ++i) {
            double sum = 0.0;
            for (uint32_t t = 0; t < tasks; ++t) sum += partials[i * per_param + first + t];
            want.push_back(float(sum));
          }
          double loss = 0.0;
          for (uint32_t t = 0; t < tasks; ++t) loss += task_loss[first + t];
          want.push_back(float(loss) / float(tasks));  // the kernel's f32 division
        }
        CHECK(same_bits(got, want));
      }
    }
  }
}

GPU_TEST_CASE("icl: a workspace made for evaluation keeps no gradients and refuses a backward pass", "[icl]") {
  using namespace rill::icl::detail;
  auto ctx = rill_test::make_context();
  const TrainConfig c = small_config(3, 6, 2, 1, Parameterization::kFull, Convention::kVladymyrov, 8);
  const Shape shape = Shape::of(c);
  const Recorder rec(c, shape);
  const ModelState m = must(ModelState::create(ctx, shape, {&c, 1}));
  const Workspace training = must(Workspace::create(ctx, shape, 37));
  const Workspace evaluation = must(Workspace::create(ctx, shape, 37, 1, /*backward=*/false));
  // Whole 4-element texels (37 tasks: 37 x 2 x 16 x 2 = 2368 elements).
  CHECK(training.mats.element_count() == uint64_t(shape.layers) * 2 * shape.width * shape.width * training.batch);
  CHECK(evaluation.mats.element_count() == 4);
  for (const rill::Tensor* t : {&evaluation.grad_a, &evaluation.grad_b, &evaluation.partials})
    CHECK(t->element_count() == 4);
  CHECK(training.partials.element_count() == (uint64_t(shape.params) * training.batch + 3) / 4 * 4);
  auto seq = ctx.sequence().value();
  CHECK(rec.forward(seq, evaluation, m).is_ok());
  CHECK(rec.loss(seq, evaluation).is_ok());
  for (const rill::Status& refused : {rec.backward(seq, evaluation, m), rec.reduce(seq, evaluation)}) {
    CHECK(refused.code() == rill::StatusCode::kFailedPrecondition);
    CHECK(refused.message().find("without room") != std::string::npos);
  }
  CHECK(seq.run().is_ok());
}

GPU_TEST_CASE("icl: a resumed checkpoint continues bit for bit", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 8, 2, 1, Parameterization::kFull, Convention::kAhn, 24);
  c.read_every = 4;
  const std::string path = rill_test::temp_path("icl-checkpoint.safetensors");

  auto straight = must(Trainer::create(ctx, c));
  const auto full = must(straight.train(20));
  REQUIRE(full.size() == 20);

  auto first = must(Trainer::create(ctx, c));
  must(first.train(9));
  REQUIRE(first.save_checkpoint(path).is_ok());
  auto resumed = must(Trainer::resume(ctx, path));
  CHECK(resumed.step() == 9);
  const auto rest = must(resumed.train(11));
  REQUIRE(rest.size() == 11);
  for (size_t i = 0; i < rest.size(); ++i) {
    CHECK(rest[i].step == full[9 + i].step);
    CHECK(std::memcmp(&rest[i].loss, &full[9 + i].loss, sizeof(float)) == 0);
  }
  CHECK(same_bits(resumed.parameters().value(), straight.parameters().value()));

  // Damaged and foreign files are refused with a message, never loaded.
  std::vector<uint8_t> bytes;
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    int ch;
    while ((ch = std::fgetc(f)) != EOF) bytes.push_back(uint8_t(ch));
    std::fclose(f);
  }
  auto write = [&](const std::vector<uint8_t>& b) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(b.data(), 1, b.size(), f);
    std::fclose(f);
  };
  write(std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  auto truncated = Trainer::resume(ctx, path);
  REQUIRE_FALSE(truncated.is_ok());
  CHECK(truncated.status().message().find(path) != std::string::npos);

  rill::SafetensorsWriter other;
  REQUIRE(other.add_floats("params", {3}, std::vector<float>{1, 2, 3}).is_ok());
  REQUIRE(other.write(path).is_ok());
  auto foreign = Trainer::resume(ctx, path);
  REQUIRE_FALSE(foreign.is_ok());
  CHECK(foreign.status().message().find("not a rill ICL checkpoint") != std::string::npos);
  std::remove(path.c_str());
}

namespace {

// A small model's checkpoint at `step`: parameters 0.1, moments 0, the other state words 0.
rill::icl::detail::Checkpoint small_checkpoint(uint32_t step) {
  rill::icl::detail::Checkpoint c;
  c.config = small_config(3, 5, 1, 1, Parameterization::kFull, Convention::kAhn, 8);
  const auto params = size_t(rill::icl::parameter_count(c.config.model, c.config.task.d));
  c.params.assign(params, 0.1f);
  c.moment1.assign(params, 0.0f);
  c.moment2.assign(params, 0.0f);
  c.state.assign(rill::gpu::kIclStateWords, 0u);
  c.state[rill::gpu::kIclStateStep] = step;
  return c;
}

}  // namespace

TEST_CASE("icl: a checkpoint whose state words contradict themselves is refused", "[icl]") {
  using rill::icl::detail::Checkpoint;
  namespace gpu = rill::gpu;
  Checkpoint good = small_checkpoint(40);
  const float power = 0.5f;
  std::memcpy(&good.state[gpu::kIclStateBeta1Power], &power, 4);
  std::memcpy(&good.state[gpu::kIclStateBeta2Power], &power, 4);
  const std::string path = rill_test::temp_path("icl-state-words.safetensors");
  auto refused = [&](uint32_t word, uint32_t value) {
    Checkpoint c = good;
    c.state[word] = value;
    REQUIRE(rill::icl::detail::write_checkpoint(path, c).is_ok());
    const auto read = rill::icl::detail::read_checkpoint(path);
    return read.is_ok() ? std::string() : read.status().message();
  };
  REQUIRE(rill::icl::detail::write_checkpoint(path, good).is_ok());
  REQUIRE(rill::icl::detail::read_checkpoint(path).is_ok());
  uint32_t bits = 0;
  // A halted model whose halted step is not its step (the curve would be read up to it: 4e9
  // records), more skipped batches than steps, a power of beta that is NaN or above 1.
  Checkpoint halted = good;
  halted.state[gpu::kIclStateHalted] = 1;
  halted.state[gpu::kIclStateHaltedStep] = 40;
  REQUIRE(rill::icl::detail::write_checkpoint(path, halted).is_ok());
  CHECK(rill::icl::detail::read_checkpoint(path).is_ok());
  good = halted;
  CHECK(refused(gpu::kIclStateHaltedStep, 0xFFFFFF00u).find("halted at step") != std::string::npos);
  CHECK(refused(gpu::kIclStateSkipped, 41).find("skipped") != std::string::npos);
  const float nan = NAN, three = 3.0f;
  std::memcpy(&bits, &nan, 4);
  CHECK(refused(gpu::kIclStateBeta1Power, bits).find("power of beta") != std::string::npos);
  std::memcpy(&bits, &three, 4);
  CHECK(refused(gpu::kIclStateBeta2Power, bits).find("outside [0, 1]") != std::string::npos);
  CHECK(refused(gpu::kIclStateStep, 0xFFFFFFF0u).find("end of its range") != std::string::npos);
  // A negative second moment (a mean of squares): refused, not a NaN update later.
  Checkpoint negative = good;
  negative.moment2[3] = -1e-3f;
  REQUIRE(rill::icl::detail::write_checkpoint(path, negative).is_ok());
  const auto read = rill::icl::detail::read_checkpoint(path);
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().message().find("'moment2' holds a negative value at flat index 3") != std::string::npos);
  // A good checkpoint copied with one change: a step metadata that is not the state's, or a tensor
  // the reader does not take (both were ignored).
  REQUIRE(rill::icl::detail::write_checkpoint(path, good).is_ok());
  auto copied_with = [&](const std::string& step, bool extra_tensor) {
    auto file = rill::SafetensorsFile::open(path);
    REQUIRE(file.is_ok());
    rill::SafetensorsWriter w;
    for (const auto& [key, value] : file->metadata())
      REQUIRE(w.set_metadata(key, key == "step" ? step : value).is_ok());
    for (const rill::SafetensorsEntry& e : file->entries())
      REQUIRE(w.add(e.name, e.dtype, e.shape, file->bytes(e)).is_ok());
    if (extra_tensor) REQUIRE(w.add_floats("moment3", {1}, std::vector<float>{0.0f}).is_ok());
    const std::string copy = path + ".copy";
    REQUIRE(w.write(copy).is_ok());
    const auto r = rill::icl::detail::read_checkpoint(copy);
    std::remove(copy.c_str());
    return r.is_ok() ? std::string() : r.status().message();
  };
  CHECK(copied_with("40", false).empty());
  CHECK(copied_with("39", false).find("'step' metadata ('39') is not its state's step counter 40") !=
        std::string::npos);
  CHECK(copied_with("40", true).find("an unknown tensor 'moment3'") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("icl: a checkpoint with a damaged byte is refused by its checksum; one without a checksum is read", "[icl]") {
  rill::icl::detail::Checkpoint c = small_checkpoint(7);
  c.task_set = "5 tasks, fnv1a 0123456789abcdef";
  const std::string path = rill_test::temp_path("icl-checksum.safetensors");
  REQUIRE(rill::icl::detail::write_checkpoint(path, c).is_ok());
  REQUIRE(rill::icl::detail::read_checkpoint(path).is_ok());
  // A copy with one parameter's lowest bit flipped (still a finite value), or its metadata changed.
  auto copied = [&](bool flip, const char* version, bool keep_checksum, const char* task_set) {
    auto file = rill::SafetensorsFile::open(path);
    REQUIRE(file.is_ok());
    rill::SafetensorsWriter w;
    for (const auto& [key, value] : file->metadata()) {
      if (key == "checksum" && !keep_checksum) continue;
      const std::string changed = key == "version" ? version : key == "task_set" ? task_set : value;
      REQUIRE(w.set_metadata(key, changed).is_ok());
    }
    for (const rill::SafetensorsEntry& e : file->entries()) {
      std::vector<uint8_t> bytes(file->bytes(e).begin(), file->bytes(e).end());
      if (flip && e.name == "params") bytes[5] ^= 1;
      REQUIRE(w.add(e.name, e.dtype, e.shape, bytes).is_ok());
    }
    const std::string copy = path + ".copy";
    REQUIRE(w.write(copy).is_ok());
    const auto r = rill::icl::detail::read_checkpoint(copy);
    std::remove(copy.c_str());
    return r.is_ok() ? std::string() : r.status().to_string();
  };
  const char* same_set = "5 tasks, fnv1a 0123456789abcdef";
  CHECK(copied(false, "2", true, same_set).empty());
  CHECK(copied(true, "2", true, same_set).find("DataLoss") != std::string::npos);
  CHECK(copied(true, "2", true, same_set).find("the checksum does not match") != std::string::npos);
  CHECK(copied(false, "2", true, "6 tasks, fnv1a 0123456789abcdef").find("checksum does not match") !=
        std::string::npos);
  CHECK(copied(false, "2", false, same_set).find("(saved none,") != std::string::npos);
  // Version 1 (before the checksum): read unchecked, with a warning.
  CHECK(copied(true, "1", false, same_set).empty());
  CHECK(copied(false, "3", true, same_set).find("unsupported version '3'") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("icl sampler: moments of every draw match their distributions", "[icl]") {
  // The CPU twin is bit-identical to the GPU sampler (tested above), so these are the GPU's moments.
  struct Moments {
    double n = 0, sum = 0, sq = 0;
    void add(double x) { n += 1, sum += x, sq += x * x; }
    double mean() const { return sum / n; }
    double var() const { return sq / n - mean() * mean(); }
  };
  const uint32_t d = 6, n = 9, tasks = 4000;
  ref::SamplerSpec spec;
  spec.seed = 99;
  spec.d = d;
  spec.n = n;
  spec.noise_kind = 1;
  spec.sigma_max = 2.0f;
  const ref::TaskBatch g = ref::sample_tasks(spec, 3, 0, tasks);
  Moments x, y_clean, sigma, residual;
  for (uint32_t t = 0; t < tasks; ++t) {
    sigma.add(g.sigmas[t]);
    for (uint32_t i = 0; i <= n; ++i)
      for (uint32_t k = 0; k < d; ++k) x.add(g.tokens[(t * (n + 1) + i) * (d + 1) + k]);
    y_clean.add(g.targets[t]);  // <w, x_q>: variance d
    CHECK(g.tokens[(t * (n + 1) + n) * (d + 1) + d] == 0.0f);  // the query's label slot
  }
  CHECK(x.mean() == Approx(0.0).margin(0.01));
  CHECK(x.var() == Approx(1.0).epsilon(0.02));
  CHECK(y_clean.mean() == Approx(0.0).margin(0.1));
  CHECK(y_clean.var() == Approx(double(d)).epsilon(0.06));
  CHECK(sigma.mean() == Approx(1.0).epsilon(0.03));             // U(0, 2)
  CHECK(sigma.var() == Approx(4.0 / 12.0).epsilon(0.06));

  // Heavy tails: r2 = |x|^2 per token ~ Gamma(0.1, 10): mean 1, variance 10.
  spec.data_kind = 1;
  spec.noise_kind = 2;
  spec.categories = {1.0f, 3.0f, 5.0f};
  const ref::TaskBatch h = ref::sample_tasks(spec, 0, 0, tasks);
  Moments r2, cat;
  int per_value[3] = {0, 0, 0};
  for (uint32_t t = 0; t < tasks; ++t) {
    cat.add(h.sigmas[t]);
    per_value[h.sigmas[t] == 1.0f ? 0 : h.sigmas[t] == 3.0f ? 1 : 2]++;
    for (uint32_t i = 0; i <= n; ++i) {
      double s = 0;
      for (uint32_t k = 0; k < d; ++k) s += double(h.tokens[(t * (n + 1) + i) * (d + 1) + k]) * h.tokens[(t * (n + 1) + i) * (d + 1) + k];
      r2.add(s);
    }
  }
  CHECK(r2.mean() == Approx(1.0).epsilon(0.08));
  CHECK(r2.var() == Approx(10.0).epsilon(0.25));
  for (int c : per_value) CHECK(c == Approx(tasks / 3.0).epsilon(0.08));
}

GPU_TEST_CASE("icl: tasks from a file give the reference's loss, gradient and predictions", "[icl]") {
  auto ctx = rill_test::make_context();
  const TrainConfig c = small_config(4, 11, 2, 2, Parameterization::kFull, Convention::kVladymyrov, 8);
  auto trainer = must(Trainer::create(ctx, c));
  const ref::TaskBatch batch = ref::sample_tasks(sampler_spec(c, 5), 0, 0, 53);
  TaskSet set{.d = 4, .n = 11, .tasks = 53, .tokens = batch.tokens, .targets = batch.targets, .sigmas = batch.sigmas};
  const std::string path = rill_test::temp_path("icl-tasks.safetensors");
  REQUIRE(save_task_set(path, set).is_ok());
  const TaskSet loaded = must(load_task_set(path));
  CHECK(same_bits(loaded.tokens, set.tokens));
  CHECK(same_bits(loaded.sigmas, set.sigmas));

  const auto run = must(trainer.run_on(loaded));
  std::vector<double> grad, preds;
  const std::vector<double> params = to_double(trainer.parameters().value());
  const double loss = ref::loss_and_gradient(ref_shape(c), params, batch.tokens, batch.targets, grad);
  ref::forward(ref_shape(c), params, batch.tokens, batch.targets, &preds);
  CHECK(run.loss == Approx(loss).epsilon(2e-4));
  CHECK(rel_err(grad, run.gradient) < 5e-4);
  CHECK(rel_err(preds, run.predictions) < 2e-4);
  CHECK(run.report.tasks == 53);
  CHECK(run.report.model == Approx(loss).epsilon(2e-4));
  CHECK(std::isfinite(run.report.ridge_oracle));

  // Wrong shapes and bad values are refused with the tensor named; so are a set built in memory
  // with a non-finite value or a label in a query token, and options with bad numbers.
  CHECK_FALSE(trainer.run_on(TaskSet{.d = 3, .n = 11, .tasks = 1}).is_ok());
  auto refused = [&](const TaskSet& s, const EvalOptions& o, const char* text) {
    const auto r = trainer.run_on(s, o);
    REQUIRE_FALSE(r.is_ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(text) != std::string::npos);
  };
  TaskSet in_memory = set;
  in_memory.targets[3] = INFINITY;
  refused(in_memory, {}, "targets[3] is not finite");
  in_memory = set;
  in_memory.tokens[2 * size_t(12 * 5) - 1] = 0.5f;  // task 1's query label (12 tokens of 5)
  refused(in_memory, {}, "task 1's query token holds a label");
  refused(set, {.constant_lambda = std::nan("")}, "constant_lambda must be finite");
  refused(set, {.tune_tunedrr = false, .tunedrr_factor = -1.0}, "tunedrr_factor and tunedrr_cap");
  refused(set, {.sigma = 1e-40f}, "sigma must be finite and 0 or at least");
  CHECK(trainer.evaluate({.tasks = 10, .sigma = std::nanf("")}).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK_FALSE(trainer.sample_task_set(4, 1, INFINITY).is_ok());
  // save_task_set writes nothing load_task_set would refuse: not a NaN, a negative sigma, a label
  // in a query token, or a set past the limits (the good file stays).
  auto save_refused = [&](const TaskSet& s, const char* text) {
    const rill::Status st = save_task_set(path, s);
    REQUIRE_FALSE(st.is_ok());
    INFO(st.message());
    CHECK(st.message().find(text) != std::string::npos);
  };
  TaskSet unsaved = set;
  unsaved.tokens[7] = std::nanf("");
  save_refused(unsaved, "tokens[7] is not finite");
  unsaved = set;
  unsaved.sigmas[2] = -0.5f;
  save_refused(unsaved, "sigmas[2] is negative");
  unsaved = set;
  unsaved.tokens[2 * size_t(12 * 5) - 1] = 0.5f;
  save_refused(unsaved, "task 1's query token holds a label");
  save_refused(TaskSet{.d = 2000, .n = 11, .tasks = 1}, "larger than rill's limits");
  // Sizes whose product wrapped to 0 in 64 bits passed the size check with empty arrays.
  save_refused(TaskSet{.d = (1 << 22) - 1, .n = (1 << 22) - 1, .tasks = int64_t(1) << 20}, "larger than rill's limits");
  CHECK(same_bits(must(load_task_set(path)).tokens, set.tokens));
  // Files made elsewhere: a NaN is refused with its tensor named, and so is a tensor the reader
  // does not take (a misspelt `sigmas` left every ridge oracle NaN).
  auto written_by_hand = [&](const char* sigma_name, float first_x) {
    rill::SafetensorsWriter w;
    std::vector<float> xs(size_t(53 * 11 * 4), 0.5f), ys(size_t(53 * 11), 0.5f), qs(size_t(53 * 4), 0.5f),
        targets(53, 0.5f), sigmas(53, 0.1f);
    xs[0] = first_x;
    REQUIRE(w.add_floats("contexts", {53, 11, 4}, xs).is_ok());
    REQUIRE(w.add_floats("labels", {53, 11}, ys).is_ok());
    REQUIRE(w.add_floats("queries", {53, 4}, qs).is_ok());
    REQUIRE(w.add_floats("query_targets", {53}, targets).is_ok());
    REQUIRE(w.add_floats(sigma_name, {53}, sigmas).is_ok());
    REQUIRE(w.write(path).is_ok());
    const auto r = load_task_set(path);
    return r.is_ok() ? std::string() : r.status().message();
  };
  CHECK(written_by_hand("sigmas", 0.5f).empty());
  CHECK(written_by_hand("sigmas", std::nanf("")).find("'contexts'") != std::string::npos);
  CHECK(written_by_hand("sigma", 0.5f).find("an unknown tensor 'sigma'") != std::string::npos);
  std::remove(path.c_str());
}

GPU_TEST_CASE("icl: training on a task set walks it in order and matches the reference", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(3, 6, 2, 1, Parameterization::kFull, Convention::kAhn, 16);
  c.optimizer.lr = 1e-2f;
  const uint32_t set_tasks = 37;  // not a multiple of the batch: batches wrap around the end
  const ref::TaskBatch data = ref::sample_tasks(sampler_spec(c, 7), 0, 0, set_tasks);
  const TaskSet set{.d = 3, .n = 6, .tasks = set_tasks, .tokens = data.tokens, .targets = data.targets, .sigmas = {}};
  auto trainer = must(Trainer::create(ctx, c, &set));
  std::vector<double> params = to_double(trainer.parameters().value());
  const int steps = 12;
  const auto curve = must(trainer.train(steps));

  ref::AdamState adam;
  const size_t per_task = size_t(c.task.n + 1) * (c.task.d + 1);
  for (int s = 0; s < steps; ++s) {
    std::vector<float> tokens, targets;
    for (int t = 0; t < c.batch; ++t) {
      const size_t src = size_t(s * c.batch + t) % set_tasks;
      tokens.insert(tokens.end(), data.tokens.begin() + long(src * per_task), data.tokens.begin() + long((src + 1) * per_task));
      targets.push_back(data.targets[src]);
    }
    std::vector<double> grad;
    const double loss = ref::loss_and_gradient(ref_shape(c), params, tokens, targets, grad);
    CHECK(curve[size_t(s)].loss == Approx(loss).epsilon(1e-3));
    ref::clip_global_norm(grad, c.optimizer.clip_norm);
    ref::adam_step(params, grad, adam, c.optimizer.lr, c.optimizer.beta1, c.optimizer.beta2, c.optimizer.eps);
  }
  CHECK(rel_err(params, trainer.parameters().value()) < 1e-3);
  {  // A probe reads the set's batch of the next step (it sampled new tasks), and only that one.
    std::vector<float> tokens, targets;
    for (int t = 0; t < c.batch; ++t) {
      const size_t src = size_t(steps * c.batch + t) % set_tasks;
      tokens.insert(tokens.end(), data.tokens.begin() + long(src * per_task),
                    data.tokens.begin() + long((src + 1) * per_task));
      targets.push_back(data.targets[src]);
    }
    std::vector<double> grad;
    const double loss =
        ref::loss_and_gradient(ref_shape(c), to_double(trainer.parameters().value()), tokens, targets, grad);
    const auto probe = must(trainer.probe(steps));
    CHECK(probe.loss == Approx(loss).epsilon(2e-4));
    CHECK(rel_err(grad, probe.gradient) < 5e-4);
    CHECK(trainer.probe(3).status().message().find("batch of its next step (12)") != std::string::npos);
  }

  const TaskSet wrong{.d = 2, .n = 6, .tasks = 1, .tokens = std::vector<float>(21), .targets = {0.0f}, .sigmas = {}};
  auto refused = Trainer::create(ctx, c, &wrong);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("d=2") != std::string::npos);

  // A checkpoint names its set: training goes on only with the same set (none would sample other
  // tasks; another set is refused at once), exactly as the run would have; without it the model
  // can still be evaluated or exported, and a checkpoint it saves still names the set.
  const std::string path = rill_test::temp_path("icl-task-set-run.safetensors");
  REQUIRE(trainer.save_checkpoint(path).is_ok());
  TaskSet other = set;
  other.targets[5] += 1.0f;
  const auto foreign = Trainer::resume(ctx, path, &other);
  REQUIRE_FALSE(foreign.is_ok());
  CHECK(foreign.status().message().find("another task set") != std::string::npos);
  auto without = must(Trainer::resume(ctx, path));
  CHECK(without.train(1).status().message().find("resume it with that set to train on") != std::string::npos);
  CHECK(without.probe(steps).status().message().find("resume it with that set to probe") != std::string::npos);
  // Diagnostics measure on the config's task distribution: a set-trained model is diagnosed too.
  CHECK(rill::icl::diagnose(without, {.batches = 4, .reference_tasks = 16}).is_ok());
  const std::string copy = rill_test::temp_path("icl-task-set-run-copy.safetensors");
  REQUIRE(without.save_checkpoint(copy).is_ok());
  CHECK_FALSE(Trainer::resume(ctx, copy, &other).is_ok());
  std::remove(copy.c_str());
  // A grid's models sample their tasks: it refuses the set-trained checkpoint both ways in.
  for (const rill::Status& grid_refusal :
       {TrainerGrid::resume(ctx, std::vector<std::string>{path}).status(),
        must(TrainerGrid::create(ctx, std::vector<TrainConfig>{c})).load_checkpoint(0, path)}) {
    REQUIRE_FALSE(grid_refusal.is_ok());
    CHECK(grid_refusal.message().find("a grid's models sample their tasks") != std::string::npos);
  }
  auto resumed = must(Trainer::resume(ctx, path, &set));
  const auto more = must(trainer.train(3));
  const auto again = must(resumed.train(3));
  REQUIRE(more.size() == again.size());
  for (size_t s = 0; s < more.size(); ++s) CHECK(more[s].loss == again[s].loss);
  // And a run on sampled tasks refuses a set.
  auto sampled = must(Trainer::create(ctx, c));
  REQUIRE(sampled.save_checkpoint(path).is_ok());
  CHECK(Trainer::resume(ctx, path, &set).status().message().find("tasks sampled on the device") != std::string::npos);
  std::remove(path.c_str());
}

GPU_TEST_CASE("icl: diagnostics match central differences of the reference", "[icl]") {
  auto ctx = rill_test::make_context();
  TrainConfig c = small_config(2, 5, 2, 1, Parameterization::kFull, Convention::kAhn, 64);
  auto trainer = must(Trainer::create(ctx, c));
  must(trainer.train(20));
  const std::vector<float> before = trainer.parameters().value();
  const Diagnostics d = must(diagnose(trainer, {.batches = 16, .reference_tasks = 300, .step = 1e-2}));
  CHECK(same_bits(trainer.parameters().value(), before));  // restored
  // A step a float parameter cannot take (theta + h == theta gave 0/0) is refused.
  CHECK(diagnose(trainer, {.step = 1e-12}).status().message().find("a step in [2^-20, 1]") != std::string::npos);

  // The same quantities from the double-precision reference on the same task set.
  const TaskSet set = must(trainer.sample_task_set(300, DiagnosticsOptions{}.seed));
  const std::vector<double> theta = to_double(before);
  auto grad_at = [&](const std::vector<double>& p) {
    std::vector<double> g;
    ref::loss_and_gradient(ref_shape(c), p, set.tokens, set.targets, g);
    return g;
  };
  const std::vector<double> g = grad_at(theta);
  double gn = 0;
  for (double v : g) gn += v * v;
  CHECK(d.full_grad_norm == Approx(std::sqrt(gn)).epsilon(1e-3));
  REQUIRE(d.hessian_diagonal.size() == theta.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < theta.size(); ++i) {
    std::vector<double> plus = theta, minus = theta;
    plus[i] += 1e-4, minus[i] -= 1e-4;
    const double h = (grad_at(plus)[i] - grad_at(minus)[i]) / 2e-4;
    const double e = std::fabs(h - d.hessian_diagonal[i]);
    if (!(e <= worst)) worst = e;  // a NaN stays (std::max would drop it)
    scale = std::max(scale, std::fabs(h));
  }
  CHECK(worst < 2e-2 * scale);
  CHECK(d.robust_condition_number >= 1.0);
  CHECK(std::isfinite(d.directional_smoothness));
  CHECK(d.noise_norm_mean > 0.0);
  CHECK(d.noise_kurtosis > 1.0);
  CHECK(d.noise_tail_index > 0.0);
}
