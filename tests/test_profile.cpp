// Profiling: off means no queries; on writes a valid Chrome trace with GPU and host tracks, sane
// times and a summary; summaries, rooflines and the peaks cache behave.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "access.hpp"
#include "context_impl.hpp"
#include "gpu_test.hpp"
#include "profile/peaks_cache.hpp"
#include "scoped_env.hpp"

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// fill x; fill y; y += 2x: a dependent chain with declared costs.
void run_workload(rill::Context& ctx, uint32_t n) {
  auto x = ctx.tensor(rill::DType::kF32, {n}, "x");
  auto y = ctx.tensor(rill::DType::kF32, {n}, "y");
  REQUIRE(x.is_ok());
  REQUIRE(y.is_ok());
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  auto fill_x = rill_test::fill_dispatch(*x, n, 1.0f);
  fill_x.bytes = 4ull * n;
  auto fill_y = rill_test::fill_dispatch(*y, n, 1.0f);
  fill_y.label = "fill y";
  fill_y.bytes = 4ull * n;
  auto axpy = rill_test::saxpy_dispatch(*x, *y, n, 2.0f);
  axpy.flops = 2ull * n;
  axpy.bytes = 12ull * n;
  REQUIRE(seq->dispatch(fill_x).is_ok());
  REQUIRE(seq->dispatch(fill_y).is_ok());
  REQUIRE(seq->dispatch(axpy).is_ok());
  REQUIRE(seq->run(3).is_ok());
  REQUIRE(ctx.download_floats(*y).is_ok());
}

}  // namespace

GPU_TEST_CASE("with profiling off no query pool is created and nothing is recorded", "[profile][gpu]") {
  unsetenv("RILL_PROFILE");
  auto ctx = rill_test::make_context();
  run_workload(ctx, 1000);
  CHECK_FALSE(ctx.profiling());
  CHECK(rill::detail::Access::impl(ctx).query_pools_created == 0);
  CHECK(ctx.profile_events().empty());
  CHECK(ctx.write_profile().code() == rill::StatusCode::kFailedPrecondition);
}

GPU_TEST_CASE("a trace path that cannot be written is refused when the context is created", "[profile][gpu]") {
  const std::string missing = rill_test::temp_path("no-such-folder") + "/trace.json";
  auto options = rill_test::validated_options();
  options.profile_path = missing;
  auto refused = rill::Context::create(options);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("ContextOptions::profile_path") != std::string::npos);
  CHECK(refused.status().message().find("no such directory") != std::string::npos);
  {
    rill_test::ScopedEnv env("RILL_PROFILE", missing.c_str());
    auto from_env = rill::Context::create(rill_test::validated_options());
    REQUIRE_FALSE(from_env.is_ok());
    CHECK(from_env.status().message().find("RILL_PROFILE") != std::string::npos);
  }
  // A folder where the trace would go is refused too, not replaced.
  options.profile_path = rill_test::temp_path("trace-folder");
  std::filesystem::create_directories(options.profile_path);
  CHECK_FALSE(rill::Context::create(options).is_ok());
  std::filesystem::remove_all(options.profile_path);
}

GPU_TEST_CASE("a profiled context writes a Chrome trace with GPU and host tracks", "[profile][gpu]") {
  const std::string path = rill_test::temp_path("trace.json");
  {
    auto options = rill_test::validated_options();
    options.profile_path = path;
    auto ctx = rill_test::make_context(options);
    REQUIRE(ctx.profiling());
    run_workload(ctx, 4096);
    if (ctx.device().caps.timestamps) CHECK(rill::detail::Access::impl(ctx).query_pools_created >= 1);
  }  // written on destruction
  const nlohmann::json doc = nlohmann::json::parse(read_text(path));
  REQUIRE(doc["traceEvents"].is_array());
  std::map<std::string, int> names;
  std::set<std::string> threads;
  double last_gpu_start = -1.0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    REQUIRE(e["ph"] == "X");
    ++names[e["name"].get<std::string>()];
    CHECK(e["ts"].get<double>() >= 0.0);
    CHECK(e["dur"].get<double>() >= 0.0);
    if (e["tid"] == 2) {  // GPU: a dependent chain, so starts follow dispatch order
      CHECK(e["ts"].get<double>() >= last_gpu_start);
      last_gpu_start = e["ts"].get<double>();
      CHECK(e["args"]["replays"] == 3);
      if (e["name"] == "util/saxpy") {
        CHECK(e["args"]["flops"] == 2 * 4096);
        CHECK(e["args"]["bytes"] == 12 * 4096);
        CHECK(e["args"]["kernel"] == "util/saxpy");
      }
    }
  }
  CHECK(threads == std::set<std::string>{"host", "GPU"});
  CHECK(names["create pipeline util/fill"] == 1);
  CHECK(names["create pipeline util/saxpy"] == 1);
  CHECK(names["wait for GPU"] >= 1);
  CHECK(names.count("download y f32[4096]") == 1);
  bool submitted = false;
  for (const auto& [name, count] : names) submitted = submitted || name.rfind("vkQueueSubmit", 0) == 0;
  CHECK(submitted);
  CHECK(names["util/fill"] == 1);
  CHECK(names["fill y"] == 1);
  CHECK(names["util/saxpy"] == 1);
  const std::string summary = read_text(path + ".summary.txt");
  CHECK(summary.find("util/saxpy") != std::string::npos);
  CHECK(summary.find("p95 ms") != std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".summary.txt");
}

// Two contexts, one after the other, profiling to one path: the trace holds both (the second
// replaced the first's), on one timeline.
GPU_TEST_CASE("contexts profiling to one path share its trace", "[profile][gpu]") {
  const std::string path = rill_test::temp_path("shared-trace.json");
  for (const char* label : {"first context", "second context"}) {
    auto options = rill_test::validated_options();
    options.profile_path = path;
    auto ctx = rill_test::make_context(options);
    auto y = ctx.tensor(rill::DType::kF32, {64});
    auto seq = ctx.sequence();
    auto d = rill_test::fill_dispatch(*y, 64, 1.0f);
    d.label = label;
    REQUIRE(seq->dispatch(d).is_ok());
    REQUIRE(seq->run().is_ok());
  }
  auto events = rill::parse_chrome_trace(read_text(path));
  REQUIRE(events.is_ok());
  std::map<std::string, int> names;
  for (const auto& e : events.value()) ++names[e.name];
  CHECK(names["create pipeline util/fill"] == 2);  // each context makes its own (host track)
  if (rill_test::make_context().device().caps.timestamps) {
    CHECK(names["first context"] == 1);  // the GPU track's dispatches, by label
    CHECK(names["second context"] == 1);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".summary.txt");
}

GPU_TEST_CASE("RILL_PROFILE turns profiling on for any program", "[profile][gpu]") {
  const std::string path = rill_test::temp_path("env-trace.json");
  setenv("RILL_PROFILE", path.c_str(), 1);
  {
    auto ctx = rill_test::make_context();
    CHECK(ctx.profiling());
    run_workload(ctx, 100);
  }
  unsetenv("RILL_PROFILE");
  auto events = rill::parse_chrome_trace(read_text(path));
  REQUIRE(events.is_ok());
  CHECK(events->size() > 3);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".summary.txt");
}

TEST_CASE("summaries count replays, take percentiles and compare with the roofline", "[profile]") {
  std::vector<rill::ProfileEvent> events;
  for (int i = 1; i <= 10; ++i) {
    rill::ProfileEvent e;
    e.track = rill::ProfileEvent::Track::kGpu;
    e.kernel = "op/matmul";
    e.variant = "cpu";
    e.duration_us = 1000.0 * i;  // 1..10 ms
    e.flops = 2'000'000'000;     // 2 GFLOP each
    e.bytes = 100'000'000;
    events.push_back(e);
  }
  events[9].replays = 2;  // the 10 ms one ran twice
  rill::ProfileEvent host;
  host.name = "vkQueueSubmit";
  events.push_back(host);
  rill::DevicePeaks peaks;
  peaks.fma_f32_gflops = 100.0;
  peaks.copy_gbps = 10.0;
  const auto summary = rill::summarize_profile(events, &peaks);
  REQUIRE(summary.size() == 1);
  const auto& k = summary[0];
  CHECK(k.calls == 11);
  CHECK(k.total_ms == Approx(65.0));
  CHECK(k.p50_ms == Approx(6.0));
  CHECK(k.p95_ms == Approx(10.0));
  CHECK(k.gflops == Approx(22.0 / 0.065 / 1.0));
  CHECK(k.intensity == Approx(20.0));
  CHECK(k.roofline_fraction == Approx(k.gflops / 100.0));  // compute-bound at 20 FLOP/B
  // The same work in the f16 probe is judged against the f16 peak; on cooperative matrices, whose
  // units no probe measures, against none.
  peaks.fma_f16_gflops = 400.0;
  auto renamed = events;
  for (auto& e : renamed) e.kernel = e.kernel.empty() ? e.kernel : "bench/fma_f16";
  peaks.copy_gbps = 100.0;  // so that 20 FLOP/B is compute-bound against 400 GFLOP/s too
  CHECK(rill::summarize_profile(renamed, &peaks)[0].roofline_fraction == Approx(k.gflops / 400.0));
  for (auto& e : renamed) e.kernel = e.kernel.empty() ? e.kernel : "matmul/matmul_coop_f16";
  CHECK(rill::summarize_profile(renamed, &peaks)[0].roofline_fraction == 0.0);
  const std::string table = rill::format_profile_summary(summary, &peaks);
  CHECK(table.find("op/matmul") != std::string::npos);
  const std::string svg = rill::roofline_svg(summary, peaks);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("op/matmul (cpu)") != std::string::npos);
  peaks.device = "<weird & device>";
  CHECK(rill::roofline_svg(summary, peaks).find("&lt;weird &amp; device&gt;") != std::string::npos);
  // A peak that is not finite (a timer that read 0) draws without it; its axis loop never ended.
  rill::DevicePeaks endless = peaks;
  endless.fma_f32_gflops = INFINITY;
  endless.copy_gbps = std::nan("");
  CHECK(rill::roofline_svg(summary, endless).size() < 100000);
}

// The driver's compiler statistics travel with the pipeline-creation event; a kernel's summary
// shows those of its pipeline with the most GPU time, and a trace keeps them.
TEST_CASE("summaries show the compiler statistics of each kernel's most-timed pipeline", "[profile]") {
  std::vector<rill::ProfileEvent> events;
  for (uint32_t id : {1u, 2u}) {
    rill::ProfileEvent created;
    created.name = "create pipeline op/matmul";
    created.category = "pipeline";
    created.kernel = "op/matmul";
    created.variant = "gpu";
    created.pipeline = id;
    created.statistics = {{"Register Count", 40.0 * id, "registers per invocation"}, {"Spills", 0.0, ""}};
    events.push_back(created);
  }
  for (auto [id, us] : {std::pair{1u, 100.0}, std::pair{2u, 300.0}, std::pair{1u, 150.0}}) {
    rill::ProfileEvent e;
    e.track = rill::ProfileEvent::Track::kGpu;
    e.category = "dispatch";
    e.kernel = "op/matmul";
    e.variant = "gpu";
    e.duration_us = us;
    e.pipeline = id;
    events.push_back(e);
  }
  auto check = [](const std::vector<rill::ProfileEvent>& from) {
    const auto summary = rill::summarize_profile(from, nullptr);
    REQUIRE(summary.size() == 1);
    REQUIRE(summary[0].statistics.size() == 2);
    CHECK(summary[0].statistics[0].name == "Register Count");
    CHECK(summary[0].statistics[0].value == 80.0);  // pipeline 2: 300 us against 250
    CHECK(summary[0].statistics[0].description == "registers per invocation");
    CHECK(rill::format_profile_summary(summary, nullptr).find("op/matmul (gpu): Register Count 80; Spills 0") !=
          std::string::npos);
  };
  check(events);
  auto back = rill::parse_chrome_trace(rill::chrome_trace_json(events, "device", nullptr));
  REQUIRE(back.is_ok());
  check(*back);
  // Without statistics the summary has no such section.
  for (auto& e : events) e.statistics.clear();
  const auto plain = rill::summarize_profile(events, nullptr);
  CHECK(plain[0].statistics.empty());
  CHECK(rill::format_profile_summary(plain, nullptr).find("compiler statistics") == std::string::npos);
}

// Every timed dispatch names its pipeline; a context keeps that pipeline's statistics where the
// driver reports them and it was asked to (lavapipe reports none: the list is empty there).
GPU_TEST_CASE("timed dispatches name their pipeline, whose compiler statistics the context keeps", "[profile][gpu]") {
  auto options = rill_test::validated_options();
  options.pipeline_statistics = true;
  auto ctx = rill_test::make_context(options);
  const uint32_t n = 1000;
  auto x = ctx.tensor(rill::DType::kF32, {n});
  auto y = ctx.tensor(rill::DType::kF32, {n});
  REQUIRE(x.is_ok());
  REQUIRE(y.is_ok());
  auto seq = ctx.sequence({.timestamps = true});
  REQUIRE(seq.is_ok());
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 1.0f)).is_ok());
  REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 2.0f)).is_ok());
  REQUIRE(seq->run().is_ok());
  auto timings = seq->timings();
  REQUIRE(timings.is_ok());
  REQUIRE(timings->size() == 2);
  const uint32_t fill = timings.value()[0].pipeline, saxpy = timings.value()[1].pipeline;
  CHECK(fill != 0);
  CHECK(saxpy != 0);
  CHECK(fill != saxpy);
  for (uint32_t id : {fill, saxpy}) {
    auto stats = ctx.pipeline_statistics(id);
    REQUIRE(stats.is_ok());
    if (ctx.device().caps.pipeline_statistics) {
      CHECK_FALSE(stats->empty());
    } else {
      CHECK(stats->empty());
    }
  }
  if (!ctx.device().caps.pipeline_statistics) WARN(ctx.device().name << " reports no compiler statistics");
  CHECK(ctx.pipeline_statistics(0).status().code() == rill::StatusCode::kNotFound);
  CHECK(ctx.pipeline_statistics(std::max(fill, saxpy) + 1).status().code() == rill::StatusCode::kNotFound);
  // Another context's pipelines have ids of their own (a trace merges every context's events).
  auto other = rill_test::make_context();
  auto z = other.tensor(rill::DType::kF32, {n});
  REQUIRE(z.is_ok());
  auto other_seq = other.sequence({.timestamps = true});
  REQUIRE(other_seq.is_ok());
  REQUIRE(other_seq->dispatch(rill_test::fill_dispatch(*z, n, 1.0f)).is_ok());
  REQUIRE(other_seq->run().is_ok());
  const uint32_t other_fill = other_seq->timings().value().at(0).pipeline;
  CHECK(other_fill != fill);
  CHECK(other_fill != saxpy);
  CHECK(other.pipeline_statistics(other_fill).is_ok());
  CHECK(other.pipeline_statistics(fill).status().code() == rill::StatusCode::kNotFound);
}

TEST_CASE("malformed traces are reported, not crashed on", "[profile]") {
  CHECK(rill::parse_chrome_trace("{not json").status().code() == rill::StatusCode::kDataLoss);
  CHECK(rill::parse_chrome_trace("[1,2,3]").status().code() == rill::StatusCode::kDataLoss);
  CHECK(rill::parse_chrome_trace(R"({"traceEvents": [{"ph": "X", "ts": "soon"}]})").status().code() ==
        rill::StatusCode::kDataLoss);
  // Counts are counts (never a negative one wrapped, a fraction cut or a fourth group dropped),
  // durations are not negative, keys appear once, and nesting stays shallow.
  for (const char* bad :
       {R"({"traceEvents": [{"ph": "X", "args": {"kernel": "k", "groups": [-1, 1, 1]}}]})",
        R"({"traceEvents": [{"ph": "X", "args": {"kernel": "k", "groups": [1.5, 1, 1]}}]})",
        R"({"traceEvents": [{"ph": "X", "args": {"kernel": "k", "groups": [1, 1, 1, 1]}}]})",
        R"({"traceEvents": [{"ph": "X", "args": {"kernel": "k", "replays": 4294967296}}]})",
        R"({"traceEvents": [{"ph": "X", "args": {"kernel": "k", "flops": -5}}]})",
        R"({"traceEvents": [{"ph": "X", "dur": -1}]})", R"({"traceEvents": [{"ph": "X", "name": "a", "name": "b"}]})",
        R"({"traceEvents": [[[[[[[[[[[]]]]]]]]]]]})"}) {
    INFO(bad);
    CHECK(rill::parse_chrome_trace(bad).status().code() == rill::StatusCode::kDataLoss);
  }
  auto ok = rill::parse_chrome_trace(
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "tid": 2, "args": {"groups": [3, 2, 1]}}]})");
  REQUIRE(ok.is_ok());
  REQUIRE(ok->size() == 1);
  CHECK(ok.value()[0].track == rill::ProfileEvent::Track::kGpu);
  CHECK(ok.value()[0].groups[0] == 3);
  // A label that is not UTF-8 is written with a replacement character, not thrown on.
  rill::ProfileEvent odd;
  odd.name = "bad \xff label";
  auto back = rill::parse_chrome_trace(rill::chrome_trace_json({odd}, "device", nullptr));
  REQUIRE(back.is_ok());
  REQUIRE(back->size() == 1);
  CHECK(back.value()[0].name == "bad \xef\xbf\xbd label");
}

GPU_TEST_CASE("device peaks are measured, cached per device, and a bad cache is replaced", "[profile][gpu]") {
  const std::string dir = rill_test::temp_path("peaks");
  auto ctx = rill_test::make_context();
  CHECK(rill::cached_device_peaks(ctx, dir).status().code() == rill::StatusCode::kNotFound);
  auto measured = rill::device_peaks(ctx, {.quick = true, .cache_dir = dir});
  REQUIRE(measured.is_ok());
  CHECK(measured->fma_f32_gflops > 0.0);
  CHECK(measured->copy_gbps > 0.0);
  CHECK(measured->dispatch_latency_us > 0.0);
  CHECK((measured->fma_f16_gflops > 0.0) == ctx.device().caps.float16_arithmetic);
  // A quick measurement is not cached (a full one would be served it); a full one is, per device and
  // limit profile (a profile measures other peaks).
  CHECK(rill::cached_device_peaks(ctx, dir).status().code() == rill::StatusCode::kNotFound);
  rill::detail::write_cached_peaks(ctx.device(), dir, *measured);
  rill::DeviceInfo profiled = ctx.device();  // under another profile than the context's own
  profiled.limit_profile = ctx.device().limit_profile == "mali" ? "adreno" : "mali";
  CHECK(rill::detail::read_cached_peaks(profiled, dir).status().code() == rill::StatusCode::kNotFound);
  // Another driver release with the same version number (lavapipe reports 1 for every Mesa release).
  rill::DeviceInfo upgraded = ctx.device();
  upgraded.driver_info += " (another release)";
  CHECK(rill::detail::read_cached_peaks(upgraded, dir).status().code() == rill::StatusCode::kNotFound);
  // A CPU driver's figures are the host's: another thread count (here lavapipe's LP_NUM_THREADS) has
  // a cache of its own.
  {
    const std::string cpu_dir = rill_test::temp_path("peaks-cpu");
    rill::DeviceInfo cpu = ctx.device();
    cpu.type = rill::DeviceType::kCpu;
    rill::detail::write_cached_peaks(cpu, cpu_dir, *measured);
    CHECK(rill::detail::read_cached_peaks(cpu, cpu_dir).is_ok());
    {
      const char* set = std::getenv("LP_NUM_THREADS");
      rill_test::ScopedEnv threads("LP_NUM_THREADS", set != nullptr && std::string(set) == "3" ? "5" : "3");
      CHECK(rill::detail::read_cached_peaks(cpu, cpu_dir).status().code() == rill::StatusCode::kNotFound);
    }
    std::filesystem::remove_all(cpu_dir);
  }
  auto cached = rill::cached_device_peaks(ctx, dir);
  REQUIRE(cached.is_ok());
  CHECK(cached->fma_f32_gflops == measured->fma_f32_gflops);
  // Damaged, absurd or doctored caches are refused (the measurement then replaces them).
  const std::string name =
      "\"method\": " + std::to_string(rill::detail::kPeaksMethod) + ", \"device\": \"" + ctx.device().name + "\", ";
  const std::string good = "\"fma_f32_gflops\": 10, \"fma_f16_gflops\": 5, \"copy_gbps\": 2, \"dispatch_latency_us\": 50";
  const std::vector<std::string> bad = {
      "{\"device\": 3",
      "{" + name + "\"fma_f32_gflops\": 10, \"fma_f16_gflops\": -5, \"copy_gbps\": 2, \"dispatch_latency_us\": 50}",
      "{" + name + "\"fma_f32_gflops\": 1e300, \"fma_f16_gflops\": 5, \"copy_gbps\": 2, \"dispatch_latency_us\": 50}",
      "{" + name + "\"fma_f32_gflops\": 10, \"fma_f16_gflops\": 5, \"copy_gbps\": 2, \"dispatch_latency_us\": -1}",
      "{" + name + good + ", \"copy_gbps\": 3}",  // a key given twice
      "{" + name + good + "} trailing",
      "[1, 2]",                                                                        // not an object
      "{\"method\": \"1\", \"device\": \"" + ctx.device().name + "\", " + good + "}",  // a method that is no integer
  };
  const std::filesystem::path cache_file = std::filesystem::directory_iterator(dir)->path();
  std::ofstream(cache_file, std::ios::trunc) << "{" + name + good + "}";
  CHECK(rill::cached_device_peaks(ctx, dir).is_ok());  // the well-formed one is read
  for (const std::string& text : bad) {
    std::ofstream(cache_file, std::ios::trunc) << text;
    INFO(text);
    CHECK(rill::cached_device_peaks(ctx, dir).status().code() == rill::StatusCode::kDataLoss);
  }
  // Figures of other probes (an older rill's cache has no method) are measured again, not read.
  for (const std::string& other :
       {std::string(""), "\"method\": " + std::to_string(rill::detail::kPeaksMethod + 1) + ", "}) {
    std::ofstream(cache_file, std::ios::trunc)
        << "{" + other + "\"device\": \"" + ctx.device().name + "\", " + good + "}";
    const rill::Status older = rill::cached_device_peaks(ctx, dir).status();
    CHECK(older.code() == rill::StatusCode::kNotFound);
    CHECK(older.message().find("another version of rill's probes") != std::string::npos);
  }
  // Another device's figures (a shared home folder) are refused as that, not as damage.
  std::ofstream(cache_file, std::ios::trunc)
      << "{\"method\": " + std::to_string(rill::detail::kPeaksMethod) + ", \"device\": \"another GPU\", " + good + "}";
  const rill::Status elsewhere = rill::cached_device_peaks(ctx, dir).status();
  CHECK(elsewhere.code() == rill::StatusCode::kFailedPrecondition);
  CHECK(elsewhere.message().find("measured on another device ('another GPU')") != std::string::npos);
  auto again = rill::device_peaks(ctx, {.cache_dir = dir});
  REQUIRE(again.is_ok());
  CHECK(rill::cached_device_peaks(ctx, dir).is_ok());
  std::filesystem::remove_all(dir);
}

GPU_TEST_CASE("a same-size copy is timed for any byte count, and refused past one dispatch", "[profile][gpu]") {
  auto ctx = rill_test::make_context();
  auto small = rill::copy_ms(ctx, 1000, 2);  // rounded up to whole vectors of 4 floats
  REQUIRE(small.is_ok());
  CHECK(*small > 0.0);
  auto large = rill::copy_ms(ctx, 8ull << 20, 2);
  REQUIRE(large.is_ok());
  CHECK(*large > 0.0);
  CHECK(rill::copy_ms(ctx, 32ull * UINT32_MAX + 64, 1).status().code() == rill::StatusCode::kInvalidArgument);
}
