/* pld-env: prints the environment variables that tune pld: their defaults,
 * accepted ranges, the values in force in this environment, and what they
 * do.  A value pld refuses is listed with the default in force, then the
 * refusal pld_compile would give; the status is then 1. */
#include <stdio.h>
#include <string.h>

#include "core/tunables.h"

/* Columns of the help text, indented by four spaces. */
#define HELP_WIDTH 76

static int refused;

/* Prints text wrapped at HELP_WIDTH columns, each line indented. */
static void print_wrapped(const char *text) {
  while (*text) {
    size_t len = strlen(text), cut = len;
    if (len > HELP_WIDTH) {
      cut = HELP_WIDTH;
      while (cut > 0 && text[cut] != ' ')
        cut--;
      if (cut == 0) /* one word longer than a line: left whole */
        cut = strcspn(text, " ");
    }
    printf("    %.*s\n", (int)cut, text);
    text += cut;
    while (*text == ' ')
      text++;
  }
}

static void show(const struct pld__tunable *t) {
  printf("%s (%s): default %lld, range [%lld, %lld], now %lld", t->name,
         t->unit, t->def, t->min, t->max, t->value);
  if (t->refusal)
    printf(" (the default: %s is refused, see below)", t->given);
  printf("\n");
  print_wrapped(t->help);
}

static void report(const struct pld__tunable *t) {
  if (t->refusal) {
    fprintf(stderr, "pld-env: %s\n", t->refusal);
    refused = 1;
  }
}

int main(void) {
  pld__tunables_each(show);
  fflush(stdout);
  pld__tunables_each(report);
  return refused;
}
