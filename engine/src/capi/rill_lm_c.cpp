// The C API of the language models (rill/lm.hpp): C structs <-> ModelOptions and SamplerOptions,
// and the model and session calls. Every argument is checked before anything runs, so a rejected
// call leaves a session as it was.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capi/capi_common.hpp"
#include "rill/lm.hpp"

namespace lm = rill::lm;

// The model is shared with its sessions: a session keeps it alive whatever order the handles are
// destroyed in.
struct rill_lm_model {
  std::shared_ptr<lm::Model> model;
};

// Members are destroyed in reverse order: the session before the model it runs on.
struct rill_lm_session {
  std::shared_ptr<lm::Model> model;
  lm::Session session;
  // A prefill or score is running: a call from one of its hooks may not touch the session (it is
  // refused), and a destroy waits for the run to return.
  bool running = false;
  bool destroy_when_done = false;
};

namespace {

using rill::capi::dead;
using rill::capi::destroy_handle;
using rill::capi::fail;
using rill::capi::from_status;
using rill::capi::guarded;
using rill::capi::make_handle;

rill::Result<lm::ModelOptions> from_c(const rill_lm_model_options* in) {
  lm::ModelOptions options;
  if (in == nullptr) return options;
  // 0.1's struct ended before `weights`: still accepted, with the defaults for what it lacks.
  const bool v01 = in->struct_size == offsetof(rill_lm_model_options, weights);
  if (in->struct_size != sizeof(rill_lm_model_options) && !v01)
    return rill::invalid_argument("rill_lm_model_options was not set up with rill_lm_model_options_init");
  if (in->precision != RILL_LM_F32 && in->precision != RILL_LM_F16)
    return rill::invalid_argument("rill_lm_model_options: precision must be RILL_LM_F32 or RILL_LM_F16");
  options.precision = in->precision == RILL_LM_F16 ? lm::Precision::kF16 : lm::Precision::kF32;
  options.prefill_segment = in->prefill_segment;
  options.softmax_capacity = in->softmax_capacity;
  if (v01) return options;
  switch (in->weights) {
    case RILL_LM_WEIGHTS_PRECISION:
      options.weights = lm::WeightStorage::kPrecision;
      break;
    case RILL_LM_WEIGHTS_F16:
      options.weights = lm::WeightStorage::kF16;
      break;
    case RILL_LM_WEIGHTS_INT8:
      options.weights = lm::WeightStorage::kInt8;
      break;
    case RILL_LM_WEIGHTS_INT4:
      options.weights = lm::WeightStorage::kInt4;
      break;
    default:
      return rill::invalid_argument(
          "rill_lm_model_options: weights must be RILL_LM_WEIGHTS_PRECISION, _F16, _INT8 or _INT4");
  }
  options.int8_group = in->int8_group;
  options.int4_group = in->int4_group;
  return options;
}

rill::Result<lm::SamplerOptions> from_c(const rill_lm_sampler_options* in) {
  lm::SamplerOptions options;
  if (in != nullptr) {
    if (in->struct_size != sizeof(rill_lm_sampler_options))
      return rill::invalid_argument("rill_lm_sampler_options was not set up with rill_lm_sampler_options_init");
    options = {.temperature = in->temperature, .top_k = in->top_k, .top_p = in->top_p, .seed = in->seed};
  }
  RILL_RETURN_IF_ERROR(lm::Sampler::validate(options));
  return options;
}

// Creates the model handle from host weights (shared by load and random).
rill_status make_model(rill_context* context, rill::Result<lm::Weights> weights, const lm::ModelOptions& options,
                       rill_lm_model** out) {
  if (!weights.is_ok()) return from_status(weights.status());
  auto model = lm::Model::create(context->context, weights.value(), options);
  if (!model.is_ok()) return from_status(model.status());
  *out = make_handle(new rill_lm_model{std::make_shared<lm::Model>(std::move(model).value())});
  return RILL_OK;
}

// Checks room for the logits before a call runs. logits may be NULL (not wanted).
rill_status check_logits_room(const char* function, const rill_lm_session* session, const float* logits,
                              size_t capacity) {
  const uint32_t vocab = session->model->config().vocab;
  if (logits != nullptr && capacity < vocab)
    return fail(RILL_OUT_OF_RANGE, std::string(function) + ": logits_out needs room for " + std::to_string(vocab) +
                                       " floats (the vocabulary), capacity is " + std::to_string(capacity));
  return RILL_OK;
}

rill_status copy_logits(const char* function, const std::vector<float>& logits, float* out, size_t capacity) {
  if (out == nullptr) return RILL_OK;
  if (logits.size() > capacity)
    return fail(RILL_INTERNAL, std::string(function) + ": the model returned " + std::to_string(logits.size()) +
                                   " logits, more than the vocabulary");
  std::copy(logits.begin(), logits.end(), out);
  return RILL_OK;
}

// A call on a session from a hook of its own running prefill or score. Outside `guarded`: the
// message is built without allocating (nothing may throw into C).
rill_status refuse_running(const char* function) noexcept {
  return fail(RILL_FAILED_PRECONDITION, function,
              "called from a hook of this session's own prefill or score, which is still running");
}

// Marks a session's prefill or score as running while it lives.
struct RunningSession {
  rill_lm_session* session;
  explicit RunningSession(rill_lm_session* s) : session(s) { session->running = true; }
  ~RunningSession() { session->running = false; }
  RunningSession(const RunningSession&) = delete;
  RunningSession& operator=(const RunningSession&) = delete;
};

// After a prefill or score returns: the destroy a hook asked for (not after a call a hook made,
// refused while the run goes on).
void finish_run(rill_lm_session* session) {
  if (!dead(session) && !session->running && session->destroy_when_done) destroy_handle(session);
}

// What rill_lm_prefill_with_hooks and rill_lm_score check before anything runs, each under its
// own name: the handle, the tokens and room for the logits.
rill_status check_tokens(const char* function, const rill_lm_session* session, const uint32_t* tokens, size_t count,
                         const float* logits_out, size_t logits_capacity) {
  if (dead(session) || tokens == nullptr)
    return fail(RILL_INVALID_ARGUMENT, std::string(function) + ": NULL argument or destroyed handle");
  if (session->running) return refuse_running(function);
  if (count == 0) return fail(RILL_INVALID_ARGUMENT, std::string(function) + ": count must be >= 1");
  const uint32_t vocab = session->model->config().vocab;
  for (size_t i = 0; i < count; ++i)
    if (tokens[i] >= vocab)
      return fail(RILL_INVALID_ARGUMENT, std::string(function) + ": tokens[" + std::to_string(i) +
                                             "] = " + std::to_string(tokens[i]) + " is not below the vocabulary size " +
                                             std::to_string(vocab));
  return check_logits_room(function, session, logits_out, logits_capacity);
}

// The hooks as they are when the call starts (copied: a hook that edits or frees the caller's struct
// changes nothing under the running call).
rill::Result<lm::PrefillHooks> from_c(const rill_lm_prefill_hooks* hooks) {
  lm::PrefillHooks out;
  if (hooks == nullptr) return out;
  if (hooks->struct_size != sizeof(rill_lm_prefill_hooks))
    return rill::invalid_argument("rill_lm_prefill_hooks was not set up with rill_lm_prefill_hooks_init");
  void* const user = hooks->user;
  if (const auto progress = hooks->progress; progress != nullptr)
    out.progress = [progress, user](uint64_t done, uint64_t total) { progress(user, done, total); };
  if (const auto stop = hooks->stop; stop != nullptr) out.stop = [stop, user] { return stop(user) != 0; };
  return out;
}

// rill_lm_prefill and rill_lm_prefill_with_hooks, each under its own name.
rill_status prefill(const char* function, rill_lm_session* session, const uint32_t* tokens, size_t count,
                    float* logits_out, size_t logits_capacity, const rill_lm_prefill_hooks* hooks) {
  const rill_status status = guarded(function, [&] {
    if (rill_status s = check_tokens(function, session, tokens, count, logits_out, logits_capacity); s != RILL_OK)
      return s;
    auto c_hooks = from_c(hooks);
    if (!c_hooks.is_ok()) return from_status(c_hooks.status());
    const RunningSession run(session);
    auto logits = session->session.prefill(std::span<const uint32_t>(tokens, count), c_hooks.value());
    if (!logits.is_ok()) return from_status(logits.status());
    return copy_logits(function, logits.value(), logits_out, logits_capacity);
  });
  finish_run(session);
  return status;
}

}  // namespace

extern "C" {

void rill_lm_model_options_init_sized(rill_lm_model_options* options, uint32_t size) {
  const lm::ModelOptions defaults;
  rill_lm_model_options c{};
  c.precision = RILL_LM_F32;
  c.prefill_segment = defaults.prefill_segment;
  c.softmax_capacity = defaults.softmax_capacity;
  c.weights = RILL_LM_WEIGHTS_PRECISION;
  c.int8_group = defaults.int8_group;
  c.int4_group = defaults.int4_group;
  rill::capi::init_sized(options, size, c);
}

// 0.1's entry point (programs built against 0.1 call it with 0.1's struct): 0.1's fields only.
void(rill_lm_model_options_init)(rill_lm_model_options* options) {
  rill_lm_model_options_init_sized(options, uint32_t(offsetof(rill_lm_model_options, weights)));
}

void rill_lm_sampler_options_init_sized(rill_lm_sampler_options* options, uint32_t size) {
  const lm::SamplerOptions defaults;
  rill_lm_sampler_options c{};
  c.temperature = defaults.temperature;
  c.top_k = defaults.top_k;
  c.top_p = defaults.top_p;
  c.seed = defaults.seed;
  rill::capi::init_sized(options, size, c);
}

void rill_lm_prefill_hooks_init_sized(rill_lm_prefill_hooks* hooks, uint32_t size) {
  rill::capi::init_sized(hooks, size, rill_lm_prefill_hooks{});
}

// 0.1's entry point; its struct has not grown since.
void(rill_lm_sampler_options_init)(rill_lm_sampler_options* options) {
  rill_lm_sampler_options_init_sized(options, uint32_t(sizeof(rill_lm_sampler_options)));
}

rill_status rill_lm_model_load(rill_context* context, const char* config_path, const char* weights_path,
                               const rill_lm_model_options* options, rill_lm_model** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(context) || config_path == nullptr || weights_path == nullptr || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_model_load: NULL argument or destroyed handle");
  return guarded("rill_lm_model_load", [&] {
    auto opts = from_c(options);
    if (!opts.is_ok()) return from_status(opts.status());
    return make_model(context, lm::Weights::load(config_path, weights_path), opts.value(), out);
  });
}

rill_status rill_lm_model_random(rill_context* context, const char* config_json, uint64_t seed,
                                 const rill_lm_model_options* options, rill_lm_model** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(context) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_model_random: NULL argument or destroyed handle");
  return guarded("rill_lm_model_random", [&] {
    auto opts = from_c(options);
    if (!opts.is_ok()) return from_status(opts.status());
    lm::ModelConfig config;
    if (config_json != nullptr) {
      auto parsed = lm::config_from_json(config_json);
      if (!parsed.is_ok()) return from_status(parsed.status());
      config = std::move(parsed).value();
    } else if (auto s = config.validate(); !s.is_ok()) {
      return from_status(s);
    }
    return make_model(context, lm::Weights::random(std::move(config), seed), opts.value(), out);
  });
}

void rill_lm_model_destroy(rill_lm_model* model) { destroy_handle(model); }

rill_status rill_lm_model_info_sized(const rill_lm_model* model, rill_lm_info* out, uint32_t size) {
  if (dead(model) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_model_info: NULL argument or destroyed handle");
  if (size < rill::capi::kLmInfo01Bytes)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_model_info: a struct smaller than 0.1's");
  const lm::ModelConfig& c = model->model->config();
  const lm::ModelOptions& o = model->model->options();
  rill_lm_info info;
  std::memset(&info, 0, sizeof info);  // the padding too: no stray bytes reach the caller
  info.vocab = c.vocab;
  info.width = c.width;
  info.heads = c.heads;
  info.layers = c.layers;
  info.ffn_width = c.ffn_width;
  info.block = c.block;
  info.chunk = c.chunk;
  info.precision = o.precision == lm::Precision::kF16 ? RILL_LM_F16 : RILL_LM_F32;
  info.prefill_segment = o.prefill_segment;
  info.weight_bytes = model->model->weight_bytes();
  std::memcpy(out, &info, std::min<size_t>(size, sizeof info));  // no byte past the caller's struct
  return RILL_OK;
}

// 0.1's entry point (programs built against 0.1 hold 0.1's struct): 0.1's fields only.
rill_status(rill_lm_model_info)(const rill_lm_model* model, rill_lm_info* out) {
  return rill_lm_model_info_sized(model, out, rill::capi::kLmInfo01Bytes);
}

rill_status rill_lm_session_create(rill_lm_model* model, rill_lm_session** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(model) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_session_create: NULL argument or destroyed handle");
  return guarded("rill_lm_session_create", [&] {
    auto session = model->model->session();
    if (!session.is_ok()) return from_status(session.status());
    *out = make_handle(new rill_lm_session{model->model, std::move(session).value()});
    return RILL_OK;
  });
}

rill_status rill_lm_session_fork(const rill_lm_session* session, rill_lm_session** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_session_fork: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_session_fork");
  return guarded("rill_lm_session_fork", [&] {
    auto fork = session->session.fork();
    if (!fork.is_ok()) return from_status(fork.status());
    *out = make_handle(new rill_lm_session{session->model, std::move(fork).value()});
    return RILL_OK;
  });
}

void rill_lm_session_destroy(rill_lm_session* session) {
  if (!dead(session) && session->running) {
    session->destroy_when_done = true;  // from a hook: once its prefill or score returns
    return;
  }
  destroy_handle(session);
}

rill_status rill_lm_prefill(rill_lm_session* session, const uint32_t* tokens, size_t count, float* logits_out,
                            size_t logits_capacity) {
  return prefill("rill_lm_prefill", session, tokens, count, logits_out, logits_capacity, nullptr);
}

rill_status rill_lm_prefill_with_hooks(rill_lm_session* session, const uint32_t* tokens, size_t count,
                                       float* logits_out, size_t logits_capacity, const rill_lm_prefill_hooks* hooks) {
  return prefill("rill_lm_prefill_with_hooks", session, tokens, count, logits_out, logits_capacity, hooks);
}

rill_status rill_lm_score(rill_lm_session* session, const uint32_t* tokens, size_t count, float* log_probs_out,
                          size_t log_probs_capacity, float* logits_out, size_t logits_capacity,
                          const rill_lm_prefill_hooks* hooks) {
  const rill_status status = guarded("rill_lm_score", [&] {
    if (rill_status s = check_tokens("rill_lm_score", session, tokens, count, logits_out, logits_capacity);
        s != RILL_OK)
      return s;
    if (count > 1 && (log_probs_out == nullptr || log_probs_capacity < count - 1))
      return fail(log_probs_out == nullptr ? RILL_INVALID_ARGUMENT : RILL_OUT_OF_RANGE,
                  "rill_lm_score: log_probs_out needs room for " + std::to_string(count - 1) +
                      " floats (count - 1), capacity is " + std::to_string(log_probs_out ? log_probs_capacity : 0));
    auto c_hooks = from_c(hooks);
    if (!c_hooks.is_ok()) return from_status(c_hooks.status());
    const RunningSession run(session);
    auto scores = session->session.score(std::span<const uint32_t>(tokens, count), c_hooks.value());
    if (!scores.is_ok()) return from_status(scores.status());
    std::copy(scores->log_probs.begin(), scores->log_probs.end(), log_probs_out);
    return copy_logits("rill_lm_score", scores->logits, logits_out, logits_capacity);
  });
  finish_run(session);
  return status;
}

rill_status rill_lm_log_prob(const float* logits, size_t count, uint32_t token, double* out) {
  if (logits == nullptr || out == nullptr) return fail(RILL_INVALID_ARGUMENT, "rill_lm_log_prob: NULL argument");
  return guarded("rill_lm_log_prob", [&] {
    auto value = lm::log_prob(std::span<const float>(logits, count), token);
    if (!value.is_ok()) return from_status(value.status());
    *out = value.value();
    return RILL_OK;
  });
}

rill_status rill_lm_decode(rill_lm_session* session, uint32_t token, float* logits_out, size_t logits_capacity) {
  if (dead(session)) return fail(RILL_INVALID_ARGUMENT, "rill_lm_decode: session is NULL or destroyed");
  if (session->running) return refuse_running("rill_lm_decode");
  return guarded("rill_lm_decode", [&] {
    const uint32_t vocab = session->model->config().vocab;
    if (token >= vocab)
      return fail(RILL_INVALID_ARGUMENT, "rill_lm_decode: token " + std::to_string(token) +
                                             " is not below the vocabulary size " + std::to_string(vocab));
    if (rill_status s = check_logits_room("rill_lm_decode", session, logits_out, logits_capacity); s != RILL_OK)
      return s;
    auto logits = session->session.decode(token);
    if (!logits.is_ok()) return from_status(logits.status());
    return copy_logits("rill_lm_decode", logits.value(), logits_out, logits_capacity);
  });
}

rill_status rill_lm_position(const rill_lm_session* session, uint64_t* out) {
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_position: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_position");
  *out = session->session.position();
  return RILL_OK;
}

rill_status rill_lm_last_logits(const rill_lm_session* session, float* logits_out, size_t logits_capacity,
                                size_t* count) {
  if (dead(session) || count == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_last_logits: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_last_logits");
  return guarded("rill_lm_last_logits", [&] {  // the refusal's message is built on the heap
    const std::span<const float> logits = session->session.last_logits();
    *count = logits.size();  // also when the buffer is refused: the size it needs
    if (rill_status s = check_logits_room("rill_lm_last_logits", session, logits_out, logits_capacity); s != RILL_OK)
      return s;
    if (logits_out != nullptr) std::copy(logits.begin(), logits.end(), logits_out);
    return RILL_OK;
  });
}

rill_status rill_lm_state_bytes(const rill_lm_session* session, uint64_t* out) {
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_state_bytes: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_state_bytes");
  *out = session->session.state_bytes();
  return RILL_OK;
}

rill_status rill_lm_device_bytes(const rill_lm_session* session, uint64_t* out) {
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_device_bytes: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_device_bytes");
  *out = session->session.device_bytes();
  return RILL_OK;
}

rill_status rill_lm_prefill_segment(const rill_lm_session* session, uint32_t* out) {
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_prefill_segment: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_prefill_segment");
  *out = session->session.prefill_segment();
  return RILL_OK;
}

rill_status rill_lm_release_prefill_memory(rill_lm_session* session) {
  if (dead(session)) return fail(RILL_INVALID_ARGUMENT, "rill_lm_release_prefill_memory: session is NULL or destroyed");
  if (session->running) return refuse_running("rill_lm_release_prefill_memory");
  return guarded("rill_lm_release_prefill_memory", [&] {
    session->session.release_prefill_memory();
    return RILL_OK;
  });
}

rill_status rill_lm_decode_dispatches(const rill_lm_session* session, uint32_t* out) {
  if (dead(session) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_decode_dispatches: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_decode_dispatches");
  *out = session->session.decode_dispatches();
  return RILL_OK;
}

rill_status rill_lm_reset(rill_lm_session* session) {
  if (dead(session)) return fail(RILL_INVALID_ARGUMENT, "rill_lm_reset: session is NULL or destroyed");
  if (session->running) return refuse_running("rill_lm_reset");
  return guarded("rill_lm_reset", [&] { return from_status(session->session.reset()); });
}

rill_status rill_lm_save_state(const rill_lm_session* session, const char* path) {
  if (dead(session) || path == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_save_state: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_save_state");
  return guarded("rill_lm_save_state", [&] { return from_status(session->session.save_state(path)); });
}

rill_status rill_lm_restore_state(rill_lm_session* session, const char* path) {
  if (dead(session) || path == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_restore_state: NULL argument or destroyed handle");
  if (session->running) return refuse_running("rill_lm_restore_state");
  return guarded("rill_lm_restore_state", [&] { return from_status(session->session.restore_state(path)); });
}

rill_status rill_lm_sample(const float* logits, size_t count, const rill_lm_sampler_options* options, uint64_t step,
                           uint32_t* token_out) {
  if (token_out != nullptr) *token_out = 0;
  if (logits == nullptr || token_out == nullptr) return fail(RILL_INVALID_ARGUMENT, "rill_lm_sample: NULL argument");
  if (count == 0 || count > std::numeric_limits<uint32_t>::max())
    return fail(RILL_INVALID_ARGUMENT, "rill_lm_sample: count must be in [1, 2^32 - 1]");
  return guarded("rill_lm_sample", [&] {
    auto opts = from_c(options);
    if (!opts.is_ok()) return from_status(opts.status());
    if (std::all_of(logits, logits + count, [](float x) { return std::isnan(x); }))
      return fail(RILL_INVALID_ARGUMENT, "rill_lm_sample: every logit is NaN: there is no token to choose");
    *token_out = lm::Sampler(opts.value()).sample(std::span<const float>(logits, count), step);
    return RILL_OK;
  });
}

}  // extern "C"
