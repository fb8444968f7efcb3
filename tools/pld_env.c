/* pld-env: prints the environment variables of pld: those that tune,
 * with their defaults, accepted ranges, the values in force in this
 * environment, and what they do; then those that choose (a fabric, a
 * trace file, the debug log, the race check) with their values, and the
 * instruction level the tile loops use here.  A value pld
 * refuses is listed with the default in force, then the refusal pld_compile
 * would give; the status is then 1. */
#include <stdio.h>
#include <stdlib.h>
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

/* The variables that choose rather than tune: their values are words or
 * paths, checked by pld_compile (each also a field of pld_config). */
static const struct {
  const char *name, *help;
} choices[] = {
    {"PLD_FABRIC", "shm or mpi: how devices reach each other and the host "
                   "(pld_config.fabric); unset: mpi under mpirun, else shm."},
    {"PLD_MPI_SAME_NODE", "shm or rma: the MPI fabric's peers on one node "
                          "(pld_config.mpi_same_node); unset: shm."},
    {"PLD_TRACE", "A file: every run writes a trace there (Chrome "
                  "trace-event JSON; pld-trace draws it; "
                  "pld_config.trace). Unset or empty: no trace."},
    {"PLD_DEBUG", "launch, signal, rma, coll, fabric, host or all, "
                  "comma-separated: one line per event of those subsystems "
                  "on stderr. Unset or empty: no log."},
    {"PLD_DEBUG_FILE", "A file the debug log is appended to instead of "
                       "stderr."},
    {"PLD_CHECK", "races: every kernel access to window memory is checked "
                  "against the order signals create (pld_config.check; the "
                  "shm fabric). Unset or empty: no check."},
    {"PLD_ISA", "generic, avx2 or avx512: the instructions the tile loops "
                "use at most (x86-64; generic: SSE2, avx2: x86-64-v3 with "
                "F16C and FMA, avx512: x86-64-v4); every level computes the "
                "same bits. A word that is none of them, or a level this CPU "
                "lacks, fails every tile operation with PLD_ERR_CONFIG. "
                "Unset, empty or auto: the best this CPU has."},
};

int main(void) {
  pld__tunables_each(show);
  for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
    const char *v = getenv(choices[i].name);
    printf("%s: now %s%s%s\n", choices[i].name, v ? "'" : "", v ? v : "unset",
           v ? "'" : "");
    print_wrapped(choices[i].help);
  }
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
  return refused;
}
