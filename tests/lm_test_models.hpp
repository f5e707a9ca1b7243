// Small TransNormer models for the language-model tests: a tiny config of given layer kinds,
// deterministic token runs, the CPU reference's logits of every position, a model (REQUIREd) and
// weights edited through a file, and the row check every logits comparison uses.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "rill/lm.hpp"
#include "rill/safetensors.hpp"
#include "temp_path.hpp"
#include "transnormer.hpp"

namespace rill_test {

inline rill::lm::ModelConfig tiny(std::vector<rill::lm::LayerKind> kinds) {
  rill::lm::ModelConfig c;
  c.vocab = 37;  // not a power of two
  c.width = 24;
  c.heads = 3;
  c.ffn_width = 40;
  c.layers = uint32_t(kinds.size());
  c.layer_kinds = std::move(kinds);
  c.block = 8;
  c.chunk = 4;
  REQUIRE(c.validate().is_ok());
  return c;
}

inline std::vector<uint32_t> tokens_of(size_t n, uint32_t vocab, uint32_t salt = 0) {
  std::vector<uint32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = uint32_t((i * 7919 + salt * 31 + (i * i) % 13) % vocab);
  return t;
}

inline std::vector<float> reference(const rill::lm::Weights& w, std::span<const uint32_t> tokens,
                                    rill::ref::TransNormerTrace* trace = nullptr) {
  return rill::ref::transnormer_logits(
      w.config(), [&](const std::string& name) { return w.floats(name).value(); }, tokens, trace);
}

inline rill::lm::Model make_model(rill::Context& ctx, const rill::lm::Weights& w, rill::lm::ModelOptions o = {}) {
  auto m = rill::lm::Model::create(ctx, w, o);
  INFO(m.status().to_string());
  REQUIRE(m.is_ok());
  return std::move(m).value();
}

// `w` saved (f32, under the temporary name `stem`), each tensor passed through `edit`, and loaded
// back: weights no random draw gives (past f16's range, or scaled up).
inline rill::lm::Weights edited_weights(const rill::lm::Weights& w, const std::string& stem,
                                        const std::function<void(const std::string&, std::vector<float>&)>& edit) {
  const std::string cfg = temp_path(stem + ".json"), file = temp_path(stem + ".safetensors");
  REQUIRE(w.save(cfg, file, rill::TensorDType::kF32).is_ok());
  const auto saved = rill::SafetensorsFile::open(file).value();
  rill::SafetensorsWriter edited;
  for (const auto& e : saved.entries()) {
    std::vector<float> values = saved.read_floats(e.name, e.shape).value();
    edit(e.name, values);
    REQUIRE(edited.add_floats(e.name, e.shape, values).is_ok());
  }
  REQUIRE(edited.write(file).is_ok());
  auto loaded = rill::lm::Weights::load(cfg, file);
  REQUIRE(loaded.is_ok());
  return std::move(loaded).value();
}

// Logits agree when every entry is within tol of the reference, relative to the row's scale.
inline void check_row(std::span<const float> got, const std::vector<float>& ref, size_t row, size_t vocab, double tol,
                      const std::string& what) {
  REQUIRE(got.size() == vocab);
  double scale = 1.0, worst = 0.0;
  for (size_t v = 0; v < vocab; ++v) scale = std::max(scale, double(std::fabs(ref[row * vocab + v])));
  for (size_t v = 0; v < vocab; ++v) {
    const double e = std::fabs(double(got[v]) - ref[row * vocab + v]) / scale;
    if (!(e <= worst)) worst = e;  // a NaN stays (std::max would drop it)
  }
  INFO(what << " row " << row << ": worst relative error " << worst);
  CHECK(worst <= tol);
}

}  // namespace rill_test
