// The ICL layer kernels in each of their forms against the double-precision reference
// (engine/ref/icl.hpp) and against each other: a task per invocation, the workgroup kernels with
// their products an output per invocation or in blocks, fused layers and the query-only top layer.
#include "gpu_test.hpp"
#include "icl.hpp"
#include "icl_test.hpp"
#include "rill/icl.hpp"

using namespace rill::icl;
using namespace icl_test;
namespace ref = rill::ref::icl;

GPU_TEST_CASE("icl: forward and backward match the double-precision reference", "[icl]") {
  struct Case {
    int d, n, layers, heads;
  };
  // Both layer-kernel variants: a task per invocation (CPU drivers) and a workgroup per task (GPUs),
  // its products an output per invocation or in blocks of 3 x 3 (partial at d 1, 3 and 10).
  for (const char* variant :
       {"icl_layers=per-task", "icl_layers=per-workgroup", "icl_layers=per-workgroup,icl_block=3"}) {
    // Under emulation the 48 models' unrolled kernels took qemu 13 minutes to compile: the device's
    // own variant only (the forced ones are the same shaders, run natively in every other suite).
    if (rill_test::emulated() && std::string_view(variant).starts_with("icl_layers=per-workgroup")) {
      WARN("the workgroup layer kernels left out under emulation (compile time)");
      continue;
    }
    auto options = rill_test::validated_options();
    options.kernel_plan = variant;
    auto ctx = rill_test::make_context(options);
    for (Parameterization p : {Parameterization::kFull, Parameterization::kDiag, Parameterization::kGdPlusPlus}) {
      for (Convention conv : {Convention::kAhn, Convention::kVladymyrov}) {
        for (const Case& k : {Case{1, 1, 1, 1}, Case{3, 7, 2, 2}, Case{5, 20, 3, 1}, Case{10, 13, 2, 3}}) {
          INFO("param=" << name(p) << " conv=" << int(conv) << " d=" << k.d << " n=" << k.n << " L=" << k.layers
                        << " H=" << k.heads);
          const TrainConfig c = small_config(k.d, k.n, k.layers, k.heads, p, conv, 37);
          auto trainer = must(Trainer::create(ctx, c));
          const std::vector<float> params = trainer.parameters().value();
          auto probe = must(trainer.probe(3));
          const ref::TaskBatch batch = ref::sample_tasks(sampler_spec(c), 3, 0, uint32_t(c.batch));
          std::vector<double> grad, preds;
          const double loss =
              ref::loss_and_gradient(ref_shape(c), to_double(params), batch.tokens, batch.targets, grad);
          ref::forward(ref_shape(c), to_double(params), batch.tokens, batch.targets, &preds);
          CHECK(probe.loss == Approx(loss).epsilon(2e-4));
          CHECK(rel_err(preds, probe.predictions) < 2e-4);
          CHECK(rel_err(grad, probe.gradient) < 5e-4);
        }
      }
    }
  }
}

GPU_TEST_CASE("icl: the workgroup kernels' products in blocks of outputs give the bits of an output per invocation",
              "[icl]") {
  // Every output's sum runs over the same terms in the same order whichever invocation holds it
  // (icl_wg_common.glsl's ICL_BLOCKS), so blocks change no bit. The Vladymyrov width (11) leaves a
  // partial last block at every size; FULL with two heads and GD++ (whose per-head terms are not
  // products) over the 3 layers in one dispatch, the top one computing only what the loss reads.
  for (Parameterization p : {Parameterization::kFull, Parameterization::kGdPlusPlus}) {
    const TrainConfig c = small_config(10, 13, 3, p == Parameterization::kFull ? 2 : 1, p, Convention::kVladymyrov, 37);
    std::vector<float> reference;
    for (int block = 1; block <= 4; ++block) {
      INFO("param=" << name(p) << " icl_block=" << block);
      auto options = rill_test::validated_options();
      options.kernel_plan = "icl_layers=per-workgroup,icl_layers_per_dispatch=3,icl_block=" + std::to_string(block);
      auto ctx = rill_test::make_context(options);
      auto trainer = must(Trainer::create(ctx, c));
      REQUIRE(must(trainer.train(4)).size() == 4);
      const std::vector<float> params = must(trainer.parameters());
      if (block == 1) {
        reference = params;
        continue;
      }
      CHECK(same_bits(params, reference));
    }
  }
}

GPU_TEST_CASE(
    "icl: the workgroup layer kernels, fused layers and the query-only top layer compute what whole layers one per "
    "dispatch do",
    "[icl][sweep]") {
  // The baseline: a task per invocation, one layer per dispatch, the top layer computed whole.
  auto baseline = rill_test::validated_options();
  baseline.kernel_plan = "icl_layers=per-task,icl_layers_per_dispatch=1,icl_top_layer=full,icl_texel=off";
  auto ctx_base = rill_test::make_context(baseline);
  // Workgroups of one task and of several (odd batches leave some slots of the last workgroup
  // idle; 4 x 32 invocations fit every limit profile; 8 x 32, forced and the plan's own choice
  // here, are a sweep's: the release build's lavapipe holds them), one layer per dispatch and several (3 layers in
  // dispatches of 2 + 1 hand the gradient over between dispatches), and the per-task kernels with fused layers, reading
  // as texels where the device backs them (CPU drivers, or forced on) and from storage buffers. All but the last
  // compute only what the loss reads of the top layer (icl_layer_fwd.glsl), which must give the same losses, gradients
  // and predictions as the whole layer.
  const char* variants[] = {
      "icl_layers=per-task,icl_layers_per_dispatch=1",
      "icl_layers=per-workgroup,icl_tasks_per_workgroup=1,icl_layers_per_dispatch=1",
      "icl_layers=per-workgroup,icl_tasks_per_workgroup=4,icl_layers_per_dispatch=2",
      "icl_layers=per-workgroup,icl_tasks_per_workgroup=4,icl_layers_per_dispatch=3",
      "icl_layers=per-workgroup,icl_tasks_per_workgroup=8",
      "icl_layers=per-workgroup",
      "icl_layers=per-task,icl_layers_per_dispatch=2",
      "icl_layers=per-task,icl_layers_per_dispatch=3",
      "icl_layers=per-task,icl_layers_per_dispatch=1,icl_texel=off",
      "icl_layers=per-task,icl_layers_per_dispatch=3,icl_texel=off",
      "icl_layers=per-workgroup,icl_top_layer=full",
      // Outputs in blocks per invocation: widths of 5 and 10 tokens leave every block size a partial
      // last block (clamped rows and columns, computed and not stored), with one task per workgroup
      // and several, fused layers, and the top layer whole.
      "icl_layers=per-workgroup,icl_block=2,icl_tasks_per_workgroup=8,icl_layers_per_dispatch=2",
      "icl_layers=per-workgroup,icl_block=3",
      "icl_layers=per-workgroup,icl_block=3,icl_top_layer=full,icl_layers_per_dispatch=1",
      "icl_layers=per-workgroup,icl_block=4,icl_tasks_per_workgroup=1",
  };
  for (const char* variant : variants) {
    auto options = rill_test::validated_options();
    options.kernel_plan = variant;
    auto ctx = rill_test::make_context(options);
    // Odd shapes (tasks and widths off any lane multiple), several heads, every parameterisation,
    // a few training steps so later layers see trained parameters.
    for (Parameterization p : {Parameterization::kFull, Parameterization::kDiag, Parameterization::kGdPlusPlus}) {
      for (int heads : {1, 3}) {
        INFO(variant << " param=" << name(p) << " heads=" << heads);
        TrainConfig c = small_config(4, 9, 3, heads, p, Convention::kAhn, 29);
        c.read_every = 5;
        auto a = must(Trainer::create(ctx, c));
        auto b = must(Trainer::create(ctx_base, c));
        const auto curve_a = must(a.train(5));
        const auto curve_b = must(b.train(5));
        REQUIRE(curve_a.size() == 5);
        REQUIRE(curve_b.size() == 5);
        for (size_t i = 0; i < curve_a.size(); ++i) CHECK(curve_a[i].loss == Approx(curve_b[i].loss).epsilon(1e-5));
        const auto probe_a = must(a.probe(7));
        const auto probe_b = must(b.probe(7));
        CHECK(rel_err(to_double(probe_b.gradient), probe_a.gradient) < 1e-5);
        CHECK(rel_err(to_double(probe_b.predictions), probe_a.predictions) < 1e-5);
      }
    }
  }
}
