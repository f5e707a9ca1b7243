// The fuzz targets of loaders.hpp. Each feeds the bytes to one loader and discards the result: the
// loaders must refuse bad input with a Status, never crash, hang or read out of bounds.
#include "loaders.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "core/file_io.hpp"
#include "icl/checkpoint.hpp"
#include "icl/config_json.hpp"
#include "lm/sentencepiece_model.hpp"
#include "profile/peaks_cache.hpp"
#include "rill/icl.hpp"
#include "rill/lm.hpp"
#include "rill/profile.hpp"
#include "rill/safetensors.hpp"
#include "rill/tuning.hpp"
#include "sentencepiece_bytes.hpp"
#include "temp_path.hpp"
#include "vk/pipeline_cache_file.hpp"

namespace rill_fuzz {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

const std::string& write_scratch(const char* what, const uint8_t* data, size_t size) {
  static thread_local std::string path;
  path = rill_test::temp_path(what);  // one scratch file per loader, in this process's directory
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

// Sets a safetensors file's 8-byte header length to end just after the JSON object that follows it
// (braces outside strings balanced), so mutations of the header are parsed rather than refused.
void fix_length_prefix(std::vector<uint8_t>& in) {
  if (in.size() < 9) return;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 8; i < in.size(); ++i) {
    const char ch = char(in[i]);
    if (in_string) {
      escaped = !escaped && ch == '\\';
      if (!escaped && ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    if (ch == '{' || ch == '[') ++depth;
    if ((ch == '}' || ch == ']') && --depth == 0) {
      const uint64_t len = i - 7;
      for (int b = 0; b < 8; ++b) in[size_t(b)] = uint8_t(len >> (8 * b));
      return;
    }
  }
}

rill::icl::TrainConfig small_icl_config() {
  rill::icl::TrainConfig c = rill::icl::ahn_setting(rill::icl::AhnSetting::k1);
  c.task.d = 2;
  c.task.n = 3;
  c.model.layers = 1;
  return c;
}

void safetensors_run(const uint8_t* data, size_t size) {
  auto file = rill::SafetensorsFile::from_bytes(std::vector<uint8_t>(data, data + size));
  if (!file.is_ok()) return;
  for (const auto& e : file->entries()) {
    (void)file->check_finite(e);
    if (e.elements() < (1 << 16)) (void)file->read_floats(e.name, e.shape);
  }
}
std::vector<uint8_t> safetensors_seed() {
  rill::SafetensorsWriter w;
  const float values[] = {1.0f, -2.0f, 3.5f, 0.25f};
  (void)w.add_floats("a", {2, 2}, values);
  (void)w.add("b", rill::TensorDType::kU8, {3}, std::vector<uint8_t>{1, 2, 3});
  (void)w.set_metadata("format", "pt");
  return w.serialize();
}

void lm_config_run(const uint8_t* data, size_t size) {
  (void)rill::lm::config_from_json(std::string_view(reinterpret_cast<const char*>(data), size));
}
std::vector<uint8_t> lm_config_seed() {
  rill::lm::ModelConfig c;
  c.decay = {0.9f, 0.8f, 0.7f, 0.6f, 0.5f, 0.4f, 0.3f, 0.2f};
  (void)c.validate();
  return bytes_of(rill::lm::config_to_json(c));
}

void icl_config_run(const uint8_t* data, size_t size) {
  (void)rill::icl::detail::config_from_json(std::string(reinterpret_cast<const char*>(data), size));
}
std::vector<uint8_t> icl_config_seed() { return bytes_of(rill::icl::detail::config_to_json(small_icl_config())); }

void checkpoint_run(const uint8_t* data, size_t size) {
  (void)rill::icl::detail::read_checkpoint(write_scratch("checkpoint", data, size));
}
std::vector<uint8_t> checkpoint_seed() {
  rill::icl::detail::Checkpoint c;
  c.config = small_icl_config();
  const auto p = size_t(rill::icl::parameter_count(c.config.model, c.config.task.d));
  c.params.assign(p, 0.5f);
  c.moment1.assign(p, 0.0f);
  c.moment2.assign(p, 0.0f);
  c.state.assign(8, 0u);
  const std::string path = rill_test::temp_path("checkpoint-seed");
  (void)rill::icl::detail::write_checkpoint(path, c);
  auto bytes = rill::read_file(path, 1 << 20);
  ::unlink(path.c_str());
  return bytes.is_ok() ? bytes.value() : std::vector<uint8_t>{};
}

void task_set_run(const uint8_t* data, size_t size) { (void)rill::icl::load_task_set(write_scratch("tasks", data, size)); }
std::vector<uint8_t> task_set_seed() {
  rill::icl::TaskSet s;
  s.d = 2;
  s.n = 3;
  s.tasks = 2;
  s.tokens.assign(size_t(s.tasks * (s.n + 1) * (s.d + 1)), 0.5f);
  const size_t per_task = size_t((s.n + 1) * (s.d + 1));
  for (size_t t = 1; t <= size_t(s.tasks); ++t) s.tokens[t * per_task - 1] = 0.0f;  // queries carry no label
  s.targets.assign(size_t(s.tasks), 1.0f);
  s.sigmas.assign(size_t(s.tasks), 0.1f);
  const std::string path = rill_test::temp_path("tasks-seed");
  (void)rill::icl::save_task_set(path, s);
  auto bytes = rill::read_file(path, 1 << 20);
  ::unlink(path.c_str());
  return bytes.is_ok() ? bytes.value() : std::vector<uint8_t>{};
}

rill::vk::PipelineCacheIdentity identity() {
  rill::vk::PipelineCacheIdentity id;
  id.vendor_id = 0x10005;
  id.device_id = 7;
  id.driver_version = 1;
  for (int i = 0; i < 16; ++i) id.uuid[i] = uint8_t(i);
  return id;
}
void pipeline_cache_run(const uint8_t* data, size_t size) {
  (void)rill::vk::decode_pipeline_cache(identity(), std::span<const uint8_t>(data, size));
}
std::vector<uint8_t> pipeline_cache_seed() {
  // A Vulkan pipeline-cache header (length 32, version 1, vendor, device, UUID) and some payload.
  std::vector<uint8_t> payload(48, 0);
  const rill::vk::PipelineCacheIdentity id = identity();
  const uint32_t words[] = {32, 1, id.vendor_id, id.device_id};
  std::memcpy(payload.data(), words, sizeof words);
  std::memcpy(payload.data() + 16, id.uuid, 16);
  return rill::vk::encode_pipeline_cache(id, payload);
}

// The input as the fuzz device's cache file (where read_cached_peaks looks for it), then read.
rill::Status peaks_cache_read(const uint8_t* data, size_t size) {
  rill::DeviceInfo device;
  device.name = "fuzz device";
  const std::string dir = rill_test::temp_path("peaks");
  ::mkdir(dir.c_str(), 0755);  // EEXIST after the first input
  std::ofstream(rill::detail::peaks_cache_file(device, dir), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return rill::detail::read_cached_peaks(device, dir).status();
}
void peaks_cache_run(const uint8_t* data, size_t size) { (void)peaks_cache_read(data, size); }
std::vector<uint8_t> peaks_cache_seed() {
  std::vector<uint8_t> seed = bytes_of("{\"method\": " + std::to_string(rill::detail::kPeaksMethod) +
                                       R"(, "device": "fuzz device", "fma_f32_gflops": 10.5, "fma_f16_gflops": 20,)"
                                       R"( "copy_gbps": 3.2, "dispatch_latency_us": 55})");
  // A seed that is not read back (the file named otherwise) would leave every input unparsed.
  if (!peaks_cache_read(seed.data(), seed.size()).is_ok()) return {};
  return seed;
}

// A small language model's weights in a safetensors file: the tensors checked against the config
// (names, shapes, dtypes, nothing extra), then every one read as floats as a model's upload does.
rill::lm::ModelConfig small_lm_config() {
  rill::lm::ModelConfig c;
  c.vocab = 11;
  c.width = 8;
  c.heads = 2;
  c.ffn_width = 12;
  c.layers = 2;
  c.layer_kinds = {rill::lm::LayerKind::kDiag, rill::lm::LayerKind::kNorm};
  c.block = 4;
  c.chunk = 4;
  c.lrpe_layers = {1};
  c.tie_embeddings = false;
  return c;
}
// A session of the small model on the default device, made once and shared by every run: a state
// file must be refused with a Status (the session left as it was), or taken, never crash it.
rill::lm::Session* lm_session() {
  struct Held {
    rill::Context ctx;
    rill::lm::Model model;
    rill::lm::Session session;
  };
  static std::unique_ptr<Held> held = []() -> std::unique_ptr<Held> {
    auto ctx = rill::Context::create();
    if (!ctx.is_ok()) return nullptr;
    auto weights = rill::lm::Weights::random(small_lm_config(), 5);
    if (!weights.is_ok()) return nullptr;
    auto model = rill::lm::Model::create(*ctx, *weights);
    if (!model.is_ok()) return nullptr;
    auto session = model->session();
    if (!session.is_ok()) return nullptr;
    return std::make_unique<Held>(Held{std::move(ctx).value(), std::move(model).value(), std::move(session).value()});
  }();
  return held ? &held->session : nullptr;
}
void lm_state_run(const uint8_t* data, size_t size) {
  rill::lm::Session* s = lm_session();
  if (s && s->deserialize_state({data, size}).is_ok()) (void)s->decode(1);  // a taken state decodes
}
std::vector<uint8_t> lm_state_seed() {
  rill::lm::Session* s = lm_session();
  if (!s) return {};
  const std::vector<uint32_t> tokens = {1, 2, 3, 4, 5, 6};  // a block and a half: caches and states set
  if (!s->prefill(tokens).is_ok()) return {};
  auto bytes = s->serialize_state();
  (void)s->reset();
  return bytes.is_ok() ? bytes.value() : std::vector<uint8_t>{};
}

void lm_weights_run(const uint8_t* data, size_t size) {
  auto file = rill::SafetensorsFile::from_bytes(std::vector<uint8_t>(data, data + size));
  if (!file.is_ok()) return;
  auto weights = rill::lm::Weights::from_file(small_lm_config(), std::move(file).value());
  if (!weights.is_ok()) return;
  for (const auto& spec : rill::lm::weight_specs(small_lm_config())) (void)weights->floats(spec.name);
}
std::vector<uint8_t> lm_weights_seed() {
  auto weights = rill::lm::Weights::random(small_lm_config(), 3);
  if (!weights.is_ok()) return {};
  const std::string config = rill_test::temp_path("lm-weights-seed.json"),
                    path = rill_test::temp_path("lm-weights-seed.safetensors");
  (void)weights->save(config, path, rill::TensorDType::kBF16);
  auto bytes = rill::read_file(path, 1 << 20);
  ::unlink(config.c_str());
  ::unlink(path.c_str());
  return bytes.is_ok() ? bytes.value() : std::vector<uint8_t>{};
}

// A tuning file (JSON: the device it was made on, the plan, the timings), read for one device.
rill::DeviceInfo tuning_device() {
  rill::DeviceInfo d;
  d.name = "fuzz device";
  d.vendor_id = 0x10005;
  d.device_id = 7;
  d.driver_version = 3;
  return d;
}
void tuning_file_run(const uint8_t* data, size_t size) {
  (void)rill::read_tuning_file(write_scratch("tuning", data, size), tuning_device());
}
std::vector<uint8_t> tuning_file_seed() {
  rill::TuningFile t;
  t.family = "cpu";
  t.kernel_plan = "la_tile=8,lm_decode=fused,icl_tasks_per_workgroup=4";
  t.measurements = {{"lm prefill", "", 12.5}, {"lm decode", "lm_decode=per-op", 3.25}};
  const std::string path = rill_test::temp_path("tuning-seed.json");
  (void)rill::write_tuning_file(path, tuning_device(), t);
  auto bytes = rill::read_file(path, 1 << 20);
  ::unlink(path.c_str());
  return bytes.is_ok() ? bytes.value() : std::vector<uint8_t>{};
}

// A SentencePiece model, then text through its normalization map and tokens back: the map is read
// by libsentencepiece only when text passes through it.
void sentencepiece_run(const uint8_t* data, size_t size) {
  auto model = rill::lm::detail::SentencePieceModel::parse({data, size}, "fuzz");
  if (!model.is_ok()) return;
  for (const char* text : {"a", "ab ba", "\xC3\xA9\xEF\xBC\xA1 \xE2\x96\x81", "\xFF\xFEz", ""}) {
    auto tokens = (*model)->encode(text);
    if (tokens.is_ok()) (void)(*model)->decode(*tokens);
  }
}
std::vector<uint8_t> sentencepiece_seed() { return bytes_of(rill_test::spm::model(rill_test::spm::CharsMap().blob())); }

// A profile's Chrome trace, as `rill profile --trace` reads one back.
void chrome_trace_run(const uint8_t* data, size_t size) {
  (void)rill::parse_chrome_trace(std::string(reinterpret_cast<const char*>(data), size));
}
std::vector<uint8_t> chrome_trace_seed() {
  rill::ProfileEvent dispatch;
  dispatch.track = rill::ProfileEvent::Track::kGpu;
  dispatch.name = "matmul";
  dispatch.category = "dispatch";
  dispatch.duration_us = 12.5;
  dispatch.kernel = "matmul/matmul_f32";
  dispatch.variant = "tiled";
  dispatch.groups[0] = 4;
  dispatch.flops = 1 << 20;
  dispatch.statistics = {{"registers", 64.0, "per invocation"}};
  rill::ProfileEvent submit;
  submit.name = "vkQueueSubmit";
  submit.category = "submit";
  const rill::DevicePeaks peaks{.fma_f32_gflops = 10.0};
  return bytes_of(rill::chrome_trace_json({dispatch, submit}, "fuzz device", &peaks));
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"safetensors", safetensors_run, safetensors_seed, fix_length_prefix},
      {"lm_config", lm_config_run, lm_config_seed},
      {"icl_config", icl_config_run, icl_config_seed},
      {"icl_checkpoint", checkpoint_run, checkpoint_seed, fix_length_prefix},
      {"task_set", task_set_run, task_set_seed, fix_length_prefix},
      {"pipeline_cache", pipeline_cache_run, pipeline_cache_seed},
      {"peaks_cache", peaks_cache_run, peaks_cache_seed},
      {"lm_weights", lm_weights_run, lm_weights_seed, fix_length_prefix},
      {"tuning_file", tuning_file_run, tuning_file_seed},
      {"sentencepiece", sentencepiece_run, sentencepiece_seed},
      {"lm_state", lm_state_run, lm_state_seed, fix_length_prefix},
      {"chrome_trace", chrome_trace_run, chrome_trace_seed},
  };
  return all;
}

}  // namespace rill_fuzz
