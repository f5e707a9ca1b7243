// TrainerGrid: many models in the same dispatches. Each model must train bit for bit as it does
// alone in a Trainer (curves, parameters, optimizer state through checkpoints), halt alone, and
// move between the two classes through checkpoints; bad input is refused with a message.
#include <cstring>
#include <filesystem>

#include "access.hpp"
#include "gpu_test.hpp"
#include "icl/trainer_grid_impl.hpp"
#include "icl_test.hpp"
#include "rill/icl.hpp"

namespace {

using namespace rill::icl;
using icl_test::must;
using icl_test::same_bits;

bool same_curve(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].step != b[i].step || std::memcmp(&a[i].loss, &b[i].loss, 4) != 0 ||
        std::memcmp(&a[i].grad_norm, &b[i].grad_norm, 4) != 0)
      return false;
  return true;
}

TrainConfig base_config(Parameterization p, int layers) {
  TrainConfig c;
  c.task.d = 3;
  c.task.n = 5;
  c.task.noise = NoiseKind::kUniform;
  c.task.sigma_max = 0.5f;
  c.model = {.layers = layers, .heads = 1, .param = p, .convention = Convention::kAhn, .init_std = 0.2f};
  c.batch = 7;  // odd: model m's tasks start at 7 m, off any alignment
  c.read_every = 3;
  c.optimizer.lr = 3e-3f;
  return c;
}

// A grid of two cohorts whose models differ in everything a cohort allows: seed, noise, learning
// rate, initialisation, clipping, optimizer moments.
std::vector<TrainConfig> mixed_grid() {
  std::vector<TrainConfig> grid;
  TrainConfig a = base_config(Parameterization::kFull, 2);
  a.seed = 11;
  grid.push_back(a);
  TrainConfig b = base_config(Parameterization::kDiag, 1);
  b.seed = 12;
  b.task.noise = NoiseKind::kCategorical;
  b.task.categories = {0.1f, 0.7f};
  grid.push_back(b);
  TrainConfig c = a;
  c.seed = 13;
  c.task.sigma_max = 1.5f;
  c.optimizer.lr = 1e-2f;
  c.optimizer.beta2 = 0.99f;
  c.model.init_std = 0.1f;
  grid.push_back(c);
  TrainConfig d = a;
  d.seed = 14;
  d.task.noise = NoiseKind::kNone;
  d.optimizer.clip_norm = 0.0f;
  grid.push_back(d);
  return grid;
}

}  // namespace

GPU_TEST_CASE("icl grid: every model trains bit for bit as it does alone", "[icl][grid]") {
  // With either layer-kernel variant (a task per invocation, or a workgroup per task as on GPUs, its
  // products an output per invocation or in blocks).
  for (const char* variant :
       {"icl_layers=per-task", "icl_layers=per-workgroup", "icl_layers=per-workgroup,icl_block=3"}) {
    INFO(variant);
    auto options = rill_test::validated_options();
    options.kernel_plan = variant;
    auto ctx = rill_test::make_context(options);
    const std::vector<TrainConfig> configs = mixed_grid();
    auto grid = must(TrainerGrid::create(ctx, configs));
    REQUIRE(grid.models() == 4);
    REQUIRE(grid.cohorts() == 2);
    const auto curves = must(grid.train(7));  // two reads of 3 steps and one of 1
    REQUIRE(curves.size() == configs.size());
    for (int m = 0; m < grid.models(); ++m) {
      INFO("model " << m);
      auto alone = must(Trainer::create(ctx, configs[size_t(m)]));
      const auto curve = must(alone.train(7));
      REQUIRE(curves[size_t(m)].size() == 7);
      CHECK(same_curve(curves[size_t(m)], curve));
      CHECK(same_bits(must(grid.parameters(m)), must(alone.parameters())));
      CHECK(grid.step(m) == 7);
      CHECK(grid.status(m).is_ok());
    }
    // The models really differ: a grid that trained one model's batch for all would pass the loop
    // above only if every curve were the same.
    CHECK_FALSE(same_curve(curves[0], curves[2]));
  }
}

GPU_TEST_CASE("icl grid: a model halted by a non-finite step stops alone", "[icl][grid]") {
  auto ctx = rill_test::make_context();
  std::vector<TrainConfig> configs = {base_config(Parameterization::kFull, 2), base_config(Parameterization::kFull, 2)};
  configs[1].seed = 2;
  configs[0].optimizer = {.kind = OptimizerKind::kSgd, .lr = 1e6f, .clip_norm = 0.0f};  // diverges
  configs[1].optimizer.kind = OptimizerKind::kSgd;
  for (TrainConfig& c : configs) c.read_every = 4;  // reads after the halt, within this call and the next
  auto grid = must(TrainerGrid::create(ctx, configs));
  const auto curves = must(grid.train(30));
  const rill::Status halted = grid.status(0);
  REQUIRE_FALSE(halted.is_ok());
  CHECK(halted.message().find("not finite") != std::string::npos);
  REQUIRE(curves[0].size() < 26);  // halted before the last reads
  REQUIRE_FALSE(curves[0].empty());
  // Each step once, up to the halted one: the reads after the halt add nothing.
  for (size_t s = 0; s < curves[0].size(); ++s) CHECK(curves[0][s].step == int64_t(s));
  CHECK(grid.step(0) == curves[0].back().step);
  CHECK(grid.status(1).is_ok());
  REQUIRE(curves[1].size() == 30);
  auto alone = must(Trainer::create(ctx, configs[1]));
  CHECK(same_curve(curves[1], must(alone.train(30))));
  CHECK(same_bits(must(grid.parameters(1)), must(alone.parameters())));
  // A later call: the halted model gains no records, the other trains on.
  const auto more = must(grid.train(8));
  CHECK(more[0].empty());
  CHECK(more[1].size() == 8);
}

// A run the device took whose progress the host did not read (its download failed): the next call
// reads where each model is, so its records are its own steps, none repeated or out of the ring.
GPU_TEST_CASE("icl grid: a call after a failed progress read records its own steps", "[icl][grid]") {
  auto ctx = rill_test::make_context();
  const std::vector<TrainConfig> configs = mixed_grid();
  auto grid = must(TrainerGrid::create(ctx, configs));
  auto twin = must(TrainerGrid::create(ctx, configs));
  must(grid.train(3));
  must(twin.train(6));
  auto& im = rill::detail::Access::impl_of(grid);
  REQUIRE(im.step_sequence->run(3).is_ok());  // what train(3) does before its reads
  im.unread = true;                           // as a failed read leaves it
  const auto records = must(grid.train(2));
  const auto expected = must(twin.train(2));
  for (int m = 0; m < grid.models(); ++m) {
    INFO("model " << m);
    CHECK(grid.step(m) == 8);
    REQUIRE(records[size_t(m)].size() == 2);
    CHECK(records[size_t(m)][0].step == 6);
    CHECK(same_curve(records[size_t(m)], expected[size_t(m)]));
  }
}

GPU_TEST_CASE("icl grid: checkpoints move models between a grid and a trainer, bit for bit", "[icl][grid]") {
  auto ctx = rill_test::make_context();
  const std::vector<TrainConfig> configs = mixed_grid();
  // The process's own scratch directory: the per-case run and the limit-profile runs of the
  // whole suite execute this case at the same time (a shared fixed path let their writes collide).
  const auto dir = std::filesystem::path(rill_test::temp_dir()) / "icl_grid";
  std::filesystem::create_directories(dir);
  auto grid = must(TrainerGrid::create(ctx, configs));
  must(grid.train(4));
  std::vector<std::string> paths;
  for (int m = 0; m < grid.models(); ++m) {
    paths.push_back((dir / ("model" + std::to_string(m) + ".safetensors")).string());
    REQUIRE(grid.save_checkpoint(m, paths.back()).is_ok());
  }
  const auto rest = must(grid.train(5));

  // One model resumed alone continues as the grid did.
  auto alone = must(Trainer::resume(ctx, paths[2]));
  CHECK(alone.step() == 4);
  CHECK(same_curve(must(alone.train(5)), rest[2]));
  CHECK(same_bits(must(alone.parameters()), must(grid.parameters(2))));

  // The whole grid resumed from its files continues as the unbroken grid did; so does a copy
  // of one model taken out as a trainer.
  auto resumed = must(TrainerGrid::resume(ctx, paths));
  for (int m = 0; m < resumed.models(); ++m) CHECK(resumed.step(m) == 4);
  const auto again = must(resumed.train(5));
  for (int m = 0; m < grid.models(); ++m) {
    INFO("model " << m);
    CHECK(same_curve(again[size_t(m)], rest[size_t(m)]));
    CHECK(same_bits(must(resumed.parameters(m)), must(grid.parameters(m))));
  }
  // A grid started afresh takes one model's file; a file of another configuration is refused.
  auto partly = must(TrainerGrid::create(ctx, configs));
  REQUIRE(partly.load_checkpoint(2, paths[2]).is_ok());
  CHECK(partly.step(2) == 4);
  CHECK(partly.step(0) == 0);
  const rill::Status foreign = partly.load_checkpoint(1, paths[0]);
  CHECK(foreign.code() == rill::StatusCode::kInvalidArgument);
  CHECK(foreign.message().find("another configuration") != std::string::npos);

  auto copy = must(resumed.trainer(1));
  CHECK(copy.step() == 9);
  const auto eval_grid = must(resumed.evaluate(1, {.tasks = 50, .tune_tunedrr = false}));
  const auto eval_copy = must(copy.evaluate({.tasks = 50, .tune_tunedrr = false}));
  CHECK(eval_grid.model == eval_copy.model);
  CHECK(eval_grid.ridge_oracle == eval_copy.ridge_oracle);
  std::filesystem::remove_all(dir);
}

GPU_TEST_CASE("icl grid: each model's evaluation scores its own tasks, the baselines kept per distribution",
              "[icl][grid]") {
  auto ctx = rill_test::make_context();
  // Models with other noise (categorical, sigma_max 1.5, none) and one (model 3) sharing model 0's
  // settings but its noise: the grid's kept baselines must follow each model's distribution.
  auto grid = must(TrainerGrid::create(ctx, mixed_grid()));
  must(grid.train(2));
  const EvalOptions o{.tasks = 300, .tuning_tasks = 40};
  for (int round = 0; round < 2; ++round)  // the second round takes the baselines the first scored
    for (int m = 0; m < grid.models(); ++m) {
      INFO("round " << round << " model " << m);
      const auto through_grid = must(grid.evaluate(m, o));
      const auto alone = must(must(grid.trainer(m)).evaluate(o));
      CHECK(through_grid.model == alone.model);
      CHECK(through_grid.least_squares == alone.least_squares);
      CHECK(through_grid.tunedrr == alone.tunedrr);
      CHECK(through_grid.ridge_oracle == alone.ridge_oracle);
    }
}

GPU_TEST_CASE("icl grid: bad input is refused with a message", "[icl][grid]") {
  auto ctx = rill_test::make_context();
  CHECK(TrainerGrid::create(ctx, std::vector<TrainConfig>{}).status().code() == rill::StatusCode::kInvalidArgument);
  std::vector<TrainConfig> configs = {base_config(Parameterization::kFull, 1), base_config(Parameterization::kFull, 1)};
  configs[1].read_every = 4;
  auto mixed_reads = TrainerGrid::create(ctx, configs);
  REQUIRE_FALSE(mixed_reads.is_ok());
  CHECK(mixed_reads.status().message().find("read") != std::string::npos);
  configs[1] = configs[0];
  configs[1].batch = 0;
  auto bad = TrainerGrid::create(ctx, configs);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("model 1") != std::string::npos);
  configs[1] = configs[0];
  auto grid = must(TrainerGrid::create(ctx, configs));
  CHECK(grid.parameters(2).status().code() == rill::StatusCode::kOutOfRange);
  CHECK(grid.status(-1).code() == rill::StatusCode::kOutOfRange);
  CHECK(grid.config(2).status().code() == rill::StatusCode::kOutOfRange);
  CHECK(grid.config(1).value().batch == configs[1].batch);
  CHECK(grid.step(2) == -1);
  CHECK(grid.skipped_batches(-1) == -1);
  CHECK(grid.save_checkpoint(5, "unused.safetensors").code() == rill::StatusCode::kOutOfRange);
  CHECK(grid.train(-1).status().code() == rill::StatusCode::kInvalidArgument);
  CHECK(TrainerGrid::resume(ctx, std::vector<std::string>{"/nonexistent/model.safetensors"}).status().code() !=
        rill::StatusCode::kOk);
}
