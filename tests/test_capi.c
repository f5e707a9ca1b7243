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

  /* The ICL trainer: a few steps, then every kind of bad input gets a code and a message. */
  {
    rill_icl_config config;
    rill_icl_trainer* trainer = NULL;
    float losses[4];
    int64_t step = -1;
    size_t count = 0;
    rill_icl_eval eval;
    rill_icl_config_init(&config, 1);
    config.batch = 16;
    config.d = 2;
    config.n = 3;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_OK);
    EXPECT(rill_icl_train(trainer, 4, losses, NULL) == RILL_OK);
    EXPECT(losses[0] > 0.0f && losses[3] > 0.0f);
    EXPECT(rill_icl_step(trainer, &step) == RILL_OK && step == 4);
    EXPECT(rill_icl_parameters(trainer, NULL, 0, &count) == RILL_OUT_OF_RANGE);
    EXPECT(count == 3 * 2 * 3 * 3); /* L * 2 * (d+1)^2 */
    EXPECT(rill_icl_evaluate(trainer, 50, 1, 0.5f, &eval) == RILL_OK && eval.tasks == 50);
    EXPECT(rill_icl_evaluate(trainer, 0, 1, 0.5f, &eval) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_train(trainer, -1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_train(NULL, 1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    rill_icl_trainer_destroy(trainer);
    rill_icl_trainer_destroy(NULL);

    trainer = (rill_icl_trainer*)&config; /* must be reset to NULL on failure */
    config.d = 0;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_INVALID_ARGUMENT);
    EXPECT(trainer == NULL);
    EXPECT(strstr(rill_last_error(), "d must be") != NULL);
    config.d = 2;
    config.optimizer = 9;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_INVALID_ARGUMENT);
    config.optimizer = RILL_ICL_ADAM;
    config.param = -3;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_INVALID_ARGUMENT);
    config.param = RILL_ICL_FULL;
    config.struct_size = 1;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_trainer_create(NULL, &config, &trainer) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_trainer_resume(ctx, "/nonexistent/checkpoint.safetensors", &trainer) != RILL_OK);
    EXPECT(trainer == NULL);
    EXPECT(strlen(rill_last_error()) > 0);
  }
  rill_context_destroy(ctx);

  printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
