#include "repro_icl_runs.hpp"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "json_text.hpp"
#include "line_plot.hpp"
#include "rill/files.hpp"

namespace rill_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json settings_json(const ReproSettings& s) {
  return {{"steps", s.steps},
          {"vlad_steps", s.vlad_steps},
          {"table1_steps", s.table1_steps},
          {"eval_tasks", s.eval_tasks},
          {"seeds", s.seeds},
          {"quick", s.quick},
          {"full", s.full},
          {"experiments", s.experiments},
          {"rows", s.rows},
          {"columns", s.columns}};
}

// Evaluation losses and training losses: JSON has no NaN or infinity (a diverged model's loss is
// one), so a non-finite value is written as its name.
json number_json(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}
std::optional<double> number_of(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j == "nan") return NAN;
  if (j == "inf") return INFINITY;
  if (j == "-inf") return -INFINITY;
  return std::nullopt;
}

json spikes_json(const SpikeWatch& w) {
  // JSON has no infinity: a non-finite peak is written as -1.
  json j = {{"spikes", w.spikes},
            {"first_step", w.first_step},
            {"peak_ratio", std::isfinite(w.peak_ratio) ? w.peak_ratio : -1.0},
            {"window_median", w.window_median}};
  if (!w.pending.empty()) {  // the window in progress: [step, loss] each
    json pending = json::array();
    for (const rill::icl::StepRecord& r : w.pending) pending.push_back({r.step, number_json(r.loss)});
    j["pending"] = std::move(pending);
  }
  return j;
}

// Throws json::exception where a field is missing or of the wrong type; none where a pending loss
// is not a number.
std::optional<SpikeWatch> spikes_of(const json& j) {
  // Whole numbers only: nlohmann converts a float such as 1e300 to an integer without a check.
  auto whole = [](const json& v) {
    if (!v.is_number_integer()) throw json::type_error::create(302, "not a whole number", &v);
    return v.get<int64_t>();
  };
  SpikeWatch w;
  w.spikes = whole(j.at("spikes"));
  w.first_step = whole(j.at("first_step"));
  w.peak_ratio = j.at("peak_ratio").get<double>();
  if (w.peak_ratio < 0) w.peak_ratio = INFINITY;
  w.window_median = j.at("window_median").get<double>();
  // A file edited or damaged into counts that hide spikes (the retry rule looks for spikes > 0)
  // is no record: the run starts over.
  if (w.spikes < 0 || w.first_step < -1 || (w.spikes > 0) != (w.first_step >= 0) || !(w.window_median >= 0) ||
      !std::isfinite(w.window_median))
    return std::nullopt;
  if (j.contains("pending"))
    for (const json& r : j.at("pending")) {
      const auto loss = number_of(r.at(1));
      const int64_t step = whole(r.at(0));
      // The window in progress: steps in order (every step, or every read_every-th), f32 losses
      // (a finite one past FLT_MAX is none of ours; converting it would be undefined).
      if (!loss || step < 0 || (!w.pending.empty() && step <= w.pending.back().step)) return std::nullopt;
      if (std::isfinite(*loss) && std::fabs(*loss) > FLT_MAX) return std::nullopt;
      w.pending.push_back({step, float(*loss), 0.0f});
    }
  return w;
}

// The folder's own small files; anything unreadable counts as absent (the run is simply redone),
// as does anything but a regular file of at most 16 MiB (a FIFO would block, /dev/zero never end;
// a spikes file holds at most a window of 500 records).
std::optional<json> read_json(const std::string& path) {
  auto bytes = rill::read_file(path, 16u << 20);
  if (!bytes.is_ok()) return std::nullopt;
  // Values nested past 16 levels are dropped while parsing (no file of ours nests so deep): a copy
  // or dump of a hand-made file of a million '[' would recurse that deep.
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t, json&) { return depth <= 16; };
  json j = json::parse(bytes->begin(), bytes->end(), shallow, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

bool is_run_file(const fs::path& p) {
  const std::string name = p.filename().string();
  auto ends = [&](const std::string& tail) {
    return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name == "settings.json" || ends(".result.json") || ends(".safetensors") || ends(".spikes.json");
}

}  // namespace

rill::Result<ReproRuns> ReproRuns::open(const std::string& out_dir, const ReproSettings& settings, bool resume,
                                        bool restart) {
  ReproRuns runs;
  runs.dir_ = out_dir + "/runs/";
  std::error_code ec;
  const json wanted = settings_json(settings);
  if (resume) {
    // Nothing is created before the settings are read: a mistyped --out stays absent.
    const std::string settings_path = runs.dir_ + "settings.json";
    if (!fs::exists(settings_path, ec))
      return rill::failed_precondition("--resume: '" + out_dir +
                                       "' holds no reproduction to resume (no runs/settings.json" +
                                       (ec ? ": " + ec.message() : "") + ")");
    // A file that cannot be read says why; one that reads but does not parse is damaged, and only
    // --restart (which discards every finished run) goes on from it.
    if (auto readable = rill::read_file(settings_path, 16u << 20); !readable.is_ok())
      return readable.status().with_context("--resume");
    const auto started = read_json(settings_path);
    if (!started)
      return rill::data_loss("--resume: '" + settings_path +
                             "' is not the settings of a reproduction (damaged?); --restart starts over, discarding "
                             "the finished runs");
    if (*started != wanted)
      return rill::failed_precondition("--resume: '" + out_dir + "' was started with " + json_text(*started, -1) +
                                       ", this run asks for " + json_text(wanted, -1) + "; use the same options");
    // A run killed after its result was written but before its checkpoint was removed left both:
    // the result stands, and the stale files go now (nothing would remove them later).
    // (A result that cannot be read is no result: that run resumes from its checkpoint.)
    const std::string result_suffix = ".result.json";
    for (const auto& entry : fs::directory_iterator(runs.dir_, ec)) {
      const std::string path = entry.path().string();
      if (!path.ends_with(result_suffix)) continue;
      const std::string key = entry.path().filename().string();
      const std::string run = key.substr(0, key.size() - result_suffix.size());
      if (!runs.finished(run)) continue;
      ++runs.recorded_at_open_;
      std::error_code ignored;
      fs::remove(runs.checkpoint_path(run), ignored);
      fs::remove(runs.dir_ + run + ".spikes.json", ignored);
    }
    return runs;
  }
  fs::create_directories(runs.dir_, ec);
  if (ec) return rill::invalid_argument("cannot create '" + runs.dir_ + "': " + ec.message());
  // A fresh start into a folder that holds an earlier reproduction's runs discards them only when
  // asked: forgetting --resume once must not cost a long run its results and checkpoints.
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(runs.dir_, ec))
    if (is_run_file(entry.path()) && entry.path().filename() != "settings.json") earlier.push_back(entry.path());
  if (!earlier.empty() && !restart)
    return rill::failed_precondition("'" + runs.dir_ + "' holds " + std::to_string(earlier.size()) +
                                     " files of an earlier reproduction (results, checkpoints): --resume continues "
                                     "it, --restart discards it, or choose another --out");
  for (const auto& entry : fs::directory_iterator(runs.dir_, ec))
    if (is_run_file(entry.path())) fs::remove(entry.path(), ec);
  std::string error;
  if (!write_text_atomic(runs.dir_ + "settings.json", json_text(wanted) + "\n", &error))
    return rill::invalid_argument(error);
  return runs;
}

std::optional<RunOutcome> ReproRuns::finished(const std::string& key) const {
  const auto j = read_json(dir_ + key + ".result.json");
  if (!j) return std::nullopt;
  try {
    RunOutcome r;
    r.ok = j->at("ok").get<bool>();
    r.error = j->at("error").get<std::string>();
    if (!j->at("skipped").is_number_integer()) return std::nullopt;
    r.skipped = j->at("skipped").get<int64_t>();
    if (r.skipped < 0) return std::nullopt;
    if (j->contains("spikes")) {
      const auto spikes = spikes_of(j->at("spikes"));
      if (!spikes) return std::nullopt;
      r.spikes = *spikes;
    }
    if (r.ok) {
      if (!j->at("tasks").is_number_integer()) return std::nullopt;
      const int64_t tasks = j->at("tasks").get<int64_t>();
      if (tasks < 1 || tasks > INT_MAX) return std::nullopt;
      r.eval.tasks = int(tasks);
      // Mean squared errors: not negative (NaN is a diverged model's, kept as it was recorded).
      const auto model = number_of(j->at("model")), ridge = number_of(j->at("ridge_oracle"));
      if (!model || !ridge || *model < 0 || *ridge < 0) return std::nullopt;
      r.eval.model = *model;
      r.eval.ridge_oracle = *ridge;
    }
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

rill::Status ReproRuns::record(const std::string& key, const RunOutcome& r) {
  json j = {{"ok", r.ok}, {"error", r.error}, {"skipped", r.skipped}, {"spikes", spikes_json(r.spikes)}};
  if (r.ok)
    j.update({{"tasks", r.eval.tasks},
              {"model", number_json(r.eval.model)},
              {"ridge_oracle", number_json(r.eval.ridge_oracle)}});
  std::string error;
  // nlohmann writes doubles with enough digits to read back the same bits.
  if (!write_text_atomic(dir_ + key + ".result.json", json_text(j) + "\n", &error))
    return rill::invalid_argument(error);
  std::error_code ec;
  fs::remove(checkpoint_path(key), ec);
  fs::remove(dir_ + key + ".spikes.json", ec);
  return {};
}

rill::Status ReproRuns::save_spikes(const std::string& key, const SpikeWatch& watch, int64_t step, int64_t on_disk) {
  const std::string path = dir_ + key + ".spikes.json";
  json j = spikes_json(watch);
  j["step"] = step;
  // The watch of the checkpoint on disk stays beside the new one until that checkpoint is replaced.
  if (auto saved = read_json(path)) {
    json* kept = nullptr;
    for (json* entry : {&*saved, saved->contains("previous") ? &saved->at("previous") : nullptr})
      if (entry != nullptr && entry->is_object() && entry->value("step", json()) == json(on_disk)) kept = entry;
    if (kept != nullptr) {
      json previous = std::move(*kept);
      if (previous.is_object()) previous.erase("previous");
      j["previous"] = std::move(previous);
    }
  }
  std::string error;
  if (!write_text_atomic(path, json_text(j) + "\n", &error)) return rill::invalid_argument(error);
  return {};
}

std::optional<SpikeWatch> ReproRuns::saved_spikes(const std::string& key, int64_t step) const {
  const auto j = read_json(dir_ + key + ".spikes.json");
  if (!j || !j->is_object()) return std::nullopt;
  try {
    for (const json* entry : {&*j, j->contains("previous") ? &j->at("previous") : nullptr})
      if (entry != nullptr && entry->at("step") == json(step)) {
        auto watch = spikes_of(*entry);  // empty where a value is unreadable or out of range
        // The pending records are those of the window the checkpoint's step is in.
        const int64_t window_start = step - step % kSpikeWindow;
        if (watch && !watch->pending.empty() &&
            (watch->pending.front().step < window_start || watch->pending.back().step >= step))
          return std::nullopt;
        return watch;
      }
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

std::string ReproRuns::checkpoint_path(const std::string& key) const { return dir_ + key + ".safetensors"; }

std::string three_digits(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

}  // namespace rill_cli
