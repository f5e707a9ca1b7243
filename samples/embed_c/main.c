/* embed_c: an application embeds a language model through rill's C API: it makes a model (a tiny
 * random one, or a config and weights from disk), encodes and feeds a prompt, then samples and
 * decodes one token at a time, printing the text as it goes (a text stream turns tokens into whole
 * characters). Tokens are bytes unless --tokenizer names a SentencePiece tokenizer.model.
 *
 *   embed_c [--config model.json --weights model.safetensors [--tokenizer tokenizer.model]]
 *           [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [prompt]
 *
 * The random model's text is noise; the point is the calls, each of whose status is checked. */
#include <errno.h>
#include <limits.h>
#include <math.h>
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

/* Text as is where it is printable (and newlines), other bytes as \xNN. A byte model's text is any
 * bytes at all, so there every byte past ASCII is escaped; a tokenizer's text is UTF-8 (the stream
 * gives whole characters), printed as it is. */
static void print_text(const char* text, size_t length, int utf8) {
  for (size_t i = 0; i < length; ++i) {
    const unsigned char c = (unsigned char)text[i];
    if (c == '\\')
      printf("\\\\");
    else if (c == '\n' || (c >= 0x20 && c < 0x7f) || (utf8 && c >= 0x80))
      putchar((int)c);
    else
      printf("\\x%02X", c);
  }
  fflush(stdout);
}

/* What the stream has made of the tokens pushed so far: read it (its size first), print it. */
static int print_stream(rill_text_stream* stream, int utf8) {
  size_t length = 0;
  rill_status s = rill_text_stream_read(stream, NULL, 0, &length);
  if (s == RILL_OK) return 0; /* nothing new */
  if (s != RILL_OUT_OF_RANGE) return check(s, "rill_text_stream_read");
  char* text = malloc(length);
  if (text == NULL) return check(RILL_RESOURCE_EXHAUSTED, "allocating the text");
  const int failed = check(rill_text_stream_read(stream, text, length, &length), "rill_text_stream_read");
  if (!failed) print_text(text, length, utf8);
  free(text);
  return failed;
}

/* Whole-string numbers in [low, high] (atol and atof read "5x" as 5 and "abc" as 0). */
static int parse_integer(const char* text, unsigned long long low, unsigned long long high, unsigned long long* out) {
  char* end = NULL;
  errno = 0;
  if (text[0] == '-' || text[0] == '\0') return 0;
  const unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < low || v > high) return 0;
  *out = v;
  return 1;
}
static int parse_real(const char* text, float* out) {
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (text[0] == '\0' || errno != 0 || *end != '\0' || !isfinite(v)) return 0;
  *out = (float)v;
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: embed_c [--config model.json --weights model.safetensors [--tokenizer tokenizer.model]]\n"
          "               [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [prompt]\n");
  return 2;
}

int main(int argc, char** argv) {
  const char* config_path = NULL;
  const char* weights_path = NULL;
  const char* tokenizer_path = NULL; /* NULL: bytes */
  const char* prompt = "The quick brown fox";
  int prompt_given = 0;
  unsigned long long tokens = 32, number = 0;
  rill_lm_sampler_options sampler;
  rill_lm_sampler_options_init(&sampler);
  sampler.temperature = 0.8f;
  sampler.top_p = 0.9f;
  sampler.seed = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strncmp(arg, "--", 2) != 0) {
      if (prompt_given) return usage(); /* one prompt: quote it */
      prompt = arg;
      prompt_given = 1;
      continue;
    }
    if (value == NULL) return usage();
    ++i;
    if (strcmp(arg, "--config") == 0)
      config_path = value;
    else if (strcmp(arg, "--weights") == 0)
      weights_path = value;
    else if (strcmp(arg, "--tokenizer") == 0)
      tokenizer_path = value;
    else if (strcmp(arg, "--tokens") == 0) {
      if (!parse_integer(value, 0, 1000000, &tokens)) return usage();
    } else if (strcmp(arg, "--temperature") == 0) {
      if (!parse_real(value, &sampler.temperature)) return usage();
    } else if (strcmp(arg, "--top-k") == 0) {
      if (!parse_integer(value, 0, UINT32_MAX, &number)) return usage();
      sampler.top_k = (uint32_t)number;
    } else if (strcmp(arg, "--top-p") == 0) {
      if (!parse_real(value, &sampler.top_p)) return usage();
    } else if (strcmp(arg, "--seed") == 0) {
      if (!parse_integer(value, 0, ULLONG_MAX, &number)) return usage();
      sampler.seed = number;
    } else {
      return usage();
    }
  }
  if ((config_path == NULL) != (weights_path == NULL) || prompt[0] == '\0' ||
      (tokenizer_path != NULL && config_path == NULL))
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
  rill_tokenizer* tokenizer = NULL;
  rill_text_stream* stream = NULL;
  if (!failed) failed = check(rill_tokenizer_load(tokenizer_path, &tokenizer), "rill_tokenizer_load");
  if (!failed) failed = check(rill_text_stream_create(tokenizer, &stream), "rill_text_stream_create");
  /* A model's vocabulary may be padded past its tokenizer's: only the tokenizer's tokens are text,
   * so only they are drawn. The end-of-sequence token ends the text. */
  uint32_t tokenizer_vocab = 0;
  int64_t bos = -1, eos = -1;
  if (!failed) failed = check(rill_tokenizer_info(tokenizer, &tokenizer_vocab, &bos, &eos), "rill_tokenizer_info");
  const uint32_t drawable = tokenizer_vocab < info.vocab ? tokenizer_vocab : info.vocab;

  /* The prompt's tokens: their count first, then the tokens. */
  size_t prompt_length = 0;
  uint32_t* prompt_tokens = NULL;
  if (!failed) {
    const rill_status s = rill_tokenizer_encode(tokenizer, prompt, strlen(prompt), 1, NULL, 0, &prompt_length);
    failed = s != RILL_OUT_OF_RANGE && check(s, "rill_tokenizer_encode");
  }
  if (!failed && prompt_length == 0) {
    fprintf(stderr, "embed_c: the prompt encodes to no tokens\n");
    failed = 1;
  }
  if (!failed) prompt_tokens = malloc(prompt_length * sizeof(uint32_t));
  float* logits = failed ? NULL : malloc(info.vocab * sizeof(float));
  if (!failed && (prompt_tokens == NULL || logits == NULL)) {
    fprintf(stderr, "embed_c: out of memory\n");
    failed = 1;
  }
  if (!failed)
    failed = check(rill_tokenizer_encode(tokenizer, prompt, strlen(prompt), 1, prompt_tokens, prompt_length,
                                         &prompt_length),
                   "rill_tokenizer_encode");
  uint64_t position = 0;
  if (!failed)
    failed = check(rill_lm_prefill(session, prompt_tokens, prompt_length, logits, info.vocab), "rill_lm_prefill");
  if (!failed) failed = check(rill_lm_position(session, &position), "rill_lm_position");
  if (!failed) printf("prompt: %zu tokens, position %llu\n", prompt_length, (unsigned long long)position);

  /* Sample from the last logits, feed the token back, repeat. The draw is keyed by the position,
   * so a session restored from a saved state would continue with the same tokens. */
  unsigned long long generated = 0;
  if (!failed) printf("text: ");
  for (; !failed && generated < tokens; ++generated) {
    uint32_t token = 0;
    failed = check(rill_lm_position(session, &position), "rill_lm_position") ||
             check(rill_lm_sample(logits, drawable, &sampler, position, &token), "rill_lm_sample") ||
             check(rill_lm_decode(session, token, logits, info.vocab), "rill_lm_decode") ||
             check(rill_text_stream_push(stream, token), "rill_text_stream_push") ||
             print_stream(stream, tokenizer_path != NULL);
    if ((int64_t)token == eos) {
      ++generated;
      break;
    }
  }
  /* A character the text ended inside comes out at the end. */
  if (!failed)
    failed = check(rill_text_stream_finish(stream), "rill_text_stream_finish") ||
             print_stream(stream, tokenizer_path != NULL);
  if (!failed) failed = check(rill_lm_position(session, &position), "rill_lm_position");
  if (!failed) printf("\ngenerated %llu tokens, position %llu\n", generated, (unsigned long long)position);

  free(logits);
  free(prompt_tokens);
  rill_text_stream_destroy(stream);
  rill_tokenizer_destroy(tokenizer);
  rill_lm_session_destroy(session);
  rill_lm_model_destroy(model);
  rill_context_destroy(ctx);
  return failed;
}
