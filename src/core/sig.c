#include "core/sig.h"

#include <string.h>

#include "core/error.h"
#include "core/tensor.h"

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
  }
  return "?";
}

const char *pld__sig_problem(const pld_signature *sig, pld_level level,
                             int entry) {
  if (!sig || !entry)
    return "an empty descriptor";
  if (sig->level != level)
    return pld__level_name(sig->level);
  if (sig->nparams < 0 || sig->nparams > PLD__MAX_PARAMS ||
      (sig->nparams > 0 && !sig->params))
    return "a descriptor whose parameter table is invalid (more than 32 "
           "parameters?)";
  if (level == PLD_LEVEL_KERNEL && sig->core_type != PLD_CORE_VECTOR &&
      sig->core_type != PLD_CORE_CUBE)
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

size_t pld__param_str(char *buf, size_t cap, const pld_param *p) {
  size_t n = pld__catf(buf, cap, "%s: ", p->name);
  if (p->kind == PLD_ARG_SCALAR)
    return n + pld__catf(buf + n, cap - n, "%s scalar",
                         pld_dtype_name(p->dtype));
  n += dims_str(buf + n, cap - n, p);
  if (p->kind == PLD_ARG_WINDOW)
    return n + pld__catf(buf + n, cap - n, " window");
  return n + pld__catf(buf + n, cap - n, " %s", pld__dir_name(p->dir));
}

static int dims_find(const struct pld__dims *dims, const char *name) {
  for (int i = 0; i < dims->n; i++)
    if (strcmp(dims->name[i], name) == 0)
      return i;
  return -1;
}

static int is_int_dtype(pld_dtype d) {
  return d == PLD_INT32 || d == PLD_INT16 || d == PLD_INT8 ||
         d == PLD_UINT8 || d == PLD_INT64 || d == PLD_BOOL;
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
                        const pld_arg *a, pld_arg *out, char *msg,
                        size_t cap) {
  const pld_param *p = &sig->params[i];
  *out = *a;
  if (is_int_dtype(p->dtype)) {
    if (!is_int_dtype(a->dtype)) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n,
                "expected an integer scalar for %s, got %s; cast it "
                "explicitly",
                pld_dtype_name(p->dtype),
                a->dtype == PLD_DTYPE_COUNT ? "an unsigned value above INT64_MAX"
                                            : pld_dtype_name(a->dtype));
      return PLD_ERR_ARG;
    }
    int64_t lo, hi;
    int_range(p->dtype, &lo, &hi);
    if (a->v.i < lo || a->v.i > hi) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n, "expected a %s value in [%lld, %lld], got %lld",
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

static int check_tensor(const pld_signature *sig, const char *what, int i,
                        struct pld__dims *dims, const pld_arg *a, char *msg,
                        size_t cap) {
  const pld_param *p = &sig->params[i];
  char want[128], got[128];
  dims_str(want, sizeof want, p);
  if (a->kind == PLD_ARG_SCALAR) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "expected a %s %s, got a %s scalar",
              p->kind == PLD_ARG_WINDOW ? "window" : "tensor", want,
              pld_dtype_name(a->dtype));
    return PLD_ERR_ARG;
  }
  /* A window is a tensor too; a plain tensor is no window: peers cannot
   * reach it. */
  if (p->kind == PLD_ARG_WINDOW &&
      (a->kind != PLD_ARG_WINDOW || !a->v.t ||
       !(a->v.t->flags & PLD__T_WINDOW))) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n,
              "expected a window %s, got a plain tensor: peers cannot reach "
              "it; pass a view of a window buffer (pld_window_view)",
              want);
    return PLD_ERR_ARG;
  }
  const struct pld__tensor *t = a->v.t;
  if (!t || (t->flags & PLD__T_INVALID)) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "expected a tensor %s, got %s", want,
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
  pld__tensor_str(got, sizeof got, t);
  if (t->dtype != p->dtype || t->ndim != p->ndim) {
    size_t n = head(msg, cap, what, sig, i);
    pld__catf(msg + n, cap - n, "expected %s, got %s", want, got);
    return PLD_ERR_ARG;
  }
  for (int d = 0; d < p->ndim; d++) {
    const pld_dim *dim = &p->dims[d];
    if (dim->size == PLD_DYN) {
      int b = dims_find(dims, dim->name);
      if (b < 0) {
        if (dims->n == PLD__MAX_DYN_DIMS) {
          size_t n = head(msg, cap, what, sig, i);
          pld__catf(msg + n, cap - n, "more than %d dynamic dimensions",
                    PLD__MAX_DYN_DIMS);
          return PLD_ERR_ARG;
        }
        b = dims->n++;
        dims->name[b] = dim->name;
        dims->size[b] = t->shape[d];
        pld__catf(dims->by[b], sizeof dims->by[b], "parameter '%s' of %s",
                  p->name, sig->name);
      } else if (dims->size[b] != t->shape[d]) {
        size_t n = head(msg, cap, what, sig, i);
        pld__catf(msg + n, cap - n,
                  "dynamic dimension %s (dimension %d) is %lld here, but %s "
                  "bound it to %lld",
                  dim->name, d, (long long)t->shape[d], dims->by[b],
                  (long long)dims->size[b]);
        return PLD_ERR_ARG;
      }
    } else if (dim->size <= 0) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n,
                "declared dimension %d (%s = %lld) must be > 0 or a "
                "PLD_DYNAMIC name",
                d, dim->name, (long long)dim->size);
      return PLD_ERR_ARG;
    } else if (dim->size != t->shape[d]) {
      size_t n = head(msg, cap, what, sig, i);
      pld__catf(msg + n, cap - n, "expected %s, got %s", want, got);
      return PLD_ERR_ARG;
    }
  }
  return PLD_OK;
}

int pld__sig_check(const pld_signature *sig, const char *what,
                   struct pld__dims *dims, int argc, const pld_arg *argv,
                   pld_arg *norm, char *msg, size_t cap) {
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
      st = check_tensor(sig, what, i, dims, &argv[i], msg, cap);
      norm[i] = argv[i];
    }
    if (st)
      return st;
  }
  return PLD_OK;
}
