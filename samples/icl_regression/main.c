/* icl_regression: an app trains a small in-context-learning regressor on whatever GPU it has,
 * through rill's C API: Ahn et al.'s setting 1 (d = 5, n = 20, three layers), Adam, then an
 * evaluation against least squares on fresh tasks and a checkpoint it could resume from.
 *
 *   icl_regression [steps] [checkpoint-path]
 */
#include <rill/rill.h>
#include <stdio.h>
#include <stdlib.h>

static int check(rill_status s, const char* what) {
  if (s == RILL_OK) return 0;
  fprintf(stderr, "icl_regression: %s failed: %s: %s\n", what, rill_status_name(s), rill_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? atoll(argv[1]) : 300;
  const char* checkpoint = argc > 2 ? argv[2] : "icl_regression.safetensors";
  if (steps < 1 || steps > 1000000) {
    fprintf(stderr, "usage: icl_regression [steps in 1..1000000] [checkpoint-path]\n");
    return 2;
  }

  rill_context* ctx = NULL;
  if (check(rill_context_create(NULL, &ctx), "rill_context_create")) return 1;
  rill_device_info info;
  if (check(rill_context_device_info(ctx, &info), "rill_context_device_info")) {
    rill_context_destroy(ctx);
    return 1;
  }
  printf("device: %s\n", info.name);

  rill_icl_config config;
  rill_icl_config_init(&config, 1);
  config.batch = 500;
  rill_icl_trainer* trainer = NULL;
  int failed = check(rill_icl_trainer_create(ctx, &config, &trainer), "rill_icl_trainer_create");

  float* losses = malloc((size_t)steps * sizeof(float));
  if (!failed && losses == NULL) failed = 1;
  if (!failed) failed = check(rill_icl_train(trainer, steps, losses, NULL), "rill_icl_train");
  if (!failed) {
    for (int64_t s = 0; s < steps; s += steps / 6 > 0 ? steps / 6 : 1) printf("step %5lld  loss %.5f\n", (long long)s, losses[s]);
    printf("step %5lld  loss %.5f\n", (long long)(steps - 1), losses[steps - 1]);
  }
  rill_icl_eval eval;
  if (!failed) failed = check(rill_icl_evaluate(trainer, 1000, 42, -1.0f, &eval), "rill_icl_evaluate");
  if (!failed) {
    printf("evaluation on %d fresh tasks: model %.5f, least squares %.3g, untrained guess (E y^2) %.0f\n", eval.tasks,
           eval.model, eval.least_squares, (double)config.d);
    failed = check(rill_icl_save_checkpoint(trainer, checkpoint), "rill_icl_save_checkpoint");
  }
  if (!failed) printf("checkpoint: %s\n", checkpoint);

  free(losses);
  rill_icl_trainer_destroy(trainer);
  rill_context_destroy(ctx);
  return failed;
}
