// The recorder: barriers only where a hazard exists, replay without re-recording, lifetimes that
// survive the application dropping handles, kernel variants, timestamps.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "access.hpp"
#include "context_impl.hpp"
#include "gpu_test.hpp"
#include "scoped_env.hpp"

GPU_TEST_CASE("independent dispatches get no barrier; dependent ones get one each", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  const uint32_t n = 1000;
  auto a = ctx.tensor(rill::DType::kF32, {n});
  auto b = ctx.tensor(rill::DType::kF32, {n});
  auto c = ctx.tensor(rill::DType::kF32, {n});
  {
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*a, n, 1.0f)).is_ok());
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*b, n, 2.0f)).is_ok());
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*c, n, 3.0f)).is_ok());
    REQUIRE(seq->run().is_ok());
    CHECK(seq->stats().barriers == 1);  // only the trailing one
  }
  {
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*a, n, 1.0f)).is_ok());    // write a
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*b, n, 2.0f)).is_ok());    // write b: independent
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*a, *b, n, 3.0f)).is_ok());  // read a, b: RAW
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*a, n, 9.0f)).is_ok());    // write a after read: WAR
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*c, n, 5.0f)).is_ok());    // c: independent of all
    REQUIRE(seq->run().is_ok());
    CHECK(seq->stats().barriers == 3);
    CHECK(ctx.download_floats(*b).value()[n - 1] == 5.0f);
    CHECK(ctx.download_floats(*a).value()[0] == 9.0f);
  }
}

GPU_TEST_CASE("a barrier for one conflict also orders the accesses it makes the tracker forget", "[sequence][gpu]") {
  // The tracker forgets every earlier access at a barrier, so the barrier must wait for all of them
  // in every stage: here a transfer (fill) and a dispatch are separated by a barrier placed for a
  // compute-compute conflict on another tensor. Synchronization validation reports the gap.
  auto ctx = rill_test::make_context();
  const uint32_t n = 1000;
  auto x = ctx.tensor(rill::DType::kF32, {n});
  auto y = ctx.tensor(rill::DType::kF32, {n});
  {
    auto seq = ctx.sequence();
    REQUIRE(seq->fill_zero(*x).is_ok());                                    // transfer writes x
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*y, n, 1.0f)).is_ok());  // compute writes y
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*y, n, 2.0f)).is_ok());  // WAW on y: a barrier
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 3.0f)).is_ok());  // WAW on x, after the fill
    REQUIRE(seq->run().is_ok());
    CHECK(ctx.download_floats(*x).value()[n - 1] == 3.0f);
  }
  {
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 4.0f)).is_ok());  // compute writes x
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*y, n, 1.0f)).is_ok());
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*y, n, 2.0f)).is_ok());  // barrier for y
    REQUIRE(seq->fill_zero(*x).is_ok());                                    // transfer WAW on x
    REQUIRE(seq->run().is_ok());
    CHECK(ctx.download_floats(*x).value()[0] == 0.0f);
  }
}

GPU_TEST_CASE("a recorded sequence replays N times without re-recording", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  for (uint32_t n : {1u, 7u, 255u, 257u, 10007u}) {
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    std::vector<float> xs(n);
    for (uint32_t i = 0; i < n; ++i) xs[i] = float(i % 13) * 0.25f;
    REQUIRE(ctx.upload_floats(*x, xs).is_ok());
    REQUIRE(ctx.upload_floats(*y, std::vector<float>(n, 1.0f)).is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 0.5f)).is_ok());
    REQUIRE(seq->run(10).is_ok());
    REQUIRE(seq->submit(5).is_ok());
    REQUIRE(seq->submit(5).is_ok());
    REQUIRE(seq->wait().is_ok());
    CHECK(seq->stats().submissions == 20);
    CHECK(seq->stats().dispatches == 1);
    auto out = ctx.download_floats(*y);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(out.value()[i] == Approx(1.0f + 20 * 0.5f * xs[i]));
  }
}

// Waits that poll the fence first (the plan's choice on discrete GPUs), forced here, and one set
// after creation: the same results, every submission waited for.
GPU_TEST_CASE("waits that poll the fence before sleeping see every submission finish", "[sequence][gpu]") {
  rill::ContextOptions options = rill_test::validated_options();
  options.kernel_plan = "wait_spin_us=5000";
  auto ctx = rill_test::make_context(options);
  CHECK(rill::detail::Access::impl(ctx).submissions->spin_us() == 5000);
  for (const auto& [plan, us] : {std::pair{"wait_spin_us=5000", 5000u}, std::pair{"wait_spin_us=1", 1u}}) {
    INFO(plan);
    REQUIRE(ctx.set_kernel_plan(plan).is_ok());
    CHECK(rill::detail::Access::impl(ctx).submissions->spin_us() == us);
    const uint32_t n = 4099;
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    REQUIRE(ctx.upload_floats(*x, std::vector<float>(n, 2.0f)).is_ok());
    REQUIRE(ctx.upload_floats(*y, std::vector<float>(n, 1.0f)).is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 0.5f)).is_ok());
    for (int i = 0; i < 30; ++i) REQUIRE(seq->run().is_ok());
    const auto out = ctx.download_floats(*y).value();
    CHECK(std::count(out.begin(), out.end(), 31.0f) == n);
  }
}

// A wait timeout (ContextOptions::gpu_wait_timeout_ms): work that outlasts it gives DeadlineExceeded,
// and the context is given up as after a device loss (every later call that needs the GPU says so),
// while the work runs on; destroying the context then leaks what the work uses instead of waiting
// on it (or freeing it under the GPU).
GPU_TEST_CASE("a wait past the GPU wait timeout gives the context up and leaves the work running", "[sequence][gpu]") {
  const uint32_t n = 1u << 20;
  struct Work {  // y += x / 2, replayed
    std::optional<rill::Tensor> x, y;
    std::optional<rill::Sequence> seq;
  };
  const auto make_work = [&](rill::Context& ctx) {
    Work w;
    w.x = ctx.tensor(rill::DType::kF32, {n}).value();
    w.y = ctx.tensor(rill::DType::kF32, {n}).value();
    REQUIRE(ctx.upload_floats(*w.x, std::vector<float>(n, 2.0f)).is_ok());
    REQUIRE(ctx.upload_floats(*w.y, std::vector<float>(n, 0.0f)).is_ok());
    w.seq = ctx.sequence().value();
    REQUIRE(w.seq->dispatch(rill_test::saxpy_dispatch(*w.x, *w.y, n, 0.5f)).is_ok());
    return w;
  };
  // Replays whose wait lasts 300 ms here, measured without a timeout (a fast GPU needs more).
  uint32_t replays = 1;
  {
    auto untimed = rill_test::make_context();
    Work w = make_work(untimed);
    for (;;) {
      REQUIRE(w.seq->submit(replays).is_ok());
      const auto start = std::chrono::steady_clock::now();
      REQUIRE(w.seq->wait().is_ok());
      if (std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300) || replays >= (1u << 16)) break;
      replays *= 2;
    }
  }
  INFO(replays << " replays");
  rill::ContextOptions options = rill_test::validated_options();
  options.gpu_wait_timeout_ms = 1;
  auto ctx = rill_test::make_context(options);
  auto& submissions = *rill::detail::Access::impl(ctx).submissions;
  REQUIRE(submissions.timeout_ms() == 1);
  submissions.set_timeout_ms(0);  // while the tensors are filled (a copy through staging memory may take longer)
  {
    Work w = make_work(ctx);
    submissions.set_timeout_ms(1);
    REQUIRE(w.seq->submit(replays).is_ok());
    const rill::Status first = w.seq->wait();  // 1 ms into about 300 ms of work
    REQUIRE(first.code() == rill::StatusCode::kDeadlineExceeded);
    CHECK(ctx.usable().code() == rill::StatusCode::kDeadlineExceeded);
    CHECK(first.message().find("gpu_wait_timeout_ms") != std::string::npos);
    CHECK(first.message().find("given up") != std::string::npos);
    for (const rill::Status& later :
         {w.seq->wait(), w.seq->submit(), ctx.upload_floats(*w.x, std::vector<float>(n, 1.0f)),
          ctx.download_floats(*w.y).status(), ctx.wait_idle()}) {
      CHECK(later.code() == rill::StatusCode::kDeadlineExceeded);
      CHECK(later.message() == first.message());
    }
  }                     // the sequence and the tensors go while their work runs: handed to the retire queue
  submissions.drain();  // as the context's destruction does: a look, then what the work uses is leaked
  CHECK(submissions.leaked());
}

GPU_TEST_CASE("a GPU wait timeout is read from the environment, with its unit", "[sequence][gpu]") {
  const rill_test::ScopedEnv timeout("RILL_GPU_WAIT_TIMEOUT", "2s");
  auto ctx = rill_test::make_context();
  CHECK(rill::detail::Access::impl(ctx).submissions->timeout_ms() == 2000);
  for (const char* bad : {"2", "2 s", "-1s", "1.5s", "5000000s", "ms"}) {
    const rill_test::ScopedEnv wrong("RILL_GPU_WAIT_TIMEOUT", bad);
    auto refused = rill::Context::create(rill_test::validated_options());
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.status().code() == rill::StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("RILL_GPU_WAIT_TIMEOUT") != std::string::npos);
  }
  const rill_test::ScopedEnv off("RILL_GPU_WAIT_TIMEOUT", "0");
  CHECK(rill::detail::Access::impl(rill_test::make_context()).submissions->timeout_ms() == 0);
}

GPU_TEST_CASE("a sequence keeps its tensors and device alive after the app drops them", "[sequence][gpu]") {
  std::optional<rill::Sequence> seq;
  rill::DownloadId id;
  {
    auto ctx = rill_test::make_context();
    auto t = ctx.tensor(rill::DType::kF32, {64});
    auto s = ctx.sequence();
    REQUIRE(s->dispatch(rill_test::fill_dispatch(*t, 64, 6.0f)).is_ok());
    id = s->download(*t).value();
    seq.emplace(std::move(s).value());
  }  // Context and Tensor objects are gone; the sequence still owns what it needs.
  REQUIRE(seq->run(3).is_ok());
  auto v = seq->read_floats(id);
  REQUIRE(v.is_ok());
  CHECK(v.value()[63] == 6.0f);
}

GPU_TEST_CASE("tensor memory is released only after the GPU is done with it", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  auto keep = ctx.tensor(rill::DType::kF32, {1 << 16});
  std::optional<rill::Sequence> seq;
  {
    auto t = ctx.tensor(rill::DType::kF32, {1 << 16});
    auto s = ctx.sequence();
    REQUIRE(s->dispatch(rill_test::fill_dispatch(*t, 1 << 16, 1.0f)).is_ok());
    REQUIRE(s->submit(20).is_ok());  // still running (or queued) when t and the sequence go
    seq.emplace(std::move(s).value());
  }
  const uint64_t live = ctx.memory_stats().live_allocations;
  CHECK(live >= 2);  // t's memory is still held for the in-flight sequence
  seq.reset();
  REQUIRE(ctx.wait_idle().is_ok());
  CHECK(ctx.memory_stats().live_allocations == 1);  // only `keep`
}

GPU_TEST_CASE("the device's kernel variant is chosen, and forced variants agree", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  auto chosen = ctx.kernel_variant("util/saxpy");
  REQUIRE(chosen.is_ok());
  CHECK(chosen.value() == (ctx.device().type == rill::DeviceType::kCpu ? "cpu" : "default"));
  const uint32_t n = 5003;
  std::vector<float> xs(n);
  for (uint32_t i = 0; i < n; ++i) xs[i] = std::cos(float(i));
  std::vector<std::vector<float>> results;
  // The device's choice, then each variant forced (on a CPU driver the choice is "cpu" itself).
  for (std::string_view variant : {"", "default", "cpu"}) {
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    REQUIRE(ctx.upload_floats(*x, xs).is_ok());
    REQUIRE(ctx.upload_floats(*y, xs).is_ok());
    auto seq = ctx.sequence();
    auto d = rill_test::saxpy_dispatch(*x, *y, n, 2.0f);
    if (!variant.empty()) d.variant = variant;
    REQUIRE(seq->dispatch(d).is_ok());
    REQUIRE(seq->run().is_ok());
    results.push_back(ctx.download_floats(*y).value());
  }
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
  for (uint32_t i = 0; i < n; ++i) REQUIRE(results[0][i] == 3.0f * xs[i]);
  {  // A variant the kernel lacks is refused, naming those it has.
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    auto d = rill_test::saxpy_dispatch(*x, *y, n, 1.0f);
    d.variant = "gpu";
    const auto refused = ctx.sequence()->dispatch(d);
    CHECK(refused.code() == rill::StatusCode::kNotFound);
    CHECK_THAT(refused.message(), Catch::Contains("default") && Catch::Contains("cpu"));
  }

  auto forced = rill_test::validated_options();
  forced.kernel_variant = "cpu";
  auto ctx2 = rill_test::make_context(forced);
  CHECK(ctx2.kernel_variant("util/saxpy").value() == "cpu");
  CHECK(ctx2.kernel_variant("util/fill").value() == "default");  // no cpu variant: falls back
  CHECK(ctx2.kernel_variant("util/missing").status().code() == rill::StatusCode::kNotFound);
}

GPU_TEST_CASE("timestamps give one non-negative time per dispatch, with names", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  if (!ctx.device().caps.timestamps) {
    CHECK(ctx.sequence({.timestamps = true}).status().code() == rill::StatusCode::kUnavailable);
    return;
  }
  const uint32_t n = 1 << 16;
  auto a = ctx.tensor(rill::DType::kF32, {n});
  auto b = ctx.tensor(rill::DType::kF32, {n});
  auto seq = ctx.sequence({.timestamps = true, .label = "timed"});
  REQUIRE(seq.is_ok());
  // More dispatches than one query pool holds.
  const uint32_t count = 140;
  for (uint32_t i = 0; i < count; ++i) {
    auto d = i % 2 ? rill_test::saxpy_dispatch(*a, *b, n, 1.0f) : rill_test::fill_dispatch(*a, n, 1.0f);
    d.label = i % 2 ? "axpy" : "fill";
    REQUIRE(seq->dispatch(d).is_ok());
  }
  REQUIRE(seq->run(2).is_ok());
  auto timings = seq->timings();
  REQUIRE(timings.is_ok());
  REQUIRE(timings->size() == count);
  for (uint32_t i = 0; i < count; ++i) {
    CHECK(timings.value()[i].gpu_ms >= 0.0);
    CHECK(timings.value()[i].gpu_ms < 10000.0);
    CHECK(timings.value()[i].label == (i % 2 ? "axpy" : "fill"));
  }
  // The times tile the sequence: each dispatch starts where the one before it ended (1 us of slack
  // for the rounding of ticks to milliseconds).
  for (uint32_t i = 0; i + 1 < count; ++i) {
    INFO("dispatch " << i);
    CHECK(timings.value()[i].start_ms + timings.value()[i].gpu_ms <= timings.value()[i + 1].start_ms + 1e-3);
  }
}

GPU_TEST_CASE("device loss is sticky: every later call reports it", "[sequence][gpu]") {
  auto ctx = rill_test::make_context();
  auto t = ctx.tensor(rill::DType::kF32, {8});
  REQUIRE(t.is_ok());
  // Simulate what a driver reports on a GPU reset, through the same latch real calls use.
  const rill::Status lost = rill::detail::Access::impl(ctx).device->check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  CHECK(lost.code() == rill::StatusCode::kDeviceLost);
  CHECK(ctx.device_lost());
  CHECK(ctx.tensor(rill::DType::kF32, {8}).status().code() == rill::StatusCode::kDeviceLost);
  CHECK(ctx.sequence().status().code() == rill::StatusCode::kDeviceLost);
  CHECK(ctx.upload_floats(*t, std::vector<float>(8)).code() == rill::StatusCode::kDeviceLost);
  CHECK(ctx.wait_idle().code() == rill::StatusCode::kDeviceLost);
  CHECK(ctx.wait_idle().message().find("vkQueueSubmit") != std::string::npos);
}
