#include "core/tunables.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

static struct pld__tunables values;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse_int64_t(const char *name, int64_t *out, int64_t def) {
  const char *s = getenv(name);
  char *end;
  long long v = s ? strtoll(s, &end, 10) : 0;
  *out = (s && *s && !*end && v >= 0) ? (int64_t)v : def;
}

static void load(void) {
#define PLD__TUNABLE_PARSE(name, type, def, help)                              \
  parse_##type(#name, &values.name, def);
  PLD_TUNABLES(PLD__TUNABLE_PARSE)
#undef PLD__TUNABLE_PARSE
}

const struct pld__tunables *pld__tunables(void) {
  pthread_once(&once, load);
  return &values;
}

void pld__tunables_each(void (*fn)(const char *name, long long def,
                                   long long value, const char *help)) {
  const struct pld__tunables *v = pld__tunables();
#define PLD__TUNABLE_EACH(name, type, def, help)                               \
  fn(#name, (long long)(def), (long long)v->name, help);
  PLD_TUNABLES(PLD__TUNABLE_EACH)
#undef PLD__TUNABLE_EACH
}

uint32_t pld__cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (uint32_t)CPU_COUNT(&set);
  return 1;
}
