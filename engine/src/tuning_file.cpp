// Tuning files (rill/tuning.hpp): JSON written atomically, read as untrusted input.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "core/cpu_driver_threads.hpp"
#include "core/file_io.hpp"
#include "core/json_keys.hpp"
#include "kernel_plan.hpp"
#include "rill/files.hpp"
#include "rill/tuning.hpp"

namespace rill {
namespace {

constexpr const char* kFormat = "rill-tuning";
constexpr int kVersion = 1;
constexpr uint64_t kMaxBytes = 1 << 20;
constexpr size_t kMaxTuningFileNesting = 8;  // a tuning file nests 3 deep
// For messages: a driver's device name need not be UTF-8, which strict dumping throws on.
constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

// The driver's description too: lavapipe reports driver version 1 for every Mesa release, and
// names the release there ("Mesa 22.3.6 (LLVM 15.0.6)"). A CPU driver's choices also depend on the
// host's threads (a plan measured on 2 cores need not be the faster on 64), which its name does not
// tell.
nlohmann::json identity(const DeviceInfo& d) {
  nlohmann::json j = {{"name", d.name},
                      {"vendor_id", d.vendor_id},
                      {"device_id", d.device_id},
                      {"driver_version", d.driver_version},
                      {"driver_info", d.driver_info},
                      {"limit_profile", d.limit_profile}};
  if (const std::string threads = detail::cpu_driver_threads(d); !threads.empty()) j["host_threads"] = threads;
  return j;
}

// Every key tunable and the whole plan accepted by the parser (values in range, known names).
Status check_plan(std::string_view plan, const std::string& where) {
  for (std::string_view rest = plan; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::string_view key = item.substr(0, item.find('='));
    if (!item.empty() && !ops::plan::tunable_key(key))
      return invalid_argument(where + ": '" + std::string(key) + "' is not a tunable kernel-plan key");
  }
  auto parsed = ops::plan::parse_overrides(plan);
  if (!parsed.is_ok()) return invalid_argument(where + ": " + parsed.status().message());
  if (parsed->matmul_coop == ops::plan::PlanOverrides::Coop::kEmulated)
    return invalid_argument(where + ": matmul_coop=emulated is for tests, not a tuned choice");
  return Status::ok();
}

}  // namespace

Status write_tuning_file(const std::string& path, const DeviceInfo& device, const TuningFile& tuning) {
  RILL_RETURN_IF_ERROR(check_plan(tuning.kernel_plan, "tuning for " + device.name));
  if (tuning.family != "cpu" && tuning.family != "gpu")
    return invalid_argument("tuning for " + device.name + ": the family is '" + tuning.family + "'; use cpu or gpu");
  nlohmann::json measurements = nlohmann::json::array();
  for (const TuningMeasurement& m : tuning.measurements) {
    // What read_tuning_file accepts back: JSON has no NaN or Inf.
    if (!std::isfinite(m.ms) || m.ms < 0)
      return invalid_argument("tuning for " + device.name + ": the measurement of '" + m.job + "' is " +
                              std::to_string(m.ms) + " ms; a time is finite and >= 0");
    measurements.push_back({{"job", m.job}, {"kernel_plan", m.kernel_plan}, {"ms", m.ms}});
  }
  const nlohmann::json j = {{"format", kFormat},
                            {"version", kVersion},
                            {"device", identity(device)},
                            {"family", tuning.family},
                            {"kernel_plan", tuning.kernel_plan},
                            {"measurements", measurements}};
  std::string text;
  try {  // strings that are not UTF-8 (a job's name, a driver's device name) cannot be JSON
    text = j.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("tuning for " + device.name + ": " + e.what());
  }
  return write_file_atomic(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Result<TuningFile> read_tuning_file(const std::string& path, const DeviceInfo& device) {
  auto read = read_file(path, kMaxBytes);
  if (!read.is_ok()) return read.status().with_context("tuning file");
  const std::vector<uint8_t> bytes = std::move(read).value();
  const std::string where = "tuning file '" + path + "'";
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (nests_deeper_than(text, kMaxTuningFileNesting)) return data_loss(where + " nests deeper than a tuning file does");
  if (auto dup = first_duplicate_key(text)) return data_loss(where + " has the key '" + *dup + "' twice");
  TuningFile out;
  nlohmann::json stored_device;
  try {
    const auto j = nlohmann::json::parse(text);
    // The version as written, an integer: get<int>() would take 4294967297 or 1.5 for 1.
    const auto& version = j.at("version");
    if (j.at("format").get<std::string>() != kFormat || !version.is_number_integer() ||
        version.get<int64_t>() != kVersion)
      return data_loss(where + " is not a version " + std::to_string(kVersion) + " rill tuning file");
    stored_device = j.at("device");
    out.family = j.at("family").get<std::string>();
    out.kernel_plan = j.at("kernel_plan").get<std::string>();
    for (const auto& m : j.at("measurements")) {
      TuningMeasurement t{m.at("job").get<std::string>(), m.at("kernel_plan").get<std::string>(),
                          m.at("ms").get<double>()};
      if (!std::isfinite(t.ms) || t.ms < 0)
        return data_loss(where + " has a measurement of " + std::to_string(t.ms) + " ms");
      out.measurements.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return data_loss(where + " is malformed: " + e.what());
  }
  if (stored_device != identity(device))
    return failed_precondition(where + " was made on " + stored_device.dump(-1, ' ', false, kReplace) +
                               ", not on this device " + identity(device).dump(-1, ' ', false, kReplace));
  if (out.family != "cpu" && out.family != "gpu")
    return data_loss(where + " names the kernel family '" + out.family + "'");
  RILL_RETURN_IF_ERROR(check_plan(out.kernel_plan, where));
  return out;
}

}  // namespace rill
