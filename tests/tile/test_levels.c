/* What a cube core may do: matmul and data movement (tiles, loads and
 * stores, element access, fill), as the chip's cube cores.  Every other
 * tile operation is refused there with PLD_ERR_LEVEL. */
#include <stdio.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

/* The shapes of an operation's arguments, on tiles of R x C. */
enum { R = 4, C = 8 };
enum kind {
  BINARY,     /* dst, a, b: all R x C */
  SCALAR,     /* dst, a: R x C, and a scalar */
  UNARY,      /* dst, a: R x C */
  CAST,       /* dst FP16, a FP32: R x C */
  ROW_REDUCE, /* dst R x 1, a R x C */
  COL_REDUCE, /* dst 1 x C, a R x C */
  ROW_EXPAND, /* dst R x C, v R x 1 */
  COL_EXPAND, /* dst R x C, v 1 x C */
  CUSTOM      /* a runner of its own, given dst, a and b */
};

/* The routing operations, whose arguments have shapes of their own: each
 * is called with the R x C FP32 dst, a and b of run_op, and makes the
 * other tiles it needs. */
typedef int custom_fn(pld_core, pld_tile *, pld_tile *, pld_tile *);
static pld_tile *mask_of(pld_core k) { return pld_full(k, PLD_BOOL, R, C, 1); }
static pld_tile *ints_of(pld_core k) { return pld_full(k, PLD_INT32, R, C, 5); }
static int run_cmp(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d;
  return pld_cmp(k, pld_tile_new(k, PLD_BOOL, R, C), a, b, PLD_CMP_LT);
}
static int run_cmps(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)b;
  return pld_cmps(k, pld_tile_new(k, PLD_BOOL, R, C), a, 2.5, PLD_CMP_GE);
}
static int run_select(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  return pld_select(k, d, mask_of(k), a, b);
}
static int run_selects(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)b;
  return pld_selects(k, d, mask_of(k), a, 1.0);
}
static int run_argmax(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)b;
  return pld_row_argmax(k, pld_tile_new(k, PLD_INT32, R, 1), a);
}
static int run_argmin(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)b;
  return pld_row_argmin(k, pld_tile_new(k, PLD_INT32, R, 1), a);
}
static int run_topk(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)b;
  return pld_row_topk(k, pld_tile_new(k, PLD_FP32, R, 2),
                      pld_tile_new(k, PLD_INT32, R, 2), a, 2);
}
static int run_row_cumsum(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)b;
  return pld_row_cumsum(k, d, a, 0);
}
static int run_col_cumsum(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)b;
  return pld_col_cumsum(k, d, a, 1);
}
static int run_and(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *i = ints_of(k);
  return pld_and(k, i, i, i);
}
static int run_or(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *m = mask_of(k);
  return pld_or(k, m, m, m);
}
static int run_xor(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *i = ints_of(k);
  return pld_xor(k, i, i, i);
}
static int run_not(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *m = mask_of(k);
  return pld_not(k, m, m);
}
static int run_shls(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *i = ints_of(k);
  return pld_shls(k, i, i, 3);
}
static int run_shrs(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)d, (void)a, (void)b;
  pld_tile *i = ints_of(k);
  return pld_shrs(k, i, i, 3);
}
static int run_iota(pld_core k, pld_tile *d, pld_tile *a, pld_tile *b) {
  (void)a, (void)b;
  return pld_iota(k, d, 0, 8, 1);
}

struct vector_op {
  const char *name;
  enum kind kind;
  tt_binary_fn *binary;
  tt_scalar_fn *scalar;
  tt_unary_fn *unary; /* also casts, reductions and expansions */
  custom_fn *custom;
};

#define BIN(f)                                                                 \
  { #f, BINARY, f, NULL, NULL, NULL }
#define SCA(f)                                                                 \
  { #f, SCALAR, NULL, f, NULL, NULL }
#define UNA(f, kind)                                                           \
  { #f, kind, NULL, NULL, f, NULL }
#define CUS(f, run)                                                            \
  { #f, CUSTOM, NULL, NULL, NULL, run }

/* Every tile operation of pld/tile.h but the allowed calls. */
static const struct vector_op vector_ops[] = {
    BIN(pld_add),
    BIN(pld_sub),
    BIN(pld_mul),
    BIN(pld_div),
    BIN(pld_maximum),
    BIN(pld_minimum),
    SCA(pld_adds),
    SCA(pld_subs),
    SCA(pld_muls),
    SCA(pld_divs),
    SCA(pld_maxs),
    SCA(pld_mins),
    UNA(pld_neg, UNARY),
    UNA(pld_abs, UNARY),
    UNA(pld_relu, UNARY),
    UNA(pld_exp, UNARY),
    UNA(pld_log, UNARY),
    UNA(pld_sqrt, UNARY),
    UNA(pld_rsqrt, UNARY),
    UNA(pld_reciprocal, UNARY),
    UNA(pld_cast, CAST),
    UNA(pld_row_sum, ROW_REDUCE),
    UNA(pld_row_max, ROW_REDUCE),
    UNA(pld_row_min, ROW_REDUCE),
    UNA(pld_col_sum, COL_REDUCE),
    UNA(pld_col_max, COL_REDUCE),
    UNA(pld_col_min, COL_REDUCE),
    UNA(pld_row_expand, ROW_EXPAND),
    UNA(pld_col_expand, COL_EXPAND),
    CUS(pld_cmp, run_cmp),
    CUS(pld_cmps, run_cmps),
    CUS(pld_select, run_select),
    CUS(pld_selects, run_selects),
    CUS(pld_row_argmax, run_argmax),
    CUS(pld_row_argmin, run_argmin),
    CUS(pld_row_topk, run_topk),
    CUS(pld_row_cumsum, run_row_cumsum),
    CUS(pld_col_cumsum, run_col_cumsum),
    BIN(pld_rem),
    SCA(pld_rems),
    CUS(pld_and, run_and),
    CUS(pld_or, run_or),
    CUS(pld_xor, run_xor),
    CUS(pld_not, run_not),
    CUS(pld_shls, run_shls),
    CUS(pld_shrs, run_shrs),
    CUS(pld_iota, run_iota),
};

/* Runs op on valid arguments in a new block of core c; *dst gets the
 * destination, which starts as 7 everywhere. */
static int run_op(struct pld__core *c, const struct vector_op *op,
                  pld_tile **dst) {
  pld_core k = {c};
  pld__core_begin(c, "k", 0, 0, 0, 1);
  const int32_t drows = op->kind == COL_REDUCE ? 1 : R;
  const int32_t dcols = op->kind == ROW_REDUCE ? 1 : C;
  const int32_t arows = op->kind == COL_EXPAND ? 1 : R;
  const int32_t acols = op->kind == ROW_EXPAND ? 1 : C;
  *dst = pld_full(k, op->kind == CAST ? PLD_FP16 : PLD_FP32, drows, dcols, 7.0);
  pld_tile *a = pld_full(k, PLD_FP32, arows, acols, 2.0);
  pld_tile *b = pld_full(k, PLD_FP32, arows, acols, 3.0);
  assert_int_equal(c->status, PLD_OK);
  switch (op->kind) {
  case BINARY:
    return op->binary(k, *dst, a, b);
  case SCALAR:
    return op->scalar(k, *dst, a, 3.0);
  case CUSTOM:
    return op->custom(k, *dst, a, b);
  default:
    return op->unary(k, *dst, a);
  }
}

/* Every element of t (FP32 or FP16) is 7: a refused op wrote nothing. */
static int holds_seven(const pld_tile *t) {
  const size_t es = pld_dtype_size(t->dtype);
  for (size_t r = 0; r < (size_t)t->rows; r++)
    for (size_t j = 0; j < (size_t)t->cols; j++) {
      const unsigned char *e = t->data + r * t->row_bytes + j * es;
      float f;
      uint16_t h;
      memcpy(&f, e, sizeof f);
      memcpy(&h, e, sizeof h);
      if (t->dtype == PLD_FP32 ? f != 7.0f : h != 0x4700) /* FP16 7 */
        return 0;
    }
  return 1;
}

void test_cube_core_refuses_vector_ops(void **state) {
  (void)state;
  struct pld__core vc, cc;
  tt_vector_core(&vc);
  tt_cube_core(&cc);
  for (size_t i = 0; i < sizeof vector_ops / sizeof *vector_ops; i++) {
    const struct vector_op *op = &vector_ops[i];
    pld_tile *dst;
    /* The arguments are right: a vector core runs the op. */
    if (run_op(&vc, op, &dst) != PLD_OK)
      fail_msg("%s on a vector core: %s", op->name, vc.msg);
    assert_int_equal(run_op(&cc, op, &dst), PLD_ERR_LEVEL);
    char want[256];
    snprintf(want, sizeof want,
             "%s: kernel k (rank 0, device 0, AIC core 0, block 0 of 1): "
             "runs on vector cores (PLD_KERNEL); a cube core "
             "(PLD_CUBE_KERNEL) does matmul and data movement only",
             op->name);
    assert_string_equal(cc.msg, want);
    if (!holds_seven(dst))
      fail_msg("%s on a cube core wrote dst", op->name);
  }
  /* The level is checked first: whatever the arguments are, the op is the
   * mistake. */
  pld__core_begin(&cc, "k", 0, 0, 0, 1);
  assert_int_equal(pld_relu((pld_core){&cc}, NULL, NULL), PLD_ERR_LEVEL);
  tt_assert_failed((pld_core){&cc}, PLD_ERR_LEVEL, "pld_relu: kernel k",
                   "AIC core 0", "PLD_CUBE_KERNEL", NULL);
  tt_core_release(&vc);
  tt_core_release(&cc);
}

/* The table above is every operation pld/tile.h declares but the calls a
 * cube core may make, so a new operation cannot miss the level check
 * unnoticed. */
void test_vector_op_table_is_complete(void **state) {
  (void)state;
  static const char *const allowed[] = {
      "pld_tile_new",     "pld_full",   "pld_tile_free",  "pld_load",
      "pld_load_into",    "pld_store",  "pld_load_rows",  "pld_store_rows",
      "pld_fill",         "pld_matmul", "pld_matmul_acc", "pld_prefetch",
      "pld_prefetch_wait"};
  FILE *f = fopen(PLD_TILE_HEADER, "r");
  assert_non_null(f);
  static char text[64 * 1024];
  const size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  assert_true(len > 0 && len < sizeof text - 1); /* read whole */
  text[len] = '\0';
  size_t vector_only = 0;
  /* Every function taking the kernel's core: "pld_name(pld_core k". */
  for (const char *p = strstr(text, "(pld_core k"); p;
       p = strstr(p + 1, "(pld_core k")) {
    const char *name = p;
    while (name > text &&
           (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))
      name--;
    const size_t n = (size_t)(p - name);
    int found = 0;
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
      found |= strlen(allowed[i]) == n && !strncmp(allowed[i], name, n);
    if (found)
      continue;
    for (size_t i = 0; i < sizeof vector_ops / sizeof *vector_ops; i++)
      found |= strlen(vector_ops[i].name) == n &&
               !strncmp(vector_ops[i].name, name, n);
    if (!found)
      fail_msg("%.*s is in pld/tile.h but neither allowed on cube cores "
               "nor in the table of vector-only operations",
               (int)n, name);
    vector_only++;
  }
  assert_int_equal(vector_only, sizeof vector_ops / sizeof *vector_ops);
}

void test_cube_core_allowed_calls(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_cube_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, R, C, PLD_DIR_IN, "x");
  pld_tensor y = tt_tensor(PLD_FP32, R, R, PLD_DIR_OUT, "y");
  for (size_t i = 0; i < R * C; i++)
    tt_set(x, i, (double)i);
  pld_tile *a = pld_load(k, x, 0, 0, R, C);
  pld_tile *b = pld_full(k, PLD_FP32, C, R, 0.5);
  pld_tile *d = pld_tile_new(k, PLD_FP32, R, R);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(d);
  assert_int_equal(pld_tile_rows(b), C);
  assert_int_equal(pld_tile_cols(b), R);
  assert_int_equal(pld_tile_dtype(b), PLD_FP32);
  assert_int_equal(pld_tile_bytes(b), C * 32);
  /* d = 1 + a @ b: row i of x sums to 64i + 28, times 0.5. */
  assert_int_equal(pld_fill(k, d, 1.0), PLD_OK);
  assert_int_equal(pld_matmul_acc(k, d, a, b), PLD_OK);
  assert_int_equal(pld_store(k, d, y, 0, 0), PLD_OK);
  for (size_t i = 0; i < R; i++)
    for (size_t j = 0; j < R; j++)
      assert_true(tt_get(y, i * R + j) ==
                  1.0 + 0.5 * (64.0 * (double)i + 28.0));
  /* d3 = rows 1 to 3 of x @ b. */
  pld_tile *a3 = pld_tile_new(k, PLD_FP32, R - 1, C);
  pld_tile *d3 = pld_tile_new(k, PLD_FP32, R - 1, R);
  assert_int_equal(pld_load_into(k, a3, x, 1, 0), PLD_OK);
  assert_int_equal(pld_matmul(k, d3, a3, b), PLD_OK);
  assert_int_equal(pld_store(k, d3, y, 0, 0), PLD_OK);
  for (size_t i = 0; i < R - 1; i++)
    for (size_t j = 0; j < R; j++)
      assert_true(tt_get(y, i * R + j) == 0.5 * (64.0 * (double)i + 92.0));
  /* Rows by index: y rows 3, 0 = x rows 2, 0 (columns 4 to 7). */
  pld_tile *idx = pld_tile_new(k, PLD_INT32, 2, 1);
  pld_tile *two = pld_tile_new(k, PLD_FP32, 2, R);
  int32_t rows[2] = {2, 0};
  memcpy(idx->data, &rows[0], sizeof rows[0]);
  memcpy(idx->data + idx->row_bytes, &rows[1], sizeof rows[1]);
  assert_int_equal(pld_load_rows(k, two, x, idx, 4), PLD_OK);
  rows[0] = 3;
  memcpy(idx->data, &rows[0], sizeof rows[0]);
  assert_int_equal(pld_store_rows(k, two, y, idx, 0, PLD_ATOMIC_NONE), PLD_OK);
  for (size_t j = 0; j < R; j++) {
    assert_true(tt_get(y, 3 * R + j) == (double)(2 * C + 4 + j));
    assert_true(tt_get(y, j) == (double)(4 + j));
  }
  pld_tile_free(k, two);
  pld_tile_free(k, idx);
  assert_true(pld_read(k, x, PLD_AT(3, 7)) == 31.0);
  assert_int_equal(pld_write(k, y, PLD_AT(3, 3), -5.0), PLD_OK);
  assert_true(tt_get(y, 15) == -5.0);
  pld_tile *tiles[] = {a, b, d, a3, d3};
  for (size_t i = 0; i < 5; i++)
    pld_tile_free(k, tiles[i]);
  assert_int_equal(c.used, 0);
  assert_int_equal(c.status, PLD_OK);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  tt_core_release(&c);
}
