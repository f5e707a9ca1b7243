/* icl_regression: an app trains a small in-context-learning regressor on whatever GPU it has,
 * through rill's C API: Ahn et al.'s setting 1 (d = 5, n = 20, three layers), Adam, then an
 * evaluation against least squares on fresh tasks and a checkpoint it could resume from.
 *
 *   icl_regression [steps] [checkpoint-path]
 */
#include <errno.h>
#include <rill/rill.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int check(rill_status s, const char* what) {
  if (s == RILL_OK) return 0;
  fprintf(stderr, "icl_regression: %s failed: %s: %s\n", what, rill_status_name(s), rill_last_error());
  return 1;
}

int main(int argc, char** argv) {
  int64_t steps = 300;
  if (argc > 1) { /* the whole argument a number ("3x" is not 3) */
    char* end = NULL;
    errno = 0;
    const long long v = strtoll(argv[1], &end, 10);
    steps = errno == 0 && end != argv[1] && *end == '\0' ? (int64_t)v : -1;
  }
  const char* checkpoint = argc > 2 ? argv[2] : "icl_regression.safetensors";
  if (argc > 3 || steps < 1 || steps > 1000000) {
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

  /* A checkpoint path that cannot be written fails now, not after the training: something other
   * than a file there (a folder; stat, since opening a FIFO would wait), or no file can be made
   * beside it (the checkpoint itself is written atomically at the end; an earlier one stays until
   * then). The probe file takes a name nothing has yet: nothing of the user's is truncated or
   * removed. */
  if (!failed) {
    struct stat st;
    if (stat(checkpoint, &st) == 0 && !S_ISREG(st.st_mode)) {
      fprintf(stderr, "icl_regression: the checkpoint path '%s' is %s\n", checkpoint,
              S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
      failed = 1;
    }
  }
  if (!failed) {
    char probe[4096];
    int writable = 0, named = 1;
    for (int k = 0; k < 100 && named && !writable; ++k) {
      struct stat st;
      FILE* f = NULL;
      named = snprintf(probe, sizeof probe, "%s.%d.probe", checkpoint, k) < (int)sizeof probe;
      if (!named) break;
      if (stat(probe, &st) == 0 || errno != ENOENT) continue; /* taken (or unknown): the next name */
      if ((f = fopen(probe, "wb")) == NULL) break;
      fclose(f);
      remove(probe);
      writable = 1;
    }
    if (!writable) {
      fprintf(stderr, "icl_regression: cannot write beside the checkpoint path '%s'%s\n", checkpoint,
              named ? "" : " (the path is too long)");
      failed = 1;
    }
  }
  float* losses = malloc((size_t)steps * sizeof(float));
  if (!failed && losses == NULL) {
    fprintf(stderr, "icl_regression: no memory for %lld losses\n", (long long)steps);
    failed = 1;
  }
  if (!failed) failed = check(rill_icl_train(trainer, steps, losses, NULL), "rill_icl_train");
  if (!failed) {
    const int64_t stride = steps / 6 > 0 ? steps / 6 : 1;
    for (int64_t s = 0; s < steps; s += stride) printf("step %5lld  loss %.5f\n", (long long)s, losses[s]);
    if ((steps - 1) % stride != 0) printf("step %5lld  loss %.5f\n", (long long)(steps - 1), losses[steps - 1]);
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
