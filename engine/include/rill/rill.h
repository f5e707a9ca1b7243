/* rill C API: opaque handles, status codes and a per-thread last-error message. No C++ types
 * cross this boundary and no call aborts on bad input: every function returns a status (or is
 * documented to accept NULL). rill keeps a list of the handles it made and has not destroyed: a
 * handle used after its destroy, or a pointer of another kind, is RILL_INVALID_ARGUMENT, and a
 * second destroy does nothing (as long as the memory has not been handed out as a new handle).
 *
 *   rill_context_options options;
 *   rill_context_options_init(&options);
 *   rill_context* ctx = NULL;
 *   if (rill_context_create(&options, &ctx) != RILL_OK) fprintf(stderr, "%s\n", rill_last_error());
 *   ...
 *   rill_context_destroy(ctx);
 *
 * Structs grow at their end: the _init, _info and _evaluate macros pass sizeof the caller's struct
 * to the _sized functions. Bindings that call the library by its symbols (ctypes, cffi's ABI mode)
 * see no macros: they must call the _sized functions with the size of the struct they declare.
 * The symbols without the suffix are 0.1's, for programs built against 0.1: they fill and read
 * 0.1's fields only, so a later field set after them is ignored.
 */
#ifndef RILL_H_
#define RILL_H_

#include <stddef.h>
#include <stdint.h>

#if defined(RILL_STATIC_DEFINE)
#define RILL_C_API
#elif defined(_WIN32)
#if defined(RILL_BUILDING_LIBRARY)
#define RILL_C_API __declspec(dllexport)
#else
#define RILL_C_API __declspec(dllimport)
#endif
#else
#define RILL_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as rill::StatusCode. */
typedef enum rill_status {
  RILL_OK = 0,
  RILL_INVALID_ARGUMENT = 1,
  RILL_NOT_FOUND = 2,
  RILL_RESOURCE_EXHAUSTED = 3,
  RILL_FAILED_PRECONDITION = 4,
  RILL_UNAVAILABLE = 5,
  RILL_DEVICE_LOST = 6,
  RILL_DATA_LOSS = 7,
  RILL_OUT_OF_RANGE = 8,
  RILL_INTERNAL = 9,
  RILL_UNIMPLEMENTED = 10,
  RILL_CANCELLED = 11,
  RILL_DEADLINE_EXCEEDED = 12 /* since 0.2 */
} rill_status;

typedef enum rill_device_type {
  RILL_DEVICE_DISCRETE_GPU = 0,
  RILL_DEVICE_INTEGRATED_GPU = 1,
  RILL_DEVICE_VIRTUAL_GPU = 2,
  RILL_DEVICE_CPU = 3,
  RILL_DEVICE_OTHER = 4
} rill_device_type;

typedef struct rill_context rill_context;

typedef struct rill_context_options {
  uint32_t struct_size;            /* sizeof(rill_context_options); set by _init */
  int32_t device_index;            /* -1: not set (rill picks); below -1 is refused */
  const char* device_name;         /* substring of the device name; NULL: not set */
  int32_t validation;              /* nonzero: Khronos validation layer (with sync validation) */
  const char* pipeline_cache_path; /* NULL: in-memory pipeline cache only */
  /* Since 0.2 (a struct_size without it means NULL). A named smaller device's limits ("mali",
     "adreno", "vulkan11-minimum"; `rill info --profile` shows each): the engine then runs only
     kernels that fit them. NULL or "": the device's own limits, unless RILL_LIMIT_PROFILE names a
     profile. */
  const char* limit_profile;
  /* Since 0.2, after limit_profile (a struct_size without it means 0). The most device memory the
     context may hold, in bytes; past it allocations fail with RILL_RESOURCE_EXHAUSTED naming the
     budget. 0: no budget but the device's (RILL_DEVICE_MEMORY_BUDGET may still set one). */
  uint64_t device_memory_budget;
  /* Since 0.2, after device_memory_budget (a struct_size without it means NULL). Forced kernel-plan
     choices, "key=value,..." as RILL_KERNEL_PLAN takes them (`rill info --plan-keys` lists the
     keys); an unknown key or value is RILL_INVALID_ARGUMENT naming it. NULL or "": the device's
     plan, with RILL_KERNEL_PLAN's choices if it is set. */
  const char* kernel_plan;
  /* Since 0.2, after kernel_plan (a struct_size without it means 0). The longest one call may wait
     for the GPU, in milliseconds: past it the call returns RILL_DEADLINE_EXCEEDED, the work keeps
     running and the context is given up (every later call that needs the GPU returns that code;
     destroying it leaks what the work uses instead of waiting on it). 0: no limit
     (RILL_GPU_WAIT_TIMEOUT, "500ms" or "30s", may still set one); above UINT32_MAX is refused.
     64 bits wide so that the struct's size differs from the layout before it on every ABI (a
     32-bit field could sit in that layout's tail padding). */
  uint64_t gpu_wait_timeout_ms;
} rill_context_options;

typedef struct rill_device_info {
  char name[256];
  char driver_name[256];
  rill_device_type type;
  uint32_t vendor_id;
  uint32_t device_id;
  uint32_t api_version;
  uint32_t subgroup_size;
  uint32_t shared_memory_bytes;
  uint64_t device_local_bytes;
  uint64_t max_storage_buffer_range;
  int32_t unified_memory;
  int32_t timestamps;
  int32_t storage_buffer_16bit;
  int32_t float16_arithmetic;
  /* The M, N, K of the f16 cooperative-matrix product (f32 accumulation) rill's matmul uses on this
     device (VK_NV_cooperative_matrix: 16 x 16 x 16 or 16 x 8 x 16); zeros where there is none. */
  uint32_t cooperative_matrix_f16[3];
} rill_device_info;

/* Fills defaults: no device override, no validation, no cache file, no limit profile. Call it as
 * rill_context_options_init(&options): the macro passes the struct's size, and the library writes
 * no more than that (so a program built against an older header runs with a newer library; the
 * same holds for every _init below; each does nothing with a NULL struct or a size below 4, where
 * struct_size does not fit). The function of that name is 0.1's, kept for programs built against
 * 0.1: it fills 0.1's fields only. */
RILL_C_API void rill_context_options_init_sized(rill_context_options* options, uint32_t size);
RILL_C_API void rill_context_options_init(rill_context_options* options);
#define rill_context_options_init(options) rill_context_options_init_sized((options), (uint32_t)sizeof(*(options)))

/* options may be NULL (defaults). On failure *out is set to NULL. */
RILL_C_API rill_status rill_context_create(const rill_context_options* options, rill_context** out);

/* Accepts NULL. Trainers, grids, models and sessions made from the context share it: the device
 * is waited for and released when the last of them goes, so destroy them in any order. */
RILL_C_API void rill_context_destroy(rill_context* context);

/* Fills *out. Call it as rill_context_device_info(context, &info): the macro passes the struct's
 * size and the library writes no more than that, so a program built against an older header runs
 * with a newer library. The function of that name is 0.1's, kept for programs built against 0.1:
 * it fills 0.1's fields (up to cooperative_matrix_f16) only. A size below 0.1's is refused. */
RILL_C_API rill_status rill_context_device_info_sized(const rill_context* context, rill_device_info* out,
                                                      uint32_t size);
RILL_C_API rill_status rill_context_device_info(const rill_context* context, rill_device_info* out);
#define rill_context_device_info(context, out) \
  rill_context_device_info_sized((context), (out), (uint32_t)sizeof(rill_device_info))

/* RILL_OK while the context can run work; else what ended it, which every later call that needs
 * the GPU returns too (RILL_DEVICE_LOST after a GPU reset, RILL_DEADLINE_EXCEEDED after a wait past
 * gpu_wait_timeout_ms), with rill_last_error() saying why: create a new context then. */
RILL_C_API rill_status rill_context_usable(const rill_context* context);

/* The message of the last failed call on this thread ("" if none), starting with the call's name
 * ("rill_lm_prefill: ..."). Valid until the next call. */
RILL_C_API const char* rill_last_error(void);

RILL_C_API const char* rill_status_name(rill_status status);
RILL_C_API const char* rill_version(void);

/* ---- In-context-learning trainer (rill/icl.hpp has the model and the papers' settings) ----
 *
 *   rill_icl_config config;
 *   rill_icl_config_init(&config, 1);               // Ahn et al. setting 1
 *   rill_icl_trainer* trainer = NULL;
 *   rill_icl_trainer_create(ctx, &config, &trainer);
 *   float losses[500];
 *   rill_icl_train(trainer, 500, losses, NULL);
 *   rill_icl_trainer_destroy(trainer);              // before or after the context
 */
typedef struct rill_icl_trainer rill_icl_trainer;

typedef enum rill_icl_param { RILL_ICL_FULL = 0, RILL_ICL_DIAG = 1, RILL_ICL_GD_PLUS_PLUS = 2 } rill_icl_param;
typedef enum rill_icl_convention { RILL_ICL_AHN = 0, RILL_ICL_VLADYMYROV = 1 } rill_icl_convention;
typedef enum rill_icl_data { RILL_ICL_GAUSSIAN = 0, RILL_ICL_HEAVY_TAILED = 1 } rill_icl_data;
typedef enum rill_icl_noise {
  RILL_ICL_NOISE_NONE = 0,
  RILL_ICL_NOISE_UNIFORM = 1,
  RILL_ICL_NOISE_CATEGORICAL = 2
} rill_icl_noise;
typedef enum rill_icl_optimizer { RILL_ICL_SGD = 0, RILL_ICL_ADAM = 1 } rill_icl_optimizer;

/* Enum-valued fields are int32_t (a fixed size across compilers, and an out-of-range value is an
 * error the library reports rather than undefined behaviour). */
typedef struct rill_icl_config {
  uint32_t struct_size; /* sizeof(rill_icl_config); set by _init */
  int32_t d, n, layers, heads;
  int32_t param;      /* rill_icl_param */
  int32_t convention; /* rill_icl_convention */
  int32_t data;       /* rill_icl_data */
  float gamma_shape, gamma_scale; /* heavy-tailed radii r2 ~ Gamma(shape, scale) */
  int32_t noise;      /* rill_icl_noise */
  float sigma_max;        /* RILL_ICL_NOISE_UNIFORM */
  int32_t category_count; /* RILL_ICL_NOISE_CATEGORICAL: 1 to 6 values in categories */
  float categories[6];
  int32_t optimizer; /* rill_icl_optimizer */
  float lr, momentum, beta1, beta2, eps, clip_norm, init_std;
  int32_t batch;
  uint64_t seed;
  int32_t read_every;     /* losses are read from the device every read_every steps */
  int32_t skip_nonfinite; /* nonzero: skip a batch whose loss or gradient is not finite; 0: stop */
} rill_icl_config;

typedef struct rill_icl_eval {
  int32_t tasks;
  double model, ridge_oracle, least_squares, ridge_constant, adarr, tunedrr;
} rill_icl_eval;

/* Fills a preset: setting 1, 2 or 3 of Ahn et al.; any other value: Vladymyrov et al. (FULL,
 * sigma ~ U(0, 1)). */
RILL_C_API void rill_icl_config_init_sized(rill_icl_config* config, uint32_t size, int32_t setting);
RILL_C_API void rill_icl_config_init(rill_icl_config* config, int32_t setting);
#define rill_icl_config_init(config, setting) \
  rill_icl_config_init_sized((config), (uint32_t)sizeof(*(config)), (setting))
/* The trainer shares the context: destroy the two in either order. On failure *out is NULL. */
RILL_C_API rill_status rill_icl_trainer_create(rill_context* context, const rill_icl_config* config,
                                               rill_icl_trainer** out);
/* A checkpoint trained on a task set resumes without the set here: it evaluates, exports and
 * saves, and rill_icl_train refuses it (RILL_FAILED_PRECONDITION; the C++ API takes the set). */
RILL_C_API rill_status rill_icl_trainer_resume(rill_context* context, const char* checkpoint_path,
                                               rill_icl_trainer** out);
RILL_C_API void rill_icl_trainer_destroy(rill_icl_trainer* trainer); /* accepts NULL */
/* Trains `steps` steps; losses and grad_norms (each NULL or `steps` floats) receive the per-step
 * values. A non-finite step under the stop policy returns RILL_FAILED_PRECONDITION, with the
 * values up to it (its own included) in the first entries: one more than the steps rill_icl_step
 * counts past the step count before the call (the halting step is not counted). After another
 * failure rill_icl_step counts the steps whose losses were read before it (whole runs of
 * read_every), though the device may have gone further: a call of 0 steps reads where it is. */
RILL_C_API rill_status rill_icl_train(rill_icl_trainer* trainer, int64_t steps, float* losses, float* grad_norms);
RILL_C_API rill_status rill_icl_step(const rill_icl_trainer* trainer, int64_t* out);
/* Evaluates on `tasks` fresh tasks; sigma < 0 keeps the configured noise, else fixes it (NaN is
 * refused). Evaluating again with the same arguments reuses the baselines: only the model runs.
 * Call it as rill_icl_evaluate(...): the macro passes the struct's size and the library writes no
 * more than that, so a program built against an older header runs with a newer library (the
 * function of that name fills 0.1's fields; a size below 0.1's struct is refused). */
RILL_C_API rill_status rill_icl_evaluate_sized(rill_icl_trainer* trainer, int32_t tasks, uint64_t seed, float sigma,
                                               rill_icl_eval* out, uint32_t size);
RILL_C_API rill_status rill_icl_evaluate(rill_icl_trainer* trainer, int32_t tasks, uint64_t seed, float sigma,
                                         rill_icl_eval* out);
#define rill_icl_evaluate(trainer, tasks, seed, sigma, out) \
  rill_icl_evaluate_sized((trainer), (tasks), (seed), (sigma), (out), (uint32_t)sizeof(rill_icl_eval))
/* Copies the parameters into out (capacity floats); *count receives how many there are. A size
 * query (out NULL, capacity 0) sets *count and returns RILL_OUT_OF_RANGE, as a too-small buffer does. */
RILL_C_API rill_status rill_icl_parameters(rill_icl_trainer* trainer, float* out, size_t capacity, size_t* count);
RILL_C_API rill_status rill_icl_save_checkpoint(rill_icl_trainer* trainer, const char* path);

/* Many models trained at once (rill::icl::TrainerGrid): models that share a shape train in the
 * same dispatches, each as it would alone. The configs must agree on read_every.
 *
 *   rill_icl_config configs[8];
 *   for (int i = 0; i < 8; ++i) { rill_icl_config_init(&configs[i], 1); configs[i].seed = i + 1; }
 *   rill_icl_grid* grid = NULL;
 *   rill_icl_grid_create(ctx, configs, 8, &grid);
 *   rill_icl_grid_train(grid, 1000, NULL);
 */
typedef struct rill_icl_grid rill_icl_grid;
/* configs is an array of `count` structs of config_size bytes each: the macro passes the caller's
 * sizeof(rill_icl_config), so the array is walked at the caller's stride when the struct grows (a
 * size this library cannot read is refused). Since 0.2. */
RILL_C_API rill_status rill_icl_grid_create_sized(rill_context* context, const rill_icl_config* configs, int32_t count,
                                                  uint32_t config_size, rill_icl_grid** out);
#define rill_icl_grid_create(context, configs, count, out) \
  rill_icl_grid_create_sized((context), (configs), (count), (uint32_t)sizeof(rill_icl_config), (out))
RILL_C_API void rill_icl_grid_destroy(rill_icl_grid* grid); /* accepts NULL */
/* Trains `steps` steps of every model; losses (NULL or count * steps floats, model-major) receive
 * each model's per-step losses, NaN after a model halted (see rill_icl_grid_model_status). The
 * steps run in chunks of about 64K: a failure keeps the losses of the chunks before it, NaN after. */
RILL_C_API rill_status rill_icl_grid_train(rill_icl_grid* grid, int64_t steps, float* losses);
/* RILL_OK, or the status (and rill_last_error's message) of the step that halted the model. */
RILL_C_API rill_status rill_icl_grid_model_status(const rill_icl_grid* grid, int32_t model);
/* Sized like rill_icl_evaluate. */
RILL_C_API rill_status rill_icl_grid_evaluate_sized(rill_icl_grid* grid, int32_t model, int32_t tasks, uint64_t seed,
                                                    float sigma, rill_icl_eval* out, uint32_t size);
RILL_C_API rill_status rill_icl_grid_evaluate(rill_icl_grid* grid, int32_t model, int32_t tasks, uint64_t seed,
                                              float sigma, rill_icl_eval* out);
#define rill_icl_grid_evaluate(grid, model, tasks, seed, sigma, out) \
  rill_icl_grid_evaluate_sized((grid), (model), (tasks), (seed), (sigma), (out), (uint32_t)sizeof(rill_icl_eval))
/* The file rill_icl_save_checkpoint writes: rill_icl_trainer_resume continues the model alone. */
RILL_C_API rill_status rill_icl_grid_save_checkpoint(rill_icl_grid* grid, int32_t model, const char* path);

/* ---- Language models (rill/lm.hpp: TransNormer, byte-level by default) ----
 *
 *   rill_lm_model* model = NULL;
 *   rill_lm_model_load(ctx, "model.json", "model.safetensors", NULL, &model);
 *   rill_lm_session* session = NULL;
 *   rill_lm_session_create(model, &session);
 *   float* logits = malloc(vocab * sizeof(float));      // vocab from rill_lm_model_info
 *   rill_lm_prefill(session, prompt, prompt_length, logits, vocab);
 *   uint64_t position;
 *   rill_lm_position(session, &position);
 *   uint32_t token;
 *   rill_lm_sample(logits, vocab, &sampler_options, position, &token);
 *   rill_lm_decode(session, token, logits, vocab);      // same cost at every position
 *   rill_lm_session_destroy(session);
 *   rill_lm_model_destroy(model);
 *
 * Lifetimes: models, sessions and trainers share their context's device, and a session keeps its
 * model alive, so a context and everything made from it may be destroyed in any order. A context and everything made
 * from it are not thread-safe. */
typedef struct rill_lm_model rill_lm_model;
typedef struct rill_lm_session rill_lm_session;

typedef enum rill_lm_precision { RILL_LM_F32 = 0, RILL_LM_F16 = 1 } rill_lm_precision;
/* The linear layers' weights on the device: as the precision says, or packed f16, int8 with group
 * scales (about a quarter of f32) or int4 with group scales (about a sixth), converted at load
 * whatever the file holds. */
typedef enum rill_lm_weight_storage {
  RILL_LM_WEIGHTS_PRECISION = 0,
  RILL_LM_WEIGHTS_F16 = 1,
  RILL_LM_WEIGHTS_INT8 = 2,
  RILL_LM_WEIGHTS_INT4 = 3
} rill_lm_weight_storage;

typedef struct rill_lm_model_options {
  uint32_t struct_size;      /* sizeof(rill_lm_model_options); set by _init */
  int32_t precision;         /* rill_lm_precision: f32, or f16 storage with f32 arithmetic */
  uint32_t prefill_segment;  /* prefill runs in segments of this many positions (at most 65535, else
                                RILL_INVALID_ARGUMENT; with DiagAttention layers rounded down to whole blocks, one
                                at least); 0: the device's choice; rill_lm_model_info reports the length in
                                effect */
  uint32_t softmax_capacity; /* positions a session can hold when the model has softmax layers */
  int32_t weights;           /* rill_lm_weight_storage (since 0.2; a struct_size without it means precision) */
  uint32_t int8_group;       /* rows per int8 scale (since 0.2) */
  uint32_t int4_group;       /* rows per int4 scale (since 0.2) */
} rill_lm_model_options;

typedef struct rill_lm_info {
  uint32_t vocab, width, heads, layers, ffn_width, block, chunk;
  int32_t precision; /* rill_lm_precision */
  uint32_t prefill_segment;
  uint64_t weight_bytes; /* device bytes of the weights */
} rill_lm_info;

typedef struct rill_lm_sampler_options {
  uint32_t struct_size; /* sizeof(rill_lm_sampler_options); set by _init */
  float temperature;    /* >= 0; 0: greedy (argmax, lowest index on ties) */
  uint32_t top_k;       /* 0: off */
  float top_p;          /* in (0, 1]; 1: off */
  uint64_t seed;
} rill_lm_sampler_options;

/* Fill the defaults: f32, the default segment and capacity; temperature 1, no filters, seed 0. */
RILL_C_API void rill_lm_model_options_init_sized(rill_lm_model_options* options, uint32_t size);
RILL_C_API void rill_lm_model_options_init(rill_lm_model_options* options);
#define rill_lm_model_options_init(options) \
  rill_lm_model_options_init_sized((options), (uint32_t)sizeof(*(options)))
RILL_C_API void rill_lm_sampler_options_init_sized(rill_lm_sampler_options* options, uint32_t size);
RILL_C_API void rill_lm_sampler_options_init(rill_lm_sampler_options* options);
#define rill_lm_sampler_options_init(options) \
  rill_lm_sampler_options_init_sized((options), (uint32_t)sizeof(*(options)))

/* A model from a JSON config and a safetensors file (both untrusted: every problem is a status
 * naming the file and the tensor). options may be NULL (defaults). On failure *out is NULL. */
RILL_C_API rill_status rill_lm_model_load(rill_context* context, const char* config_path, const char* weights_path,
                                          const rill_lm_model_options* options, rill_lm_model** out);
/* A model with seeded random weights (the same seed gives the same weights everywhere).
 * config_json: a config as in rill/lm.hpp, missing keys taking defaults; NULL: all defaults. */
RILL_C_API rill_status rill_lm_model_random(rill_context* context, const char* config_json, uint64_t seed,
                                            const rill_lm_model_options* options, rill_lm_model** out);
RILL_C_API void rill_lm_model_destroy(rill_lm_model* model); /* accepts NULL */
/* Fills *out. Call it as rill_lm_model_info(model, &info): the macro passes the struct's size and
 * the library writes no more than that (the function of that name fills 0.1's fields; a size below
 * 0.1's struct is refused). */
RILL_C_API rill_status rill_lm_model_info_sized(const rill_lm_model* model, rill_lm_info* out, uint32_t size);
RILL_C_API rill_status rill_lm_model_info(const rill_lm_model* model, rill_lm_info* out);
#define rill_lm_model_info(model, out) rill_lm_model_info_sized((model), (out), (uint32_t)sizeof(rill_lm_info))

/* A session: the recurrent state of one conversation, at position 0. On failure *out is NULL. */
RILL_C_API rill_status rill_lm_session_create(rill_lm_model* model, rill_lm_session** out);
RILL_C_API void rill_lm_session_destroy(rill_lm_session* session); /* accepts NULL */
/* A new session at this one's position with a copy of its state, made on the device: a prompt
 * prefilled once, then each continuation scored or generated in a fork of its own. */
RILL_C_API rill_status rill_lm_session_fork(const rill_lm_session* session, rill_lm_session** out);

/* Runs count >= 1 tokens (each < vocab) from the current position. logits_out: NULL, or room for
 * logits_capacity >= vocab floats that receive the last position's logits. Arguments are checked
 * before anything runs: a call rejected for its arguments leaves the session unchanged. */
RILL_C_API rill_status rill_lm_prefill(rill_lm_session* session, const uint32_t* tokens, size_t count,
                                       float* logits_out, size_t logits_capacity);
/* Hooks of a long prefill (either may be NULL), called on the calling thread with `user`: progress
 * after each segment with the positions done in this call and its total; stop before each segment
 * (and each decoding step up to the first block boundary), nonzero to stop there. A stopped prefill
 * returns RILL_CANCELLED and keeps the positions it did (rill_lm_position says how far it got):
 * prefilling the remaining tokens later gives the same logits as one uninterrupted call. A stop
 * takes effect within one segment (rill_lm_model_options.prefill_segment positions). A hook may
 * not use its own session: such calls return RILL_FAILED_PRECONDITION, and
 * rill_lm_session_destroy from a hook takes effect when the prefill or score returns. */
typedef struct rill_lm_prefill_hooks {
  uint32_t struct_size; /* sizeof(rill_lm_prefill_hooks); set by _init */
  void (*progress)(void* user, uint64_t done, uint64_t total);
  int (*stop)(void* user);
  void* user;
} rill_lm_prefill_hooks;
/* No hooks (each NULL): set the ones wanted after. */
RILL_C_API void rill_lm_prefill_hooks_init_sized(rill_lm_prefill_hooks* hooks, uint32_t size);
#define rill_lm_prefill_hooks_init(hooks) rill_lm_prefill_hooks_init_sized((hooks), (uint32_t)sizeof(*(hooks)))
/* rill_lm_prefill with hooks (NULL: none). */
RILL_C_API rill_status rill_lm_prefill_with_hooks(rill_lm_session* session, const uint32_t* tokens, size_t count,
                                                  float* logits_out, size_t logits_capacity,
                                                  const rill_lm_prefill_hooks* hooks);
/* Scores a text: runs count >= 1 tokens like rill_lm_prefill_with_hooks (hooks may be NULL; they
 * are called during this call only) and writes log_probs_out[i], the natural logarithm of the model's
 * probability of tokens[i + 1] after everything before it, for i < count - 1 (room for count - 1
 * floats; NULL when count is 1); logits_out as for rill_lm_prefill. The first token's
 * log-probability comes from the previous call's logits (rill_lm_log_prob). Computed on the device,
 * a chunk of rows at a time: no [count, vocab] logits exist at once. A stopped call writes no
 * scores and keeps the positions it did. */
RILL_C_API rill_status rill_lm_score(rill_lm_session* session, const uint32_t* tokens, size_t count,
                                     float* log_probs_out, size_t log_probs_capacity, float* logits_out,
                                     size_t logits_capacity, const rill_lm_prefill_hooks* hooks);
/* log softmax(logits)[token] in double: the log-probability of `token` coming next, from the logits a
 * prefill, decode or score returned (token < count). RILL_INVALID_ARGUMENT for logits holding a NaN
 * or +inf, or all -inf. Needs no context. */
RILL_C_API rill_status rill_lm_log_prob(const float* logits, size_t count, uint32_t token, double* out);
/* One token at the current position; logits_out as for rill_lm_prefill (NULL: not read back).
 * A prefill, score or decode whose logits come out non-finite (RILL_OUT_OF_RANGE where f16
 * activations overflowed, RILL_DATA_LOSS else) leaves the session's state spent: every later
 * prefill, score, decode, fork or save returns RILL_FAILED_PRECONDITION naming the first error,
 * until rill_lm_reset or a restore. So does one that fails after its work reached the device (a
 * failed wait), whose tokens the state may hold though rill_lm_position does not count them. */
RILL_C_API rill_status rill_lm_decode(rill_lm_session* session, uint32_t token, float* logits_out,
                                      size_t logits_capacity);
/* Tokens consumed so far. */
RILL_C_API rill_status rill_lm_position(const rill_lm_session* session, uint64_t* out);
/* The logits after the last token consumed (what the last prefill, score or decode returned, also
 * when a stopped call kept positions; restored with a saved state): a restored session draws its
 * next token from them. *count receives their number: the vocabulary, or 0 at position 0 and after
 * restoring a state saved without them (also written when logits_out is refused). logits_out as for
 * rill_lm_prefill (NULL: the count only). */
RILL_C_API rill_status rill_lm_last_logits(const rill_lm_session* session, float* logits_out, size_t logits_capacity,
                                           size_t* count);
/* Device bytes the session's state occupies (constant in the position for TransNormer layers). */
RILL_C_API rill_status rill_lm_state_bytes(const rill_lm_session* session, uint64_t* out);
/* Device bytes the session holds now: its state and the activations of the prefill segment and the
 * decoding step recorded so far. */
RILL_C_API rill_status rill_lm_device_bytes(const rill_lm_session* session, uint64_t* out);
/* The segment length the session prefills in: the model's, or less where a segment of that length
 * did not fit in device memory (the prefill then halves it, with a warning, rather than fail). */
RILL_C_API rill_status rill_lm_prefill_segment(const rill_lm_session* session, uint32_t* out);
/* Frees the prefill segment's activations until the next prefill (most of a session's memory past
 * its state); the state, the position and decoding are unchanged. */
RILL_C_API rill_status rill_lm_release_prefill_memory(rill_lm_session* session);
/* Dispatches one decoding step runs (0 before the first decode): 2 per layer plus the embedding and
 * the logits where the fused decoding kernels fit the device, about a dozen per layer else. */
RILL_C_API rill_status rill_lm_decode_dispatches(const rill_lm_session* session, uint32_t* out);
/* Back to position 0 with an empty state. */
RILL_C_API rill_status rill_lm_reset(rill_lm_session* session);
/* The state as a file (written atomically); restore accepts only a state saved from a model with
 * the same config, precision and weights (as stored, and packed the same way: int8/int4 and their
 * group), and then continues exactly where the saved session was; a damaged file (its checksum)
 * is RILL_DATA_LOSS. A file it refuses leaves the
 * session as it was; an upload that fails part way resets it to position 0. */
RILL_C_API rill_status rill_lm_save_state(const rill_lm_session* session, const char* path);
RILL_C_API rill_status rill_lm_restore_state(rill_lm_session* session, const char* path);

/* A token in [0, count) drawn from logits: temperature, then top-k, then top-p, renormalised. The
 * draw depends only on (options->seed, step): pass the session position for reproducible runs.
 * options may be NULL (defaults). NaN logits are never chosen (all NaN: RILL_INVALID_ARGUMENT); count 0 or
 * above UINT32_MAX is RILL_INVALID_ARGUMENT. Needs no context. */
RILL_C_API rill_status rill_lm_sample(const float* logits, size_t count, const rill_lm_sampler_options* options,
                                      uint64_t step, uint32_t* token_out);

/* ---- Tokenizers (rill/tokenizer.hpp) ----
 * A SentencePiece model (tokenizer.model), or bytes (path NULL: token = byte). Encoding and
 * decoding follow the size-query convention: pass capacity 0 (buffer may be NULL) to learn the
 * size in *count_out / *length_out, then call again with room for it; a too-small buffer is
 * RILL_OUT_OF_RANGE with the needed size still written. Decoded text is UTF-8 as the model made it,
 * not NUL-terminated. */
typedef struct rill_tokenizer rill_tokenizer;
RILL_C_API rill_status rill_tokenizer_load(const char* path, rill_tokenizer** out);
RILL_C_API void rill_tokenizer_destroy(rill_tokenizer* tokenizer); /* accepts NULL */
/* add_bos: start with the beginning-of-sequence token (when the model has one). */
RILL_C_API rill_status rill_tokenizer_encode(const rill_tokenizer* tokenizer, const char* text, size_t length,
                                             int add_bos, uint32_t* tokens_out, size_t capacity, size_t* count_out);
RILL_C_API rill_status rill_tokenizer_decode(const rill_tokenizer* tokenizer, const uint32_t* tokens, size_t count,
                                             char* text_out, size_t capacity, size_t* length_out);
/* Vocabulary size; the beginning- and end-of-sequence tokens, or -1 where the model has none. Each
 * output may be NULL (not written). */
RILL_C_API rill_status rill_tokenizer_info(const rill_tokenizer* tokenizer, uint32_t* vocab_out, int64_t* bos_out,
                                           int64_t* eos_out);

/* Text of tokens as a model writes them, for showing it while it is written (rill::lm::TextStream):
 * push each token, then read what the tokens pushed so far added to the text; at the end, finish
 * makes what was held back (a character whose bytes are still incomplete) readable. Joined, the
 * text read is rill_tokenizer_decode of all the tokens, and no read ends inside a character of
 * valid UTF-8, except after 256 tokens that never complete one: then the held text goes out as it
 * decodes and the stream starts afresh (the joined text may then differ from decoding the whole
 * at that point). read follows the size-query convention and takes what it returns out of the stream
 * (a too-small buffer leaves it there). The stream keeps the tokenizer's model alive: the
 * tokenizer may be destroyed first. */
typedef struct rill_text_stream rill_text_stream;
RILL_C_API rill_status rill_text_stream_create(const rill_tokenizer* tokenizer, rill_text_stream** out);
RILL_C_API void rill_text_stream_destroy(rill_text_stream* stream); /* accepts NULL */
/* A token past the vocabulary is RILL_INVALID_ARGUMENT and leaves the stream unchanged. */
RILL_C_API rill_status rill_text_stream_push(rill_text_stream* stream, uint32_t token);
RILL_C_API rill_status rill_text_stream_finish(rill_text_stream* stream);
RILL_C_API rill_status rill_text_stream_read(rill_text_stream* stream, char* text_out, size_t capacity,
                                             size_t* length_out);

#ifdef __cplusplus
}
#endif

#endif /* RILL_H_ */
