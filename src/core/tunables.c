/* core/tunables.c: reading and checking the environment variables of the
 * tunables table (core/tunables.h). */
#include "core/tunables.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Bytes of a value quoted in a message: any number the table accepts and a
 * typo around it fit, while a huge or binary value cannot swamp the
 * message. */
#define QUOTED_BYTES 64
/* Room for such a value quoted: escaped, then "... (N bytes)". */
#define QUOTED_CAP (2 + QUOTED_BYTES * 4 + 32)

/* What the environment said about one variable. */
struct given {
  bool set;
  char quoted[QUOTED_CAP];
  char refusal[512]; /* empty when accepted */
};

static struct pld__tunables values;
static struct {
#define PLD__TUNABLE_GIVEN(name, type, def, min, max, unit, help)              \
  struct given name;
  PLD_TUNABLES(PLD__TUNABLE_GIVEN)
#undef PLD__TUNABLE_GIVEN
} given;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* s between single quotes: printable ASCII as is (' and \ escaped), any
 * other byte as \xNN, at most QUOTED_BYTES bytes, then how long it was. */
static void quote(char *buf, size_t cap, const char *s) {
  size_t len = strlen(s), n = pld__catf(buf, cap, "'");
  for (size_t i = 0; i < len && i < QUOTED_BYTES; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\'' || c == '\\')
      n += pld__catf(buf + n, cap - n, "\\%c", c);
    else if (c >= 0x20 && c < 0x7f)
      n += pld__catf(buf + n, cap - n, "%c", c);
    else
      n += pld__catf(buf + n, cap - n, "\\x%02x", c);
  }
  n += pld__catf(buf + n, cap - n, "'");
  if (len > QUOTED_BYTES)
    pld__catf(buf + n, cap - n, "... (%zu bytes)", len);
}

enum verdict { ACCEPTED, EMPTY, NOT_INTEGER, BELOW, ABOVE };

/* Reads s as a decimal integer in [min, max], with the syntax tunables.h
 * describes; *out is written only when accepted. */
static enum verdict parse_integer(const char *s, int64_t min, int64_t max,
                                  int64_t *out) {
  if (!*s)
    return EMPTY;
  bool neg = *s == '-';
  const char *d = s + neg;
  if (!*d)
    return NOT_INTEGER;
  /* The magnitude stops growing once past the bound on its side, so a
   * value of any length is range-checked without overflow, and the scan
   * goes on so that trailing characters still make it no integer. */
  uint64_t limit = neg ? (min < 0 ? (uint64_t)(-(min + 1)) + 1 : 0)
                       : (max > 0 ? (uint64_t)max : 0);
  uint64_t mag = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9')
      return NOT_INTEGER;
    if (mag <= limit)
      mag = mag > (UINT64_MAX - 9) / 10 ? UINT64_MAX
                                        : mag * 10 + (uint64_t)(*d - '0');
  }
  if (mag > limit)
    return neg ? BELOW : ABOVE;
  /* mag is at most max, or -min when negative: -mag is written so that it
   * holds for INT64_MIN too. */
  int64_t v = !neg ? (int64_t)mag : mag ? -(int64_t)(mag - 1) - 1 : 0;
  if (v < min)
    return BELOW;
  if (v > max)
    return ABOVE;
  *out = v;
  return ACCEPTED;
}

/* Sets *out from the variable `name`: its value when accepted, else the
 * default, recording the refusal. */
static void parse_int64_t(struct given *g, const char *name, int64_t *out,
                          int64_t def, int64_t min, int64_t max,
                          const char *unit) {
  *out = def;
  const char *s = getenv(name);
  if (!s)
    return;
  g->set = true;
  quote(g->quoted, sizeof g->quoted, s);
  enum verdict v = parse_integer(s, min, max, out);
  if (v == ACCEPTED)
    return;
  size_t cap = sizeof g->refusal;
  size_t n = pld__catf(g->refusal, cap,
                       "environment: %s=%s: expected a decimal integer in "
                       "[%lld, %lld] (%s), got ",
                       name, g->quoted, (long long)min, (long long)max, unit);
  if (v == EMPTY)
    pld__catf(g->refusal + n, cap - n,
              "an empty value (unset it for the default, %lld)",
              (long long)def);
  else if (v == NOT_INTEGER)
    pld__catf(g->refusal + n, cap - n, "something else");
  else
    pld__catf(g->refusal + n, cap - n, "a number %s %lld",
              v == BELOW ? "below" : "above",
              (long long)(v == BELOW ? min : max));
}

static void load(void) {
#define PLD__TUNABLE_PARSE(name, type, def, min, max, unit, help)              \
  parse_##type(&given.name, #name, &values.name, def, min, max, unit);
  PLD_TUNABLES(PLD__TUNABLE_PARSE)
#undef PLD__TUNABLE_PARSE
}

const struct pld__tunables *pld__tunables(void) {
  pthread_once(&once, load);
  return &values;
}

int pld__tunables_check(const char *fn) {
  pld__tunables();
#define PLD__TUNABLE_CHECK(name, type, def, min, max, unit, help)              \
  if (given.name.refusal[0])                                                   \
    return pld__fail(PLD_ERR_CONFIG, "%s: %s", fn, given.name.refusal);
  PLD_TUNABLES(PLD__TUNABLE_CHECK)
#undef PLD__TUNABLE_CHECK
  return PLD_OK;
}

void pld__tunables_each(void (*fn)(const struct pld__tunable *t)) {
  const struct pld__tunables *v = pld__tunables();
/* Parameters renamed so that they do not replace the field designators. */
#define PLD__TUNABLE_EACH(n, type, d, lo, hi, u, h)                            \
  fn(&(struct pld__tunable){.name = #n,                                        \
                            .unit = u,                                         \
                            .help = h,                                         \
                            .def = d,                                          \
                            .min = lo,                                         \
                            .max = hi,                                         \
                            .value = (long long)v->n,                          \
                            .given = given.n.set ? given.n.quoted : NULL,      \
                            .refusal =                                         \
                                given.n.refusal[0] ? given.n.refusal : NULL});
  PLD_TUNABLES(PLD__TUNABLE_EACH)
#undef PLD__TUNABLE_EACH
}

/* ---- settings ---------------------------------------------------------- */

static const struct setting {
  const char *name, *words, *help;
  enum pld__setting_kind kind;
  int empty;
} settings[] = {
#define PLD__SETTING_ROW(n, id, k, w, e, h)                                    \
  {.name = #n, .words = w, .help = h, .kind = PLD__SETTING_##k, .empty = e},
    PLD_SETTINGS(PLD__SETTING_ROW)
#undef PLD__SETTING_ROW
};

const char *pld__setting(enum pld__setting_id id) {
  return getenv(settings[id].name);
}

const char *pld__setting_name(enum pld__setting_id id) {
  return settings[id].name;
}

int pld__setting_word(enum pld__setting_id id, const char *word, size_t len) {
  const char *w = settings[id].words;
  for (int i = 0; w && *w; i++) {
    size_t wlen = strcspn(w, "|");
    if (wlen == len && !strncmp(w, word, len))
      return i;
    w += wlen + (w[wlen] == '|');
  }
  return -1;
}

size_t pld__setting_words(enum pld__setting_id id, char q, char *buf,
                          size_t cap) {
  const char *w = settings[id].words;
  size_t n = 0, count = 0;
  for (const char *c = w; c && *c; c++)
    count += *c == '|';
  for (size_t i = 0; w && *w; i++) {
    size_t wlen = strcspn(w, "|");
    const char *sep = i == 0 ? "" : i == count ? " or " : ", ";
    if (q)
      n += pld__catf(buf + n, cap - n, "%s%c%.*s%c", sep, q, (int)wlen, w, q);
    else
      n += pld__catf(buf + n, cap - n, "%s%.*s", sep, (int)wlen, w);
    w += wlen + (w[wlen] == '|');
  }
  return n;
}

int pld__setting_refused(enum pld__setting_id id, const char *value, char *buf,
                         size_t cap) {
  const struct setting *s = &settings[id];
  if (s->kind == PLD__SETTING_PATH || (!*value && s->empty))
    return 0;
  /* The first piece that is no word (the whole value for a word). */
  const char *p = value;
  size_t len = strlen(value);
  if (s->kind == PLD__SETTING_WORDS) {
    /* Words, each followed by a comma but the last (a comma may end it). */
    for (len = strcspn(p, ","); pld__setting_word(id, p, len) >= 0;
         len = strcspn(p, ",")) {
      p += len + (p[len] == ',');
      if (!*p)
        return 0;
    }
  } else if (pld__setting_word(id, value, len) >= 0) {
    return 0;
  }
  char quoted[QUOTED_CAP];
  quote(quoted, sizeof quoted, value);
  size_t n = pld__catf(
      buf, cap, "%s=%s: expected %s", s->name, quoted,
      s->kind == PLD__SETTING_WORDS ? "a comma-separated list of " : "");
  n += pld__setting_words(id, 0, buf + n, cap - n);
  if (s->kind == PLD__SETTING_WORDS)
    pld__catf(buf + n, cap - n, ", got '%.*s'", (int)len, p);
  return 1;
}

void pld__settings_each(void (*fn)(const struct pld__setting_info *s)) {
  for (int i = 0; i < PLD__SETTINGS; i++)
    fn(&(struct pld__setting_info){.id = (enum pld__setting_id)i,
                                   .name = settings[i].name,
                                   .words = settings[i].words,
                                   .help = settings[i].help,
                                   .kind = settings[i].kind,
                                   .value = getenv(settings[i].name)});
}

uint32_t pld__cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (uint32_t)CPU_COUNT(&set);
  return 1;
}
