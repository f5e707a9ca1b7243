/* rill C API: opaque handles, status codes and a per-thread last-error message. No C++ types
 * cross this boundary and no call aborts on bad input: every function returns a status (or is
 * documented to accept NULL).
 *
 *   rill_context_options options;
 *   rill_context_options_init(&options);
 *   rill_context* ctx = NULL;
 *   if (rill_context_create(&options, &ctx) != RILL_OK) fprintf(stderr, "%s\n", rill_last_error());
 *   ...
 *   rill_context_destroy(ctx);
 */
#ifndef RILL_H_
#define RILL_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
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
  RILL_UNIMPLEMENTED = 10
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
  int32_t device_index;            /* -1: not set */
  const char* device_name;         /* substring of the device name; NULL: not set */
  int32_t validation;              /* nonzero: Khronos validation layer (with sync validation) */
  const char* pipeline_cache_path; /* NULL: in-memory pipeline cache only */
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
} rill_device_info;

/* Fills defaults: no device override, no validation, no cache file. */
RILL_C_API void rill_context_options_init(rill_context_options* options);

/* options may be NULL (defaults). On failure *out is set to NULL. */
RILL_C_API rill_status rill_context_create(const rill_context_options* options, rill_context** out);

/* Accepts NULL. Waits for the device to finish the context's work. */
RILL_C_API void rill_context_destroy(rill_context* context);

RILL_C_API rill_status rill_context_device_info(const rill_context* context, rill_device_info* out);

/* The message of the last failed call on this thread ("" if none). Valid until the next call. */
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
 *   rill_icl_trainer_destroy(trainer);              // before the context
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
RILL_C_API void rill_icl_config_init(rill_icl_config* config, int32_t setting);
/* The trainer keeps a reference to the context: destroy it first. On failure *out is NULL. */
RILL_C_API rill_status rill_icl_trainer_create(rill_context* context, const rill_icl_config* config,
                                               rill_icl_trainer** out);
RILL_C_API rill_status rill_icl_trainer_resume(rill_context* context, const char* checkpoint_path,
                                               rill_icl_trainer** out);
RILL_C_API void rill_icl_trainer_destroy(rill_icl_trainer* trainer); /* accepts NULL */
/* Trains `steps` steps; losses and grad_norms (each NULL or `steps` floats) receive the per-step
 * values. A non-finite step under the stop policy returns RILL_FAILED_PRECONDITION. */
RILL_C_API rill_status rill_icl_train(rill_icl_trainer* trainer, int64_t steps, float* losses, float* grad_norms);
RILL_C_API rill_status rill_icl_step(const rill_icl_trainer* trainer, int64_t* out);
/* Evaluates on `tasks` fresh tasks; sigma < 0 keeps the configured noise, else fixes it. */
RILL_C_API rill_status rill_icl_evaluate(rill_icl_trainer* trainer, int32_t tasks, uint64_t seed, float sigma,
                                         rill_icl_eval* out);
/* Copies the parameters into out (capacity floats); *count receives how many there are. */
RILL_C_API rill_status rill_icl_parameters(rill_icl_trainer* trainer, float* out, size_t capacity, size_t* count);
RILL_C_API rill_status rill_icl_save_checkpoint(rill_icl_trainer* trainer, const char* path);

#ifdef __cplusplus
}
#endif

#endif /* RILL_H_ */
