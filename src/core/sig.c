/* core/sig.c: checking arguments against a function's signature, shapes
 * with dynamic dimensions bound program-wide (core/sig.h). */
#include "core/sig.h"

#include <string.h>

#include "core/error.h"
#include "core/tensor.h"
#include "pld/mix.h"

const char *pld__dir_name(pld_dir d) {
  switch (d) {
  case PLD_DIR_IN:
    return "In";
  case PLD_DIR_OUT:
    return "Out";
  case PLD_DIR_INOUT:
    return "InOut";
  }
  return "?";
}

const char *pld__level_name(pld_level l) {
  switch (l) {
  case PLD_LEVEL_HOST:
    return "host orchestrator";
  case PLD_LEVEL_DEVICE:
    return "per-device orchestration";
  case PLD_LEVEL_KERNEL:
    return "kernel";
  case PLD_LEVEL_TASK:
    return "host task";
  }
  return "?";
}

const char *pld__sig_problem(const pld_signature *sig, pld_level level,
                             int entry) {
  if (!sig || !entry)
    return "an empty descriptor";
  if (sig->level != level)
    return pld__level_name(sig->level);
  if (sig->nparams < 0 || sig->nparams > PLD_MAX_PARAMS ||
      (sig->nparams > 0 && !sig->params))
    return "a descriptor whose parameter table is invalid (more than "
           "PLD_MAX_PARAMS parameters?)";
  if (level == PLD_LEVEL_KERNEL && sig->core_type != PLD_CORE_VECTOR &&
      sig->core_type != PLD_CORE_CUBE && sig->core_type != PLD_CORE_MIX)
    return "a kernel descriptor of no known core type";
  return NULL;
}

static size_t dims_str(char *buf, size_t cap, const pld_param *p) {
  size_t n = pld__catf(buf, cap, "%s[", pld_dtype_name(p->dtype));
  for (int i = 0; i < p->ndim; i++) {
    const pld_dim *d = &p->dims[i];
    n += pld__catf(buf + n, cap - n, "%s%s", i ? ", " : "", d->name);
  }
  return n + pld__catf(buf + n, cap - n, "]");
}

/* dims_str into buf, for a message. */
static const char *dims_text(char *buf, size_t cap, const pld_param *p) {
  dims_str(buf, cap, p);
  return buf;
}

size_t pld__param_str(char *buf, size_t cap, const pld_param *p) {
  size_t n = pld__catf(buf, cap, "%s: ", p->name);
  if (p->kind == PLD_ARG_SCALAR)
    return n +
           pld__catf(buf + n, cap - n, "%s scalar", pld_dtype_name(p->dtype));
  n += dims_str(buf + n, cap - n, p);
  if (p->kind == PLD_ARG_WINDOW)
    return n + pld__catf(buf + n, cap - n, " window");
  return n + pld__catf(buf + n, cap - n, " %s", pld__dir_name(p->dir));
}

static int is_int_dtype(pld_dtype d) {
  return d == PLD_INT32 || d == PLD_INT16 || d == PLD_INT8 || d == PLD_UINT8 ||
         d == PLD_INT64 || d == PLD_BOOL;
}

static int is_float_dtype(pld_dtype d) {
  return d == PLD_FP32 || d == PLD_FP16 || d == PLD_BF16 || d == PLD_FP64;
}

size_t pld__scalar_str(char *buf, size_t cap, const pld_param *p,
                       const pld_arg *a) {
  if (is_float_dtype(p->dtype))
    return pld__catf(buf, cap, "%s = %g", pld_dtype_name(p->dtype), a->v.f);
  return pld__catf(buf, cap, "%s = %lld", pld_dtype_name(p->dtype),
                   (long long)a->v.i);
}

int pld__arg_is_integer(const pld_arg *a) {
  return a->kind == PLD_ARG_SCALAR && is_int_dtype(a->dtype);
}

static void int_range(pld_dtype d, int64_t *lo, int64_t *hi) {
  switch (d) {
  case PLD_INT32:
    *lo = INT32_MIN, *hi = INT32_MAX;
    return;
  case PLD_INT16:
    *lo = INT16_MIN, *hi = INT16_MAX;
    return;
  case PLD_INT8:
    *lo = INT8_MIN, *hi = INT8_MAX;
    return;
  case PLD_UINT8:
    *lo = 0, *hi = UINT8_MAX;
    return;
  case PLD_BOOL:
    *lo = 0, *hi = 1;
    return;
  default:
    *lo = INT64_MIN, *hi = INT64_MAX;
    return;
  }
}

/* Failure message head: "<what>: <callee>: parameter 'p' (i of n): ". */
static size_t head(char *msg, size_t cap, const char *what,
                   const pld_signature *sig, int i) {
  return pld__catf(msg, cap, "%s: %s: parameter '%s' (%d of %d): ", what,
                   sig->name, sig->params[i].name, i + 1, sig->nparams);
}

static int check_scalar(const pld_signature *sig, const char *what, int i,
                        const pld_arg *a, pld_arg *out, char *msg, size_t cap) {
  const pld_param *p = &sig->params[i];
  *out = *a;
  if (is_int_dtype(p->dtype)) {
    if (!is_int_dtype(a->dtype)) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n,
                "expected an integer scalar for %s, got %s; cast it "
                "explicitly",
                pld_dtype_name(p->dtype),
                a->dtype == PLD_DTYPE_COUNT
                    ? "an unsigned value above INT64_MAX"
                    : pld_dtype_name(a->dtype));
      return PLD_ERR_ARG;
    }
    int64_t lo, hi;
    int_range(p->dtype, &lo, &hi);
    if (a->v.i < lo || a->v.i > hi) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n,
                "expected a %s value in [%lld, %lld], got %lld",
                pld_dtype_name(p->dtype), (long long)lo, (long long)hi,
                (long long)a->v.i);
      return PLD_ERR_ARG;
    }
    out->dtype = p->dtype;
    return PLD_OK;
  }
  if (is_float_dtype(p->dtype)) {
    if (!is_float_dtype(a->dtype)) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n,
                "expected a float scalar for %s, got %s; cast it explicitly",
                pld_dtype_name(p->dtype), pld_dtype_name(a->dtype));
      return PLD_ERR_ARG;
    }
    out->dtype = p->dtype;
    return PLD_OK;
  }
  size_t n = head(msg, cap, what, sig, i);
  pld__catf(msg + n, cap - n, "scalar dtype %s is not supported",
            pld_dtype_name(p->dtype));
  return PLD_ERR_ARG;
}

/* ---- dimensions ------------------------------------------------------- */

/* Bindings of one call: the program-wide ones (g) and, for device
 * functions and kernels, those of this call alone (l); a host function
 * binds into g. */
struct scope {
  struct pld__dims *g, *l;
};

/* The binding of the name n[0, len) (the host's first, then the call's),
 * or NULL; *at is its index there.  Names are matched by their text: the
 * bindings keep the declared strings.  sc may be NULL (no bindings). */
static const struct pld__dims *scope_find(const struct scope *sc, const char *n,
                                          size_t len, int *at) {
  const struct pld__dims *d[2] = {sc ? sc->g : NULL, sc ? sc->l : NULL};
  for (int k = 0; k < 2; k++)
    for (int b = 0; d[k] && b < d[k]->n; b++)
      if (strlen(pld__dim_name(d[k], b)) == len &&
          !strncmp(pld__dim_name(d[k], b), n, len)) {
        *at = b;
        return d[k];
      }
  return NULL;
}

static int is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* A dimension as written: one name, one number, or an expression. */
static int is_name(const char *s) {
  if (!s || !is_ident_start(*s))
    return 0;
  while (is_ident_char(*s))
    s++;
  return *s == '\0';
}

static int is_number(const char *s) {
  if (!s || !(*s >= '0' && *s <= '9'))
    return 0;
  while (is_ident_char(*s))
    s++;
  return *s == '\0';
}

/* The evaluation of a shape expression: its text, the bindings its names
 * take, and what went wrong (the first thing). */
struct expr {
  const char *p;
  const struct scope *sc; /* NULL: every name is PLD_DYN (as C saw it) */
  int nnames, bound, unbound;
  const char *names[8];
  int64_t values[8];
  const char *solved_by[8]; /* of a name solved from an expression */
  const char *unknown;      /* a name no parameter bound (taken as PLD_DYN) */
  size_t unknown_len;
  char err[160]; /* not an expression */
  char bad[160]; /* arithmetic that fails with these values */
};

static void skip_space(struct expr *e) {
  while (*e->p == ' ' || *e->p == '\t' || *e->p == '\n')
    e->p++;
}

static int64_t parse_sum(struct expr *e);

static int64_t parse_primary(struct expr *e) {
  skip_space(e);
  if (e->err[0])
    return 0;
  if (*e->p == '(') {
    e->p++;
    int64_t v = parse_sum(e);
    skip_space(e);
    if (*e->p != ')' && !e->err[0])
      pld__catf(e->err, sizeof e->err, "a ')' is missing");
    else
      e->p++;
    return v;
  }
  if (*e->p >= '0' && *e->p <= '9') {
    int64_t v = 0;
    int base = 10;
    if (e->p[0] == '0' && (e->p[1] == 'x' || e->p[1] == 'X'))
      base = 16, e->p += 2;
    for (;; e->p++) {
      char c = *e->p;
      int dgt = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
      if (dgt >= base)
        break;
      if (__builtin_mul_overflow(v, base, &v) ||
          __builtin_add_overflow(v, dgt, &v)) {
        pld__catf(e->err, sizeof e->err, "a number overflows");
        return 1;
      }
    }
    while (*e->p == 'u' || *e->p == 'U' || *e->p == 'l' || *e->p == 'L')
      e->p++;
    return v;
  }
  if (is_ident_start(*e->p)) {
    const char *n = e->p;
    while (is_ident_char(*e->p))
      e->p++;
    size_t len = (size_t)(e->p - n);
    int b;
    const struct pld__dims *d = scope_find(e->sc, n, len, &b);
    if (d) {
      int seen = 0;
      for (int i = 0; i < e->nnames; i++)
        seen |= e->names[i] == pld__dim_name(d, b);
      if (!seen && e->nnames < 8) {
        e->names[e->nnames] = pld__dim_name(d, b);
        e->solved_by[e->nnames] = d->name[b] ? NULL : d->by[b];
        e->values[e->nnames++] = d->size[b];
      }
      e->bound++;
      return d->size[b];
    }
    e->unbound++;
    if (!e->unknown)
      e->unknown = n, e->unknown_len = len;
    return PLD_DYN;
  }
  if (*e->p == '\0')
    pld__catf(e->err, sizeof e->err, "it ends where a value should be");
  else
    pld__catf(e->err, sizeof e->err, "'%c' is not part of a shape expression",
              *e->p);
  return 0;
}

static int64_t parse_unary(struct expr *e) {
  skip_space(e);
  if (*e->p == '-' || *e->p == '+') {
    int neg = *e->p++ == '-';
    int64_t v = parse_unary(e);
    if (neg && __builtin_sub_overflow((int64_t)0, v, &v) && !e->bad[0])
      pld__catf(e->bad, sizeof e->bad, "it overflows");
    return v;
  }
  return parse_primary(e);
}

static int64_t parse_product(struct expr *e) {
  int64_t v = parse_unary(e);
  for (;;) {
    skip_space(e);
    char op = *e->p;
    if (e->err[0] || (op != '*' && op != '/' && op != '%'))
      return v;
    e->p++;
    int64_t r = parse_unary(e);
    /* C's arithmetic (the value the compiler gave), and what fails for a
     * shape: overflow, a remainder, zero. */
    if (op == '*') {
      if (__builtin_mul_overflow(v, r, &v) && !e->bad[0])
        pld__catf(e->bad, sizeof e->bad, "it overflows");
    } else if (r == 0 || (r == -1 && v == INT64_MIN)) {
      if (!e->bad[0])
        pld__catf(e->bad, sizeof e->bad, "%lld %c %lld has no value",
                  (long long)v, op, (long long)r);
      v = 0;
    } else if (op == '%') {
      v %= r;
    } else {
      if (v % r && !e->bad[0])
        pld__catf(e->bad, sizeof e->bad, "%lld / %lld does not divide",
                  (long long)v, (long long)r);
      v /= r;
    }
  }
}

static int64_t parse_sum(struct expr *e) {
  int64_t v = parse_product(e);
  for (;;) {
    skip_space(e);
    char op = *e->p;
    if (e->err[0] || (op != '+' && op != '-'))
      return v;
    e->p++;
    int64_t r = parse_product(e);
    if ((op == '+' ? __builtin_add_overflow(v, r, &v)
                   : __builtin_sub_overflow(v, r, &v)) &&
        !e->bad[0])
      pld__catf(e->bad, sizeof e->bad, "it overflows");
  }
}

/* " (NR = 4, K = 8)": the values of the names an expression used, and
 * where those solved from an expression come from ("M = 64, solved from
 * parameter 'x' of f: dimension 0 is M * 2 = 128"). */
static size_t names_str(char *buf, size_t cap, const struct expr *e) {
  if (!e->nnames)
    return 0;
  size_t n = pld__catf(buf, cap, " (");
  for (int i = 0; i < e->nnames; i++) {
    n += pld__catf(buf + n, cap - n, "%s%s = %lld", i ? ", " : "", e->names[i],
                   (long long)e->values[i]);
    if (e->solved_by[i])
      n += pld__catf(buf + n, cap - n, ", solved from %s", e->solved_by[i]);
  }
  return n + pld__catf(buf + n, cap - n, ")");
}

/* Some name of the text is bound (in the call's or the host's scope). */
static int binds_a_name(const char *s, const struct scope *sc) {
  while (*s) {
    if (*s >= '0' && *s <= '9') { /* a number, 0x and suffixes too */
      while (is_ident_char(*s))
        s++;
      continue;
    }
    if (!is_ident_start(*s)) {
      s++;
      continue;
    }
    const char *n = s;
    int b;
    while (is_ident_char(*s))
      s++;
    if (scope_find(sc, n, (size_t)(s - n), &b))
      return 1;
  }
  return 0;
}

/* Dimension d of parameter i, as C evaluated it, is no size. */
static int not_a_size(const pld_signature *sig, const char *what, int i, int d,
                      char *msg, size_t cap) {
  const pld_dim *dim = &sig->params[i].dims[d];
  size_t n = head(msg, cap, what, sig, i);
  pld__catf(msg + n, cap - n,
            "declared dimension %d (%s = %lld) must be > 0 or a PLD_DYNAMIC "
            "name",
            d, dim->name, (long long)dim->size);
  return PLD_ERR_ARG;
}

/* The value of dimension d of parameter i, an expression, with the
 * bindings of sc, into *e. */
static int64_t eval_text(const pld_signature *sig, int i, int d,
                         const struct scope *sc, struct expr *e) {
  memset(e, 0, sizeof *e);
  e->p = sig->params[i].dims[d].name;
  e->sc = sc;
  return parse_sum(e);
}

/* Dimension d of parameter i is an expression in which one name, u, is
 * bound by no parameter where it stands alone: solves u from the size of
 * the argument's dimension (given) and binds it, as the name of a
 * parameter standing alone would be.  u is solved when the expression is
 * linear in it (a u + b, a != 0, as its values at u = 1, 2 and 3 say)
 * and a positive integer gives the size exactly.  Returns PLD_OK (bound),
 * PLD_ERR_ARG with the message (no solution), or -1 when u cannot be
 * solved here (another name is unknown too, or no room): the caller says
 * u is unbound. */
static int solve_dim(const pld_signature *sig, const char *what, int i, int d,
                     const struct scope *sc, int64_t given,
                     const struct expr *e, char *msg, size_t cap) {
  const char *text = sig->params[i].dims[d].name;
  struct pld__dims *into = sc->l ? sc->l : sc->g;
  if (!into || e->unknown_len >= PLD__MAX_SOLVED_NAME ||
      into->n == PLD__MAX_DYN_DIMS)
    return -1;
  const int b = into->n++;
  into->name[b] = NULL;
  memcpy(into->solved[b], e->unknown, e->unknown_len);
  into->solved[b][e->unknown_len] = '\0';
  int64_t f[4] = {0, 0, 0, 0}, x = 0, a = 0;
  int defined = 1;
  struct expr t;
  for (int u = 1; u <= 3 && defined; u++) {
    into->size[b] = u;
    f[u] = eval_text(sig, i, d, sc, &t);
    if (t.unbound) { /* a second unknown name */
      into->n--;
      return -1;
    }
    defined = !t.err[0] && !t.bad[0];
  }
  const int linear = defined && !__builtin_sub_overflow(f[2], f[1], &a) &&
                     a != 0 && f[3] - f[2] == a;
  if (linear && (given - f[1]) % a == 0 && (given - f[1]) / a >= 0) {
    x = 1 + (given - f[1]) / a;
    into->size[b] = x;
    if (eval_text(sig, i, d, sc, &t) == given && !t.err[0] && !t.bad[0]) {
      pld__catf(into->by[b], sizeof into->by[b],
                "parameter '%s' of %s (dimension %d is %s = %lld)",
                sig->params[i].name, sig->name, d, text, (long long)given);
      return PLD_OK;
    }
  }
  into->n--;
  size_t n = head(msg, cap, what, sig, i);
  if (!linear)
    pld__catf(msg + n, cap - n,
              "dimension %d is the shape expression %s, but %s in it is no "
              "dynamic dimension bound by a parameter where it stands alone, "
              "and is solved only from an expression of the form a * %s + b",
              d, text, into->solved[b], into->solved[b]);
  else
    pld__catf(msg + n, cap - n,
              "dimension %d is the shape expression %s = %lld (the "
              "argument's size), which no whole %s > 0 solves",
              d, text, (long long)given, into->solved[b]);
  return PLD_ERR_ARG;
}

/* Dimension d of parameter i is an expression (not one name or number):
 * its value in *v (and its evaluation in *e, for messages), or
 * PLD_ERR_ARG with the message; a name in it bound nowhere is solved from
 * the argument's size there (given), if it can be.  An expression of
 * constants alone (no bound name in it) has the value C gave it. */
static int eval_dim(const pld_signature *sig, const char *what, int i, int d,
                    const struct scope *sc, int64_t given, int64_t *v,
                    struct expr *e, char *msg, size_t cap) {
  const pld_dim *dim = &sig->params[i].dims[d];
  int64_t val = eval_text(sig, i, d, sc, e);
  skip_space(e);
  if (!e->err[0] && *e->p)
    pld__catf(e->err, sizeof e->err, "'%c' is not part of a shape expression",
              *e->p);
  /* Names no parameter bound: dynamic dimensions not bound, if C's value
   * is the one every name gives as PLD_DYN; else constants (an expression
   * of constants alone is the number C made of it). */
  struct expr c;
  memset(&c, 0, sizeof c);
  c.p = dim->name;
  int constants = e->unbound && parse_sum(&c) != dim->size;
  if (!e->err[0] && !e->bound && (constants || !e->unbound) && dim->size > 0) {
    *v = dim->size;
    return PLD_OK;
  }
  /* C's constant expressions beyond these (sizeof, casts, shifts, ?:, what
   * function-like macros expand to) stay the fixed sizes they always were
   * while no bound name is in them. */
  if (e->err[0] && dim->size > 0 && !binds_a_name(dim->name, sc)) {
    *v = dim->size;
    return PLD_OK;
  }
  if (!e->err[0] && !e->bound && constants) /* constants alone, no size */
    return not_a_size(sig, what, i, d, msg, cap);
  if (!e->err[0] && e->unbound && !constants) {
    int st = solve_dim(sig, what, i, d, sc, given, e, msg, cap);
    if (st >= 0) {
      *v = given;
      if (!st) /* its names and values, for a later message */
        eval_text(sig, i, d, sc, e);
      return st;
    }
  }
  size_t n = head(msg, cap, what, sig, i);
  if (!e->err[0] && e->unbound) {
    pld__catf(msg + n, cap - n,
              "dimension %d is the shape expression %s, but %.*s in it is "
              "%s",
              d, dim->name, (int)e->unknown_len, e->unknown,
              constants ? "a constant beside dynamic dimensions: write "
                          "constants in shape expressions as numbers"
                        : "no dynamic dimension bound by a parameter where "
                          "it stands alone (of this call, or of the host "
                          "function)");
    return PLD_ERR_ARG;
  }
  if (!e->err[0] && e->bad[0]) {
    n += pld__catf(msg + n, cap - n, "dimension %d is the shape expression %s",
                   d, dim->name);
    n += names_str(msg + n, cap - n, e);
    pld__catf(msg + n, cap - n, ": %s", e->bad);
    return PLD_ERR_ARG;
  }
  if (!e->err[0] && val <= 0) {
    n += pld__catf(msg + n, cap - n,
                   "dimension %d is the shape expression %s = %lld", d,
                   dim->name, (long long)val);
    n += names_str(msg + n, cap - n, e);
    pld__catf(msg + n, cap - n, ": a dimension must be > 0");
    return PLD_ERR_ARG;
  }
  if (e->err[0]) {
    n += pld__catf(msg + n, cap - n, "dimension %d is the shape expression %s",
                   d, dim->name);
    n += names_str(msg + n, cap - n, e);
    pld__catf(msg + n, cap - n, ": %s", e->err);
    return PLD_ERR_ARG;
  }
  *v = val;
  return PLD_OK;
}

/* Binds or checks a dynamic dimension `name` against `size`. */
static int bind_dim(const pld_signature *sig, const char *what, int i, int d,
                    const struct scope *sc, int64_t size, char *msg,
                    size_t cap) {
  const char *name = sig->params[i].dims[d].name;
  int at;
  const struct pld__dims *found = scope_find(sc, name, strlen(name), &at);
  if (found) {
    if (found->size[at] == size)
      return PLD_OK;
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n,
              "dynamic dimension %s (dimension %d) is %lld here, but %s "
              "bound it to %lld",
              name, d, (long long)size, found->by[at],
              (long long)found->size[at]);
    return PLD_ERR_ARG;
  }
  struct pld__dims *into = sc->l ? sc->l : sc->g;
  if (into->n == PLD__MAX_DYN_DIMS) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "more than %d dynamic dimensions",
              PLD__MAX_DYN_DIMS);
    return PLD_ERR_ARG;
  }
  int b = into->n++;
  into->name[b] = name;
  into->size[b] = size;
  pld__catf(into->by[b], sizeof into->by[b], "parameter '%s' of %s",
            sig->params[i].name, sig->name);
  return PLD_OK;
}

/* The kind, direction, dtype and rank of tensor argument i.  A window
 * view whose shape differs from the parameter's only by leading unit
 * dimensions is taken with the parameter's rank: *t then points to a copy
 * in *reshaped. */
static int check_tensor(const pld_signature *sig, const char *what, int i,
                        const pld_arg *a, const struct pld__tensor **tp,
                        struct pld__tensor *reshaped, char *msg, size_t cap) {
  const pld_param *p = &sig->params[i];
  /* What was expected and got, written only for a failure: this runs for
   * every tensor of every call. */
  char want[128], got[128];
  if (a->kind == PLD_ARG_SCALAR) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "expected a %s %s, got a %s scalar",
              p->kind == PLD_ARG_WINDOW ? "window" : "tensor",
              dims_text(want, sizeof want, p), pld_dtype_name(a->dtype));
    return PLD_ERR_ARG;
  }
  /* A window is a tensor too; a plain tensor is no window: peers cannot
   * reach it. */
  if (p->kind == PLD_ARG_WINDOW && (a->kind != PLD_ARG_WINDOW || !a->v.t ||
                                    !(a->v.t->flags & PLD__T_WINDOW))) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n,
              "expected a window %s, got a plain tensor: peers cannot reach "
              "it; pass a view of a window buffer (pld_window_view)",
              dims_text(want, sizeof want, p));
    return PLD_ERR_ARG;
  }
  const struct pld__tensor *t = a->v.t;
  if (!t || (t->flags & PLD__T_INVALID)) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "expected a tensor %s, got %s",
              dims_text(want, sizeof want, p),
              t ? "the result of a failed call" : "a NULL tensor");
    return PLD_ERR_ARG;
  }
  /* Read-only data stays read-only: an In tensor given to a parameter
   * that writes would be written (and an In host argument copied back). */
  if ((p->dir & PLD_DIR_OUT) && t->dir == PLD_DIR_IN) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n,
              "an %s parameter is written, but the tensor passed is %s%s%s, "
              "an In parameter (read only): pass a tensor the caller may "
              "write",
              pld__dir_name(p->dir), t->name ? "'" : "",
              t->name ? t->name : "a tensor", t->name ? "'" : "");
    return PLD_ERR_ARG;
  }
  int units = t->ndim != p->ndim && p->kind == PLD_ARG_WINDOW && reshaped;
  /* Leading dimensions of the longer shape beyond the other's rank: all
   * 1 (the parameter's: declared as the number 1). */
  for (int d = 0; units && d < t->ndim - p->ndim; d++)
    units = t->shape[d] == 1;
  for (int d = 0; units && d < p->ndim - t->ndim; d++)
    units = p->dims[d].size == 1 && is_number(p->dims[d].name);
  if (t->dtype != p->dtype || (t->ndim != p->ndim && !units)) {
    size_t n = head(msg, cap, what, sig, i);
    pld__tensor_str(got, sizeof got, t);
    pld__catf(msg + n, cap - n, "expected %s, got %s",
              dims_text(want, sizeof want, p), got);
    return PLD_ERR_ARG;
  }
  if (units) {
    *reshaped = *t;
    reshaped->ndim = p->ndim;
    for (int d = 0; d < p->ndim; d++) {
      int from = d - (p->ndim - t->ndim);
      reshaped->shape[d] = from < 0 ? 1 : t->shape[from];
    }
    t = reshaped;
  }
  *tp = t;
  return PLD_OK;
}

/* The dimensions of tensor argument i (of shape t): names alone bind
 * (pass 0), numbers and expressions are checked (pass 1, once every name
 * of the call is bound). */
static int check_dims(const pld_signature *sig, const char *what, int i,
                      const struct pld__tensor *t,
                      const struct pld__tensor *given, const struct scope *sc,
                      int pass, char *msg, size_t cap) {
  const pld_param *p = &sig->params[i];
  for (int d = 0; d < p->ndim; d++) {
    const pld_dim *dim = &p->dims[d];
    int alone = is_name(dim->name) || is_number(dim->name) || !dim->name;
    if (alone && dim->size == PLD_DYN) {
      if (pass == 0) {
        int st = bind_dim(sig, what, i, d, sc, t->shape[d], msg, cap);
        if (st)
          return st;
      }
      continue;
    }
    if (pass == 0)
      continue;
    int64_t want = dim->size;
    struct expr e;
    if (!alone) {
      int st = eval_dim(sig, what, i, d, sc, t->shape[d], &want, &e, msg, cap);
      if (st)
        return st;
    } else if (want <= 0) {
      return not_a_size(sig, what, i, d, msg, cap);
    }
    if (want != t->shape[d]) {
      char ws[128], got[128];
      dims_str(ws, sizeof ws, p);
      pld__tensor_str(got, sizeof got, given);
      size_t n = head(msg, cap, what, sig, i);
      n += pld__catf(msg + n, cap - n, "expected %s, got %s", ws, got);
      if (!alone) {
        n += pld__catf(msg + n, cap - n, ": dimension %d is %s = %lld", d,
                       dim->name, (long long)want);
        names_str(msg + n, cap - n, &e);
      }
      return PLD_ERR_ARG;
    }
  }
  return PLD_OK;
}

int pld__sig_check(const pld_signature *sig, const char *what,
                   struct pld__dims *dims, int argc, const pld_arg *argv,
                   pld_arg *norm, struct pld__tensor *reshaped, char *msg,
                   size_t cap) {
  if (argc != sig->nparams) {
    size_t n = pld__catf(msg, cap, "%s: %s: expected %d argument%s (", what,
                         sig->name, sig->nparams, sig->nparams == 1 ? "" : "s");
    for (int i = 0; i < sig->nparams; i++) {
      n += pld__catf(msg + n, cap - n, "%s", i ? "; " : "");
      n += pld__param_str(msg + n, cap - n, &sig->params[i]);
    }
    pld__catf(msg + n, cap - n, "), got %d", argc);
    return PLD_ERR_ARG;
  }
  /* A host function's names are program-wide; a device function's or a
   * kernel's are bound per call, unless the host's bound them. */
  struct pld__dims local;
  local.n = 0;
  const struct scope sc = {dims, sig->level == PLD_LEVEL_HOST ? NULL : &local};
  const struct pld__tensor *ts[PLD_MAX_PARAMS];
  for (int i = 0; i < argc; i++) {
    const pld_param *p = &sig->params[i];
    int st;
    if (p->kind == PLD_ARG_SCALAR) {
      if (argv[i].kind != PLD_ARG_SCALAR) {
        size_t n = head(msg, cap, what, sig, i);
        pld__catf(msg + n, cap - n, "expected a %s scalar, got a tensor",
                  pld_dtype_name(p->dtype));
        return PLD_ERR_ARG;
      }
      st = check_scalar(sig, what, i, &argv[i], &norm[i], msg, cap);
    } else {
      st = check_tensor(sig, what, i, &argv[i], &ts[i],
                        reshaped ? &reshaped[i] : NULL, msg, cap);
      if (!st)
        st = check_dims(sig, what, i, ts[i], argv[i].v.t, &sc, 0, msg, cap);
      norm[i] = argv[i];
      if (!st && ts[i] != argv[i].v.t)
        norm[i].v.t = reshaped + i;
    }
    if (st)
      return st;
  }
  for (int i = 0; i < argc; i++) {
    if (sig->params[i].kind == PLD_ARG_SCALAR)
      continue;
    int st = check_dims(sig, what, i, ts[i], argv[i].v.t, &sc, 1, msg, cap);
    if (st)
      return st;
  }
  return PLD_OK;
}
