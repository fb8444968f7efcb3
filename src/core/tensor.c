/* core/tensor.c: dtypes, host tensors and their descriptors
 * (pld/tensor.h, core/tensor.h). */
#include "core/tensor.h"

#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

const char *pld_dtype_name(pld_dtype dtype) {
  switch (dtype) {
#define PLD__DTYPE_NAME(name, value, bytes)                                    \
  case PLD_##name:                                                             \
    return #name;
    PLD_DTYPE_MAP(PLD__DTYPE_NAME)
#undef PLD__DTYPE_NAME
  default:
    return "?";
  }
}

struct pld__tensor pld__invalid_tensor = {.flags = PLD__T_INVALID};

size_t pld_dtype_size(pld_dtype dtype) { return pld__dtype_size(dtype); }

int pld__tensor_init(struct pld__tensor *t, const char *fn, pld_dtype dtype,
                     int ndim, const int64_t *shape) {
  if (pld_dtype_size(dtype) == 0)
    return pld__fail(PLD_ERR_ARG, "%s: dtype: expected a pld_dtype, got %d", fn,
                     (int)dtype);
  if (ndim < 1 || ndim > PLD_MAX_DIMS)
    return pld__fail(PLD_ERR_ARG, "%s: ndim: expected 1 to %d, got %d", fn,
                     PLD_MAX_DIMS, ndim);
  if (!shape)
    return pld__fail(PLD_ERR_ARG, "%s: shape: expected an array, got NULL", fn);
  size_t n = pld_dtype_size(dtype);
  for (int i = 0; i < ndim; i++)
    if (shape[i] <= 0)
      return pld__fail(PLD_ERR_ARG,
                       "%s: shape[%d]: expected a size > 0, got %lld", fn, i,
                       (long long)shape[i]);
  /* Half the address space at most, so that sums of two sizes cannot wrap
   * either. */
  for (int i = 0; i < ndim; i++) {
    if ((uint64_t)shape[i] > SIZE_MAX / 2 / n) {
      char s[256];
      long long dims[PLD_MAX_DIMS];
      for (int d = 0; d < ndim; d++)
        dims[d] = (long long)shape[d];
      pld__shape_str(s, sizeof s, ndim, dims);
      return pld__fail(PLD_ERR_ARG,
                       "%s: shape: %s%s holds more than %zu bytes (half the "
                       "address space)",
                       fn, pld_dtype_name(dtype), s, (size_t)SIZE_MAX / 2);
    }
    n *= (size_t)shape[i];
  }
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->ndim = ndim;
  memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  t->nbytes = n;
  t->dir = PLD_DIR_INOUT;
  t->host_arg = -1;
  return PLD_OK;
}

static int tensor_new(const char *fn, pld_dtype dtype, void *data, int ndim,
                      const int64_t *shape, pld_tensor *out) {
  if (!out)
    return pld__fail(PLD_ERR_ARG,
                     "%s: out: expected where to store the tensor, got NULL",
                     fn);
  struct pld__tensor tmp;
  int st = pld__tensor_init(&tmp, fn, dtype, ndim, shape);
  if (st)
    return st;
  struct pld__tensor *t = pld__malloc(sizeof *t);
  if (!t)
    return pld__fail(PLD_ERR_NOMEM, "%s: out of memory for the descriptor", fn);
  *t = tmp;
  t->flags = PLD__T_HOST;
  if (data) {
    t->data = data;
  } else {
    t->data = pld__aligned_alloc(t->nbytes);
    if (!t->data) {
      pld__free(t);
      return pld__fail(PLD_ERR_NOMEM, "%s: out of memory for %zu bytes", fn,
                       tmp.nbytes);
    }
    memset(t->data, 0, t->nbytes);
    t->flags |= PLD__T_OWNED;
  }
  out->p = t;
  return PLD_OK;
}

int pld_tensor_create(pld_dtype dtype, int ndim, const int64_t *shape,
                      pld_tensor *out) {
  return tensor_new("pld_tensor_create", dtype, NULL, ndim, shape, out);
}

int pld_tensor_wrap(pld_dtype dtype, void *data, int ndim, const int64_t *shape,
                    pld_tensor *out) {
  if (!data)
    return pld__fail(PLD_ERR_ARG,
                     "pld_tensor_wrap: data: expected a buffer, got NULL");
  return tensor_new("pld_tensor_wrap", dtype, data, ndim, shape, out);
}

void (*pld__tensor_release_hook)(struct pld__tensor *t);

void pld_tensor_destroy(pld_tensor t) {
  if (!t.p)
    return;
  if ((t.p->flags & PLD__T_RESIDENT) && pld__tensor_release_hook)
    pld__tensor_release_hook(t.p);
  if (t.p->flags & PLD__T_INTER) {
    pld__fail(PLD_ERR_ARG,
              "pld_tensor_destroy: t is %s, an intermediate: its program "
              "frees it",
              t.p->name ? t.p->name : "an intermediate");
    return;
  }
  if (t.p->flags & PLD__T_OWNED)
    pld__free(t.p->data);
  pld__free(t.p);
}

_Thread_local struct pld__tensor_sink pld__tensor_sink;

void *pld_tensor_data(pld_tensor t) {
  if (t.p && (t.p->flags & PLD__T_INTER)) {
    int st = pld__fail(PLD_ERR_STATE,
                       "pld_tensor_data: t is %s, an intermediate of a host "
                       "orchestration: it has data only during a run, where "
                       "host tasks receive it",
                       t.p->name ? t.p->name : "an intermediate");
    if (pld__tensor_sink.sink)
      pld__tensor_sink.sink(pld__tensor_sink.ctx, st, pld_last_error());
    return NULL;
  }
  return t.p && (t.p->flags & PLD__T_HOST) ? t.p->data : NULL;
}

pld_dtype pld_tensor_dtype(pld_tensor t) {
  return t.p ? t.p->dtype : PLD_DTYPE_COUNT;
}

int pld_tensor_ndim(pld_tensor t) { return t.p ? t.p->ndim : 0; }

int64_t pld_tensor_dim(pld_tensor t, int i) {
  return t.p && i >= 0 && i < t.p->ndim ? t.p->shape[i] : 0;
}

int64_t pld_tensor_numel(pld_tensor t) {
  return t.p ? (int64_t)(t.p->nbytes / pld_dtype_size(t.p->dtype)) : 0;
}

int64_t pld__tensor_cols(const struct pld__tensor *t) {
  return t->shape[t->ndim - 1];
}

int64_t pld__tensor_rows(const struct pld__tensor *t) {
  int64_t r = 1;
  for (int i = 0; i + 1 < t->ndim; i++)
    r *= t->shape[i];
  return r;
}

size_t pld__tensor_str(char *buf, size_t cap, const struct pld__tensor *t) {
  long long dims[PLD_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++)
    dims[i] = (long long)t->shape[i];
  size_t n = pld__catf(buf, cap, "%s", pld_dtype_name(t->dtype));
  return n + pld__shape_str(buf + n, cap - n, t->ndim, dims);
}
