// The C API of the ICL trainer: rill_icl_config <-> rill::icl::TrainConfig and the trainer calls.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "capi/capi_common.hpp"
#include "capi/record_chunks.hpp"
#include "icl/checkpoint.hpp"
#include "rill/icl.hpp"

struct rill_icl_trainer {
  rill::icl::Trainer trainer;
};

struct rill_icl_grid {
  rill::icl::TrainerGrid grid;
};

namespace {

using rill::capi::dead;
using rill::capi::destroy_handle;
using rill::capi::fail;
using rill::capi::from_status;
using rill::capi::guarded;
using rill::capi::make_handle;
namespace icl = rill::icl;

void to_c(const icl::TrainConfig& c, rill_icl_config* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->d = c.task.d;
  out->n = c.task.n;
  out->layers = c.model.layers;
  out->heads = c.model.heads;
  out->param = int32_t(c.model.param);
  out->convention = int32_t(c.model.convention);
  out->data = int32_t(c.task.data);
  out->gamma_shape = c.task.gamma_shape;
  out->gamma_scale = c.task.gamma_scale;
  out->noise = int32_t(c.task.noise);
  out->sigma_max = c.task.sigma_max;
  out->category_count = int32_t(std::min<size_t>(c.task.categories.size(), 6));
  for (int32_t i = 0; i < out->category_count; ++i) out->categories[i] = c.task.categories[size_t(i)];
  out->optimizer = int32_t(c.optimizer.kind);
  out->lr = c.optimizer.lr;
  out->momentum = c.optimizer.momentum;
  out->beta1 = c.optimizer.beta1;
  out->beta2 = c.optimizer.beta2;
  out->eps = c.optimizer.eps;
  out->clip_norm = c.optimizer.clip_norm;
  out->init_std = c.model.init_std;
  out->batch = c.batch;
  out->seed = c.seed;
  out->read_every = c.read_every;
  out->skip_nonfinite = c.on_nonfinite == icl::NonFinitePolicy::kSkipBatch;
}

rill::Result<icl::TrainConfig> from_c(const rill_icl_config* in) {
  if (in->struct_size != sizeof(rill_icl_config))
    return rill::invalid_argument("rill_icl_config was not set up with rill_icl_config_init");
  // Range-checked before any cast to a C++ enum.
  if (unsigned(in->param) > 2 || unsigned(in->convention) > 1 || unsigned(in->data) > 1 || unsigned(in->noise) > 2)
    return rill::invalid_argument("icl config: param, convention, data or noise holds an unknown value");
  if (unsigned(in->optimizer) > 1) return rill::invalid_argument("icl config: unknown optimizer");
  if (in->category_count < 0 || in->category_count > 6)
    return rill::invalid_argument("icl config: category_count must be in [0, 6]");
  icl::TrainConfig c;
  c.task.d = in->d;
  c.task.n = in->n;
  c.task.data = icl::DataKind(in->data);
  c.task.gamma_shape = in->gamma_shape;
  c.task.gamma_scale = in->gamma_scale;
  c.task.noise = icl::NoiseKind(in->noise);
  c.task.sigma_max = in->sigma_max;
  c.task.categories.assign(in->categories, in->categories + in->category_count);
  c.model = {.layers = in->layers, .heads = in->heads, .param = icl::Parameterization(in->param),
             .convention = icl::Convention(in->convention), .init_std = in->init_std};
  c.optimizer = {.kind = icl::OptimizerKind(in->optimizer), .lr = in->lr, .momentum = in->momentum,
                 .beta1 = in->beta1, .beta2 = in->beta2, .eps = in->eps, .clip_norm = in->clip_norm};
  c.batch = in->batch;
  c.seed = in->seed;
  c.read_every = in->read_every;
  c.on_nonfinite = in->skip_nonfinite ? icl::NonFinitePolicy::kSkipBatch : icl::NonFinitePolicy::kStop;
  RILL_RETURN_IF_ERROR(icl::validate(c));
  return c;
}

// sigma < 0 keeps the configured noise, sigma >= 0 fixes it; NaN is neither.
rill_status check_sigma(const char* function, float sigma) {
  if (std::isnan(sigma)) return fail(RILL_INVALID_ARGUMENT, function, "sigma is NaN (< 0 keeps the configured noise)");
  return RILL_OK;
}

icl::EvalOptions eval_options(int32_t tasks, uint64_t seed, float sigma) {
  icl::EvalOptions options{.tasks = tasks, .seed = seed};
  if (sigma >= 0.0f) options.sigma = sigma;
  return options;
}

rill_status eval_to_c(const rill::Result<icl::EvalReport>& r, rill_icl_eval* out, uint32_t size) {
  if (!r.is_ok()) return from_status(r.status());
  rill_icl_eval eval;
  std::memset(&eval, 0, sizeof eval);  // the padding too: no stray bytes reach the caller
  eval.tasks = r->tasks;
  eval.model = r->model;
  eval.ridge_oracle = r->ridge_oracle;
  eval.least_squares = r->least_squares;
  eval.ridge_constant = r->ridge_constant;
  eval.adarr = r->adarr;
  eval.tunedrr = r->tunedrr;
  std::memcpy(out, &eval, std::min<size_t>(size, sizeof eval));  // no byte past the caller's struct
  return RILL_OK;
}

// A refusal of a NULL or destroyed handle, a NULL out or a struct smaller than 0.1's; RILL_OK else.
rill_status check_eval_out(const char* function, bool handle_dead, const rill_icl_eval* out, uint32_t size) {
  if (handle_dead || out == nullptr) return fail(RILL_INVALID_ARGUMENT, function, "NULL argument or destroyed handle");
  if (size < rill::capi::kIclEval01Bytes) return fail(RILL_INVALID_ARGUMENT, function, "a struct smaller than 0.1's");
  return RILL_OK;
}

}  // namespace

extern "C" {

void rill_icl_config_init_sized(rill_icl_config* config, uint32_t size, int32_t setting) {
  if (config == nullptr) return;
  rill_icl_config c{};  // struct_size 0 if the preset cannot be made: refused by every call that reads it
  try {  // the C++ preset holds a vector: out of host memory, nothing may escape to C
    to_c(setting >= 1 && setting <= 3 ? icl::ahn_setting(static_cast<icl::AhnSetting>(setting))
                                      : icl::vladymyrov_setting(icl::Parameterization::kFull, 1.0f),
         &c);
  } catch (...) {
    std::memset(static_cast<void*>(config), 0, std::min<size_t>(size, sizeof(c)));
    return;
  }
  rill::capi::init_sized(config, size, c);
}

// 0.1's entry point; its struct has not grown since.
void(rill_icl_config_init)(rill_icl_config* config, int32_t setting) {
  rill_icl_config_init_sized(config, uint32_t(sizeof(rill_icl_config)), setting);
}

rill_status rill_icl_trainer_create(rill_context* context, const rill_icl_config* config, rill_icl_trainer** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(context) || config == nullptr || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_trainer_create: NULL argument or destroyed handle");
  return guarded("rill_icl_trainer_create", [&] {
    auto c = from_c(config);
    if (!c.is_ok()) return from_status(c.status());
    auto t = icl::Trainer::create(context->context, c.value());
    if (!t.is_ok()) return from_status(t.status());
    *out = make_handle(new rill_icl_trainer{std::move(t).value()});
    return RILL_OK;
  });
}

rill_status rill_icl_trainer_resume(rill_context* context, const char* path, rill_icl_trainer** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(context) || path == nullptr || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_trainer_resume: NULL argument or destroyed handle");
  return guarded("rill_icl_trainer_resume", [&] {
    auto t = icl::Trainer::resume(context->context, path);
    if (!t.is_ok()) return from_status(t.status());
    *out = make_handle(new rill_icl_trainer{std::move(t).value()});
    return RILL_OK;
  });
}

void rill_icl_trainer_destroy(rill_icl_trainer* trainer) { destroy_handle(trainer); }

rill_status rill_icl_train(rill_icl_trainer* trainer, int64_t steps, float* losses, float* grad_norms) {
  if (dead(trainer)) return fail(RILL_INVALID_ARGUMENT, "rill_icl_train: trainer is NULL or destroyed");
  return guarded("rill_icl_train", [&] {
    // A halt's status comes with the records up to it (the halting step's too), in the buffers'
    // first entries; rill_icl_step says how many steps were taken.
    // Records a chunk at a time (record_chunks.hpp), also without buffers.
    std::vector<rill::icl::StepRecord> none;
    if (steps <= 0) return from_status(trainer->trainer.train_into(steps, none));  // refused, or nothing to do
    // No steps: reads where the device is after a failed call (step() may lag it), or the halt.
    if (const rill::Status synced = trainer->trainer.train_into(0, none); !synced.is_ok()) return from_status(synced);
    if (steps > rill::icl::detail::kMaxSteps - trainer->trainer.step())
      return from_status(trainer->trainer.train_into(steps, none));  // the trainer's own refusal
    const int64_t chunk = rill::capi::record_chunk(trainer->trainer.config().read_every);
    std::vector<rill::icl::StepRecord> records;
    for (int64_t done = 0; done < steps;) {
      const int64_t n = std::min(chunk, steps - done);
      records.clear();
      const rill::Status status = trainer->trainer.train_into(n, records);
      for (size_t i = 0; i < records.size() && int64_t(i) < n; ++i) {
        if (losses) losses[done + int64_t(i)] = records[i].loss;
        if (grad_norms) grad_norms[done + int64_t(i)] = records[i].grad_norm;
      }
      if (!status.is_ok()) return from_status(status);
      done += n;
    }
    return RILL_OK;
  });
}

rill_status rill_icl_step(const rill_icl_trainer* trainer, int64_t* out) {
  if (dead(trainer) || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_step: NULL argument or destroyed handle");
  *out = trainer->trainer.step();
  return RILL_OK;
}

rill_status rill_icl_evaluate_sized(rill_icl_trainer* trainer, int32_t tasks, uint64_t seed, float sigma,
                                    rill_icl_eval* out, uint32_t size) {
  if (const rill_status s = check_eval_out("rill_icl_evaluate", dead(trainer), out, size); s != RILL_OK) return s;
  if (const rill_status s = check_sigma("rill_icl_evaluate", sigma); s != RILL_OK) return s;
  return guarded("rill_icl_evaluate",
                 [&] { return eval_to_c(trainer->trainer.evaluate(eval_options(tasks, seed, sigma)), out, size); });
}

// 0.1's entry point (programs built against 0.1 hold 0.1's struct): 0.1's fields only.
rill_status(rill_icl_evaluate)(rill_icl_trainer* trainer, int32_t tasks, uint64_t seed, float sigma,
                               rill_icl_eval* out) {
  return rill_icl_evaluate_sized(trainer, tasks, seed, sigma, out, rill::capi::kIclEval01Bytes);
}

rill_status rill_icl_parameters(rill_icl_trainer* trainer, float* out, size_t capacity, size_t* count) {
  if (dead(trainer) || count == nullptr || (out == nullptr && capacity > 0))
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_parameters: NULL argument or destroyed handle");
  return guarded("rill_icl_parameters", [&] {
    auto p = trainer->trainer.parameters();
    if (!p.is_ok()) return from_status(p.status());
    *count = p->size();
    if (out == nullptr || capacity < p->size())
      return fail(RILL_OUT_OF_RANGE, "rill_icl_parameters: needs room for " + std::to_string(p->size()) + " floats");
    std::copy(p->begin(), p->end(), out);
    return RILL_OK;
  });
}

rill_status rill_icl_save_checkpoint(rill_icl_trainer* trainer, const char* path) {
  if (dead(trainer) || path == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_save_checkpoint: NULL argument or destroyed handle");
  return guarded("rill_icl_save_checkpoint", [&] { return from_status(trainer->trainer.save_checkpoint(path)); });
}

rill_status rill_icl_grid_create_sized(rill_context* context, const rill_icl_config* configs, int32_t count,
                                       uint32_t config_size, rill_icl_grid** out) {
  if (out != nullptr) *out = nullptr;
  if (dead(context) || configs == nullptr || out == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_create: NULL argument or destroyed handle");
  if (count < 1) return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_create: count must be >= 1");
  return guarded("rill_icl_grid_create", [&] {
    // The one layout this library reads (each config's struct_size says the same): the stride is
    // the caller's, so that an array of a later, longer struct is not read at this struct's stride.
    if (config_size != sizeof(rill_icl_config))
      return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_create: configs of " + std::to_string(config_size) +
                                             " bytes; this library reads rill_icl_config of " +
                                             std::to_string(sizeof(rill_icl_config)));
    std::vector<icl::TrainConfig> cs;
    const auto* bytes = reinterpret_cast<const unsigned char*>(configs);
    for (int32_t i = 0; i < count; ++i) {
      auto c = from_c(reinterpret_cast<const rill_icl_config*>(bytes + size_t(i) * config_size));
      if (!c.is_ok())
        return from_status(rill::invalid_argument("config " + std::to_string(i) + ": " + c.status().message()));
      cs.push_back(std::move(c).value());
    }
    auto g = icl::TrainerGrid::create(context->context, cs);
    if (!g.is_ok()) return from_status(g.status());
    *out = make_handle(new rill_icl_grid{std::move(g).value()});
    return RILL_OK;
  });
}

void rill_icl_grid_destroy(rill_icl_grid* grid) { destroy_handle(grid); }

rill_status rill_icl_grid_train(rill_icl_grid* grid, int64_t steps, float* losses) {
  if (dead(grid)) return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_train: grid is NULL or destroyed");
  return guarded("rill_icl_grid_train", [&] {
    icl::TrainerGrid& g = grid->grid;
    // Records a chunk at a time (record_chunks.hpp), shared by the models, also without a buffer.
    if (steps <= 0) return from_status(g.train(steps).status());  // refused, or nothing to do
    // No steps: reads where the device is after a failed call, before the range check.
    if (auto synced = g.train(0); !synced.is_ok()) return from_status(synced.status());
    for (int m = 0; m < g.models(); ++m)
      if (steps > rill::icl::detail::kMaxSteps - g.step(m)) return from_status(g.train(steps).status());  // its refusal
    if (losses != nullptr)
      std::fill(losses, losses + size_t(g.models()) * size_t(steps), std::numeric_limits<float>::quiet_NaN());
    const int64_t chunk = rill::capi::record_chunk(g.config(0).value().read_every, g.models());
    for (int64_t done = 0; done < steps;) {
      const int64_t n = std::min(chunk, steps - done);
      auto curves = g.train(n);
      if (!curves.is_ok()) return from_status(curves.status());  // the chunks before it are in losses
      if (losses != nullptr)
        for (size_t m = 0; m < curves->size(); ++m)
          for (size_t i = 0; i < (*curves)[m].size() && int64_t(i) < n; ++i)
            losses[m * size_t(steps) + size_t(done) + i] = (*curves)[m][i].loss;
      done += n;
    }
    return RILL_OK;
  });
}

rill_status rill_icl_grid_model_status(const rill_icl_grid* grid, int32_t model) {
  if (dead(grid)) return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_model_status: grid is NULL or destroyed");
  return guarded("rill_icl_grid_model_status", [&] { return from_status(grid->grid.status(model)); });
}

rill_status rill_icl_grid_evaluate_sized(rill_icl_grid* grid, int32_t model, int32_t tasks, uint64_t seed, float sigma,
                                         rill_icl_eval* out, uint32_t size) {
  if (const rill_status s = check_eval_out("rill_icl_grid_evaluate", dead(grid), out, size); s != RILL_OK) return s;
  if (const rill_status s = check_sigma("rill_icl_grid_evaluate", sigma); s != RILL_OK) return s;
  return guarded("rill_icl_grid_evaluate",
                 [&] { return eval_to_c(grid->grid.evaluate(model, eval_options(tasks, seed, sigma)), out, size); });
}

// 0.1's entry point: 0.1's fields only.
rill_status(rill_icl_grid_evaluate)(rill_icl_grid* grid, int32_t model, int32_t tasks, uint64_t seed, float sigma,
                                    rill_icl_eval* out) {
  return rill_icl_grid_evaluate_sized(grid, model, tasks, seed, sigma, out, rill::capi::kIclEval01Bytes);
}

rill_status rill_icl_grid_save_checkpoint(rill_icl_grid* grid, int32_t model, const char* path) {
  if (dead(grid) || path == nullptr)
    return fail(RILL_INVALID_ARGUMENT, "rill_icl_grid_save_checkpoint: NULL argument or destroyed handle");
  return guarded("rill_icl_grid_save_checkpoint", [&] { return from_status(grid->grid.save_checkpoint(model, path)); });
}

}  // extern "C"
