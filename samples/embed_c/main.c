/* embed_c: an application embeds a language model through rill's C API: it makes a model (a tiny
 * random one, or a config and weights from disk), feeds a prompt (its bytes are the tokens), then
 * samples and decodes one token at a time, printing the text as it goes.
 *
 *   embed_c [--config model.json --weights model.safetensors] [--tokens N] [--temperature T]
 *           [--top-k K] [--top-p P] [--seed S] [prompt]
 *
 * The random model's text is noise; the point is the calls, each of whose status is checked. */
#include <rill/rill.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A byte-level model of the smallest useful shape: runs in a blink even on a CPU device. */
static const char* const kTinyConfig =
    "{\"width\": 32, \"heads\": 4, \"layers\": 2, \"ffn_width\": 64, \"block\": 8, \"chunk\": 8}";

static int check(rill_status s, const char* what) {
  if (s == RILL_OK) return 0;
  fprintf(stderr, "embed_c: %s failed: %s: %s\n", what, rill_status_name(s), rill_last_error());
  return 1;
}

/* Printable ASCII as is (and newlines), everything else as \xNN; tokens past a byte as <N>. */
static void print_token(uint32_t token) {
  if (token > 255)
    printf("<%u>", token);
  else if (token == '\\')
    printf("\\\\");
  else if (token == '\n' || (token >= 0x20 && token < 0x7f))
    putchar((int)token);
  else
    printf("\\x%02X", token);
  fflush(stdout);
}

static int usage(void) {
  fprintf(stderr,
          "usage: embed_c [--config model.json --weights model.safetensors] [--tokens N] [--temperature T]\n"
          "               [--top-k K] [--top-p P] [--seed S] [prompt]\n");
  return 2;
}

int main(int argc, char** argv) {
  const char* config_path = NULL;
  const char* weights_path = NULL;
  const char* prompt = "The quick brown fox";
  long tokens = 32;
  rill_lm_sampler_options sampler;
  rill_lm_sampler_options_init(&sampler);
  sampler.temperature = 0.8f;
  sampler.top_p = 0.9f;
  sampler.seed = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strncmp(arg, "--", 2) != 0) {
      prompt = arg;
      continue;
    }
    if (value == NULL) return usage();
    ++i;
    if (strcmp(arg, "--config") == 0)
      config_path = value;
    else if (strcmp(arg, "--weights") == 0)
      weights_path = value;
    else if (strcmp(arg, "--tokens") == 0)
      tokens = atol(value);
    else if (strcmp(arg, "--temperature") == 0)
      sampler.temperature = (float)atof(value);
    else if (strcmp(arg, "--top-k") == 0)
      sampler.top_k = (uint32_t)strtoul(value, NULL, 10);
    else if (strcmp(arg, "--top-p") == 0)
      sampler.top_p = (float)atof(value);
    else if (strcmp(arg, "--seed") == 0)
      sampler.seed = strtoull(value, NULL, 10);
    else
      return usage();
  }
  if (tokens < 0 || tokens > 1000000 || (config_path == NULL) != (weights_path == NULL) || prompt[0] == '\0')
    return usage();

  {
    /* The sampler options are checked by any draw: one from a single logit checks them up front. */
    const float one_logit = 0.0f;
    uint32_t token = 0;
    if (check(rill_lm_sample(&one_logit, 1, &sampler, 0, &token), "checking the sampler options")) return 2;
  }

  rill_context* ctx = NULL;
  if (check(rill_context_create(NULL, &ctx), "rill_context_create")) return 1;
  rill_device_info device;
  int failed = check(rill_context_device_info(ctx, &device), "rill_context_device_info");
  if (!failed) printf("device: %s\n", device.name);

  rill_lm_model* model = NULL;
  if (!failed && config_path != NULL)
    failed = check(rill_lm_model_load(ctx, config_path, weights_path, NULL, &model), "rill_lm_model_load");
  else if (!failed)
    failed = check(rill_lm_model_random(ctx, kTinyConfig, 1, NULL, &model), "rill_lm_model_random");
  rill_lm_info info;
  memset(&info, 0, sizeof info);
  if (!failed) failed = check(rill_lm_model_info(model, &info), "rill_lm_model_info");
  if (!failed)
    printf("model: vocab %u, width %u, heads %u, layers %u, %llu weight bytes%s\n", info.vocab, info.width, info.heads,
           info.layers, (unsigned long long)info.weight_bytes, config_path ? "" : " (random)");

  rill_lm_session* session = NULL;
  if (!failed) failed = check(rill_lm_session_create(model, &session), "rill_lm_session_create");

  /* The prompt's bytes are its tokens. */
  const size_t prompt_length = strlen(prompt);
  uint32_t* prompt_tokens = malloc(prompt_length * sizeof(uint32_t));
  float* logits = failed ? NULL : malloc(info.vocab * sizeof(float));
  if (!failed && (prompt_tokens == NULL || logits == NULL)) {
    fprintf(stderr, "embed_c: out of memory\n");
    failed = 1;
  }
  uint64_t position = 0;
  if (!failed) {
    for (size_t i = 0; i < prompt_length; ++i) prompt_tokens[i] = (unsigned char)prompt[i];
    failed = check(rill_lm_prefill(session, prompt_tokens, prompt_length, logits, info.vocab), "rill_lm_prefill");
  }
  if (!failed) failed = check(rill_lm_position(session, &position), "rill_lm_position");
  if (!failed) printf("prompt: %zu tokens, position %llu\n", prompt_length, (unsigned long long)position);

  /* Sample from the last logits, feed the token back, repeat. The draw is keyed by the position,
   * so a session restored from a saved state would continue with the same tokens. */
  long generated = 0;
  if (!failed) printf("text: ");
  for (; !failed && generated < tokens; ++generated) {
    uint32_t token = 0;
    failed = check(rill_lm_position(session, &position), "rill_lm_position") ||
             check(rill_lm_sample(logits, info.vocab, &sampler, position, &token), "rill_lm_sample") ||
             check(rill_lm_decode(session, token, logits, info.vocab), "rill_lm_decode");
    if (!failed) print_token(token);
  }
  if (!failed) failed = check(rill_lm_position(session, &position), "rill_lm_position");
  if (!failed) printf("\ngenerated %ld tokens, position %llu\n", generated, (unsigned long long)position);

  free(logits);
  free(prompt_tokens);
  rill_lm_session_destroy(session);
  rill_lm_model_destroy(model);
  rill_context_destroy(ctx);
  return failed;
}
