// Pipeline cache persistence: save and reload; truncated, corrupt, foreign and garbage files are
// rejected with a reason and the context carries on.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/file_io.hpp"
#include "gpu_test.hpp"
#include "platform/files.hpp"
#include "vk/pipeline_cache_file.hpp"

namespace {

void run_fill(rill::Context& ctx) {
  auto t = ctx.tensor(rill::DType::kF32, {300});
  REQUIRE(t.is_ok());
  auto seq = ctx.sequence();
  REQUIRE(seq.is_ok());
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*t, 300, 4.0f)).is_ok());
  REQUIRE(seq->run().is_ok());
  auto v = ctx.download_floats(*t);
  REQUIRE(v.is_ok());
  CHECK(v.value()[299] == 4.0f);
}

rill::ContextOptions with_cache(const std::string& path) {
  auto o = rill_test::validated_options();
  o.pipeline_cache_path = path;
  return o;
}

std::vector<uint8_t> read_all(const std::string& path) { return rill::read_file(path, 1 << 30).value(); }

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  REQUIRE(rill::write_file_atomic(path, bytes).is_ok());
}

}  // namespace

GPU_TEST_CASE("a saved pipeline cache is loaded by the next context", "[pipeline-cache][gpu]") {
  const std::string path = rill_test::temp_path("cache-ok.bin");
  {
    auto ctx = rill_test::make_context(with_cache(path));
    CHECK_FALSE(ctx.pipeline_stats().cache_loaded);
    CHECK(ctx.pipeline_stats().cache_rejected_reason.empty());  // a missing file is not an error
    run_fill(ctx);
    CHECK(ctx.pipeline_stats().pipelines_created == 1);
    REQUIRE(ctx.save_pipeline_cache().is_ok());
  }
  REQUIRE(std::filesystem::exists(path));
  {
    auto ctx = rill_test::make_context(with_cache(path));
    CHECK(ctx.pipeline_stats().cache_loaded);
    CHECK(ctx.pipeline_stats().cache_rejected_reason.empty());
    run_fill(ctx);
  }  // saved again on destruction
  std::filesystem::remove(path);
}

// Two contexts (or processes) that share a cache file: the one that saves last merges the other's
// pipelines in instead of dropping them.
GPU_TEST_CASE("contexts sharing a cache file keep each other's pipelines", "[pipeline-cache][gpu]") {
  const std::string path = rill_test::temp_path("cache-shared.bin"), alone = rill_test::temp_path("cache-alone.bin"),
                    empty = rill_test::temp_path("cache-empty.bin");
  auto run_saxpy = [](rill::Context& ctx) {
    auto x = ctx.tensor(rill::DType::kF32, {300});
    auto y = ctx.tensor(rill::DType::kF32, {300});
    REQUIRE(x.is_ok());
    REQUIRE(y.is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq.is_ok());
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, 300, 2.0f)).is_ok());
    REQUIRE(seq->run().is_ok());
  };
  {
    auto saxpy_only = rill_test::make_context(with_cache(alone));
    run_saxpy(saxpy_only);
  }
  {
    auto first = rill_test::make_context(with_cache(path));
    auto second = rill_test::make_context(with_cache(path));
    run_fill(first);
    run_saxpy(second);
    REQUIRE(first.save_pipeline_cache().is_ok());
    REQUIRE(second.save_pipeline_cache().is_ok());  // loaded before the first saved
    // A file that is not a cache (or another device's) is replaced by this cache's own pipelines.
    write_all(path, std::vector<uint8_t>(100, 0x5a));
    REQUIRE(first.save_pipeline_cache().is_ok());
    CHECK(rill_test::make_context(with_cache(path)).pipeline_stats().cache_loaded);
    REQUIRE(second.save_pipeline_cache().is_ok());  // merged again with what the first wrote
  }
  {
    auto nothing = rill_test::make_context(with_cache(empty));
    REQUIRE(nothing.save_pipeline_cache().is_ok());
  }
  // The fill pipeline is in the file too (where the driver caches anything at all).
  const size_t merged = read_all(path).size(), saxpy = read_all(alone).size(), headers = read_all(empty).size();
  INFO("merged " << merged << " bytes, saxpy alone " << saxpy << ", no pipeline " << headers);
  if (saxpy > headers) {
    CHECK(merged > saxpy);
  } else {
    WARN("this driver's pipeline cache holds nothing: no pipelines to merge");
  }
  for (const std::string& file : {path, alone, empty}) std::filesystem::remove(file);
}

// A save holds the cache file's lock while it reads, merges and replaces the file, so two saving at
// once cannot each merge the old file and the second drop the first's pipelines. A holder that does
// not let go (a stopped process) delays a save by two seconds, with a warning, never blocks it.
GPU_TEST_CASE("a pipeline cache save holds the file's lock and outwaits no stuck holder", "[pipeline-cache][gpu]") {
  using namespace std::chrono_literals;
  const std::string path = rill_test::temp_path("cache-locked.bin");
  auto ctx = rill_test::make_context(with_cache(path));
  run_fill(ctx);
  {
    auto stuck = rill::platform::FileLock::acquire(path + ".lock", 0ms);
    REQUIRE(stuck.is_ok());
    std::vector<std::string> logged;
    rill::set_log_callback([&](rill::MessageSeverity, std::string_view m) { logged.emplace_back(m); });
    const rill::Status saved = ctx.save_pipeline_cache();
    rill::set_log_callback(nullptr);
    REQUIRE(saved.is_ok());
    CHECK(std::filesystem::exists(path));
    REQUIRE(logged.size() == 1);
    CHECK_THAT(logged[0], Catch::Contains("saving without its lock file (held by another for 2000 ms)"));
  }
  // Contexts saving on several threads at once (as processes would) wait their turns on the lock
  // and neither fail nor deadlock, and they leave a cache the next context loads. (That no merge is
  // lost shows only where the driver caches pipelines; "contexts sharing a cache file" checks what
  // a merge keeps, on one thread.)
  std::filesystem::remove(path);
  {
    std::vector<rill::Context> contexts;
    for (int i = 0; i < 3; ++i) contexts.push_back(rill_test::make_context(with_cache(path)));
    std::vector<std::thread> savers;
    std::atomic<int> saved{0};
    for (rill::Context& c : contexts)
      savers.emplace_back([&saved, &c] {
        for (int round = 0; round < 5; ++round) saved += c.save_pipeline_cache().is_ok() ? 1 : 0;
      });
    for (std::thread& t : savers) t.join();
    CHECK(saved == 15);
  }  // saved again on destruction
  CHECK(rill_test::make_context(with_cache(path)).pipeline_stats().cache_loaded);
  // Nothing holds the lock after the saves.
  CHECK(rill::platform::FileLock::acquire(path + ".lock", 0ms).is_ok());
}

GPU_TEST_CASE("truncated, corrupt, foreign and garbage cache files are rejected safely", "[pipeline-cache][gpu]") {
  const std::string path = rill_test::temp_path("cache-bad.bin");
  {
    auto ctx = rill_test::make_context(with_cache(path));
    run_fill(ctx);
  }  // saved on destruction
  const std::vector<uint8_t> good = read_all(path);
  REQUIRE(good.size() > 64);

  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* reason;
  };
  std::vector<uint8_t> truncated(good.begin(), good.begin() + long(good.size() / 2));
  std::vector<uint8_t> corrupt = good;
  corrupt[corrupt.size() - 5] ^= 0xff;
  std::vector<uint8_t> foreign = good;
  foreign[12] ^= 0x01;  // vendor id in rill's header
  std::vector<uint8_t> garbage(4096, 0xab);
  const Case cases[] = {{"truncated", truncated, "truncated"},
                        {"corrupt", corrupt, "checksum"},
                        {"foreign", foreign, "another device"},
                        {"garbage", garbage, "bad magic"},
                        {"empty", {}, "truncated"}};
  for (const Case& c : cases) {
    INFO(c.what);
    write_all(path, c.bytes);
    auto ctx = rill_test::make_context(with_cache(path));
    CHECK_FALSE(ctx.pipeline_stats().cache_loaded);
    CHECK(ctx.pipeline_stats().cache_rejected_reason.find(c.reason) != std::string::npos);
    run_fill(ctx);
  }
  std::filesystem::remove(path);
}

TEST_CASE("cache payloads whose driver header disagrees are rejected", "[pipeline-cache]") {
  rill::vk::PipelineCacheIdentity id;
  id.vendor_id = 0x10de;
  id.device_id = 0x2335;
  std::vector<uint8_t> payload(64, 0);
  const uint32_t header[4] = {32, 1, 0x10de, 0x2335};
  std::memcpy(payload.data(), header, sizeof header);
  CHECK(rill::vk::decode_pipeline_cache(id, rill::vk::encode_pipeline_cache(id, payload)).is_ok());
  payload[8] = 0x02;  // driver header now names another vendor
  auto bad = rill::vk::decode_pipeline_cache(id, rill::vk::encode_pipeline_cache(id, payload));
  CHECK(bad.status().code() == rill::StatusCode::kFailedPrecondition);
  std::vector<uint8_t> tiny(8, 0);
  CHECK(rill::vk::decode_pipeline_cache(id, rill::vk::encode_pipeline_cache(id, tiny)).status().code() ==
        rill::StatusCode::kDataLoss);
}
