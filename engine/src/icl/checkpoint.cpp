#include "icl/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "core/fnv1a.hpp"
#include "core/log.hpp"
#include "icl/config_json.hpp"
#include "icl/icl_kernels.hpp"
#include "icl/known_tensors.hpp"
#include "rill/safetensors.hpp"

namespace rill::icl::detail {
namespace {

constexpr const char* kFormat = "rill-icl-checkpoint";
// v2 added the checksum; v1 files are still read (unchecked, with a warning).
constexpr const char* kVersion = "2";
constexpr const char* kVersionUnchecked = "1";
constexpr const char* kTensors[] = {"params", "moment1", "moment2", "state"};

template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// The checksum of a checkpoint (v2): the configuration, the task-set fingerprint and each tensor's
// name, size and bytes in kTensors' order (a tensor that is absent adds nothing). A damaged byte that
// still reads as a finite parameter was otherwise resumed from silently. The step metadata is left
// out: the reader checks it against the state's step counter.
class CheckpointChecksum {
 public:
  CheckpointChecksum(std::string_view config, std::string_view task_set) {
    h_.add_u64(config.size()).add(config).add_u64(task_set.size()).add(task_set);
  }
  void add(std::string_view name, std::span<const uint8_t> bytes) {
    h_.add_u64(name.size()).add(name).add_u64(bytes.size()).add(bytes);
  }
  std::string hex() const { return h_.hex(); }

 private:
  Fnv1a h_;
};

}  // namespace

std::string task_set_fingerprint(const TaskSet& set) {
  Fnv1a h;
  h.add_u64(uint64_t(set.d)).add_u64(uint64_t(set.n)).add_u64(uint64_t(set.tasks));
  for (const std::vector<float>* values : {&set.tokens, &set.targets, &set.sigmas}) {
    h.add_u64(values->size());
    h.add(bytes_of(*values));
  }
  return std::to_string(set.tasks) + " tasks, fnv1a " + h.hex();
}

Status write_checkpoint(const std::string& path, const Checkpoint& c) {
  const int64_t p = int64_t(c.params.size());
  // read_checkpoint refuses non-finite values: a diverged run is refused here, not saved unreadable.
  for (const auto& [values, name] :
       {std::pair{&c.params, "parameters"}, {&c.moment1, "first moments"}, {&c.moment2, "second moments"}})
    if (std::find_if(values->begin(), values->end(), [](float x) { return !std::isfinite(x); }) != values->end())
      return failed_precondition("icl checkpoint '" + path + "': the model's " + name +
                                 " are not all finite (the run diverged); nothing written");
  const std::string config = config_to_json(c.config);
  CheckpointChecksum checksum(config, c.task_set);
  checksum.add("params", bytes_of(c.params));
  checksum.add("moment1", bytes_of(c.moment1));
  checksum.add("moment2", bytes_of(c.moment2));
  checksum.add("state", bytes_of(c.state));
  SafetensorsWriter w;
  RILL_RETURN_IF_ERROR(w.set_metadata("format", kFormat));
  RILL_RETURN_IF_ERROR(w.set_metadata("version", kVersion));
  RILL_RETURN_IF_ERROR(w.set_metadata("config", config));
  RILL_RETURN_IF_ERROR(w.set_metadata("step", std::to_string(c.state.at(gpu::kIclStateStep))));
  if (!c.task_set.empty()) RILL_RETURN_IF_ERROR(w.set_metadata("task_set", c.task_set));
  RILL_RETURN_IF_ERROR(w.set_metadata("checksum", checksum.hex()));
  RILL_RETURN_IF_ERROR(w.add_floats("params", {p}, c.params));
  RILL_RETURN_IF_ERROR(w.add_floats("moment1", {p}, c.moment1));
  RILL_RETURN_IF_ERROR(w.add_floats("moment2", {p}, c.moment2));
  RILL_RETURN_IF_ERROR(w.add("state", TensorDType::kU32, {int64_t(c.state.size())}, bytes_of(c.state)));
  return w.write(path);
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  RILL_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path, {.max_header_bytes = 1 << 20}));
  const auto& meta = file.metadata();
  auto field = [&](const char* key) -> const std::string* {
    const auto it = meta.find(key);
    return it == meta.end() ? nullptr : &it->second;
  };
  const std::string where = "icl checkpoint '" + path + "': ";
  if (!field("format") || *field("format") != kFormat) return invalid_argument(where + "not a rill ICL checkpoint");
  const std::string* version = field("version");
  if (!version || (*version != kVersion && *version != kVersionUnchecked))
    return invalid_argument(where + "unsupported version '" + (version ? *version : "") + "'");
  if (!field("config")) return invalid_argument(where + "no configuration");
  RILL_RETURN_IF_ERROR(only_known_tensors(file, {"params", "moment1", "moment2", "state"}, where,
                                          "a checkpoint holds params, moment1, moment2 and state"));
  if (*version == kVersion) {
    const std::string* saved = field("checksum");
    CheckpointChecksum checksum(*field("config"), field("task_set") ? *field("task_set") : "");
    for (const char* name : kTensors)
      for (const SafetensorsEntry& e : file.entries())
        if (e.name == name) checksum.add(name, file.bytes(e));
    if (!saved || *saved != checksum.hex())
      return data_loss(where + "the checksum does not match (saved " + (saved ? *saved : "none") + ", the contents " +
                       checksum.hex() + "): the file is damaged");
  } else {
    log_warning(where + "saved without a checksum (an older rill): read unchecked");
  }
  Checkpoint c;
  if (const std::string* set = field("task_set")) {
    if (set->empty() || set->size() > 64) return invalid_argument(where + "a malformed task-set fingerprint");
    c.task_set = *set;
  }
  auto config = config_from_json(*field("config"));
  if (!config.is_ok()) return invalid_argument(where + config.status().message());
  c.config = config.value();
  const int64_t p = parameter_count(c.config.model, c.config.task.d);
  const std::vector<int64_t> shape{p};
  auto floats = [&](const char* name, std::vector<float>& out) -> Status {
    auto r = file.read_floats(name, shape);
    if (!r.is_ok()) return Status(r.status().code(), where + r.status().message());
    out = std::move(r).value();
    for (size_t i = 0; i < out.size(); ++i)
      if (!std::isfinite(out[i]))
        return data_loss(where + "tensor '" + name + "' holds a non-finite value at flat index " + std::to_string(i));
    return Status::ok();
  };
  RILL_RETURN_IF_ERROR(floats("params", c.params));
  RILL_RETURN_IF_ERROR(floats("moment1", c.moment1));
  RILL_RETURN_IF_ERROR(floats("moment2", c.moment2));
  // Adam's second moments are running means of squares: a negative one would turn the update's
  // square root into NaN and halt the resumed run with a message about its learning rate.
  for (size_t i = 0; i < c.moment2.size(); ++i)
    if (c.moment2[i] < 0.0f)
      return data_loss(where + "tensor 'moment2' holds a negative value at flat index " + std::to_string(i));
  const std::vector<int64_t> state_shape{gpu::kIclStateWords};
  auto state = file.tensor("state", TensorDType::kU32, state_shape);
  if (!state.is_ok()) return Status(state.status().code(), where + state.status().message());
  c.state.resize(gpu::kIclStateWords);
  std::memcpy(c.state.data(), state->data(), gpu::kIclStateWords * sizeof(uint32_t));
  // The step counter must leave room to train on (it would wrap), and the halt flag is 0 or 1; a
  // halted model stopped at its step (the curve is read up to the halted step); Adam's running
  // powers of beta are in [0, 1] (else the bias correction flips or divides by zero).
  const uint32_t step = c.state[gpu::kIclStateStep];
  if (step >= kMaxSteps)
    return data_loss(where + "step counter " + std::to_string(step) + " is at the end of its range");
  // The metadata's step is what tools read without parsing the state: the two must agree.
  if (!field("step") || *field("step") != std::to_string(step))
    return data_loss(where + "its 'step' metadata (" + (field("step") ? "'" + *field("step") + "'" : "missing") +
                     ") is not its state's step counter " + std::to_string(step));
  if (c.state[gpu::kIclStateHalted] > 1)
    return data_loss(where + "halt flag " + std::to_string(c.state[gpu::kIclStateHalted]) + " is not 0 or 1");
  if (c.state[gpu::kIclStateHalted] == 1 && c.state[gpu::kIclStateHaltedStep] != step)
    return data_loss(where + "halted at step " + std::to_string(c.state[gpu::kIclStateHaltedStep]) +
                     " but its step counter is " + std::to_string(step));
  if (c.state[gpu::kIclStateSkipped] > step)
    return data_loss(where + std::to_string(c.state[gpu::kIclStateSkipped]) + " skipped batches in " +
                     std::to_string(step) + " steps");
  for (const uint32_t word : {gpu::kIclStateBeta1Power, gpu::kIclStateBeta2Power}) {
    float power = 0.0f;
    std::memcpy(&power, &c.state[word], sizeof power);
    if (!(power >= 0.0f && power <= 1.0f))
      return data_loss(where + "the optimizer's running power of beta (state word " + std::to_string(word) + ") is " +
                       std::to_string(power) + ", outside [0, 1]");
  }
  return c;
}

}  // namespace rill::icl::detail
