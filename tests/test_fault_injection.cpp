// Allocation failure injected at every resource-creating call, one at a time, of a small workload,
// an ICL training step, a language-model prefill and decode, and a fork scoring a continuation:
// each failure is a clean ResourceExhausted, nothing leaks, and the context still works after.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "access.hpp"
#include "context_impl.hpp"
#include "fault_test_models.hpp"
#include "gpu_test.hpp"
#include "rill/files.hpp"
#include "rill/icl.hpp"
#include "rill/lm.hpp"
#include "rill/log.hpp"
#include "rill/ops/linear_attention.hpp"
#include "temp_path.hpp"

namespace {

using rill_test::small_icl_config;
using rill_test::small_lm_config;

// Tensors, uploads, a sequence with dispatches of new pipelines and a download.
rill::Status workload(rill::Context& ctx, int round, std::vector<float>* result) {
  const uint32_t n = 3000;
  RILL_ASSIGN_OR_RETURN(rill::Tensor x, ctx.tensor(rill::DType::kF32, {n}, "x"));
  RILL_ASSIGN_OR_RETURN(rill::Tensor y, ctx.tensor(rill::DType::kF32, {n}, "y", rill::MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(rill::Tensor big, ctx.tensor(rill::DType::kF32, {9 << 20}, "big"));  // dedicated block
  RILL_RETURN_IF_ERROR(ctx.upload_floats(x, std::vector<float>(n, 2.0f)));
  RILL_ASSIGN_OR_RETURN(rill::Sequence seq, ctx.sequence({.timestamps = ctx.device().caps.timestamps}));
  RILL_RETURN_IF_ERROR(seq.dispatch(rill_test::fill_dispatch(y, n, 1.0f)));
  auto d = rill_test::saxpy_dispatch(x, y, n, 3.0f);
  const uint32_t sizes = ctx.device().caps.max_workgroup_invocations - 63;  // 64 .. the device's most
  d.spec = {rill::spec_uint("WG_SIZE", 64 + uint32_t(round) % sizes)};      // a new pipeline every round
  d.groups = {(n + 63) / 64, 1, 1};
  RILL_RETURN_IF_ERROR(seq.dispatch(d));
  RILL_RETURN_IF_ERROR(seq.fill_zero(big));
  const std::vector<float> twos(n, 2.0f);  // same as the synchronous upload: every replay gives 7
  RILL_RETURN_IF_ERROR(seq.upload(x, {reinterpret_cast<const uint8_t*>(twos.data()), twos.size() * 4}));
  RILL_ASSIGN_OR_RETURN(rill::DownloadId id, seq.download(y));
  RILL_RETURN_IF_ERROR(seq.run(2));
  RILL_ASSIGN_OR_RETURN(*result, seq.read_floats(id));
  return rill::Status::ok();
}

// Fails the k-th resource-creating call of `work` for k = 1, 2, ... until `work` needs fewer calls:
// every failure must be a clean ResourceExhausted, free everything it made (what lived before the
// drill lives on), and leave the context working (the same work then succeeds). Returns the number
// of failures injected.
int drill(rill::Context& ctx, const std::function<rill::Status(int round)>& work) {
  auto& faults = rill::detail::Access::impl(ctx).faults;
  const uint64_t held = ctx.memory_stats().live_allocations;
  int failures = 0;
  for (uint64_t k = 1; k < 2000; ++k) {
    INFO("failing call " << k);
    faults.fail_nth(k);
    const uint64_t seen_before = faults.calls_seen();
    const rill::Status s = work(int(k));
    const bool injected = faults.calls_seen() - seen_before >= k;
    faults.fail_nth(0);
    REQUIRE(ctx.wait_idle().is_ok());
    CHECK(ctx.memory_stats().live_allocations == held);
    if (!injected) {
      REQUIRE(s.is_ok());  // the work has fewer than k resource calls: done
      return failures;
    }
    ++failures;
    INFO(s.to_string());
    CHECK(s.code() == rill::StatusCode::kResourceExhausted);
    const rill::Status retry = work(10000 + int(k));  // still usable
    INFO("retry: " << retry.to_string());
    REQUIRE(retry.is_ok());
  }
  FAIL("the work never ran out of injection points");
  return failures;
}

}  // namespace

GPU_TEST_CASE("every injected allocation failure is clean, leak-free and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  const int failures = drill(ctx, [&](int round) {
    std::vector<float> result;
    RILL_RETURN_IF_ERROR(workload(ctx, round, &result));
    if (result[0] != 7.0f) return rill::internal_error("wrong result");  // y = 3 * 2 + 1
    return rill::Status::ok();
  });
  CHECK(failures > 5);
}

// Memory the host cannot map (vulkan11-minimum, as on a discrete GPU): uploads and downloads copy
// through staging and wait for the copy; a failed wait must leave the staging memory and the
// command buffer to the GPU until it is done, not free them under it, nor the tensor's memory (a
// dedicated block, freed as the failed call's tensor goes) (validation and the drill's leak check).
GPU_TEST_CASE("failures in staged uploads and downloads are clean, leak-free and recoverable", "[faults][gpu]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "vulkan11-minimum";
  options.memory_block_bytes = 1 << 20;  // a tensor past half a block takes a dedicated one
  auto ctx = rill_test::make_context(options);
  {
    auto probe = ctx.tensor(rill::DType::kF32, {5}, "probe").value();
    REQUIRE(rill::detail::Access::storage(probe)->allocation.mapped() == nullptr);
  }
  const int failures = drill(ctx, [&](int round) {
    const std::vector<float> values = {1.5f, -2.0f, float(round), 4.25f, 5.0f};
    RILL_ASSIGN_OR_RETURN(rill::Tensor t, ctx.tensor(rill::DType::kF32, {5}, "t"));
    RILL_RETURN_IF_ERROR(ctx.upload_floats(t, values));
    RILL_ASSIGN_OR_RETURN(std::vector<float> back, ctx.download_floats(t));
    if (back != values) return rill::internal_error("a staged round trip changed the values");
    const std::vector<float> many(200000, float(round));  // 800 KB: a dedicated block
    RILL_ASSIGN_OR_RETURN(rill::Tensor wide, ctx.tensor(rill::DType::kF32, {int64_t(many.size())}, "wide"));
    RILL_RETURN_IF_ERROR(ctx.upload_floats(wide, many));
    RILL_ASSIGN_OR_RETURN(std::vector<float> wide_back, ctx.download_floats(wide));
    if (wide_back != many) return rill::internal_error("a staged round trip of a dedicated block changed it");
    std::vector<float> result;
    RILL_RETURN_IF_ERROR(workload(ctx, round, &result));
    if (result[0] != 7.0f) return rill::internal_error("wrong result");
    return rill::Status::ok();
  });
  CHECK(failures > 5);
}

GPU_TEST_CASE("allocation failures in an ICL training step are clean and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  const rill::icl::TrainConfig c = small_icl_config();
  const int failures = drill(ctx, [&](int) -> rill::Status {
    RILL_ASSIGN_OR_RETURN(rill::icl::Trainer trainer, rill::icl::Trainer::create(ctx, c));
    RILL_RETURN_IF_ERROR(trainer.train(3).status());
    return trainer.evaluate({.tasks = 8}).status();
  });
  CHECK(failures > 5);
}

// A grid model's checkpoint loaded through staging (memory the host cannot map): a failure at any
// upload or download leaves the model as it was, never new parameters beside old moments.
GPU_TEST_CASE("allocation failures while a grid model loads a checkpoint leave it as it was", "[faults][gpu]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "vulkan11-minimum";
  auto ctx = rill_test::make_context(options);
  const std::vector<rill::icl::TrainConfig> configs(2, small_icl_config());
  auto grid = rill::icl::TrainerGrid::create(ctx, configs).value();
  const std::string original = rill_test::temp_path("grid-original.safetensors"),
                    trained = rill_test::temp_path("grid-trained.safetensors"),
                    now = rill_test::temp_path("grid-now.safetensors");
  REQUIRE(grid.save_checkpoint(1, original).is_ok());
  REQUIRE(grid.train(3).is_ok());
  REQUIRE(grid.save_checkpoint(1, trained).is_ok());
  REQUIRE(grid.load_checkpoint(1, original).is_ok());
  auto bytes_of = [](const std::string& path) { return rill::read_file(path, 1 << 20).value(); };
  // The model as a checkpoint's bytes (its parameters, moments and state words).
  auto model_bytes = [&]() -> rill::Result<std::vector<uint8_t>> {
    RILL_RETURN_IF_ERROR(grid.save_checkpoint(1, now));
    return bytes_of(now);
  };
  REQUIRE(model_bytes().value() == bytes_of(original));
  const int failures = drill(ctx, [&](int) -> rill::Status {
    if (rill::Status loaded = grid.load_checkpoint(1, trained); !loaded.is_ok()) {
      // The calls after the injected one succeed: the model reads back as before the load.
      if (model_bytes().value() != bytes_of(original)) return rill::internal_error("a failed load changed the model");
      return loaded;
    }
    RILL_ASSIGN_OR_RETURN(const std::vector<uint8_t> loaded, model_bytes());
    if (loaded != bytes_of(trained)) return rill::internal_error("a load gave other values");
    return grid.load_checkpoint(1, original);  // the next round starts from the same model
  });
  CHECK(failures > 3);
  for (const std::string& path : {original, trained, now}) std::remove(path.c_str());
}

GPU_TEST_CASE("allocation failures in an evaluation of several chunks are clean and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  // Three chunks on two workspaces taking turns: a failure may come while the other chunk runs.
  const rill::icl::EvalOptions options{.tasks = 2 * 4096 + 7, .tune_tunedrr = false};
  auto evaluate = [&]() -> rill::Result<rill::icl::EvalReport> {
    RILL_ASSIGN_OR_RETURN(rill::icl::Trainer trainer, rill::icl::Trainer::create(ctx, small_icl_config()));
    return trainer.evaluate(options);
  };
  const auto expected = evaluate();
  REQUIRE(expected.is_ok());
  const int failures = drill(ctx, [&](int) -> rill::Status {
    RILL_ASSIGN_OR_RETURN(const rill::icl::EvalReport report, evaluate());
    if (report.model != expected->model || report.least_squares != expected->least_squares)
      return rill::internal_error("an evaluation after failures differs");
    return rill::Status::ok();
  });
  CHECK(failures > 3);
}

GPU_TEST_CASE("allocation failures in a prefill and a decode are clean and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  const auto weights = rill::lm::Weights::random(small_lm_config(), 3).value();
  const std::vector<uint32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int failures = drill(ctx, [&](int) -> rill::Status {
    RILL_ASSIGN_OR_RETURN(rill::lm::Model model, rill::lm::Model::create(ctx, weights));
    RILL_ASSIGN_OR_RETURN(rill::lm::Session session, model.session());
    RILL_RETURN_IF_ERROR(session.prefill(prompt).status());
    return session.decode(5).status();
  });
  CHECK(failures > 5);
}

GPU_TEST_CASE("allocation failures in a fork and a scoring are clean and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  const auto weights = rill::lm::Weights::random(small_lm_config(), 4).value();
  const std::vector<uint32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, continuation = {12, 13, 14, 15, 16, 17};
  const int failures = drill(ctx, [&](int) -> rill::Status {
    RILL_ASSIGN_OR_RETURN(rill::lm::Model model, rill::lm::Model::create(ctx, weights));
    RILL_ASSIGN_OR_RETURN(rill::lm::Session session, model.session());
    RILL_RETURN_IF_ERROR(session.prefill(prompt).status());
    RILL_ASSIGN_OR_RETURN(rill::lm::Session fork, session.fork());
    return fork.score(continuation).status();
  });
  CHECK(failures > 5);
}

GPU_TEST_CASE("after a device loss, a model session and a trainer refuse work with DeviceLost", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  const auto weights = rill::lm::Weights::random(small_lm_config(), 3).value();
  auto model = rill::lm::Model::create(ctx, weights);
  REQUIRE(model.is_ok());
  auto session = model->session();
  REQUIRE(session.is_ok());
  REQUIRE(session->prefill(std::vector<uint32_t>{1, 2, 3}).is_ok());
  auto trainer = rill::icl::Trainer::create(ctx, small_icl_config());
  REQUIRE(trainer.is_ok());
  REQUIRE(ctx.usable().is_ok());
  // What a driver reports on a GPU reset, through the latch every real call goes through.
  (void)rill::detail::Access::impl(ctx).device->check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  CHECK(ctx.usable().code() == rill::StatusCode::kDeviceLost);  // the application can ask
  for (int attempt = 0; attempt < 2; ++attempt) {  // sticky: the second call is refused the same way
    CHECK(session->decode(4).status().code() == rill::StatusCode::kDeviceLost);
    CHECK(session->prefill(std::vector<uint32_t>{5}).status().code() == rill::StatusCode::kDeviceLost);
    CHECK(model->session().status().code() == rill::StatusCode::kDeviceLost);
    CHECK(trainer->train(1).status().code() == rill::StatusCode::kDeviceLost);
    CHECK(trainer->evaluate({.tasks = 4}).status().code() == rill::StatusCode::kDeviceLost);
  }
}

// A loss reported by one call need not have stopped the work queued before it (and the drills latch
// losses on a working device): teardown still waits for rill's last fence, a wait Vulkan bounds on
// a lost device, before it frees what that work uses.
GPU_TEST_CASE("teardown after a device loss still waits for the work in flight before freeing it", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  auto& impl = rill::detail::Access::impl(ctx);
  REQUIRE(impl.submissions->submit({}).is_ok());  // a fence alone: in flight until waited on
  (void)impl.device->check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  const uint64_t calls = impl.faults.calls_seen();
  impl.submissions->drain();
  CHECK(impl.faults.calls_seen() == calls + 1);  // the fence's wait, an injection point
  CHECK(impl.submissions->completed() == impl.submissions->last_submitted());
  CHECK_FALSE(impl.submissions->leaked());
}

GPU_TEST_CASE("a diagnosis failing halfway leaves the trainer's parameters as they were", "[faults][gpu][icl]") {
  auto ctx = rill_test::make_context();
  auto& faults = rill::detail::Access::impl(ctx).faults;
  auto trainer = rill::icl::Trainer::create(ctx, small_icl_config()).value();
  REQUIRE(trainer.train(3).is_ok());
  const std::vector<float> before = trainer.parameters().value();
  const rill::icl::DiagnosticsOptions o{.batches = 4, .reference_tasks = 20};
  const uint64_t start = faults.calls_seen();
  REQUIRE(rill::icl::diagnose(trainer, o).is_ok());
  const uint64_t calls = faults.calls_seen() - start;
  REQUIRE(calls > 8);
  // Past the first probes of the Hessian diagonal (which shift one parameter), before the end.
  faults.fail_nth(calls * 3 / 4);
  const auto failed = rill::icl::diagnose(trainer, o);
  faults.fail_nth(0);
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.status().code() == rill::StatusCode::kResourceExhausted);
  const std::vector<float> after = trainer.parameters().value();
  CHECK(after == before);
}

namespace {

// For k = 1, 2, ...: a session of `model` three tokens in, then `work` on it with the k-th resource
// call failing, then `check` of the session and the failure; until `work` needs fewer than k calls
// (it must then succeed). Returns the failures injected.
int each_failure_on_a_session(rill::Context& ctx, rill::lm::Model& model,
                              const std::function<rill::Status(rill::lm::Session&)>& work,
                              const std::function<void(rill::lm::Session&, const rill::Status&)>& check) {
  auto& faults = rill::detail::Access::impl(ctx).faults;
  int failures = 0;
  for (uint64_t k = 1; k < 200; ++k) {
    INFO("failing call " << k);
    auto session = model.session().value();
    REQUIRE(session.prefill(std::vector<uint32_t>{4, 4, 4}).is_ok());
    faults.fail_nth(k);
    const uint64_t seen_before = faults.calls_seen();
    const rill::Status s = work(session);
    const bool injected = faults.calls_seen() - seen_before >= k;
    faults.fail_nth(0);
    if (!injected) {
      REQUIRE(s.is_ok());
      break;
    }
    ++failures;
    INFO(s.to_string());
    check(session, s);
  }
  return failures;
}

// A context per way a wait can go, since a fault must be injectable at the wait either way: sleeping
// on the fence (CPU drivers) and polling it first (discrete GPUs; 10 ms, which lavapipe's small
// runs finish within, so the sleeping wait is never reached).
std::vector<std::pair<std::string, rill::Context>> contexts_for_each_wait() {
  std::vector<std::pair<std::string, rill::Context>> out;
  for (const char* plan : {"wait_spin_us=off", "wait_spin_us=10000"}) {
    rill::ContextOptions options = rill_test::validated_options();
    options.kernel_plan = plan;
    out.emplace_back(plan, rill_test::make_context(options));
  }
  return out;
}

}  // namespace

// A state restore whose uploads fail part way (staged uploads allocate) leaves the session as it
// was, or reset to position 0 when some tensors were already written: never a mix of two states.
GPU_TEST_CASE("a state restore that fails part way leaves no mixed state", "[faults][gpu]") {
  auto options = rill_test::validated_options();
  options.limit_profile = "vulkan11-minimum";  // no mapped device memory: every upload is staged
  auto ctx = rill_test::make_context(options);
  const auto weights = rill::lm::Weights::random(small_lm_config(), 6).value();
  auto model = rill::lm::Model::create(ctx, weights).value();
  auto saver = model.session().value();
  REQUIRE(saver.prefill(std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}).is_ok());
  const std::vector<uint8_t> saved = saver.serialize_state().value();
  const int failures = each_failure_on_a_session(
      ctx, model, [&](rill::lm::Session& session) { return session.deserialize_state(saved); },
      [&](rill::lm::Session& session, const rill::Status& s) {
        CHECK(s.code() == rill::StatusCode::kResourceExhausted);
        // As it was (3 tokens in) or reset (0): the next token's logits are those of a session there.
        REQUIRE((session.position() == 3 || session.position() == 0));
        auto twin = model.session().value();
        if (session.position() == 3) REQUIRE(twin.prefill(std::vector<uint32_t>{4, 4, 4}).is_ok());
        CHECK(session.decode(7).value() == twin.decode(7).value());
      });
  CHECK(failures >= 2);  // a staging buffer per state tensor
}

// A reset that fails before its zeroing runs changes nothing; one that fails while it runs has zeroed
// some tensors and not others: the session is then spent (refused, naming why) until a reset works.
GPU_TEST_CASE("a reset that fails part way leaves the session as it was or refused, never mixed", "[faults][gpu]") {
  for (auto& [waits, ctx] : contexts_for_each_wait()) {
    INFO(waits);
    const auto weights = rill::lm::Weights::random(small_lm_config(), 6).value();
    auto model = rill::lm::Model::create(ctx, weights).value();
    auto twin = model.session().value();
    REQUIRE(twin.prefill(std::vector<uint32_t>{4, 4, 4}).is_ok());
    const std::vector<float> at_three = twin.decode(7).value();
    auto fresh = model.session().value();
    const std::vector<float> at_zero = fresh.decode(7).value();
    int spent = 0;
    const int failures = each_failure_on_a_session(
        ctx, model, [](rill::lm::Session& session) { return session.reset(); },
        [&](rill::lm::Session& session, const rill::Status& s) {
          REQUIRE_FALSE(s.is_ok());
          CHECK(session.position() == 3);
          auto next = session.decode(7);
          if (next.is_ok()) {
            CHECK(next.value() == at_three);  // nothing ran: the state is the prefill's
          } else {
            ++spent;
            CHECK(next.status().code() == rill::StatusCode::kFailedPrecondition);
            CHECK(next.status().message().find("a reset failed part way") != std::string::npos);
          }
          REQUIRE(session.reset().is_ok());
          CHECK(session.decode(7).value() == at_zero);
        });
    CHECK(failures >= 1);
    CHECK(spent >= 1);  // the run's wait is an injection point: some failures come after zeroing ran
  }
}

// A decode or prefill that fails after its work reached the device (its wait fails) has moved the
// state on by tokens the position does not count: running on would count them twice. The session
// is spent instead; one that fails before it submits is unchanged.
GPU_TEST_CASE("a decode or prefill that fails after it submits leaves the session refused, never ahead of its position",
              "[faults][gpu]") {
  for (auto& [waits, ctx] : contexts_for_each_wait()) {
    INFO(waits);
    const auto weights = rill::lm::Weights::random(small_lm_config(), 6).value();
    auto model = rill::lm::Model::create(ctx, weights).value();
    const std::vector<uint32_t> start = {4, 4, 4};  // each_failure_on_a_session's prefill
    for (const std::vector<uint32_t>& tokens : {std::vector<uint32_t>{9}, std::vector<uint32_t>{9, 8, 9, 8, 9}}) {
      INFO(tokens.size() << " tokens");
      int spent = 0;
      const auto work = [&](rill::lm::Session& session) {
        return tokens.size() == 1 ? session.decode(tokens[0]).status() : session.prefill(tokens).status();
      };
      const int failures =
          each_failure_on_a_session(ctx, model, work, [&](rill::lm::Session& session, const rill::Status& s) {
            REQUIRE_FALSE(s.is_ok());
            // A prefill may have consumed some tokens (steps or segments that worked) before the failure.
            const uint64_t done = session.position() - start.size();
            REQUIRE(session.position() >= start.size());
            REQUIRE(done < tokens.size());
            auto next = session.decode(7);
            if (next.is_ok()) {  // it failed before its last run reached the device: the state is the tokens so far
              std::vector<uint32_t> so_far = start;
              so_far.insert(so_far.end(), tokens.begin(), tokens.begin() + std::ptrdiff_t(done));
              auto twin = model.session().value();
              REQUIRE(twin.prefill(so_far).is_ok());
              CHECK(next.value() == twin.decode(7).value());
            } else {
              ++spent;
              CHECK(s.message().find("the session's state is spent") != std::string::npos);
              CHECK(next.status().code() == rill::StatusCode::kFailedPrecondition);
              CHECK(next.status().message().find("failed after its work was submitted") != std::string::npos);
              REQUIRE(session.reset().is_ok());
              CHECK(session.position() == 0);
            }
          });
      CHECK(failures >= 1);
      CHECK(spent >= 1);  // the wait after the submit is an injection point
    }
  }
}

// A context whose last wait fails on a device not lost cannot know what the GPU still runs: it
// leaves its device and everything made on it alive (logging the leak) rather than destroy them
// under the work. Destroying the device there reported its live children (validation).
GPU_TEST_CASE("a context whose final wait fails leaves its device alive, not destroyed under the GPU",
              "[faults][gpu]") {
  std::vector<std::string> logged;
  struct Logging {  // the callback goes with the test, however it ends
    explicit Logging(std::vector<std::string>& into) {
      rill::set_log_callback([&into](rill::MessageSeverity, std::string_view m) { into.emplace_back(m); });
    }
    ~Logging() { rill::set_log_callback(nullptr); }
  };
  {
    const Logging logging(logged);
    auto ctx = rill_test::make_context();
    auto y = ctx.tensor(rill::DType::kF32, {256}, "y").value();
    auto seq = ctx.sequence().value();
    REQUIRE(seq.dispatch(rill_test::fill_dispatch(y, 256, 1.0f)).is_ok());
    REQUIRE(seq.submit().is_ok());
    rill::detail::Access::impl(ctx).faults.fail_nth(1);  // the wait of the context's destruction
  }
  const bool leaked = std::any_of(logged.begin(), logged.end(), [](const std::string& m) {
    return m.find("vkWaitForFences") != std::string::npos && m.find("leaked") != std::string::npos;
  });
  for (const auto& m : logged) UNSCOPED_INFO(m);
  CHECK(leaked);
}

// An op that fails after recording part of its work (its state zeroed, then a kernel's pipeline not
// created) breaks the sequence: running it is refused, naming why, where it would have run the
// zeroing alone. One that fails before recording anything leaves the sequence usable.
GPU_TEST_CASE("an op that fails part way breaks its sequence instead of leaving half of it to run", "[faults][gpu]") {
  auto options = rill_test::validated_options();
  options.kernel_plan = "linear_attention=parallel";  // a zeroed state, then kernels of their own
  auto ctx = rill_test::make_context(options);
  const int64_t heads = 2, n = 100, d = 8;
  std::vector<rill::Tensor> qkv;
  for (int i = 0; i < 3; ++i) {
    qkv.push_back(ctx.tensor(rill::DType::kF32, {1, heads, n, d}).value());
    REQUIRE(ctx.upload_floats(qkv.back(), std::vector<float>(heads * n * d, 0.25f)).is_ok());
  }
  auto o = ctx.tensor(rill::DType::kF32, {1, heads, n, d}).value();
  auto state = ctx.tensor(rill::DType::kF32, {1, heads, d, d}).value();
  auto& faults = rill::detail::Access::impl(ctx).faults;
  int broken = 0, clean = 0;
  for (uint64_t k = 1; k < 200; ++k) {
    INFO("failing call " << k);
    auto seq = ctx.sequence().value();
    faults.fail_nth(k);
    const uint64_t seen_before = faults.calls_seen();
    const rill::Status s = rill::ops::linear_attention_forward(seq, qkv[0], qkv[1], qkv[2], o, state);
    const bool injected = faults.calls_seen() - seen_before >= k;
    faults.fail_nth(0);
    INFO(s.to_string());
    if (!injected) {
      REQUIRE(s.is_ok());
      REQUIRE(seq.run().is_ok());
      break;
    }
    REQUIRE_FALSE(s.is_ok());
    const rill::SequenceStats recorded = seq.stats();
    const rill::Status ran = seq.run();
    INFO(ran.to_string());
    if (recorded.dispatches + recorded.copies + recorded.barriers > 0) {
      ++broken;
      CHECK(ran.message().find("failed after recording part of its work") != std::string::npos);
    } else {
      ++clean;
      CHECK(ran.is_ok());
    }
  }
  CHECK(broken >= 1);
}
