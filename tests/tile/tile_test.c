/* tests/tile/tile_test.c: the shared part of the tile tests (tile_test.h):
 * a simulated core, device tensors and the independent reference
 * arithmetic. */
#include "tile_test.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "test_main.h"

const pld_dtype tt_tile_dtypes[7] = {PLD_FP32,  PLD_FP16, PLD_BF16, PLD_INT32,
                                     PLD_INT16, PLD_INT8, PLD_UINT8};

/* ---- cores --------------------------------------------------------------- */

static pld_core core_start(struct pld__core *c,
                           const struct pld__core_spec *spec) {
  assert_int_equal(pld__core_init(c, spec), PLD_OK);
  pld__core_begin(c, "k", 0, 0, 0, 1);
  return (pld_core){c};
}

pld_core tt_vector_core(struct pld__core *c) {
  const struct pld__core_spec spec = {
      PLD_CORE_VECTOR, 0, 192 * 1024, "Unified Buffer", 0, 0, 0};
  return core_start(c, &spec);
}

pld_core tt_cube_core(struct pld__core *c) {
  const struct pld__core_spec spec = {
      PLD_CORE_CUBE, 0, 512 * 1024, "L1", 64 * 1024, 64 * 1024, 128 * 1024};
  return core_start(c, &spec);
}

pld_core tt_platform_core(struct pld__core *c, const char *platform,
                          pld_core_type type) {
  const pld_platform_info *p = pld_platform_find(platform);
  assert_non_null(p);
  const struct pld__core_spec vector = {
      PLD_CORE_VECTOR, 0, p->ub_bytes, "Unified Buffer", 0, 0, 0};
  const struct pld__core_spec cube = {
      PLD_CORE_CUBE, 0,           p->l1_bytes, "L1", p->l0a_bytes,
      p->l0b_bytes,  p->l0c_bytes};
  return core_start(c, type == PLD_CORE_CUBE ? &cube : &vector);
}

void tt_core_release(struct pld__core *c) { pld__core_release(c); }

static int by_address(const void *a, const void *b) {
  const uintptr_t x = (uintptr_t)(*(pld_tile *const *)a)->data;
  const uintptr_t y = (uintptr_t)(*(pld_tile *const *)b)->data;
  return (x > y) - (x < y);
}

void tt_assert_tile_layout(pld_core k, pld_tile *const *tiles, size_t n) {
  const struct pld__core *c = k.p;
  pld_tile **sorted = test_malloc((n ? n : 1) * sizeof *sorted);
  memcpy(sorted, tiles, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, by_address);
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    const pld_tile *t = sorted[i];
    assert_true(t->block_seq == c->block_seq); /* live */
    assert_ptr_equal(t->data, c->mem + t->offset);
    if ((uintptr_t)t->data % 32 != 0 || t->data < c->mem ||
        t->data + t->bytes > c->mem + c->spec.capacity)
      fail_msg("tile at offset %td (%zu bytes) is not 32-byte aligned "
               "inside the %zu bytes of tile memory",
               t->data - c->mem, t->bytes, c->spec.capacity);
    if (i > 0 && sorted[i - 1]->data + sorted[i - 1]->bytes > t->data)
      fail_msg("tiles at offsets %td (%zu bytes) and %td overlap",
               sorted[i - 1]->data - c->mem, sorted[i - 1]->bytes,
               t->data - c->mem);
    bytes += t->bytes;
  }
  assert_int_equal(c->used, bytes);
  test_free(sorted);
}

void tt_assert_failed(pld_core k, int status, ...) {
  if (k.p->status != status)
    fail_msg("expected status %s, got %s (message: %s)",
             pld_status_name(status), pld_status_name(k.p->status), k.p->msg);
  va_list ap;
  va_start(ap, status);
  for (const char *s = va_arg(ap, const char *); s;
       s = va_arg(ap, const char *))
    if (!strstr(k.p->msg, s))
      fail_msg("message lacks \"%s\": %s", s, k.p->msg);
  va_end(ap);
}

/* ---- device tensors ------------------------------------------------------ */

pld_tensor tt_tensor(pld_dtype dt, int64_t rows, int64_t cols, pld_dir dir,
                     const char *name) {
  pld_tensor t;
  const int64_t shape[2] = {rows, cols};
  assert_int_equal(pld_tensor_create(dt, 2, shape, &t), PLD_OK);
  t.p->flags |= PLD__T_DEVICE;
  t.p->dir = dir;
  t.p->name = name;
  return t;
}

/* Reference FP16 decoding and encoding, by the definition of the format
 * (sign, 5-bit exponent of bias 15, 10-bit fraction). */
static double fp16_value(uint16_t h) {
  const double sign = h & 0x8000u ? -1.0 : 1.0;
  const int e = (h >> 10) & 31, m = h & 1023;
  if (e == 31)
    return m ? NAN : sign * INFINITY;
  if (e == 0)
    return sign * ldexp(m, -24);
  return sign * ldexp(1024 + m, e - 25);
}

static uint16_t fp16_bits(double v) {
  const uint16_t sign = signbit(v) ? 0x8000u : 0;
  if (isnan(v))
    return 0x7E00u;
  if (isinf(v))
    return sign | 0x7C00u;
  const double a = fabs(v);
  if (a < ldexp(1, -14))
    return (uint16_t)(sign | (uint16_t)(a / ldexp(1, -24)));
  int e;
  frexp(a, &e);
  const int m = (int)(a / ldexp(1, e - 11)) - 1024;
  return (uint16_t)(sign | (e + 14) << 10 | m);
}

static double bf16_value(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t bf16_bits(double v) {
  const float f = (float)v; /* exact: v is a bfloat16 value */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}

double tt_get(pld_tensor t, size_t i) {
  const unsigned char *p =
      (const unsigned char *)t.p->data + i * pld_dtype_size(t.p->dtype);
  switch (t.p->dtype) {
#define GET(name, T)                                                           \
  case PLD_##name: {                                                           \
    T x;                                                                       \
    memcpy(&x, p, sizeof x);                                                   \
    return (double)x;                                                          \
  }
    GET(FP32, float)
    GET(FP64, double)
    GET(INT32, int32_t)
    GET(INT16, int16_t)
    GET(INT8, int8_t)
    GET(UINT8, uint8_t)
    GET(INT64, int64_t)
    GET(BOOL, uint8_t)
#undef GET
  case PLD_FP16:
  case PLD_BF16: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return t.p->dtype == PLD_FP16 ? fp16_value(h) : bf16_value(h);
  }
  default:
    fail_msg("tt_get: dtype %d", (int)t.p->dtype);
    return 0;
  }
}

void tt_set(pld_tensor t, size_t i, double v) {
  unsigned char *p =
      (unsigned char *)t.p->data + i * pld_dtype_size(t.p->dtype);
  switch (t.p->dtype) {
#define SET(name, T)                                                           \
  case PLD_##name: {                                                           \
    const T x = (T)v;                                                          \
    memcpy(p, &x, sizeof x);                                                   \
    break;                                                                     \
  }
    SET(FP32, float)
    SET(FP64, double)
    SET(INT32, int32_t)
    SET(INT16, int16_t)
    SET(INT8, int8_t)
    SET(UINT8, uint8_t)
    SET(INT64, int64_t)
    SET(BOOL, uint8_t)
#undef SET
  case PLD_FP16:
  case PLD_BF16: {
    const uint16_t h = t.p->dtype == PLD_FP16 ? fp16_bits(v) : bf16_bits(v);
    memcpy(p, &h, sizeof h);
    break;
  }
  default:
    fail_msg("tt_set: dtype %d", (int)t.p->dtype);
  }
}

void tt_fill_random(pld_tensor t, uint64_t *seed) {
  const size_t n = (size_t)pld_tensor_numel(t);
  for (size_t i = 0; i < n; i++)
    tt_set(t, i, tt_random(t.p->dtype, seed));
}

pld_tile *tt_load(pld_core k, pld_tensor t) {
  pld_tile *tile = pld_load(k, t, 0, 0, (int32_t)pld__tensor_rows(t.p),
                            (int32_t)pld__tensor_cols(t.p));
  if (!tile)
    fail_msg("pld_load: %s", k.p->msg);
  return tile;
}

enum { GUARD_BYTES = 256, GUARD = 0xA5 };

const pld_tile *tt_guard(pld_core k) {
  const pld_tile *g = pld_full(k, PLD_UINT8, 1, GUARD_BYTES, GUARD);
  if (!g)
    fail_msg("pld_full: %s", k.p->msg);
  return g;
}

void tt_guard_intact(const pld_tile *g, const char *what) {
  for (int b = 0; b < GUARD_BYTES; b++)
    if (g->data[b] != GUARD)
      fail_msg("%s wrote past its destination: byte %d of the next tile "
               "holds %d, not %d",
               what, b, g->data[b], GUARD);
}

void tt_store(pld_core k, const pld_tile *tile, pld_tensor t) {
  if (pld_store(k, tile, t, 0, 0) != PLD_OK)
    fail_msg("pld_store: %s", k.p->msg);
}

/* fn's result into a separate tile (want), then in place (got). */
static void alias_case(pld_core k, tt_binary_fn *fn, pld_tensor x, pld_tensor y,
                       int into_a, int same) {
  const pld_dtype dt = x.p->dtype;
  const int64_t rows = pld__tensor_rows(x.p), cols = pld__tensor_cols(x.p);
  pld_tensor want = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "want");
  pld_tensor got = tt_tensor(dt, rows, cols, PLD_DIR_OUT, "got");
  pld_tile *a = tt_load(k, x), *b = same ? a : tt_load(k, y);
  pld_tile *t = pld_tile_new(k, dt, (int32_t)rows, (int32_t)cols);
  assert_int_equal(fn(k, t, a, b), PLD_OK);
  tt_store(k, t, want);
  pld_tile *dst = into_a ? a : b;
  assert_int_equal(fn(k, dst, a, b), PLD_OK);
  tt_store(k, dst, got);
  if (memcmp(got.p->data, want.p->data, want.p->nbytes) != 0)
    fail_msg("%s: in place (dst == %s) differs from out of place",
             pld_dtype_name(dt),
             same     ? "a == b"
             : into_a ? "a"
                      : "b");
  pld_tile_free(k, t);
  if (!same)
    pld_tile_free(k, b);
  pld_tile_free(k, a);
  pld_tensor_destroy(want);
  pld_tensor_destroy(got);
}

void tt_check_aliasing(pld_core k, tt_binary_fn *fn, pld_tensor x,
                       pld_tensor y) {
  alias_case(k, fn, x, y, 1, 0);
  alias_case(k, fn, x, y, 0, 0);
  alias_case(k, fn, x, y, 1, 1);
}

/* ---- reference arithmetic ------------------------------------------------ */

uint64_t tt_rand(uint64_t *seed) {
  /* splitmix64 */
  uint64_t z = (*seed += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static void int_range(pld_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case PLD_INT32:
    *lo = INT32_MIN, *hi = INT32_MAX;
    break;
  case PLD_INT16:
    *lo = INT16_MIN, *hi = INT16_MAX;
    break;
  case PLD_INT8:
    *lo = INT8_MIN, *hi = INT8_MAX;
    break;
  case PLD_UINT8:
    *lo = 0, *hi = UINT8_MAX;
    break;
  default:
    *lo = INT64_MIN, *hi = INT64_MAX;
    break;
  }
}

double tt_random(pld_dtype dt, uint64_t *seed) {
  const uint64_t r = tt_rand(seed);
  if (dt == PLD_FP16)
    return fp16_value((uint16_t)r);
  if (dt == PLD_BF16)
    return bf16_value((uint16_t)r);
  if (dt == PLD_FP32) {
    static const double specials[] = {0.0,       -0.0,    INFINITY, -INFINITY,
                                      NAN,       FLT_MAX, -FLT_MAX, 0x1p-149,
                                      -0x1p-140, 0x1p-126};
    if (r % 16 == 0)
      return specials[(r >> 8) % (sizeof specials / sizeof *specials)];
    const double m = (double)((r >> 8) & 0xFFFFFF) / 0x1p24 + 0.5;
    const int e = (int)((r >> 40) % 41) - 20;
    return (r >> 63 ? -1.0 : 1.0) * ldexp(m, e);
  }
  int64_t lo, hi;
  int_range(dt, &lo, &hi);
  if (r % 8 == 0)
    return (double)((r >> 8) % 2 ? hi : lo);
  return (double)(lo + (int64_t)((r >> 8) % (uint64_t)(hi - lo + 1)));
}

/* v rounded to nearest even with `bits` significant bits, exponents down
 * to emin (below: subnormal spacing), infinity past max. */
static double round_format(double v, int bits, int emin, double max) {
  if (isnan(v) || isinf(v) || v == 0)
    return v;
  int e;
  frexp(v, &e);
  const int exp = e - 1 < emin ? emin : e - 1;
  const double ulp = ldexp(1.0, exp - (bits - 1));
  const double r = nearbyint(v / ulp) * ulp;
  return fabs(r) > max ? copysign(INFINITY, v) : r;
}

double tt_cast(pld_dtype dt, double v) {
  switch (dt) {
  case PLD_FP32:
    return round_format(v, 24, -126, FLT_MAX);
  case PLD_FP16:
    return round_format(v, 11, -14, 65504.0);
  case PLD_BF16:
    return round_format(v, 8, -126, 0x1.FEp127);
  case PLD_FP64:
    return v;
  case PLD_BOOL:
    return v != 0 && !isnan(v);
  default: {
    int64_t lo, hi;
    int_range(dt, &lo, &hi);
    if (isnan(v))
      return 0;
    const double r = nearbyint(v);
    return r <= (double)lo ? (double)lo : r >= (double)hi ? (double)hi : r;
  }
  }
}

double tt_wrap(pld_dtype dt, int64_t v) {
  int64_t lo, hi;
  int_range(dt, &lo, &hi);
  const uint64_t span = (uint64_t)(hi - lo) + 1;
  const uint64_t off = ((uint64_t)v - (uint64_t)lo) % span;
  return (double)lo + (double)off;
}

int tt_is_float(pld_dtype dt) {
  return dt == PLD_FP32 || dt == PLD_FP16 || dt == PLD_BF16;
}

int tt_same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

double tt_ulps(pld_dtype dt, double a, double b) {
  if (tt_same(a, b))
    return 0;
  if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
    return INFINITY;
  const int bits = dt == PLD_FP16 ? 11 : dt == PLD_BF16 ? 8 : 24;
  const int emin = dt == PLD_FP16 ? -14 : -126;
  const double m = fmax(fabs(a), fabs(b));
  int e;
  frexp(m, &e);
  const int exp = e - 1 < emin ? emin : e - 1;
  return fabs(a - b) / ldexp(1.0, exp - (bits - 1));
}
