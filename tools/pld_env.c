/* pld-env: prints the environment variables of pld (core/tunables.h):
 * those that tune, with their defaults, accepted ranges, the values in
 * force in this environment, and what they do; then the settings, which
 * choose (a fabric, a trace file, the debug log, the race check, the
 * instruction level), with the values they accept and their values now;
 * then the instruction level the tile loops use here; then the timing
 * model's figures on each simulated platform, with PLD_MODEL_FILE's
 * applied.  A value pld refuses is listed with the default in force, then
 * the refusal pld_compile would give; the status is then 1. */
#include <stdio.h>
#include <string.h>

#include "core/model.h"
#include "core/copy.h"
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

/* The model's figures on a2a3sim and a5sim (core/model.h), those
 * PLD_MODEL_FILE gives in force; a file pld refuses is reported as
 * pld_compile would, the platforms' own figures listed. */
static void show_model(void) {
  static const char *const plat[2] = {"a2a3sim", "a5sim"};
  const char *file = pld__setting(PLD__SET_MODEL_FILE);
  struct pld__machine m[2];
  char why[1024] = "";
  int bad = 0;
  for (int i = 0; i < 2 && !bad; i++)
    bad = pld__machine_init(&m[i], plat[i], file, NULL, why, sizeof why);
  if (bad) { /* the platforms' own figures are listed */
    fprintf(stderr, "pld-env: environment: PLD_MODEL_FILE: %s\n", why);
    refused = 1;
    file = NULL;
    for (int i = 0; i < 2; i++)
      pld__machine_init(&m[i], plat[i], NULL, NULL, why, sizeof why);
  }
  printf("The timing model's figures (docs/model.md gives each source)%s%s%s:"
         "\n",
         file && *file ? ", PLD_MODEL_FILE '" : "", file && *file ? file : "",
         file && *file ? "' applied (*)" : "");
  for (int id = 0; id < PLD__MODEL_VALUES; id++) {
    const struct pld__model_info *f = pld__model_info(id);
    printf("%s (%s):", f->name, f->unit);
    for (int i = 0; i < 2; i++)
      printf("%s %s %lld%s", i ? "," : "", plat[i], (long long)m[i].v[id],
             m[i].given[id] ? "*" : "");
    printf("; range [%lld, %lld], %s\n", (long long)f->min, (long long)f->max,
           f->source);
    print_wrapped(f->help);
  }
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
  /* The copy size PLD_STREAM_COPY_KB leaves in force here. */
  const char *why;
  const size_t stream = pld__copy_stream_bytes(&why);
  if (stream == SIZE_MAX)
    printf("Streaming copies in force: %s\n", why);
  else
    printf("Streaming copies in force: from %zu KiB (%s)\n", stream / 1024,
           why);
  show_model();
  fflush(stdout);
  pld__tunables_each(report);
  pld__settings_each(report_setting);
  return refused;
}
