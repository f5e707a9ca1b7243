// The loss-spike watch of long training runs (tools/rill/spike_watch.hpp): a step over 10x the
// previous window's median loss, or a non-finite one, is counted with its step and size; ordinary
// noise and a steady decline are not.
#include <catch2/catch.hpp>
#include <cmath>

#include "../tools/rill/spike_watch.hpp"

namespace {

std::vector<rill::icl::StepRecord> window(int64_t first, std::vector<float> losses) {
  std::vector<rill::icl::StepRecord> out;
  for (size_t i = 0; i < losses.size(); ++i) out.push_back({first + int64_t(i), losses[i], 1.0f});
  return out;
}

}  // namespace

TEST_CASE("spike watch: a steady decline and noise are no spikes", "[repro]") {
  rill_cli::SpikeWatch w;
  rill_cli::watch_window(w, window(0, {100.0f, 50.0f, 20.0f, 10.0f, 5.0f}));  // no reference yet
  rill_cli::watch_window(w, window(5, {9.0f, 40.0f, 3.0f, 2.0f, 1.0f}));      // 40 < 10 x 10
  CHECK(w.spikes == 0);
  CHECK(w.first_step == -1);
  CHECK(w.window_median == 3.0);
}

TEST_CASE("spike watch: a loss over 10x the window median is counted with its step and size", "[repro]") {
  rill_cli::SpikeWatch w;
  rill_cli::watch_window(w, window(0, {2.0f, 1.0f, 1.0f}));
  rill_cli::watch_window(w, window(3, {1.0f, 113.7f, 10.5f, 1.0f}));
  CHECK(w.spikes == 2);
  CHECK(w.first_step == 4);
  CHECK(std::abs(w.peak_ratio - 113.7) < 1e-4);
  rill_cli::watch_window(w, window(7, {NAN, 1.0f}));
  CHECK(w.spikes == 3);
  CHECK(std::isinf(w.peak_ratio));
  CHECK(w.window_median == 1.0);  // the non-finite loss does not move the reference
}
