/* The C API, compiled as C: context lifecycle, device info, status codes and messages. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A long prefill's hooks as an app writes them: count the progress calls, stop at the n-th ask. */
struct prefill_watch {
  int progress_calls, stops_asked, stop_at;
  uint64_t last_done, last_total;
};
static void watch_progress(void* user, uint64_t done, uint64_t total) {
  struct prefill_watch* w = (struct prefill_watch*)user;
  ++w->progress_calls;
  w->last_done = done;
  w->last_total = total;
}
/* A progress hook that clears the stop hook of the struct it came in: the running call keeps the
   hooks it started with (it read the struct on every call, and called the NULL). */
struct clearing_hook {
  rill_lm_prefill_hooks* hooks;
  int progress_calls;
};
static void clear_stop_progress(void* user, uint64_t done, uint64_t total) {
  struct clearing_hook* c = (struct clearing_hook*)user;
  (void)done;
  (void)total;
  ++c->progress_calls;
  c->hooks->stop = NULL;
}
static int never_stop(void* user) {
  (void)user;
  return 0;
}
static int watch_stop(void* user) {
  struct prefill_watch* w = (struct prefill_watch*)user;
  return ++w->stops_asked == w->stop_at;
}

/* A hook that calls back into its own session: every call is refused while the prefill runs, and
   a destroy waits for it to return. */
struct reentrant_hook {
  rill_lm_session* session;
  rill_status decode, position, reset, prefill;
};
static void reenter_progress(void* user, uint64_t done, uint64_t total) {
  struct reentrant_hook* h = (struct reentrant_hook*)user;
  uint64_t at = 0;
  uint32_t token = 1;
  (void)done;
  (void)total;
  h->decode = rill_lm_decode(h->session, 1, NULL, 0);
  h->position = rill_lm_position(h->session, &at);
  h->reset = rill_lm_reset(h->session);
  h->prefill = rill_lm_prefill(h->session, &token, 1, NULL, 0);
  rill_lm_session_destroy(h->session);
}

/* A program built against 0.1 holds 0.1's shorter structs: the init functions it calls (by their
   names, not the macros) fill no byte past them. The canary after each must stay. */
static int init_keeps_within_old_structs(void) {
  int ok = 1;
  struct {
    unsigned char bytes[offsetof(rill_context_options, limit_profile)];
    unsigned char canary[64];
  } ctx_01;
  struct {
    unsigned char bytes[offsetof(rill_lm_model_options, weights)];
    unsigned char canary[64];
  } lm_01;
  rill_context_options current;
  rill_context* made = NULL;
  size_t i;
  memset(&ctx_01, 0xAA, sizeof ctx_01);
  memset(&lm_01, 0xAA, sizeof lm_01);
  (rill_context_options_init)((rill_context_options*)(void*)&ctx_01);
  (rill_lm_model_options_init)((rill_lm_model_options*)(void*)&lm_01);
  for (i = 0; i < 64; ++i) ok = ok && ctx_01.canary[i] == 0xAA && lm_01.canary[i] == 0xAA;
  ok = ok && ((rill_context_options*)(void*)&ctx_01)->struct_size == offsetof(rill_context_options, limit_profile);
  ok = ok && ((rill_context_options*)(void*)&ctx_01)->device_index == -1;
  ok = ok && ((rill_lm_model_options*)(void*)&lm_01)->struct_size == offsetof(rill_lm_model_options, weights);
  /* The 0.1 struct so filled makes a context (the fields it lacks keep their defaults). */
  ok = ok && rill_context_create((rill_context_options*)(void*)&ctx_01, &made) == RILL_OK;
  { /* 0.1's device info ends before cooperative_matrix_f16: its entry point writes no further. */
    struct {
      unsigned char bytes[offsetof(rill_device_info, cooperative_matrix_f16)];
      unsigned char canary[64];
    } info_01;
    rill_device_info full;
    memset(&info_01, 0xAA, sizeof info_01);
    ok = ok && made != NULL && (rill_context_device_info)(made, (rill_device_info*)(void*)&info_01) == RILL_OK;
    for (i = 0; i < 64; ++i) ok = ok && info_01.canary[i] == 0xAA;
    ok = ok && rill_context_device_info(made, &full) == RILL_OK;
    ok = ok && memcmp(&info_01, &full, sizeof info_01.bytes) == 0;
    ok = ok && rill_context_device_info_sized(made, &full, 16) == RILL_INVALID_ARGUMENT;
    ok = ok && rill_context_device_info(made, NULL) == RILL_INVALID_ARGUMENT; /* the macro takes NULL */
  }
  rill_context_destroy(made);
  /* The sized form fills what it is told, and the macro the whole current struct. */
  memset(&current, 0xAA, sizeof current);
  rill_context_options_init_sized(&current, (uint32_t)offsetof(rill_context_options, device_memory_budget));
  ok = ok && current.struct_size == offsetof(rill_context_options, device_memory_budget) && current.kernel_plan != NULL;
  rill_context_options_init(&current);
  ok = ok && current.struct_size == sizeof current && current.kernel_plan == NULL && current.device_memory_budget == 0;
  return ok;
}

int main(void) {
  rill_context_options options;
  rill_context* ctx = NULL;
  rill_device_info info;

  EXPECT(init_keeps_within_old_structs());
  rill_context_options_init(&options);
  /* Under Wine the loader inserts the layer itself (tests/gpu_test.hpp: validation_by_loader). */
  options.validation = getenv("RILL_TEST_VALIDATION_BY_LOADER") == NULL;
  EXPECT(rill_context_create(&options, &ctx) == RILL_OK);
  EXPECT(ctx != NULL);
  EXPECT(rill_context_device_info(ctx, &info) == RILL_OK);
  EXPECT(strlen(info.name) > 0);
  EXPECT(info.subgroup_size >= 1);
  /* A cooperative-matrix shape is all three sizes or none, and only with f16 storage. */
  EXPECT((info.cooperative_matrix_f16[0] == 0) == (info.cooperative_matrix_f16[2] == 0));
  EXPECT(info.cooperative_matrix_f16[0] == 0 || (info.storage_buffer_16bit && info.cooperative_matrix_f16[1] >= 8));
  printf("C API context on %s (subgroup %u)\n", info.name, info.subgroup_size);
  EXPECT(rill_context_usable(ctx) == RILL_OK);
  rill_context_destroy(ctx);
  EXPECT(rill_context_usable(ctx) == RILL_INVALID_ARGUMENT); /* destroyed */
  EXPECT(rill_context_usable(NULL) == RILL_INVALID_ARGUMENT);

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
  rill_context_options_init(&options);
  options.device_index = -5; /* -1 is "not set"; other negative values are mistakes */
  EXPECT(rill_context_create(&options, &ctx) == RILL_INVALID_ARGUMENT);
  EXPECT(strstr(rill_last_error(), "device_index") != NULL);
  rill_context_destroy(NULL);
  EXPECT(strcmp(rill_status_name(RILL_DEVICE_LOST), "DeviceLost") == 0);
  EXPECT(strlen(rill_version()) > 0);

  /* A limit profile clamps the device's limits; an unknown one is refused by name; options set up
     by a 0.1 build (no limit_profile field) still work. */
  {
    rill_context* small = NULL;
    rill_context_options_init(&options);
    options.limit_profile = "mali";
    EXPECT(rill_context_create(&options, &small) == RILL_OK);
    EXPECT(rill_context_device_info(small, &info) == RILL_OK);
    EXPECT(info.shared_memory_bytes <= 16384);
    rill_context_destroy(small);
    options.limit_profile = "nokia-3310";
    EXPECT(rill_context_create(&options, &small) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "nokia-3310") != NULL);
    options.struct_size = (uint32_t)offsetof(rill_context_options, limit_profile);
    EXPECT(rill_context_create(&options, &small) == RILL_OK); /* the field past the size is not read */
    rill_context_destroy(small);
  }

  /* A device memory budget: refused past it with a code and a message naming it; options of a
     build before the field do not read it. */
  {
    rill_context* bounded = NULL;
    rill_lm_model* model = NULL;
    rill_context_options_init(&options);
    options.device_memory_budget = 8u << 20;
    EXPECT(rill_context_create(&options, &bounded) == RILL_OK);
    EXPECT(rill_lm_model_random(bounded, "{\"width\": 512, \"heads\": 8, \"layers\": 4}", 1, NULL, &model) ==
           RILL_RESOURCE_EXHAUSTED);
    EXPECT(strstr(rill_last_error(), "budget") != NULL && model == NULL);
    EXPECT(rill_lm_model_random(bounded, "{\"width\": 16, \"heads\": 2, \"layers\": 1}", 1, NULL, &model) ==
           RILL_OK);
    rill_lm_model_destroy(model);
    rill_context_destroy(bounded);
    options.struct_size = (uint32_t)offsetof(rill_context_options, device_memory_budget);
    EXPECT(rill_context_create(&options, &bounded) == RILL_OK);
    rill_context_destroy(bounded);
  }

  /* Forced kernel-plan choices; a bad one is refused by name; earlier layouts do not read it. */
  {
    rill_context* planned = NULL;
    rill_context_options_init(&options);
    options.kernel_plan = "linear_attention=serial,la_tile=8";
    EXPECT(rill_context_create(&options, &planned) == RILL_OK);
    rill_context_destroy(planned);
    planned = NULL;
    options.kernel_plan = "la_tile=5";
    EXPECT(rill_context_create(&options, &planned) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "la_tile") != NULL && planned == NULL);
    options.struct_size = (uint32_t)offsetof(rill_context_options, kernel_plan);
    EXPECT(rill_context_create(&options, &planned) == RILL_OK);
    rill_context_destroy(planned);
  }

  /* A GPU wait timeout: read where the struct has it (a 0.2 layout before it still works), and
     its code has a name. */
  {
    rill_context* bounded = NULL;
    rill_context_options_init(&options);
    EXPECT(options.gpu_wait_timeout_ms == 0);
    options.gpu_wait_timeout_ms = (uint64_t)UINT32_MAX + 1;
    EXPECT(rill_context_create(&options, &bounded) == RILL_INVALID_ARGUMENT && bounded == NULL);
    EXPECT(strstr(rill_last_error(), "gpu_wait_timeout_ms") != NULL);
    options.gpu_wait_timeout_ms = 60000;
    EXPECT(rill_context_create(&options, &bounded) == RILL_OK);
    rill_context_destroy(bounded);
    bounded = NULL;
    options.struct_size = (uint32_t)offsetof(rill_context_options, gpu_wait_timeout_ms);
    EXPECT(rill_context_create(&options, &bounded) == RILL_OK);
    rill_context_destroy(bounded);
    EXPECT(strcmp(rill_status_name(RILL_DEADLINE_EXCEEDED), "DeadlineExceeded") == 0);
  }

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
    EXPECT(rill_icl_parameters(trainer, NULL, 0, &count) == RILL_OUT_OF_RANGE); /* the size query */
    EXPECT(rill_icl_parameters(trainer, NULL, 5, &count) == RILL_INVALID_ARGUMENT); /* room claimed, none given */
    EXPECT(count == 3 * 2 * 3 * 3); /* L * 2 * (d+1)^2 */
    EXPECT(rill_icl_evaluate(trainer, 50, 1, 0.5f, &eval) == RILL_OK && eval.tasks == 50);
    EXPECT(rill_icl_evaluate(trainer, 0, 1, 0.5f, &eval) == RILL_INVALID_ARGUMENT);
    { /* A shorter struct is filled no further than its size (a canary after the first field stays);
         one shorter than 0.1's is refused; 0.1's entry point fills the same as the macro. */
      struct {
        int32_t tasks;
        unsigned char canary[sizeof(rill_icl_eval)];
      } head;
      rill_icl_eval again;
      size_t k;
      memset(&head, 0xAA, sizeof head);
      EXPECT(rill_icl_evaluate_sized(trainer, 50, 1, 0.5f, (rill_icl_eval*)(void*)&head, 4) == RILL_INVALID_ARGUMENT);
      EXPECT(strstr(rill_last_error(), "smaller than 0.1") != NULL);
      for (k = 0; k < sizeof head.canary; ++k) EXPECT(head.canary[k] == 0xAA);
      EXPECT((rill_icl_evaluate)(trainer, 50, 1, 0.5f, &again) == RILL_OK);
      EXPECT(memcmp(&again, &eval, sizeof eval) == 0);
    }
    EXPECT(rill_icl_train(trainer, -1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_train(NULL, 1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    /* More steps than the step counter holds: refused up front, not trained for ever. */
    EXPECT(rill_icl_train(trainer, INT64_MAX, NULL, NULL) == RILL_OUT_OF_RANGE);
    EXPECT(strstr(rill_last_error(), "step counter") != NULL);
    EXPECT(rill_icl_evaluate(trainer, 50, 1, NAN, &eval) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "NaN") != NULL);
    /* A checkpoint continues bit for bit in a resumed trainer. */
    {
      static const char* const kCheckpoint = "rill-capi-icl-checkpoint.safetensors";
      rill_icl_trainer* resumed = NULL;
      float go_on[3], again[3];
      EXPECT(rill_icl_save_checkpoint(trainer, kCheckpoint) == RILL_OK);
      EXPECT(rill_icl_save_checkpoint(trainer, NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_icl_trainer_resume(ctx, kCheckpoint, &resumed) == RILL_OK);
      EXPECT(rill_icl_step(resumed, &step) == RILL_OK && step == 4);
      EXPECT(rill_icl_train(trainer, 3, go_on, NULL) == RILL_OK);
      EXPECT(rill_icl_train(resumed, 3, again, NULL) == RILL_OK);
      EXPECT(memcmp(go_on, again, sizeof go_on) == 0);
      rill_icl_trainer_destroy(resumed);
      remove(kCheckpoint);
    }
    rill_icl_trainer_destroy(trainer);
    rill_icl_trainer_destroy(NULL);

    /* A model diverging under the stop policy: FAILED_PRECONDITION naming the step, the records up
     * to and including the halting step (not counted by rill_icl_step), nothing written after. */
    {
      rill_icl_config diverging = config;
      rill_icl_trainer* halting = NULL;
      float halt_losses[6], halt_norms[6];
      int k;
      diverging.optimizer = RILL_ICL_SGD;
      diverging.lr = 1e6f;
      diverging.clip_norm = 0.0f;
      for (k = 0; k < 6; ++k) halt_losses[k] = halt_norms[k] = -1.0f;
      EXPECT(rill_icl_trainer_create(ctx, &diverging, &halting) == RILL_OK);
      EXPECT(rill_icl_train(halting, 6, halt_losses, halt_norms) == RILL_FAILED_PRECONDITION);
      EXPECT(strstr(rill_last_error(), "not finite") != NULL);
      EXPECT(rill_icl_step(halting, &step) == RILL_OK && step >= 1 && step < 5);
      if (step >= 1 && step < 5) {
        EXPECT(halt_losses[0] > 0.0f);
        EXPECT(!isfinite(halt_losses[step]) || !isfinite(halt_norms[step])); /* the halting step */
        EXPECT(halt_losses[step + 1] == -1.0f && halt_norms[step + 1] == -1.0f);
      }
      rill_icl_trainer_destroy(halting);
    }

    /* A trainer may outlive its context: it shares the device. */
    {
      rill_context* short_lived = NULL;
      rill_icl_trainer* survivor = NULL;
      EXPECT(rill_context_create(NULL, &short_lived) == RILL_OK);
      EXPECT(rill_icl_trainer_create(short_lived, &config, &survivor) == RILL_OK);
      rill_context_destroy(short_lived);
      EXPECT(rill_icl_train(survivor, 2, losses, NULL) == RILL_OK);
      EXPECT(losses[1] > 0.0f);
      rill_icl_trainer_destroy(survivor);
    }

    /* A grid of three models: each one's losses equal those of the same model trained alone; one
     * that diverges under the stop policy halts alone, with NaN after its last step. */
    {
      rill_icl_config grid_configs[3];
      rill_icl_grid* grid = NULL;
      float grid_losses[3 * 4];
      float alone_losses[4];
      rill_icl_trainer* alone = NULL;
      rill_icl_eval grid_eval;
      int i;
      for (i = 0; i < 3; ++i) {
        grid_configs[i] = config;
        grid_configs[i].seed = (uint64_t)(i + 5);
      }
      grid_configs[2].optimizer = RILL_ICL_SGD;
      grid_configs[2].lr = 1e6f;
      grid_configs[2].clip_norm = 0.0f;
      EXPECT(rill_icl_grid_create(ctx, grid_configs, 3, &grid) == RILL_OK);
      EXPECT(rill_icl_grid_train(grid, 4, grid_losses) == RILL_OK);
      EXPECT(rill_icl_trainer_create(ctx, &grid_configs[1], &alone) == RILL_OK);
      EXPECT(rill_icl_train(alone, 4, alone_losses, NULL) == RILL_OK);
      EXPECT(memcmp(alone_losses, grid_losses + 4, sizeof alone_losses) == 0);
      EXPECT(rill_icl_grid_model_status(grid, 1) == RILL_OK);
      EXPECT(rill_icl_grid_model_status(grid, 2) == RILL_FAILED_PRECONDITION);
      EXPECT(strstr(rill_last_error(), "not finite") != NULL);
      EXPECT(grid_losses[2 * 4 + 3] != grid_losses[2 * 4 + 3]); /* NaN: halted before step 3 */
      EXPECT(rill_icl_grid_model_status(grid, 3) == RILL_OUT_OF_RANGE);
      EXPECT(rill_icl_grid_evaluate(grid, 0, 40, 1, -1.0f, &grid_eval) == RILL_OK && grid_eval.tasks == 40);
      EXPECT(rill_icl_grid_evaluate(grid, 7, 40, 1, -1.0f, &grid_eval) == RILL_OUT_OF_RANGE);
      EXPECT(rill_icl_grid_save_checkpoint(grid, 0, NULL) == RILL_INVALID_ARGUMENT);
      /* A grid model's checkpoint continues alone as the grid trains it on. */
      {
        static const char* const kGridCheckpoint = "rill-capi-grid-checkpoint.safetensors";
        float grid_more[3 * 2], alone_more[2];
        EXPECT(rill_icl_grid_save_checkpoint(grid, 1, kGridCheckpoint) == RILL_OK);
        rill_icl_trainer_destroy(alone);
        alone = NULL;
        EXPECT(rill_icl_trainer_resume(ctx, kGridCheckpoint, &alone) == RILL_OK);
        EXPECT(rill_icl_grid_train(grid, 2, grid_more) == RILL_OK);
        EXPECT(rill_icl_train(alone, 2, alone_more, NULL) == RILL_OK);
        EXPECT(memcmp(alone_more, grid_more + 2, sizeof alone_more) == 0);
        remove(kGridCheckpoint);
      }
      EXPECT(rill_icl_grid_train(NULL, 1, NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_icl_grid_train(grid, INT64_MAX, NULL) == RILL_OUT_OF_RANGE);
      EXPECT(rill_icl_grid_evaluate(grid, 0, 40, 1, NAN, &grid_eval) == RILL_INVALID_ARGUMENT);
      rill_icl_trainer_destroy(alone);
      rill_icl_grid_destroy(grid);
      rill_icl_grid_destroy(NULL);
      grid = (rill_icl_grid*)&config;
      EXPECT(rill_icl_grid_create(ctx, grid_configs, 0, &grid) == RILL_INVALID_ARGUMENT && grid == NULL);
      /* An array of another struct size (a program built against another header) is not misread. */
      EXPECT(rill_icl_grid_create_sized(ctx, grid_configs, 3, (uint32_t)sizeof(rill_icl_config) + 8, &grid) ==
                 RILL_INVALID_ARGUMENT &&
             grid == NULL);
      EXPECT(strstr(rill_last_error(), "bytes") != NULL);
      grid_configs[1].d = 0;
      EXPECT(rill_icl_grid_create(ctx, grid_configs, 3, &grid) == RILL_INVALID_ARGUMENT && grid == NULL);
      EXPECT(strstr(rill_last_error(), "config 1") != NULL);
    }

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

  /* Language models: a tiny random model, prefill, decode, sample, and a saved state that
   * continues bit for bit; then bad input of every kind. */
  {
    static const char* const kTinyConfig =
        "{\"width\": 16, \"heads\": 2, \"layers\": 2, \"ffn_width\": 32, \"block\": 4, \"chunk\": 4}";
    static const char* const kStatePath = "rill-capi-lm-state.safetensors";
    const uint32_t prompt[5] = {'h', 'e', 'l', 'l', 'o'};
    float logits[256], paused[256], resumed[256], small[8];
    rill_lm_model* model = NULL;
    rill_lm_session* session = NULL;
    rill_lm_session* restored = NULL;
    rill_lm_info info_lm;
    rill_lm_model_options model_options;
    rill_lm_sampler_options sampler;
    uint64_t position = 0, state_bytes = 0;
    uint32_t dispatches = 1;
    uint32_t token = 0, greedy = 0;
    size_t i;
    int finite = 1;

    rill_lm_model_options_init(&model_options);
    EXPECT(model_options.precision == RILL_LM_F32 && model_options.prefill_segment == 0); /* the device chooses */
    rill_lm_sampler_options_init(&sampler);
    EXPECT(sampler.temperature == 1.0f && sampler.top_k == 0 && sampler.top_p == 1.0f);

    {
      /* A segment that is not whole blocks (block 4) is rounded down, and info says so. */
      rill_lm_model* rounded = NULL;
      model_options.prefill_segment = 11;
      EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &model_options, &rounded) == RILL_OK);
      EXPECT(rill_lm_model_info(rounded, &info_lm) == RILL_OK && info_lm.prefill_segment == 8);
      rill_lm_model_destroy(rounded);
    }
    model_options.prefill_segment = 8; /* several segments over a short prompt */
    EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &model_options, &model) == RILL_OK);
    EXPECT(model != NULL);
    EXPECT(rill_lm_model_info(model, &info_lm) == RILL_OK);
    EXPECT(info_lm.vocab == 256 && info_lm.width == 16 && info_lm.heads == 2 && info_lm.layers == 2);
    EXPECT(info_lm.ffn_width == 32 && info_lm.block == 4 && info_lm.chunk == 4 && info_lm.prefill_segment == 8);
    EXPECT(info_lm.precision == RILL_LM_F32 && info_lm.weight_bytes > 0);
    { /* 0.1's entry point fills 0.1's struct, the same bytes; a struct below it is refused. */
      rill_lm_info again;
      memset(&again, 0, sizeof again);
      EXPECT((rill_lm_model_info)(model, &again) == RILL_OK);
      EXPECT(memcmp(&again, &info_lm, sizeof info_lm) == 0);
      EXPECT(rill_lm_model_info_sized(model, &again, 8) == RILL_INVALID_ARGUMENT);
      EXPECT(strstr(rill_last_error(), "smaller than 0.1") != NULL);
    }
    {
      /* Int8 linear weights (and embedding): under half the f32 bytes; an unknown form is refused. */
      rill_lm_model* small_model = NULL;
      rill_lm_info info_int8;
      rill_lm_model_options int8_options = model_options;
      EXPECT(model_options.weights == RILL_LM_WEIGHTS_PRECISION && model_options.int8_group > 0);
      int8_options.weights = RILL_LM_WEIGHTS_INT8;
      EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &int8_options, &small_model) == RILL_OK);
      EXPECT(rill_lm_model_info(small_model, &info_int8) == RILL_OK);
      EXPECT(info_int8.weight_bytes * 2 < info_lm.weight_bytes);
      rill_lm_model_destroy(small_model);
      small_model = NULL;
      { /* int4: smaller again; its group is its own option */
        rill_lm_info info_int4;
        EXPECT(int8_options.int4_group > 0);
        int8_options.weights = RILL_LM_WEIGHTS_INT4;
        EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &int8_options, &small_model) == RILL_OK);
        EXPECT(rill_lm_model_info(small_model, &info_int4) == RILL_OK);
        EXPECT(info_int4.weight_bytes < info_int8.weight_bytes);
        rill_lm_model_destroy(small_model);
        small_model = NULL;
        int8_options.int4_group = 0;
        EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &int8_options, &small_model) == RILL_INVALID_ARGUMENT);
        EXPECT(strstr(rill_last_error(), "int4_group") != NULL && small_model == NULL);
        /* The engine's message, under the name of the call that failed. */
        EXPECT(strncmp(rill_last_error(), "rill_lm_model_random: ", 22) == 0);
      }
      { /* Prefill hooks: progress after each segment of 4; a stop before the third segment keeps
           the 8 positions done, and prefilling the rest gives an uninterrupted prefill's logits. */
        struct prefill_watch watch = {0, 0, 3, 0, 0};
        rill_lm_prefill_hooks hooks;
        rill_lm_session* hooked = NULL;
        rill_lm_session* whole = NULL;
        uint32_t long_prompt[14];
        uint64_t at = 0;
        size_t k;
        for (k = 0; k < 14; ++k) long_prompt[k] = (uint32_t)('a' + k);
        rill_lm_prefill_hooks_init(&hooks);
        hooks.progress = watch_progress;
        hooks.stop = watch_stop;
        hooks.user = &watch;
        int8_options.weights = RILL_LM_WEIGHTS_PRECISION;
        int8_options.prefill_segment = 4;
        EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &int8_options, &small_model) == RILL_OK);
        EXPECT(rill_lm_session_create(small_model, &hooked) == RILL_OK);
        { /* Hooks not set up by _init (a struct of another size): refused before anything runs. */
          rill_lm_prefill_hooks unsized = hooks;
          unsized.struct_size = 0;
          EXPECT(rill_lm_prefill_with_hooks(hooked, long_prompt, 14, logits, 256, &unsized) == RILL_INVALID_ARGUMENT);
          EXPECT(strstr(rill_last_error(), "rill_lm_prefill_hooks_init") != NULL);
          EXPECT(rill_lm_score(hooked, long_prompt, 1, NULL, 0, logits, 256, &unsized) == RILL_INVALID_ARGUMENT);
          EXPECT(rill_lm_position(hooked, &at) == RILL_OK && at == 0 && watch.progress_calls == 0);
        }
        EXPECT(rill_lm_prefill_with_hooks(hooked, long_prompt, 14, logits, 256, &hooks) == RILL_CANCELLED);
        EXPECT(strstr(rill_last_error(), "position 8") != NULL);
        EXPECT(strcmp(rill_status_name(RILL_CANCELLED), "Cancelled") == 0);
        EXPECT(rill_lm_position(hooked, &at) == RILL_OK && at == 8);
        EXPECT(watch.progress_calls == 2 && watch.last_done == 8 && watch.last_total == 14);
        EXPECT(rill_lm_prefill_with_hooks(hooked, long_prompt + 8, 6, paused, 256, NULL) == RILL_OK);
        EXPECT(rill_lm_session_create(small_model, &whole) == RILL_OK);
        EXPECT(rill_lm_prefill(whole, long_prompt, 14, resumed, 256) == RILL_OK);
        EXPECT(memcmp(paused, resumed, sizeof paused) == 0);
        watch.stop_at = 0; /* never stops: every segment reports */
        watch.progress_calls = 0;
        EXPECT(rill_lm_reset(hooked) == RILL_OK);
        EXPECT(rill_lm_prefill_with_hooks(hooked, long_prompt, 14, logits, 256, &hooks) == RILL_OK);
        EXPECT(watch.progress_calls == 4 && watch.last_done == 14);
        EXPECT(memcmp(logits, resumed, sizeof logits) == 0);
        rill_lm_session_destroy(hooked);
        rill_lm_session_destroy(whole);
        { /* A hook that edits the hooks struct during the call changes nothing under it. */
          rill_lm_prefill_hooks edited;
          struct clearing_hook clearing;
          rill_lm_session* edits = NULL;
          rill_lm_prefill_hooks_init(&edited);
          clearing.hooks = &edited;
          clearing.progress_calls = 0;
          edited.progress = clear_stop_progress;
          edited.stop = never_stop;
          edited.user = &clearing;
          EXPECT(rill_lm_session_create(small_model, &edits) == RILL_OK);
          EXPECT(rill_lm_prefill_with_hooks(edits, long_prompt, 14, logits, 256, &edited) == RILL_OK);
          EXPECT(clearing.progress_calls == 4 && edited.stop == NULL);
          EXPECT(memcmp(logits, resumed, sizeof logits) == 0);
          rill_lm_session_destroy(edits);
        }
        { /* A hook calling into its own session: refused, and the destroy it asks for waits. */
          struct reentrant_hook reenter = {NULL, RILL_OK, RILL_OK, RILL_OK, RILL_OK};
          rill_lm_prefill_hooks reentrant;
          rill_lm_prefill_hooks_init(&reentrant);
          reentrant.progress = reenter_progress;
          reentrant.stop = NULL;
          reentrant.user = &reenter;
          EXPECT(rill_lm_session_create(small_model, &reenter.session) == RILL_OK);
          EXPECT(rill_lm_prefill_with_hooks(reenter.session, long_prompt, 14, logits, 256, &reentrant) == RILL_OK);
          EXPECT(memcmp(logits, resumed, sizeof logits) == 0); /* the prefill ran undisturbed */
          EXPECT(reenter.decode == RILL_FAILED_PRECONDITION && reenter.position == RILL_FAILED_PRECONDITION);
          EXPECT(reenter.reset == RILL_FAILED_PRECONDITION && reenter.prefill == RILL_FAILED_PRECONDITION);
          EXPECT(rill_lm_position(reenter.session, &at) == RILL_INVALID_ARGUMENT); /* destroyed on return */
        }
        rill_lm_model_destroy(small_model);
        small_model = NULL;
        int8_options.prefill_segment = 0;
      }
      int8_options.weights = 9;
      EXPECT(rill_lm_model_random(ctx, kTinyConfig, 7, &int8_options, &small_model) == RILL_INVALID_ARGUMENT);
      EXPECT(strstr(rill_last_error(), "weights") != NULL && small_model == NULL);
    }

    EXPECT(rill_lm_session_create(model, &session) == RILL_OK);
    EXPECT(rill_lm_prefill(session, prompt, 5, logits, 256) == RILL_OK);
    for (i = 0; i < 256; ++i) finite = finite && logits[i] == logits[i] && logits[i] - logits[i] == 0.0f;
    EXPECT(finite);
    EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 5);
    EXPECT(rill_lm_state_bytes(session, &state_bytes) == RILL_OK && state_bytes > 0);
    { /* The prefill's activations are the session's until released. */
      uint64_t held = 0, released = 0;
      EXPECT(rill_lm_device_bytes(session, &held) == RILL_OK && held > state_bytes);
      EXPECT(rill_lm_release_prefill_memory(session) == RILL_OK);
      EXPECT(rill_lm_device_bytes(session, &released) == RILL_OK && released == state_bytes);
      EXPECT(rill_lm_release_prefill_memory(NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_lm_device_bytes(NULL, &held) == RILL_INVALID_ARGUMENT);
      {
        uint32_t segment = 0;
        EXPECT(rill_lm_prefill_segment(session, &segment) == RILL_OK && segment >= 4 && segment % 4 == 0);
        EXPECT(rill_lm_prefill_segment(session, NULL) == RILL_INVALID_ARGUMENT);
      }
    }
    EXPECT(rill_lm_decode_dispatches(session, &dispatches) == RILL_OK && dispatches == 0); /* no decode yet */

    sampler.temperature = 0.0f;
    EXPECT(rill_lm_sample(logits, 256, &sampler, position, &greedy) == RILL_OK);
    for (i = 0; i < 256; ++i) EXPECT(logits[i] <= logits[greedy]);
    sampler.temperature = 0.8f;
    sampler.top_p = 0.9f;
    sampler.seed = 3;
    EXPECT(rill_lm_sample(logits, 256, &sampler, position, &token) == RILL_OK && token < 256);
    EXPECT(rill_lm_sample(logits, 256, NULL, position, &token) == RILL_OK && token < 256);

    /* Pause: save, decode on; resume in a fresh session from the file, decode the same token. */
    EXPECT(rill_lm_save_state(session, kStatePath) == RILL_OK);
    EXPECT(rill_lm_decode(session, greedy, paused, 256) == RILL_OK);
    EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 6);
    EXPECT(rill_lm_session_create(model, &restored) == RILL_OK);
    EXPECT(rill_lm_restore_state(restored, kStatePath) == RILL_OK);
    EXPECT(rill_lm_position(restored, &position) == RILL_OK && position == 5);
    { /* It holds the logits it was saved after: its next draw needs no prompt. */
      size_t count = 0;
      EXPECT(rill_lm_last_logits(restored, resumed, 256, &count) == RILL_OK && count == 256);
      EXPECT(memcmp(logits, resumed, sizeof resumed) == 0);
      EXPECT(rill_lm_last_logits(restored, resumed, 10, &count) == RILL_OUT_OF_RANGE);
      EXPECT(rill_lm_last_logits(restored, NULL, 0, NULL) == RILL_INVALID_ARGUMENT);
    }
    EXPECT(rill_lm_decode(restored, greedy, resumed, 256) == RILL_OK);
    EXPECT(memcmp(paused, resumed, sizeof paused) == 0);
    rill_lm_session_destroy(restored);
    restored = NULL;
    /* The same session restored in place continues the same way too. */
    EXPECT(rill_lm_restore_state(session, kStatePath) == RILL_OK);
    EXPECT(rill_lm_decode(session, greedy, resumed, 256) == RILL_OK);
    EXPECT(memcmp(paused, resumed, sizeof paused) == 0);
    EXPECT(rill_lm_decode(session, greedy, NULL, 0) == RILL_OK); /* logits not wanted */
    EXPECT(rill_lm_decode_dispatches(session, &dispatches) == RILL_OK && dispatches > 0);
    EXPECT(rill_lm_decode_dispatches(NULL, &dispatches) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_reset(session) == RILL_OK);
    EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 0);
    {
      size_t count = 1;
      EXPECT(rill_lm_last_logits(session, NULL, 0, &count) == RILL_OK && count == 0);
    }

    { /* Scoring: each token after the first, as the decoding steps' logits before it give it. */
      float scores[4], step_logits[256];
      double lp = 0.0;
      EXPECT(rill_lm_score(session, prompt, 5, scores, 4, logits, 256, NULL) == RILL_OK);
      EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 5);
      EXPECT(rill_lm_reset(session) == RILL_OK);
      for (i = 0; i < 4; ++i) {
        EXPECT(rill_lm_decode(session, prompt[i], step_logits, 256) == RILL_OK);
        EXPECT(rill_lm_log_prob(step_logits, 256, prompt[i + 1], &lp) == RILL_OK);
        EXPECT(lp < 0.0 && fabs(lp - scores[i]) < 1e-3);
      }
      EXPECT(rill_lm_reset(session) == RILL_OK);
      EXPECT(rill_lm_score(session, prompt, 5, scores, 3, NULL, 0, NULL) == RILL_OUT_OF_RANGE);
      EXPECT(strstr(rill_last_error(), "rill_lm_score: log_probs_out needs room for 4") != NULL);
      EXPECT(rill_lm_score(session, prompt, 5, NULL, 0, NULL, 0, NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_lm_score(NULL, prompt, 5, scores, 4, NULL, 0, NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 0);
      EXPECT(rill_lm_score(session, prompt, 1, NULL, 0, NULL, 0, NULL) == RILL_OK); /* nothing to score */
      EXPECT(rill_lm_log_prob(step_logits, 256, 256, &lp) == RILL_INVALID_ARGUMENT);
      EXPECT(rill_lm_log_prob(NULL, 256, 0, &lp) == RILL_INVALID_ARGUMENT);
      { /* A fork continues exactly as the session it copied. */
        rill_lm_session* fork = NULL;
        float forked[256];
        EXPECT(rill_lm_session_fork(session, &fork) == RILL_OK && fork != NULL);
        EXPECT(rill_lm_position(fork, &position) == RILL_OK && position == 1);
        EXPECT(rill_lm_decode(fork, prompt[1], forked, 256) == RILL_OK);
        EXPECT(rill_lm_decode(session, prompt[1], step_logits, 256) == RILL_OK);
        EXPECT(memcmp(forked, step_logits, sizeof forked) == 0);
        rill_lm_session_destroy(fork);
        EXPECT(rill_lm_session_fork(NULL, &fork) == RILL_INVALID_ARGUMENT && fork == NULL);
        EXPECT(rill_lm_session_fork(session, NULL) == RILL_INVALID_ARGUMENT);
      }
      EXPECT(rill_lm_prefill_with_hooks(NULL, prompt, 5, NULL, 0, NULL) == RILL_INVALID_ARGUMENT);
      EXPECT(strstr(rill_last_error(), "rill_lm_prefill_with_hooks") != NULL);
      EXPECT(rill_lm_reset(session) == RILL_OK);
    }

    /* Errors: a code and a message; a rejected call leaves the session where it was. */
    EXPECT(rill_lm_prefill(session, prompt, 5, small, 8) == RILL_OUT_OF_RANGE);
    EXPECT(strstr(rill_last_error(), "256") != NULL);
    EXPECT(rill_lm_decode(session, 256, logits, 256) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "vocabulary") != NULL);
    EXPECT(rill_lm_prefill(session, prompt, 0, logits, 256) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_position(session, &position) == RILL_OK && position == 0);
    EXPECT(rill_lm_prefill(NULL, prompt, 5, logits, 256) == RILL_INVALID_ARGUMENT);
    EXPECT(strlen(rill_last_error()) > 0);
    EXPECT(rill_lm_prefill(session, NULL, 5, logits, 256) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_decode(NULL, 1, logits, 256) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_position(NULL, &position) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_position(session, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_state_bytes(NULL, &state_bytes) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_reset(NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_save_state(NULL, kStatePath) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_save_state(session, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_restore_state(session, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_restore_state(session, "/nonexistent/state.safetensors") != RILL_OK);
    EXPECT(strlen(rill_last_error()) > 0);
    EXPECT(rill_lm_model_info(NULL, &info_lm) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_model_info(model, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_sample(NULL, 256, NULL, 0, &token) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_sample(logits, 0, NULL, 0, &token) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_sample(logits, 256, NULL, 0, NULL) == RILL_INVALID_ARGUMENT);
    sampler.top_p = 0.0f;
    EXPECT(rill_lm_sample(logits, 256, &sampler, 0, &token) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "top_p") != NULL);
    sampler.top_p = 1.0f;
    sampler.temperature = -1.0f;
    EXPECT(rill_lm_sample(logits, 256, &sampler, 0, &token) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "temperature") != NULL);
    sampler.struct_size = 1;
    EXPECT(rill_lm_sample(logits, 256, &sampler, 0, &token) == RILL_INVALID_ARGUMENT);
    {
      /* Every logit NaN: no token to choose, refused rather than a made-up token 0. */
      float nans[3];
      for (i = 0; i < 3; ++i) nans[i] = NAN;
      EXPECT(rill_lm_sample(nans, 3, NULL, 0, &token) == RILL_INVALID_ARGUMENT);
      EXPECT(strstr(rill_last_error(), "NaN") != NULL);
      nans[2] = -1.0f;
      EXPECT(rill_lm_sample(nans, 3, NULL, 0, &token) == RILL_OK && token == 2);
    }
    EXPECT(rill_lm_session_create(NULL, &restored) == RILL_INVALID_ARGUMENT);
    EXPECT(restored == NULL);
    EXPECT(rill_lm_session_create(model, NULL) == RILL_INVALID_ARGUMENT);

    /* Sessions keep their model alive: destroy the model first. */
    EXPECT(rill_lm_session_create(model, &restored) == RILL_OK);
    rill_lm_model_destroy(model);
    EXPECT(rill_lm_prefill(restored, prompt, 5, logits, 256) == RILL_OK);
    rill_lm_session_destroy(restored);
    rill_lm_session_destroy(session);
    rill_lm_session_destroy(NULL);
    rill_lm_model_destroy(NULL);

    /* Model creation: bad configs, options and files. */
    model = (rill_lm_model*)&info_lm; /* must be reset to NULL on failure */
    EXPECT(rill_lm_model_random(ctx, "{\"width\": 15, \"heads\": 2}", 1, NULL, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(model == NULL);
    EXPECT(strlen(rill_last_error()) > 0);
    EXPECT(rill_lm_model_random(ctx, "{\"widht\": 16}", 1, NULL, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "widht") != NULL);
    EXPECT(rill_lm_model_random(ctx, "not json", 1, NULL, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_model_random(NULL, kTinyConfig, 1, NULL, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_model_random(ctx, kTinyConfig, 1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    model_options.precision = 7;
    EXPECT(rill_lm_model_random(ctx, kTinyConfig, 1, &model_options, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "precision") != NULL);
    model_options.precision = RILL_LM_F32;
    model_options.struct_size = 2;
    EXPECT(rill_lm_model_random(ctx, kTinyConfig, 1, &model_options, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_model_load(ctx, "/nonexistent/model.json", "/nonexistent/model.safetensors", NULL, &model) !=
           RILL_OK);
    EXPECT(model == NULL);
    EXPECT(strstr(rill_last_error(), "model.json") != NULL);
    EXPECT(rill_lm_model_load(ctx, NULL, "/nonexistent/model.safetensors", NULL, &model) == RILL_INVALID_ARGUMENT);
    remove(kStatePath);
  }

  /* A handle used after its destroy, destroyed twice or passed as another kind: refused with a
     message, never a use after free. */
  {
    rill_icl_config config;
    rill_icl_trainer* trainer = NULL;
    rill_lm_model* model = NULL;
    rill_lm_info info_lm;
    uint32_t vocab = 0;
    int64_t step = 0;
    rill_tokenizer* tokenizer = NULL;
    EXPECT(rill_tokenizer_load(NULL, &tokenizer) == RILL_OK);
    rill_tokenizer_destroy(tokenizer);
    EXPECT(rill_tokenizer_info(tokenizer, &vocab, NULL, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(strstr(rill_last_error(), "destroyed") != NULL);
    rill_tokenizer_destroy(tokenizer); /* a second destroy does nothing */
    rill_icl_config_init(&config, 1);
    config.d = 2;
    config.n = 3;
    config.batch = 4;
    EXPECT(rill_icl_trainer_create(ctx, &config, &trainer) == RILL_OK);
    rill_icl_trainer_destroy(trainer);
    EXPECT(rill_icl_step(trainer, &step) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_icl_train(trainer, 1, NULL, NULL) == RILL_INVALID_ARGUMENT);
    EXPECT(rill_lm_model_info((rill_lm_model*)ctx, &info_lm) == RILL_INVALID_ARGUMENT); /* a context, not a model */
    EXPECT(rill_lm_model_random((rill_context*)&config, "{}", 1, NULL, &model) == RILL_INVALID_ARGUMENT);
    EXPECT(model == NULL);
  }
  rill_context_destroy(ctx);
  rill_context_destroy(ctx); /* a second destroy does nothing */
  EXPECT(rill_context_device_info(ctx, &info) == RILL_INVALID_ARGUMENT);

  printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1);
  return failures == 0 ? 0 : 1;
}
