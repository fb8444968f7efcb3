/* pld-env: prints the environment variables of pld (core/tunables.h):
 * those that tune, with their defaults, accepted ranges, the values in
 * force in this environment, and what they do; then the settings, which
 * choose (a fabric, a trace file, the debug log, the race check, the
 * instruction level), with the values they accept and their values now;
 * then the instruction level the tile loops use here.  A value pld
 * refuses is listed with the default in force, then the refusal
 * pld_compile would give; the status is then 1. */
#include <stdio.h>
#include <string.h>

#include "core/tunables.h"
#include "tile/isa.h"

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

/* A setting (a word, words or a path): its accepted values, its value
 * now, what it does. */
static void show_setting(const struct pld__setting_info *s) {
  char words[512] = "a path";
  if (s->words)
    pld__setting_words(s->id, 0, words, sizeof words);
  printf("%s (%s%s): now %s%s%s\n", s->name,
         s->kind == PLD__SETTING_WORDS ? "comma-separated: " : "", words,
         s->value ? "'" : "", s->value ? s->value : "unset",
         s->value ? "'" : "");
  print_wrapped(s->help);
}

/* A value its words refuse, reported like a refused tunable.  PLD_ISA's
 * refusal is the instruction levels' own, which also knows what this CPU
 * and build run. */
static void report_setting(const struct pld__setting_info *s) {
  char why[1024];
  const char *isa = s->id == PLD__SET_ISA ? pld__isa_refusal() : NULL;
  if (isa)
    fprintf(stderr, "pld-env: %s\n", isa);
  else if (s->value && pld__setting_refused(s->id, s->value, why, sizeof why))
    fprintf(stderr, "pld-env: environment: %s\n", why);
  else
    return;
  refused = 1;
}

int main(void) {
  pld__tunables_each(show);
  pld__settings_each(show_setting);
  /* The level PLD_ISA leaves in force here (the best, when it is
   * refused), and the ones this CPU and build run. */
  printf("PLD_ISA in force: %s (this CPU and build run",
         pld__isa_name(pld__isa()));
  for (int l = 0; l < PLD__ISA_LEVELS; l++)
    if (pld__isa_runs(l))
      printf(" %s", pld__isa_name(l));
  printf(")\n");
  fflush(stdout);
  pld__tunables_each(report);
  pld__settings_each(report_setting);
  return refused;
}
