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

#ifdef __cplusplus
}
#endif

#endif /* RILL_H_ */
