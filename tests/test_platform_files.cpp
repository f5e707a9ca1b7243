// The platform file layer (engine/src/platform/files.hpp): mappings of every kind of file, UTF-8
// paths through every file entry point, atomic replacement leaving nothing behind, and file locks.

#ifndef _WIN32
#include <sys/stat.h>
#endif

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/file_io.hpp"
#include "platform/files.hpp"
#include "rill/safetensors.hpp"
#include "temp_path.hpp"

namespace {

namespace fs = std::filesystem;
using rill::StatusCode;
using rill::platform::MappedFile;

// A fresh directory for one test case, removed with its contents at the end.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name) : path(fs::path(rill_test::temp_dir()) / name) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& utf8_name) const {
    return rill::platform::utf8_from_path(path) + "/" + utf8_name;
  }
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(rill::platform::path_from_utf8(path), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("a mapped file holds the file's bytes, and an empty file maps empty", "[core][platform]") {
  ScratchDir dir("map");
  const std::vector<uint8_t> bytes = {1, 2, 3, 250, 0, 7};
  write_bytes(dir / "six.bin", bytes);
  write_bytes(dir / "empty.bin", {});
  auto six = MappedFile::open(dir / "six.bin", 6);
  REQUIRE(six.is_ok());
  CHECK(std::vector<uint8_t>(six->bytes().begin(), six->bytes().end()) == bytes);
  MappedFile moved = std::move(six).value();  // the view moves with it
  CHECK(moved.bytes().size() == 6);
  CHECK(moved.bytes()[3] == 250);
  auto empty = MappedFile::open(dir / "empty.bin", 6);
  REQUIRE(empty.is_ok());
  CHECK(empty->bytes().empty());
}

TEST_CASE("a mapping refuses missing, oversized and non-regular files with their reasons", "[core][platform]") {
  ScratchDir dir("refuse");
  write_bytes(dir / "ten.bin", std::vector<uint8_t>(10, 1));
  const auto missing = MappedFile::open(dir / "missing.bin", 100);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "no such file");
  const auto big = MappedFile::open(dir / "ten.bin", 9);
  CHECK(big.status().code() == StatusCode::kOutOfRange);
  CHECK(big.status().message() == "10 bytes exceed the limit of 9");
  CHECK(MappedFile::open(rill::platform::utf8_from_path(dir.path), 100).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("files with non-ASCII UTF-8 names are written, read and mapped", "[core][platform]") {
  ScratchDir dir("utf8");
  const std::string name = dir / "m\xc3\xbcller-\xe6\xa8\xa1\xe5\x9e\x8b.safetensors";  // müller-模型
  rill::SafetensorsWriter writer;
  REQUIRE(writer.add_floats("w", {2}, std::vector<float>{1.5f, -2.0f}).is_ok());
  REQUIRE(writer.write(name).is_ok());
  CHECK(fs::exists(rill::platform::path_from_utf8(name)));
  CHECK(rill::check_writable(name).is_ok());
  auto bytes = rill::read_file(name, 1 << 20);
  REQUIRE(bytes.is_ok());
  CHECK(bytes->size() == fs::file_size(rill::platform::path_from_utf8(name)));
  auto file = rill::SafetensorsFile::open(name);
  REQUIRE(file.is_ok());
  CHECK(file->entries().size() == 1);
}

#ifndef _WIN32
// As root, a state saved to /dev/full replaced the device node with a regular file.
TEST_CASE("an atomic replacement refuses devices and FIFOs, writes through links and keeps permissions",
          "[core][platform]") {
  ScratchDir dir("replace-kinds");
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const rill::Status& s :
       {rill::write_file_atomic(fifo, std::vector<uint8_t>(2, 1)), rill::check_writable(fifo)}) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("not a regular file"));
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(rill::check_writable("/dev/null").code() == StatusCode::kInvalidArgument);
  // Nor is one read: no wait for a writer, no device opened.
  for (const std::string& not_regular : {fifo, std::string("/dev/zero"), dir.path.string()}) {
    const auto read = rill::read_file(not_regular, 1 << 20);
    INFO(not_regular);
    CHECK(read.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(read.status().message(), Catch::Contains("is not a regular file"));
  }
  // A link is written through: the file it names changes, the link stays a link.
  const std::string target = dir / "target.bin", link = dir / "link.bin";
  write_bytes(target, {9});
  fs::create_symlink("target.bin", link);
  REQUIRE(rill::check_writable(link).is_ok());
  REQUIRE(rill::write_file_atomic(link, std::vector<uint8_t>(4, 7)).is_ok());
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(rill::read_file(target, 100).value() == std::vector<uint8_t>(4, 7));
  // A private file stays private; a new one has what the umask leaves of 0666 (under 027: 0640).
  const std::string secret = dir / "secret.bin", fresh = dir / "fresh.bin";
  write_bytes(secret, {1});
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  REQUIRE(rill::write_file_atomic(secret, std::vector<uint8_t>(3, 3)).is_ok());
  CHECK(fs::status(secret).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  const mode_t umask_before = ::umask(027);  // tests run on one thread: setting it races with nothing
  const rill::Status fresh_written = rill::write_file_atomic(fresh, std::vector<uint8_t>(1, 1));
  ::umask(umask_before);
  REQUIRE(fresh_written.is_ok());
  CHECK(fs::status(fresh).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
}
#endif

TEST_CASE("an atomic replacement leaves only the new file", "[core][platform]") {
  ScratchDir dir("replace");
  const std::string path = dir / "state.bin";
  REQUIRE(rill::write_file_atomic(path, std::vector<uint8_t>(3, 1)).is_ok());
  REQUIRE(rill::write_file_atomic(path, std::vector<uint8_t>(5, 2)).is_ok());
  CHECK(rill::read_file(path, 100).value() == std::vector<uint8_t>(5, 2));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);  // no temporaries left beside it
  const rill::Status into_missing_dir = rill::write_file_atomic(dir / "no-such-dir/x.bin", std::vector<uint8_t>(1));
  CHECK(into_missing_dir.code() == StatusCode::kUnavailable);
  CHECK_THAT(into_missing_dir.message(), Catch::Contains("no-such-dir/x.bin"));
}

TEST_CASE("a file lock is held against other holders until released", "[core][platform]") {
  using rill::platform::FileLock;
  using namespace std::chrono_literals;
  ScratchDir dir("lock");
  const std::string path = dir / "cache.bin.lock";
  auto first = FileLock::acquire(path, 0ms);
  REQUIRE(first.is_ok());
  CHECK(fs::exists(path));
  // Another holder (of this process too) waits, and is refused past its wait.
  const auto refused = FileLock::acquire(path, 30ms);
  CHECK(refused.status().code() == StatusCode::kDeadlineExceeded);
  CHECK_THAT(refused.status().message(), Catch::Contains("held by another for 30 ms"));
  // A move carries the lock: destroying the moved-from object releases nothing.
  FileLock moved = std::move(first).value();
  {
    FileLock moved_from = std::move(moved);
    moved = std::move(moved_from);
  }  // moved_from, moved from, is destroyed
  CHECK(FileLock::acquire(path, 0ms).status().code() == StatusCode::kDeadlineExceeded);
  // A waiter gets it once the holder lets go, not before.
  std::atomic<bool> released{false};
  std::thread holder([&] {
    std::this_thread::sleep_for(50ms);
    released = true;
    moved = FileLock();  // releases
  });
  {
    const auto waited = FileLock::acquire(path, 60s);
    const bool released_first = released;
    holder.join();
    REQUIRE(waited.is_ok());
    CHECK(released_first);
  }
  // Released on destruction; the file stays (a waiter may hold it open).
  CHECK(FileLock::acquire(path, 0ms).is_ok());
  CHECK(fs::exists(path));
  // A lock beside a missing folder cannot be made.
  CHECK(FileLock::acquire(dir / "no-such-dir/x.lock", 0ms).status().code() == StatusCode::kUnavailable);
}
