// Core: Status/Result, checked arithmetic, f16 conversion, atomic file writes, VkResult mapping,
// the host's parallel loop.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <new>

#include "core/checked_math.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "core/parallel_for.hpp"
#include "rill/half.hpp"
#include "rill/status.hpp"
#include "scoped_env.hpp"
#include "temp_path.hpp"
#include "vk/vk_common.hpp"

#if defined(__unix__)
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#endif

namespace {

rill::Result<int> parse_positive(int v) {
  if (v <= 0) return rill::invalid_argument("not positive: " + std::to_string(v));
  return v;
}

rill::Status use_macros(int v, int* out) {
  RILL_ASSIGN_OR_RETURN(int x, parse_positive(v));
  RILL_RETURN_IF_ERROR(x > 100 ? rill::out_of_range("too big") : rill::Status::ok());
  *out = x;
  return rill::Status::ok();
}

}  // namespace

TEST_CASE("Status carries code and message; macros propagate the first error", "[core]") {
  int out = 0;
  CHECK(use_macros(5, &out).is_ok());
  CHECK(out == 5);
  rill::Status s = use_macros(-1, &out);
  CHECK(s.code() == rill::StatusCode::kInvalidArgument);
  const bool shown = rill::status_locations();
  rill::set_status_locations(false);
  CHECK(s.to_string() == "InvalidArgument: not positive: -1");
  // The origin is where the status was made (use_macros), kept through with_context.
  CHECK(s.location().find("tests/test_core.cpp:") == 0);
  CHECK(s.with_context("loading").location() == s.location());
  rill::set_status_locations(true);
  CHECK(s.to_string() == "InvalidArgument: not positive: -1 (at " + s.location() + ")");
  rill::set_status_locations(shown);
  CHECK(rill::Status::ok().location().empty());
  CHECK(use_macros(500, &out).code() == rill::StatusCode::kOutOfRange);
  CHECK(s.with_context("loading").message() == "loading: not positive: -1");
  rill::Result<int> bad = rill::Status::ok();  // an OK status is not a value
  CHECK(!bad.is_ok());
  CHECK(bad.status().code() == rill::StatusCode::kInternal);
}

#if defined(__unix__)
// Reading the value of a failed Result is a caller's bug; it must stop the program with the
// status's message rather than read an empty optional. Run in a child process that aborts.
TEST_CASE("reading the value of a failed Result aborts with its message", "[core]") {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    rill::Result<int> failed = parse_positive(-7);
    const int read = failed.value();  // aborts
    _exit(read == 0 ? 3 : 4);
  }
  close(pipe_fds[1]);
  std::string said;
  char buffer[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) said.append(buffer, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT));
  CHECK(said.find("holds an error: InvalidArgument: not positive: -7") != std::string::npos);
}
#endif

TEST_CASE("checked arithmetic detects overflow", "[core]") {
  CHECK(rill::checked_mul(1ull << 32, 1ull << 31).value() == 1ull << 63);
  CHECK_FALSE(rill::checked_mul(1ull << 32, 1ull << 32).has_value());
  CHECK_FALSE(rill::checked_add(~0ull, 1).has_value());
  CHECK(rill::checked_align_up(257, 256).value() == 512);
  CHECK_FALSE(rill::checked_align_up(~0ull - 3, 256).has_value());
}

TEST_CASE("f16 conversion round-trips every half value and rounds to nearest even", "[core]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = rill::half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(rill::half_to_float(rill::float_to_half(f))));
      continue;
    }
    INFO("half bits " << h);
    REQUIRE(rill::float_to_half(f) == h);
  }
  CHECK(rill::float_to_half(65504.0f) == 0x7bff);
  CHECK(rill::float_to_half(65520.0f) == 0x7c00);            // halfway to the next: ties to even -> Inf
  CHECK(rill::float_to_half(1.0f + 1.0f / 2048.0f) == 0x3c00);  // tie, even mantissa stays
  CHECK(rill::float_to_half(1.0f + 3.0f / 2048.0f) == 0x3c02);  // tie, odd mantissa rounds up
  CHECK(rill::float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // half the smallest subnormal: even
  CHECK(rill::float_to_half(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(rill::float_to_half(-0.0f) == 0x8000);
}

TEST_CASE("atomic writes replace files whole and leave no temporary behind", "[core]") {
  const std::string path = rill_test::temp_path("atomic.bin");
  std::vector<uint8_t> first(1000, 1), second(10, 2);
  REQUIRE(rill::write_file_atomic(path, first).is_ok());
  REQUIRE(rill::write_file_atomic(path, second).is_ok());
  auto back = rill::read_file(path, 1 << 20);
  REQUIRE(back.is_ok());
  CHECK(back.value() == second);
  for (const auto& e : std::filesystem::directory_iterator(rill_test::temp_dir()))
    CHECK(e.path().string().find(path + ".tmp") == std::string::npos);
  // A failed write (missing directory) reports an error and touches nothing.
  CHECK(rill::write_file_atomic("/nonexistent-dir/x.bin", first).code() == rill::StatusCode::kUnavailable);
  std::filesystem::remove(path);
}

TEST_CASE("atomic writes remove temporaries that killed writers left, but not young ones", "[core]") {
  const std::string path = rill_test::temp_path("stale.bin");
  const std::string stale = path + ".tmp.AAAAAA", young = path + ".tmp.BBBBBB", other = path + ".tmpx.CCCCCC";
  for (const std::string& f : {stale, young, other}) REQUIRE(rill::write_file_atomic(f, std::vector<uint8_t>(3, 1)).is_ok());
  // A writer killed two minutes ago left `stale`; `young` may belong to a writer still at work.
  const auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(2);
  std::filesystem::last_write_time(stale, old_time);
  std::filesystem::last_write_time(other, old_time);
  REQUIRE(rill::write_file_atomic(path, std::vector<uint8_t>(5, 2)).is_ok());
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(young));
  CHECK(std::filesystem::exists(other));  // not this file's temporary
  for (const std::string& f : {path, young, other}) std::filesystem::remove(f);
}

TEST_CASE("check_writable names the path and the reason", "[core]") {
  CHECK(rill::check_writable(rill_test::temp_path("ok.bin")).is_ok());
  const rill::Status missing = rill::check_writable("/nonexistent-dir/x.bin");
  CHECK(missing.code() == rill::StatusCode::kNotFound);
  CHECK_THAT(missing.message(),
             Catch::Contains("/nonexistent-dir/x.bin") && Catch::Contains("no such directory '/nonexistent-dir'"));
  CHECK(rill::check_writable(rill_test::temp_dir()).code() == rill::StatusCode::kInvalidArgument);  // a directory
  CHECK(rill::check_writable("").code() == rill::StatusCode::kInvalidArgument);
  // The folder is asked by making a file there, which it keeps no trace of (access(W_OK) said yes to
  // root for /proc, where no file can be made).
  for (const auto& entry : std::filesystem::directory_iterator(rill_test::temp_dir()))
    CHECK(entry.path().filename().string().find(".rill-write-probe") == std::string::npos);
#ifdef __linux__
  CHECK_FALSE(rill::check_writable("/proc/rill-probe.bin").is_ok());
#endif
}

TEST_CASE("read_file refuses missing, oversized and non-regular files", "[core]") {
  const std::string path = rill_test::temp_path("big.bin");
  REQUIRE(rill::write_file_atomic(path, std::vector<uint8_t>(100, 7)).is_ok());
  CHECK(rill::read_file(path, 99).status().code() == rill::StatusCode::kOutOfRange);
  CHECK(rill::read_file(path, 100).is_ok());
  CHECK(rill::read_file(path + ".missing", 100).status().code() == rill::StatusCode::kNotFound);
  CHECK(rill::read_file(rill_test::temp_dir(), 100).status().code() == rill::StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST_CASE("every VkResult maps to a status with its name", "[core]") {
  using rill::StatusCode;
  CHECK(rill::vk::status_from_result(VK_SUCCESS, "x").is_ok());
  CHECK(rill::vk::status_from_result(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory").code() == StatusCode::kResourceExhausted);
  CHECK(rill::vk::status_from_result(VK_ERROR_OUT_OF_HOST_MEMORY, "x").code() == StatusCode::kResourceExhausted);
  CHECK(rill::vk::status_from_result(VK_ERROR_DEVICE_LOST, "x").code() == StatusCode::kDeviceLost);
  CHECK(rill::vk::status_from_result(VK_ERROR_INCOMPATIBLE_DRIVER, "x").code() == StatusCode::kUnavailable);
  CHECK(rill::vk::status_from_result(VK_ERROR_UNKNOWN, "x").code() == StatusCode::kInternal);
  const auto s = rill::vk::status_from_result(VK_ERROR_FRAGMENTED_POOL, "vkAllocateDescriptorSets");
  CHECK(s.message() == "vkAllocateDescriptorSets returned VK_ERROR_FRAGMENTED_POOL");
}

// An exception in any range (a worker's std::bad_alloc) reaches the caller once every thread has
// joined; it used to terminate the process (thrown out of a thread, or past joinable threads).
TEST_CASE("parallel_for covers every item once and rethrows a range's exception", "[core]") {
  std::vector<int> seen(10000, 0);
  rill::detail::parallel_for(seen.size(), 16, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) ++seen[i];
  });
  CHECK(std::all_of(seen.begin(), seen.end(), [](int v) { return v == 1; }));
  for (const size_t failing : {size_t(0), size_t(9999)}) {  // the caller's range, the last worker's
    INFO("failing item " << failing);
    CHECK_THROWS_AS(rill::detail::parallel_for(seen.size(), 16,
                                               [&](size_t begin, size_t end) {
                                                 if (begin <= failing && failing < end) throw std::bad_alloc();
                                               }),
                    std::bad_alloc);
  }
}

#if defined(__unix__)
// What the default sink (stderr) prints of one message of each severity under RILL_LOG=`level`.
std::string printed_under(const char* level) {
  const rill_test::ScopedEnv env("RILL_LOG", level);
  const std::string path = rill_test::temp_path("log.txt");
  std::fflush(stderr);
  const int saved = dup(2), file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(saved >= 0);
  REQUIRE(file >= 0);
  dup2(file, 2);
  rill::log_info("an info");
  rill::log_warning("a warning");
  rill::log_message(rill::MessageSeverity::kError, "an error");
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(file);
  const auto bytes = rill::read_file(path, 1 << 16).value();
  std::filesystem::remove(path);
  return std::string(bytes.begin(), bytes.end());
}

TEST_CASE("RILL_LOG sets the least severe message printed, and a bad value is named", "[core]") {
  CHECK(printed_under(nullptr) == "rill warning: a warning\nrill error: an error\n");
  CHECK(printed_under("warning") == "rill warning: a warning\nrill error: an error\n");
  CHECK(printed_under("info") == "rill info: an info\nrill warning: a warning\nrill error: an error\n");
  CHECK(printed_under("error") == "rill error: an error\n");
  for (const char* ok : {"info", "warning", "error", ""}) {
    const rill_test::ScopedEnv env("RILL_LOG", ok);
    CHECK(rill::check_log_env().is_ok());
  }
  const rill_test::ScopedEnv bad("RILL_LOG", "verbose");
  CHECK(rill::check_log_env().code() == rill::StatusCode::kInvalidArgument);
  CHECK(rill::check_log_env().message().find("RILL_LOG='verbose'") != std::string::npos);
}
#endif
