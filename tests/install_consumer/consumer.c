/* Uses the installed C API. */
#include <stdio.h>
#include <rill/rill.h>

int main(void) {
  rill_context* ctx = NULL;
  if (rill_context_create(NULL, &ctx) != RILL_OK) {
    fprintf(stderr, "%s\n", rill_last_error());
    return 1;
  }
  printf("consumer (C, rill %s)\n", rill_version());
  rill_context_destroy(ctx);
  return 0;
}
