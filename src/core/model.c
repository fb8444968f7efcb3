/* core/model.c: the timing model's machine description (core/model.h):
 * the platforms' figures and the lines that replace them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/model.h"
#include "core/tunables.h"
#include "pld/program.h"
#include "pld/status.h"

static const struct pld__model_info infos[] = {
#define PLD__MODEL_INFO(id, unit, a2a3, a5, min, max, src, help)               \
  {#id, unit, src, help, a2a3, a5, min, max},
    PLD_MODEL_VALUES(PLD__MODEL_INFO)
#undef PLD__MODEL_INFO
};

const struct pld__model_info *pld__model_info(enum pld__model_id id) {
  return &infos[id];
}

/* The platform names a line may be prefixed with, and whether each is
 * the a5 class. */
static const struct {
  const char *name;
  int a5;
} plats[] = {{"a2a3sim", 0}, {"a5sim", 1}, {"a2a3", 0}, {"a5", 1}};

static int plat_index(const char *s, size_t len) {
  for (size_t i = 0; i < sizeof plats / sizeof plats[0]; i++)
    if (strlen(plats[i].name) == len && !strncmp(plats[i].name, s, len))
      return (int)i;
  return -1;
}

static const char *skip_blank(const char *s, const char *end) {
  while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
    s++;
  return s;
}

static size_t word_len(const char *s, const char *end) {
  size_t n = 0;
  while (s + n < end &&
         (s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') ||
          (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9')))
    n++;
  return n;
}

/* A value: digits with an optional leading '-', nothing else (as the
 * tunables', core/tunables.h). */
static int parse_int(const char *s, size_t len, int64_t *v) {
  char buf[32];
  size_t i = s[0] == '-';
  if (len == 0 || len >= sizeof buf || i == len)
    return -1;
  for (; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  errno = 0;
  long long x = strtoll(buf, NULL, 10);
  if (errno)
    return -1;
  *v = x;
  return 0;
}

/* One line [s, end) of `where` (numbered `line`): applied to m when it
 * names a figure for this platform.  PLD_OK or PLD_ERR_CONFIG (msg). */
static int apply_line(struct pld__machine *m, int plat, const char *where,
                      int line, const char *s, const char *end, char *msg,
                      size_t cap) {
  const char *hash = memchr(s, '#', (size_t)(end - s));
  if (hash)
    end = hash;
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
    end--;
  s = skip_blank(s, end);
  if (s == end)
    return PLD_OK;
  const char *line_start = s;
  size_t n = word_len(s, end);
  int for_plat = -1;
  if (n && s + n < end && s[n] == '.') {
    for_plat = plat_index(s, n);
    if (for_plat < 0) {
      pld__catf(msg, cap,
                "%s line %d: '%.*s' is no platform: expected a2a3sim, "
                "a5sim, a2a3 or a5 before '.'",
                where, line, (int)n, s);
      return PLD_ERR_CONFIG;
    }
    s += n + 1;
    n = word_len(s, end);
  }
  const char *name = s;
  const char *eq = skip_blank(s + n, end);
  if (!n || eq == end || *eq != '=') {
    pld__catf(msg, cap, "%s line %d: expected 'name = value', got '%.*s'",
              where, line, (int)(end - line_start), line_start);
    return PLD_ERR_CONFIG;
  }
  int id = -1;
  for (int i = 0; i < PLD__MODEL_VALUES; i++)
    if (strlen(infos[i].name) == n && !strncasecmp(infos[i].name, name, n))
      id = i;
  if (id < 0) {
    pld__catf(msg, cap,
              "%s line %d: '%.*s' is no figure of the model (pld-env "
              "lists them)",
              where, line, (int)n, name);
    return PLD_ERR_CONFIG;
  }
  const char *val = skip_blank(eq + 1, end);
  int64_t v;
  if (parse_int(val, (size_t)(end - val), &v) || v < infos[id].min ||
      v > infos[id].max) {
    pld__catf(msg, cap,
              "%s line %d: %s: expected an integer in [%lld, %lld] (%s), "
              "got '%.*s'",
              where, line, infos[id].name, (long long)infos[id].min,
              (long long)infos[id].max, infos[id].unit, (int)(end - val), val);
    return PLD_ERR_CONFIG;
  }
  if (for_plat < 0 || for_plat == plat) {
    m->v[id] = v;
    m->given[id] = 1;
  }
  return PLD_OK;
}

/* The lines of text (len bytes), separated by '\n' or by sep too. */
static int apply_text(struct pld__machine *m, int plat, const char *where,
                      const char *text, size_t len, char sep, char *msg,
                      size_t cap) {
  const char *s = text, *end = text + len;
  for (int line = 1; s <= end; line++) {
    const char *e = s;
    while (e < end && *e != '\n' && *e != sep)
      e++;
    int st = apply_line(m, plat, where, line, s, e, msg, cap);
    if (st)
      return st;
    s = e + 1;
  }
  return PLD_OK;
}

static int apply_file(struct pld__machine *m, int plat, const char *file,
                      char *msg, size_t cap) {
  char where[512];
  snprintf(where, sizeof where, "model file '%s'", file);
  FILE *f = fopen(file, "rb");
  if (!f) {
    pld__catf(msg, cap, "%s: cannot be read: %s", where, strerror(errno));
    return PLD_ERR_SYSTEM;
  }
  size_t len = 0, got, have = 4096;
  char *text = pld__malloc(have);
  while (text && (got = fread(text + len, 1, have - len, f)) > 0) {
    len += got;
    if (len == have) {
      char *more = pld__realloc(text, have * 2);
      if (!more) {
        pld__free(text);
        text = NULL;
        break;
      }
      text = more;
      have *= 2;
    }
  }
  int err = ferror(f);
  fclose(f);
  if (!text || err) {
    const int st = text ? PLD_ERR_SYSTEM : PLD_ERR_NOMEM;
    pld__catf(msg, cap, "%s: cannot be read: %s", where,
              text ? "read error" : "out of memory");
    pld__free(text);
    return st;
  }
  int st = apply_text(m, plat, where, text, len, '\n', msg, cap);
  pld__free(text);
  return st;
}

int pld__machine_init(struct pld__machine *m, const char *platform,
                      const char *file, const char *values, char *msg,
                      size_t cap) {
  int plat = platform ? plat_index(platform, strlen(platform)) : -1;
  if (plat < 0) {
    pld__catf(msg, cap,
              "the model: expected a platform a2a3sim, a5sim, a2a3 or a5, "
              "got '%s'",
              platform ? platform : "(null)");
    return PLD_ERR_CONFIG;
  }
  for (int i = 0; i < PLD__MODEL_VALUES; i++) {
    m->v[i] = plats[plat].a5 ? infos[i].a5 : infos[i].a2a3;
    m->given[i] = 0;
  }
  int st = PLD_OK;
  if (file && *file)
    st = apply_file(m, plat, file, msg, cap);
  if (!st && values) {
    char where[512];
    snprintf(where, sizeof where, "model values '%.400s'", values);
    st = apply_text(m, plat, where, values, strlen(values), ';', msg, cap);
  }
  return st;
}

int pld__machine_config(struct pld__machine *m, const pld_config *cfg) {
  const char *file =
      cfg->model_file ? cfg->model_file : pld__setting(PLD__SET_MODEL_FILE);
  char msg[1024] = "";
  int st = pld__machine_init(m, cfg->platform, file, cfg->model_values, msg,
                             sizeof msg);
  if (!st)
    return PLD_OK;
  const char *field = !strncmp(msg, "model values", 12) ? "cfg.model_values"
                      : cfg->model_file                 ? "cfg.model_file"
                                        : "environment: PLD_MODEL_FILE";
  return pld__fail_api(st, "%s: %s", field, msg);
}
