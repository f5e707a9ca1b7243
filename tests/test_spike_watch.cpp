// The loss-spike watch of long training runs (tools/rill/spike_watch.hpp): a step over 10x the
// previous window's median loss, or a non-finite one, is counted with its step and size; ordinary
// noise and a steady decline are not.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../tools/rill/line_plot.hpp"
#include "../tools/rill/median.hpp"
#include "../tools/rill/repro_icl_runs.hpp"
#include "../tools/rill/spike_watch.hpp"
#include "temp_path.hpp"

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

TEST_CASE("spike watch: a window cut into pieces (checkpoints, a resume) is judged as one", "[repro]") {
  // The median of a whole window is the next window's reference: judging each piece on its own
  // would move it, so pieces wait until their window ends.
  const auto first = window(0, {4.0f, 4.0f, 4.0f, 4.0f});
  const auto second = window(4, {50.0f, 1.0f, 1.0f, 1.0f});  // piece medians 50 and 1; whole 1
  const auto third = window(8, {20.0f});                     // 20x the whole window's median
  rill_cli::SpikeWatch whole;
  rill_cli::watch_window(whole, first);
  rill_cli::watch_window(whole, second);
  rill_cli::watch_window(whole, third);
  rill_cli::SpikeWatch pieces;
  rill_cli::watch_steps(pieces, first, true);
  rill_cli::watch_steps(pieces, {second.begin(), second.begin() + 1}, false);
  CHECK(pieces.pending.size() == 1);
  rill_cli::watch_steps(pieces, {second.begin() + 1, second.end()}, true);
  CHECK(pieces.pending.empty());
  rill_cli::watch_steps(pieces, third, true);
  CHECK(whole.spikes == 2);  // 50 against 4, then 20 against 1 (against 50, no spike)
  CHECK(pieces.spikes == whole.spikes);
  CHECK(pieces.first_step == whole.first_step);
  CHECK(pieces.peak_ratio == whole.peak_ratio);
  CHECK(pieces.window_median == whole.window_median);
}

TEST_CASE("repro runs: a checkpoint save that fails or is killed leaves the previous one resumable", "[repro]") {
  const std::string dir = rill_test::temp_path("repro-spikes");
  std::filesystem::remove_all(dir);
  auto runs = rill_cli::ReproRuns::open(dir, {.steps = 10}, false, false);
  REQUIRE(runs.is_ok());
  rill_cli::SpikeWatch at_100;
  at_100.spikes = 1;
  at_100.first_step = 42;
  REQUIRE(runs->save_spikes("run", at_100, 100, 0).is_ok());
  // The next save's spikes are written first; its checkpoint then fails (or the tool is killed):
  // the checkpoint on disk is still step 100's, and its spikes are still there.
  rill_cli::SpikeWatch at_200 = at_100;
  at_200.spikes = 2;
  REQUIRE(runs->save_spikes("run", at_200, 200, 100).is_ok());
  const auto old_spikes = runs->saved_spikes("run", 100);
  REQUIRE(old_spikes.has_value());
  CHECK(old_spikes->spikes == 1);
  CHECK(old_spikes->first_step == 42);
  CHECK(runs->saved_spikes("run", 200)->spikes == 2);
  // A second failed checkpoint in a row (a disk still full) keeps step 100's too.
  REQUIRE(runs->save_spikes("run", at_200, 300, 100).is_ok());
  CHECK(runs->saved_spikes("run", 100).has_value());
  CHECK_FALSE(runs->saved_spikes("run", 200).has_value());
  // Once step 300's checkpoint is on disk, the next save keeps its spikes and drops step 100's.
  REQUIRE(runs->save_spikes("run", at_200, 400, 300).is_ok());
  CHECK_FALSE(runs->saved_spikes("run", 100).has_value());
  CHECK(runs->saved_spikes("run", 300).has_value());
  CHECK(runs->saved_spikes("run", 400).has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("repro runs: saved spikes with counts that hide spikes or records out of their window are refused",
          "[repro]") {
  const std::string dir = rill_test::temp_path("repro-spikes-bad");
  std::filesystem::remove_all(dir);
  auto runs = rill_cli::ReproRuns::open(dir, {.steps = 10}, false, false);
  REQUIRE(runs.is_ok());
  const std::string path = dir + "/runs/run.spikes.json";
  auto saved_with = [&](const std::string& fields) {
    REQUIRE(rill_cli::write_text_atomic(path, "{\"step\": 600, " + fields + "}", nullptr));
    return runs->saved_spikes("run", 600).has_value();
  };
  const std::string good = R"("first_step": -1, "peak_ratio": 0, "window_median": 1.5)";
  CHECK(saved_with(R"("spikes": 0, )" + good));
  CHECK(saved_with(R"("spikes": 0, "pending": [[500, 1.0], [501, 2.0]], )" + good));
  CHECK_FALSE(saved_with(R"("spikes": -3, )" + good));
  CHECK_FALSE(saved_with(R"("spikes": 1e300, )" + good));
  CHECK_FALSE(saved_with(R"("spikes": 2, )" + good));  // spikes, but no first step
  CHECK_FALSE(saved_with(R"("spikes": 0, "first_step": -1, "peak_ratio": 0, "window_median": -1)"));
  CHECK_FALSE(saved_with(R"("spikes": 0, "pending": [[1e300, 1.0]], )" + good));
  CHECK_FALSE(saved_with(R"("spikes": 0, "pending": [[499, 1.0]], )" + good));  // the window before
  CHECK_FALSE(saved_with(R"("spikes": 0, "pending": [[600, 1.0]], )" + good));  // past the checkpoint
  CHECK_FALSE(saved_with(R"("spikes": 0, "pending": [[520, 1.0], [510, 1.0]], )" + good));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the tool's median: the middle value, the two middle ones' mean for an even count, NaN left out", "[repro]") {
  CHECK(rill_cli::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(rill_cli::median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // the upper middle value (3) before
  CHECK(rill_cli::median({5.0, NAN, 1.0, 3.0}) == 3.0);
  CHECK(std::isnan(rill_cli::median({})));
  CHECK(std::isnan(rill_cli::median({NAN, NAN})));
}

TEST_CASE("a line plot with nothing to draw has axes and a note, not NaN coordinates", "[repro]") {
  // Every run of an experiment failed: its series have no points, or no value the log scale shows.
  for (const auto& points :
       {std::vector<std::pair<double, double>>{}, std::vector<std::pair<double, double>>{{1.0, NAN}, {2.0, 0.0}}}) {
    const std::string svg = rill_cli::line_plot_svg(
        {"title", "layers L", "loss", {{"adam", points, false}, {"sgd", {}, true}}, {{"oracle", 0.5}}});
    CHECK(svg.find("nan") == std::string::npos);
    CHECK(svg.find("inf") == std::string::npos);
    CHECK(svg.find("no finite positive value to plot") != std::string::npos);
  }
}

TEST_CASE("repro runs: a run file that is a FIFO, or a result with impossible figures, counts as absent", "[repro]") {
  const std::string dir = rill_test::temp_path("repro-untrusted");
  std::filesystem::remove_all(dir);
  {
    auto runs = rill_cli::ReproRuns::open(dir, {.steps = 10}, false, false);
    REQUIRE(runs.is_ok());
    rill_cli::RunOutcome done;
    done.ok = true;
    done.eval.tasks = 100;
    done.eval.model = 0.5;
    done.eval.ridge_oracle = 0.25;
    REQUIRE(runs->record("good", done).is_ok());
    REQUIRE(runs->record("negative", done).is_ok());
  }
  const std::string runs_dir = dir + "/runs/";
  // A reader of a FIFO blocks until a writer comes: it must not be opened at all.
  REQUIRE(::mkfifo((runs_dir + "fifo.result.json").c_str(), 0600) == 0);
  std::string text;
  {
    std::ifstream in(runs_dir + "negative.result.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t model = text.find("\"model\"");
  REQUIRE(model != std::string::npos);
  text.replace(model, text.find(',', model) - model, "\"model\": -3");
  std::ofstream(runs_dir + "negative.result.json", std::ios::trunc) << text;
  auto resumed = rill_cli::ReproRuns::open(dir, {.steps = 10}, true, false);
  REQUIRE(resumed.is_ok());
  CHECK(resumed->finished("good").has_value());
  CHECK_FALSE(resumed->finished("negative").has_value());
  CHECK_FALSE(resumed->finished("fifo").has_value());
  std::filesystem::remove_all(dir);
}
