// The C API's training calls keep records a chunk of steps at a time (capi/record_chunks.hpp):
// losses across the chunks' ends land where one run of the C++ API puts them, for a trainer and
// for every row of a grid. The chunk is lowered to a few steps, so that the ends come cheaply.
#include <cmath>
#include <cstring>
#include <vector>

#include "capi/capi_common.hpp"
#include "capi/record_chunks.hpp"
#include "gpu_test.hpp"
#include "rill/icl.hpp"
#include "rill/rill.h"

namespace {

// Restores the chunk when the test ends, whatever it does.
struct ChunkOf {
  explicit ChunkOf(int64_t steps) : saved(rill::capi::record_chunk_steps.exchange(steps)) {}
  ~ChunkOf() { rill::capi::record_chunk_steps = saved; }
  int64_t saved;
};

}  // namespace

GPU_TEST_CASE("C API training across its record chunks gives one run's losses, for a trainer and a grid",
              "[capi][icl][gpu]") {
  const ChunkOf chunk(8);
  rill_context* ctx = rill::capi::make_handle(new rill_context{rill_test::make_context()});
  rill_icl_config config;
  rill_icl_config_init(&config, 1);
  config.d = 2;
  config.n = 3;
  config.batch = 16;
  config.read_every = 3;  // chunks of 6 steps: whole runs of read_every
  REQUIRE(rill::capi::record_chunk(config.read_every) == 6);
  REQUIRE(rill::capi::record_chunk(config.read_every, 2) == 3);    // the grid's two models share a chunk
  REQUIRE(rill::capi::record_chunk(config.read_every, 100) == 3);  // never below one run
  constexpr int64_t kSteps = 6 * 3 + 4;  // three chunk ends and a part chunk

  // The C++ API's one call: the losses every split must reproduce.
  rill::icl::TrainConfig same = rill::icl::ahn_setting(rill::icl::AhnSetting::k1);
  same.task.d = 2;
  same.task.n = 3;
  same.batch = 16;
  same.read_every = 3;
  auto reference_trainer = rill::icl::Trainer::create(ctx->context, same);
  REQUIRE(reference_trainer.is_ok());
  auto records = reference_trainer->train(kSteps);
  REQUIRE(records.is_ok());
  REQUIRE(records->size() == size_t(kSteps));
  std::vector<float> expected;
  for (const auto& r : *records) expected.push_back(r.loss);

  rill_icl_trainer* trainer = nullptr;
  REQUIRE(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_OK);
  std::vector<float> losses(kSteps, -1.0f), norms(kSteps, -1.0f);
  CHECK(rill_icl_train(trainer, kSteps, losses.data(), norms.data()) == RILL_OK);
  CHECK(losses == expected);
  for (float g : norms) CHECK(std::isfinite(g));
  // A call that starts within a chunk (steps 22 .. 31) continues the curve.
  auto more = reference_trainer->train(10);
  REQUIRE(more.is_ok());
  std::vector<float> next(10, -1.0f);
  CHECK(rill_icl_train(trainer, 10, next.data(), nullptr) == RILL_OK);
  for (size_t i = 0; i < next.size(); ++i) CHECK(next[i] == (*more)[i].loss);

  rill_icl_config pair[2] = {config, config};
  rill_icl_grid* grid = nullptr;
  REQUIRE(rill_icl_grid_create(ctx, pair, 2, &grid) == RILL_OK);
  std::vector<float> rows(2 * kSteps, -1.0f);
  CHECK(rill_icl_grid_train(grid, kSteps, rows.data()) == RILL_OK);
  CHECK(std::vector<float>(rows.begin(), rows.begin() + kSteps) == expected);
  CHECK(std::vector<float>(rows.begin() + kSteps, rows.end()) == expected);
  CHECK(rill_icl_grid_train(grid, kSteps, nullptr) == RILL_OK);  // no buffer: the same chunks
  int64_t step = 0;
  CHECK(rill_icl_step(trainer, &step) == RILL_OK);
  CHECK(step == kSteps + 10);

  rill_icl_grid_destroy(grid);
  rill_icl_trainer_destroy(trainer);
  rill_context_destroy(ctx);
}
