/* The C API, compiled as C: context lifecycle, device info, status codes and messages. */
#include <stdio.h>
#include <string.h>

#include "rill/rill.h"

static int failures = 0;
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

int main(void) {
  rill_context_options options;
  rill_context* ctx = NULL;
  rill_device_info info;

  rill_context_options_init(&options);
  options.validation = 1;
  EXPECT(rill_context_create(&options, &ctx) == RILL_OK);
  EXPECT(ctx != NULL);
  EXPECT(rill_context_device_info(ctx, &info) == RILL_OK);
  EXPECT(strlen(info.name) > 0);
  EXPECT(info.subgroup_size >= 1);
  printf("C API context on %s (subgroup %u)\n", info.name, info.subgroup_size);
  rill_context_destroy(ctx);

  /* Errors: a code plus a message, never a crash. */
  options.device_name = "no-such-device-anywhere";
  ctx = (rill_context*)&options; /* must be reset to NULL on failure */
  EXPECT(rill_context_create(&options, &ctx) == RILL_NOT_FOUND);
  EXPECT(ctx == NULL);
  EXPECT(strstr(rill_last_error(), "no-such-device-anywhere") != NULL);
  EXPECT(rill_context_create(&options, NULL) == RILL_INVALID_ARGUMENT);
  EXPECT(rill_context_device_info(NULL, &info) == RILL_INVALID_ARGUMENT);
  options.struct_size = 3;
  EXPECT(rill_context_create(&options, &ctx) == RILL_INVALID_ARGUMENT);
  rill_context_destroy(NULL);
  EXPECT(strcmp(rill_status_name(RILL_DEVICE_LOST), "DeviceLost") == 0);
  EXPECT(strlen(rill_version()) > 0);

  /* NULL options mean defaults. */
  EXPECT(rill_context_create(NULL, &ctx) == RILL_OK);
  rill_context_destroy(ctx);

  printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
