// One ownership model: everything that needs the device (tensors, sequences, trainers, models and
// their sessions) shares the context's implementation, so the application's Context handle may be
// moved or destroyed first. The work goes on unchanged, and the device goes with the last holder.
#include <optional>
#include <vector>

#include "gpu_test.hpp"
#include "rill/icl.hpp"
#include "rill/lm.hpp"

namespace {

rill::icl::TrainConfig tiny_training() {
  rill::icl::TrainConfig c;
  c.task.d = 3;
  c.task.n = 6;
  c.model.layers = 2;
  c.batch = 32;
  c.seed = 77;
  c.read_every = 4;
  return c;
}

std::vector<float> losses(rill::icl::Trainer& t, int64_t steps) {
  auto records = t.train(steps);
  INFO(records.status().to_string());
  REQUIRE(records.is_ok());
  std::vector<float> out;
  for (const auto& r : *records) out.push_back(r.loss);
  return out;
}

}  // namespace

GPU_TEST_CASE("a trainer outlives its Context handle and trains as if it were there", "[lifetime][icl]") {
  auto kept = rill_test::make_context();
  auto with_context = rill::icl::Trainer::create(kept, tiny_training());
  REQUIRE(with_context.is_ok());
  const std::vector<float> expected = losses(*with_context, 6);

  std::optional<rill::Context> ctx(rill_test::make_context());
  auto trainer = rill::icl::Trainer::create(*ctx, tiny_training());
  REQUIRE(trainer.is_ok());
  rill::Context moved = std::move(*ctx);  // the handle moves ...
  ctx.reset();
  { rill::Context gone = std::move(moved); }  // ... and is destroyed
  CHECK(losses(*trainer, 6) == expected);
  CHECK(trainer->parameters().is_ok());
}

GPU_TEST_CASE("a model and its session outlive their Context handle", "[lifetime][lm]") {
  rill::lm::ModelConfig config;
  config.vocab = 29;
  config.width = 16;
  config.heads = 2;
  config.ffn_width = 24;
  config.layers = 2;
  config.layer_kinds = {rill::lm::LayerKind::kDiag, rill::lm::LayerKind::kNorm};
  config.block = 8;
  config.chunk = 4;
  REQUIRE(config.validate().is_ok());
  auto weights = rill::lm::Weights::random(config, 5);
  REQUIRE(weights.is_ok());
  const std::vector<uint32_t> prompt = {1, 4, 9, 16, 25, 7, 3};

  auto kept = rill_test::make_context();
  auto reference_model = rill::lm::Model::create(kept, *weights);
  REQUIRE(reference_model.is_ok());
  auto reference = reference_model->session().value().prefill(prompt);
  REQUIRE(reference.is_ok());

  std::optional<rill::Context> ctx(rill_test::make_context());
  auto model = rill::lm::Model::create(*ctx, *weights);
  REQUIRE(model.is_ok());
  auto session = model->session();
  REQUIRE(session.is_ok());
  ctx.reset();  // the application lets its handle go before the model
  auto logits = session->prefill(prompt);
  INFO(logits.status().to_string());
  REQUIRE(logits.is_ok());
  CHECK(*logits == *reference);
  CHECK(session->decode(2).is_ok());
}
