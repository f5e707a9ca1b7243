// Standalone fuzz driver (no libFuzzer needed): for every target of loaders.hpp, its valid seed and
// then mutations of it, within a time budget shared by the targets. Mutations: bit flips, bytes
// set to boundary values, truncation, insertion and deletion of ranges, duplicated ranges, and
// splices with other targets' seeds; each input derives from the previous one or the seed, so
// changes accumulate, and half of them get the target's fixup (a consistent length prefix).
// Deterministic from --seed. A crash or a sanitizer report fails the process;
// the summary says how many inputs each loader took.
//   rill_fuzz [--seconds S] [--seed N] [--target NAME] [--write-seeds DIR]
// --write-seeds writes each target's seed to DIR/<name>/seed (a starting corpus for libFuzzer).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

#include "loaders.hpp"
#include "rill/log.hpp"

namespace {

std::vector<uint8_t> mutate(std::vector<uint8_t> in, std::mt19937_64& rng, const std::vector<std::vector<uint8_t>>& pool) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  static const uint8_t kBoundary[] = {0x00, 0xFF, 0x7F, 0x80, '"', '{', '}', '[', ']', ',', ':', '0', '9', '-', 'e', '\\'};
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!in.empty()) in[pick(in.size())] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:  // a boundary or JSON-structural byte
        if (!in.empty()) in[pick(in.size())] = kBoundary[pick(sizeof kBoundary)];
        break;
      case 2:  // truncate
        in.resize(pick(in.size() + 1));
        break;
      case 3: {  // insert random bytes
        const size_t at = pick(in.size() + 1), n = 1 + pick(16);
        std::vector<uint8_t> bytes(n);
        for (auto& b : bytes) b = uint8_t(rng());
        in.insert(in.begin() + std::ptrdiff_t(at), bytes.begin(), bytes.end());
        break;
      }
      case 4: {  // delete a range
        if (in.empty()) break;
        const size_t at = pick(in.size()), n = std::min(in.size() - at, 1 + pick(32));
        in.erase(in.begin() + std::ptrdiff_t(at), in.begin() + std::ptrdiff_t(at + n));
        break;
      }
      case 5: {  // duplicate a range
        if (in.empty() || in.size() > (1 << 20)) break;
        const size_t at = pick(in.size()), n = std::min(in.size() - at, 1 + pick(64));
        const std::vector<uint8_t> copy(in.begin() + std::ptrdiff_t(at), in.begin() + std::ptrdiff_t(at + n));
        in.insert(in.begin() + std::ptrdiff_t(pick(in.size() + 1)), copy.begin(), copy.end());
        break;
      }
      default: {  // splice in a piece of another seed
        const auto& other = pool[pick(pool.size())];
        if (other.empty()) break;
        const size_t at = pick(other.size()), n = std::min(other.size() - at, 1 + pick(64));
        in.insert(in.begin() + std::ptrdiff_t(pick(in.size() + 1)), other.begin() + std::ptrdiff_t(at),
                  other.begin() + std::ptrdiff_t(at + n));
      }
    }
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20;
  uint64_t seed = 1;
  std::string only, seed_dir;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 == argc) {  // every option takes a value: a lone one (--help) is not a run
      std::fprintf(stderr, "usage: rill_fuzz [--seconds S] [--seed N] [--target NAME] [--write-seeds DIR]\n");
      return 2;
    }
    if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--target") only = argv[i + 1];
    else if (flag == "--write-seeds") seed_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "rill_fuzz: unknown option %s (--seconds S, --seed N, --target NAME, --write-seeds DIR)\n",
                   flag.c_str());
      return 2;
    }
  }
  // Loaders warn about some inputs they take (a state saved without a weights tag): expected here, so
  // counted and summed up rather than printed per input; errors still print.
  uint64_t warnings = 0;
  rill::set_log_callback([&](rill::MessageSeverity severity, std::string_view text) {
    if (severity == rill::MessageSeverity::kError)
      std::fprintf(stderr, "%.*s\n", int(text.size()), text.data());
    else
      ++warnings;
  });
  const auto& targets = rill_fuzz::targets();
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& t : targets) seeds.push_back(t.seed());
  if (!seed_dir.empty()) {
    for (size_t k = 0; k < targets.size(); ++k) {
      const std::filesystem::path dir = std::filesystem::path(seed_dir) / targets[k].name;
      std::filesystem::create_directories(dir);
      std::ofstream(dir / "seed", std::ios::binary).write(reinterpret_cast<const char*>(seeds[k].data()),
                                                          std::streamsize(seeds[k].size()));
    }
    std::printf("seeds written to %s\n", seed_dir.c_str());
    return 0;
  }
  size_t chosen = 0;
  for (const auto& t : targets) chosen += only.empty() || only == t.name;
  if (chosen == 0) {
    std::fprintf(stderr, "rill_fuzz: no target named '%s'\n", only.c_str());
    return 2;
  }
  for (size_t k = 0; k < targets.size(); ++k) {
    const auto& t = targets[k];
    if (!only.empty() && only != t.name) continue;
    if (seeds[k].empty()) {
      std::fprintf(stderr, "rill_fuzz: the %s seed could not be made\n", t.name);
      return 1;
    }
    std::mt19937_64 rng(seed * 1000003 + k);
    const auto start = std::chrono::steady_clock::now();
    const double budget = seconds / double(chosen);
    std::vector<uint8_t> current = seeds[k];
    uint64_t inputs = 0;
    t.run(seeds[k].data(), seeds[k].size());
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget) {
      if (rng() % 8 == 0) current = seeds[k];  // start again from the valid file now and then
      current = mutate(std::move(current), rng, seeds);
      if (t.fixup && rng() % 2 == 0) t.fixup(current);
      t.run(current.data(), current.size());
      ++inputs;
    }
    std::printf("%-16s %8llu inputs in %.1f s, no crash (%llu warnings)\n", t.name, (unsigned long long)inputs,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                (unsigned long long)warnings);
    warnings = 0;
  }
  std::printf("fuzzing passed\n");
  return 0;
}
