/* Tile memory, loads and stores, element access, and the failure rules
 * (messages, sticky status). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_main.h"
#include "tile_test.h"
#include "tile_tests.h"

/* ---- allocation ---------------------------------------------------------- */

void test_tile_new_pads_rows(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_tile_new(k, PLD_FP32, 3, 37);
  pld_tile *b = pld_tile_new(k, PLD_INT8, 1, 1);
  pld_tile *h = pld_tile_new(k, PLD_FP16, 2, 16);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(h);
  assert_int_equal(pld_tile_rows(a), 3);
  assert_int_equal(pld_tile_cols(a), 37);
  assert_int_equal(pld_tile_dtype(a), PLD_FP32);
  /* 37 * 4 = 148 bytes per row, padded to 160. */
  assert_int_equal(pld_tile_bytes(a), 3 * 160);
  assert_int_equal(pld_tile_bytes(b), 32);
  assert_int_equal(pld_tile_bytes(h), 2 * 32);
  assert_int_equal(k.p->used, 3 * 160 + 32 + 64);
  /* Tiles pack on the 32-byte granule: b right after a's 480 bytes, h
   * after b's 32. */
  assert_ptr_equal(a->data, c.mem);
  assert_ptr_equal(b->data, c.mem + 480);
  assert_ptr_equal(h->data, c.mem + 512);
  assert_int_equal(pld_tile_rows(NULL), 0);
  assert_int_equal(pld_tile_bytes(NULL), 0);
  assert_int_equal(pld_tile_dtype(NULL), PLD_DTYPE_COUNT);
  assert_int_equal(k.p->status, PLD_OK);
  tt_core_release(&c);
}

void test_tile_first_fit_reuses_gap(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *a = pld_tile_new(k, PLD_FP32, 16, 16); /* 1024 bytes */
  pld_tile *b = pld_tile_new(k, PLD_FP32, 32, 16); /* 2048 */
  pld_tile *t = pld_tile_new(k, PLD_FP32, 16, 16);
  assert_non_null(t);
  assert_ptr_equal(t->data, c.mem + 3072);
  pld_tile_free(k, b);
  assert_int_equal(k.p->used, 2048);
  /* Smaller tiles fill the gap b left from its start, one after the
   * other on 32-byte boundaries; a larger one goes past t. */
  pld_tile *d = pld_tile_new(k, PLD_INT8, 5, 32); /* 160 */
  pld_tile *f = pld_tile_new(k, PLD_INT8, 1, 1);  /* 32 */
  assert_ptr_equal(d->data, c.mem + 1024);
  assert_ptr_equal(f->data, c.mem + 1184);
  pld_tile *e = pld_tile_new(k, PLD_FP32, 48, 16); /* 3072 > 1856 left */
  assert_ptr_equal(e->data, c.mem + 4096);
  /* What is left of the gap, exactly, still takes a tile. */
  pld_tile *g = pld_tile_new(k, PLD_INT8, 58, 32); /* 1856 */
  assert_ptr_equal(g->data, c.mem + 1216);
  pld_tile *all[] = {a, t, d, f, e, g};
  tt_assert_tile_layout(k, all, 6);
  assert_int_equal(k.p->status, PLD_OK);
  tt_core_release(&c);
}

void test_tile_over_capacity(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  assert_null(pld_tile_new(k, PLD_FP32, 256, 256));
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_tile_new", "kernel k",
                   "tile memory over capacity", "FP32[256, 256]",
                   "262144 bytes", "0 of 196608 bytes",
                   "AIV core Unified Buffer", NULL);
  tt_core_release(&c);
}

void test_tile_capacity_exact_fit(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *all = pld_tile_new(k, PLD_FP32, 192, 256); /* 196608 bytes */
  assert_non_null(all);
  pld_tile_free(k, all);
  assert_non_null(pld_tile_new(k, PLD_UINT8, 6144, 32));
  assert_null(pld_full(k, PLD_UINT8, 1, 1, 0));
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_full", "UINT8[1, 1]",
                   "needs 32 bytes", "196608 of 196608 bytes", NULL);
  tt_core_release(&c);
}

void test_tile_fragmented(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *t[6];
  for (int i = 0; i < 6; i++)
    t[i] = pld_tile_new(k, PLD_FP32, 32, 256); /* 32 KiB each */
  for (int i = 0; i < 6; i += 2)
    pld_tile_free(k, t[i]);
  /* 96 KiB are free, but no gap is larger than 32 KiB. */
  assert_null(pld_tile_new(k, PLD_FP32, 64, 256));
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "65536 bytes",
                   "98304 of 196608 bytes", "fragmented",
                   "a tile needs one contiguous gap",
                   "largest free gap is 32768 bytes", NULL);

  /* Gaps count to the granule: freed, a 32 KiB tile and the 32-byte one
   * after it leave a 32800-byte gap, and another 32-byte tile freed
   * elsewhere makes 32832 bytes free, which a tile of that size does not
   * fit. */
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  pld_tile *big = pld_tile_new(k, PLD_FP32, 32, 256);   /* at 0 */
  pld_tile *small = pld_tile_new(k, PLD_INT8, 1, 1);    /* at 32768 */
  assert_non_null(pld_tile_new(k, PLD_FP32, 32, 256));  /* at 32800 */
  pld_tile *hole = pld_tile_new(k, PLD_INT8, 1, 1);     /* at 65568 */
  assert_non_null(pld_tile_new(k, PLD_INT8, 4094, 32)); /* the rest */
  assert_int_equal(k.p->used, 196608);
  pld_tile_free(k, big);
  pld_tile_free(k, small);
  pld_tile_free(k, hole);
  assert_null(pld_tile_new(k, PLD_INT8, 1026, 32));
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "needs 32832 bytes",
                   "163776 of 196608 bytes", "fragmented",
                   "largest free gap is 32800 bytes", NULL);
  tt_core_release(&c);
}

/* The a5sim Unified Buffer (256 KiB) takes six FP32 [1365, 8] tiles of
 * 43680 bytes, 262080 in all, with 64 bytes to spare; then exactly what is
 * left; then nothing. */
void test_tile_a5sim_six_tiles_fit(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_platform_core(&c, "a5sim", PLD_CORE_VECTOR);
  assert_int_equal(c.spec.capacity, 262144);
  pld_tile *t[7];
  for (int i = 0; i < 6; i++) {
    t[i] = pld_tile_new(k, PLD_FP32, 1365, 8);
    if (!t[i])
      fail_msg("tile %d: %s", i, c.msg);
    assert_int_equal(pld_tile_bytes(t[i]), 43680);
    assert_ptr_equal(t[i]->data, c.mem + (size_t)i * 43680);
  }
  assert_int_equal(c.used, 262080);
  t[6] = pld_full(k, PLD_FP32, 2, 8, 1.0); /* the last 64 bytes */
  assert_non_null(t[6]);
  assert_ptr_equal(t[6]->data, c.mem + 262080);
  assert_int_equal(c.used, 262144);
  tt_assert_tile_layout(k, t, 7);
  assert_null(pld_tile_new(k, PLD_INT8, 1, 1));
  tt_assert_failed(
      k, PLD_ERR_TILE_MEMORY, "pld_tile_new", "INT8[1, 1] tile needs 32 bytes",
      "262144 of 262144 bytes of the AIV core Unified Buffer", NULL);
  tt_core_release(&c);
}

/* Five of those tiles leave 43744 bytes: a tile of exactly that fits, one
 * granule more does not, and the message says memory is short, not
 * fragmented. */
void test_tile_one_granule_over(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_platform_core(&c, "a5sim", PLD_CORE_VECTOR);
  for (int over = 0; over < 2; over++) {
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    for (int i = 0; i < 5; i++)
      assert_non_null(pld_tile_new(k, PLD_FP32, 1365, 8));
    pld_tile *last = pld_tile_new(k, PLD_FP32, over ? 1368 : 1367, 8);
    if (!over) {
      assert_non_null(last);
      assert_int_equal(pld_tile_bytes(last), 43744);
      assert_int_equal(c.used, 262144);
      continue;
    }
    assert_null(last);
    tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_tile_new",
                     "tile memory over capacity: FP32[1368, 8] tile needs "
                     "43776 bytes; 218400 of 262144 bytes of the AIV core "
                     "Unified Buffer in use",
                     NULL);
    assert_null(strstr(c.msg, "fragmented"));
    assert_int_equal(c.used, 218400);
  }
  tt_core_release(&c);
}

/* A core holds as many tiles as its capacity has 32-byte granules, back
 * to back (twice: the second time from freed descriptors only); freed ones
 * are reused in place while the others keep their address and data; one
 * more than fits fails for lack of memory alone. */
static void fill_with_granules(pld_core_type type, size_t n, const char *full) {
  struct pld__core c;
  pld_core k = type == PLD_CORE_CUBE ? tt_cube_core(&c) : tt_vector_core(&c);
  assert_int_equal(c.spec.capacity, n * 32);
  pld_tile **t = test_malloc(n * sizeof *t);
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < n; i++) {
      t[i] = pld_tile_new(k, PLD_INT8, 1, 32);
      if (!t[i])
        fail_msg("round %d, tile %zu of %zu: %s", round, i, n, c.msg);
      assert_ptr_equal(t[i]->data, c.mem + 32 * i);
      memset(t[i]->data, (int)(i % 251), 32);
    }
    assert_int_equal(c.used, n * 32);
    tt_assert_tile_layout(k, t, n);
    for (size_t i = 0; round == 0 && i < n; i++)
      pld_tile_free(k, t[i]);
  }
  pld_tile_free(k, t[1000]);
  pld_tile_free(k, t[1001]);
  pld_tile *two = pld_tile_new(k, PLD_INT16, 2, 16);
  assert_ptr_equal(two->data, c.mem + 32000);
  for (size_t i = 0; i < n; i++)
    if (i != 1000 && i != 1001 &&
        (t[i]->data[0] != i % 251 || t[i]->data[31] != i % 251))
      fail_msg("tile %zu moved or was overwritten", i);
  assert_null(pld_full(k, PLD_UINT8, 1, 1, 0.0));
  tt_assert_failed(k, PLD_ERR_TILE_MEMORY, "pld_full",
                   "tile memory over capacity: UINT8[1, 1] tile needs 32 "
                   "bytes",
                   full, NULL);
  assert_null(strstr(c.msg, "fragmented"));
  test_free(t);
  tt_core_release(&c);
}

void test_tile_count_bound_by_capacity_only(void **state) {
  (void)state;
  fill_with_granules(PLD_CORE_VECTOR, 6144,
                     "196608 of 196608 bytes of the AIV core Unified Buffer");
  fill_with_granules(PLD_CORE_CUBE, 16384,
                     "524288 of 524288 bytes of the AIC core L1");
}

/* Random allocations and frees against a first-fit model written here:
 * every tile lands where the model puts it, starts on 32 bytes and
 * overlaps no other, and an allocation fails exactly when the model finds
 * no gap. */
struct model_tile {
  pld_tile *t;
  size_t offset, bytes;
};

static int by_offset(const void *a, const void *b) {
  const size_t x = ((const struct model_tile *)a)->offset;
  const size_t y = ((const struct model_tile *)b)->offset;
  return (x > y) - (x < y);
}

/* The lowest offset where bytes fit between the n live tiles (sorted
 * here), or capacity if none. */
static size_t model_first_fit(struct model_tile *live, size_t n,
                              size_t capacity, size_t bytes) {
  qsort(live, n, sizeof *live, by_offset);
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    if (live[i].offset - pos >= bytes)
      return pos;
    pos = live[i].offset + live[i].bytes;
  }
  return capacity - pos >= bytes ? pos : capacity;
}

void test_tile_first_fit_model(void **state) {
  (void)state;
  enum { MAXLIVE = 512, CAP = 196608 };
  struct model_tile live[MAXLIVE];
  pld_tile *ptrs[MAXLIVE];
  uint64_t seed = 7;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  size_t n = 0, placed = 0, refused = 0;
  for (int step = 0; step < 20000; step++) {
    const uint64_t r = tt_rand(&seed);
    if (n > 0 && (r % 5 < 2 || n == MAXLIVE)) {
      const size_t i = (size_t)(r >> 8) % n;
      pld_tile_free(k, live[i].t);
      live[i] = live[--n];
      continue;
    }
    const pld_dtype dt = tt_tile_dtypes[(r >> 8) % 7];
    const int32_t rows = 1 + (int32_t)((r >> 16) % 64);
    const int32_t cols = 1 + (int32_t)((r >> 24) % 200);
    const size_t row = ((size_t)cols * pld_dtype_size(dt) + 31) / 32 * 32;
    const size_t bytes = (size_t)rows * row;
    const size_t want = model_first_fit(live, n, CAP, bytes);
    pld_tile *t = pld_tile_new(k, dt, rows, cols);
    if (want == CAP) {
      if (t)
        fail_msg("step %d: %zu bytes placed at %zu, the model finds no gap",
                 step, bytes, (size_t)(t->data - c.mem));
      tt_assert_failed(k, PLD_ERR_TILE_MEMORY, NULL);
      refused++;
      /* A new block: everything is free again. */
      pld__core_begin(&c, "k", 0, 0, 0, 1);
      n = 0;
      continue;
    }
    if (!t)
      fail_msg("step %d: %zu bytes refused, the model fits them at %zu: %s",
               step, bytes, want, c.msg);
    assert_int_equal(pld_tile_bytes(t), bytes);
    assert_ptr_equal(t->data, c.mem + want);
    live[n++] = (struct model_tile){t, want, bytes};
    placed++;
    for (size_t i = 0; i < n; i++)
      ptrs[i] = live[i].t;
    tt_assert_tile_layout(k, ptrs, n);
  }
  /* Both outcomes happened many times. */
  assert_true(placed > 1000);
  assert_true(refused > 20);
  tt_core_release(&c);
}

/* Starting a block frees every tile of the last one: blocks that never
 * free use up neither memory nor descriptors, and a tile kept from an
 * earlier block is refused. */
void test_tile_dead_after_block(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile *old = NULL;
  for (int block = 0; block < 100000; block++) {
    pld__core_begin(&c, "k", 0, 0, block, 100000);
    for (int i = 0; i < 6; i++)
      if (!(old = pld_tile_new(k, PLD_FP32, 64, 128))) /* 32 KiB: 6 fill */
        fail_msg("block %d, tile %d: %s", block, i, c.msg);
  }
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_int_equal(c.used, 0);
  /* The new block's one tile takes the first descriptor, not old's. */
  pld_tile *t = pld_full(k, PLD_FP32, 4, 4, 2.0);
  assert_ptr_equal(t->data, c.mem);
  assert_ptr_not_equal(t, old);
  assert_int_equal(pld_fill(k, old, 0.0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_fill",
                   "dst: the tile was freed (pld_tile_free) or belongs to an "
                   "earlier block",
                   NULL);
  tt_core_release(&c);
}

void test_tile_bad_shape_and_dtype(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  assert_null(pld_tile_new(k, PLD_FP32, 0, 8));
  tt_assert_failed(k, PLD_ERR_ARG, "shape", "got [0, 8]", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_null(pld_tile_new(k, PLD_DTYPE_COUNT, 8, 8));
  tt_assert_failed(k, PLD_ERR_ARG, "pld_tile_new",
                   "dtype: expected a pld_dtype, got", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_null(pld_tile_new(k, (pld_dtype)-1, 8, 8));
  tt_assert_failed(k, PLD_ERR_ARG, "dtype: expected a pld_dtype, got -1", NULL);
  tt_core_release(&c);
}

/* INT64, FP64 and BOOL tiles move data: loaded, stored, filled and freed
 * bit for bit (8-byte elements pad a 5-column row to 64 bytes); every
 * operation that computes on them fails with PLD_ERR_UNSUPPORTED (but
 * pld_cast of a BOOL mask, test_route.c's). */
void test_tile_movement_only_dtypes(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  const pld_dtype dts[] = {PLD_INT64, PLD_FP64, PLD_BOOL};
  for (size_t d = 0; d < 3; d++) {
    const pld_dtype dt = dts[d];
    const size_t es = pld_dtype_size(dt);
    pld_tensor x = tt_tensor(dt, 3, 5, PLD_DIR_IN, "x");
    pld_tensor y = tt_tensor(dt, 3, 5, PLD_DIR_OUT, "y");
    unsigned char *xd = pld_tensor_data(x);
    for (size_t i = 0; i < 15 * es; i++)
      xd[i] = (unsigned char)(dt == PLD_BOOL ? i % 2 : i * 37 + 11);
    pld_tile *t = pld_load(k, x, 0, 0, 3, 5);
    assert_non_null(t);
    assert_int_equal(pld_tile_dtype(t), dt);
    assert_int_equal(pld_tile_bytes(t), 3 * (es == 8 ? 64 : 32));
    assert_int_equal(pld_store(k, t, y, 0, 0), PLD_OK);
    assert_memory_equal(pld_tensor_data(y), xd, 15 * es);
    /* A 1 x 2 tile loaded into, at (2, 3): the last two elements. */
    pld_tile *u = pld_tile_new(k, dt, 1, 2);
    assert_non_null(u);
    assert_int_equal(pld_load_into(k, u, x, 2, 3), PLD_OK);
    assert_int_equal(pld_fill(k, t, 1.0), PLD_OK);
    assert_int_equal(pld_store(k, t, y, 0, 0), PLD_OK);
    assert_int_equal(pld_store(k, u, y, 0, 0), PLD_OK);
    const unsigned char *yd = pld_tensor_data(y);
    assert_memory_equal(yd, xd + 13 * es, 2 * es);
    for (size_t i = 2; i < 15; i++)
      assert_true(tt_get(y, i) == 1.0);
    char what[64];
    snprintf(what, sizeof what, "a is %s[3, 5]", pld_dtype_name(dt));
    assert_int_equal(pld_add(k, t, t, t), PLD_ERR_UNSUPPORTED);
    tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_add", "dst is",
                     "tiles compute on FP32, FP16, BF16, INT32, INT16, INT8 "
                     "and UINT8",
                     "tiles only move data", NULL);
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    t = pld_load(k, x, 0, 0, 3, 5);
    pld_tile *f = pld_tile_new(k, PLD_FP32, 3, 5);
    /* A BOOL tile is a mask, which pld_cast turns into 0 and 1. */
    if (dt == PLD_BOOL) {
      assert_int_equal(pld_cast(k, f, t), PLD_OK);
    } else {
      assert_int_equal(pld_cast(k, f, t), PLD_ERR_UNSUPPORTED);
      tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_cast", what, NULL);
    }
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    t = pld_load(k, x, 0, 0, 3, 5);
    pld_tile *v = pld_tile_new(k, dt, 3, 1);
    assert_int_equal(pld_row_sum(k, v, t), PLD_ERR_UNSUPPORTED);
    tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_row_sum", NULL);
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    t = pld_load(k, x, 0, 0, 3, 5);
    assert_int_equal(pld_exp(k, t, t), PLD_ERR_UNSUPPORTED);
    tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_exp", NULL);
    pld__core_begin(&c, "k", 0, 0, 0, 1);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
  tt_core_release(&c);
  struct pld__core cc;
  k = tt_cube_core(&cc);
  pld_tile *a = pld_full(k, PLD_FP64, 2, 2, 1.0);
  pld_tile *b = pld_full(k, PLD_FP64, 2, 2, 1.0);
  pld_tile *o = pld_full(k, PLD_FP64, 2, 2, 0.0);
  assert_non_null(o);
  assert_int_equal(pld_matmul(k, o, a, b), PLD_ERR_UNSUPPORTED);
  tt_assert_failed(k, PLD_ERR_UNSUPPORTED, "pld_matmul", "c is FP64[2, 2]",
                   NULL);
  tt_core_release(&cc);
}

void test_tile_free_rules(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tile_free(k, NULL);
  pld_tile *a = pld_full(k, PLD_FP32, 4, 4, 1.0);
  pld_tile *b = pld_full(k, PLD_FP32, 4, 4, 2.0);
  pld_tile_free(k, a);
  assert_int_equal(k.p->status, PLD_OK);
  /* Use after free, then double free after the failure is a no-op. */
  assert_int_equal(pld_add(k, b, a, b), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_add", "a: the tile was freed", NULL);
  pld_tile_free(k, a);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_add", NULL);
  /* Freeing a live tile still works after a failure. */
  pld_tile_free(k, b);
  assert_int_equal(k.p->used, 0);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  pld_tile *d = pld_full(k, PLD_FP32, 4, 4, 1.0);
  pld_tile_free(k, d);
  pld_tile_free(k, d);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_tile_free", "freed", NULL);
  tt_core_release(&c);
}

void test_tile_of_another_core(void **state) {
  (void)state;
  struct pld__core c1, c2;
  pld_core k1 = tt_vector_core(&c1), k2 = tt_vector_core(&c2);
  pld_tile *a = pld_full(k1, PLD_FP32, 2, 2, 1.0);
  pld_tile *b = pld_full(k2, PLD_FP32, 2, 2, 1.0);
  assert_int_equal(pld_add(k2, b, a, b), PLD_ERR_ARG);
  tt_assert_failed(k2, PLD_ERR_ARG, "a: not a tile of this core", NULL);
  assert_int_equal(pld_neg(k1, NULL, a), PLD_ERR_ARG);
  tt_assert_failed(k1, PLD_ERR_ARG, "dst: expected a tile, got NULL", NULL);
  /* Inside this core's descriptors but not at one; past them; at one not
   * in use. */
  pld_tile *inside = (pld_tile *)(void *)((unsigned char *)b + 8);
  pld_tile *past = c2.tiles + c2.tiles_max;
  pld_tile *unused = b + 1;
  pld_tile *bad[] = {inside, past, unused};
  const char *why[] = {"dst: not a tile of this core",
                       "dst: not a tile of this core",
                       "dst: the tile was freed"};
  for (int i = 0; i < 3; i++) {
    pld__core_begin(&c2, "k", 0, 0, 0, 1);
    b = pld_full(k2, PLD_FP32, 2, 2, 1.0);
    assert_ptr_equal(b, c2.tiles);
    assert_int_equal(pld_fill(k2, bad[i], 0.0), PLD_ERR_ARG);
    tt_assert_failed(k2, PLD_ERR_ARG, "pld_fill", why[i], NULL);
  }
  tt_core_release(&c1);
  tt_core_release(&c2);
}

void test_sticky_first_failure(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 8, 8, PLD_DIR_IN, "x");
  pld_tile *a = pld_full(k, PLD_FP32, 8, 16, 1.0);
  pld_tile *b = pld_full(k, PLD_FP32, 8, 8, 2.0);
  assert_int_equal(pld_add(k, a, b, b), PLD_ERR_ARG);
  char first[sizeof c.msg];
  strcpy(first, c.msg);
  assert_non_null(strstr(first, "shapes must match"));
  /* Every later call does nothing and returns the first status. */
  assert_null(pld_load(k, x, 100, 0, 1, 1));
  assert_null(pld_tile_new(k, PLD_FP32, 1, 1));
  assert_null(pld_full(k, PLD_FP32, 1, 1, 5.0));
  assert_int_equal(pld_store(k, b, x, 0, 0), PLD_ERR_ARG);
  assert_int_equal(pld_fill(k, b, 7.0), PLD_ERR_ARG);
  assert_int_equal(pld_muls(k, b, b, 3.0), PLD_ERR_ARG);
  assert_int_equal(pld_matmul(k, a, a, a), PLD_ERR_ARG);
  assert_true(pld_read(k, x, PLD_AT(0, 0)) == 0.0);
  assert_int_equal(pld_write(k, x, PLD_AT(0, 0), 1.0), PLD_ERR_ARG);
  assert_string_equal(c.msg, first);
  /* b is untouched by the calls that did nothing (read directly: a store
   * would do nothing either). */
  for (int i = 0; i < 8; i++)
    assert_true(((const float *)(b->data + (size_t)i * b->row_bytes))[i] ==
                2.0f);
  /* The next block starts clean. */
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_non_null(pld_tile_new(k, PLD_FP32, 8, 16));
  assert_int_equal(k.p->status, PLD_OK);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

/* ---- loads and stores ---------------------------------------------------- */

void test_load_store_region_all_dtypes(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor x = tt_tensor(dt, 7, 45, PLD_DIR_IN, "x");
    pld_tensor y = tt_tensor(dt, 9, 50, PLD_DIR_OUT, "y");
    tt_fill_random(x, &seed);
    /* rows [2, 6) cols [3, 40) of x to rows [5, 9) cols [10, 47) of y. */
    pld_tile *t = pld_load(k, x, 2, 3, 4, 37);
    assert_non_null(t);
    assert_int_equal(pld_tile_dtype(t), dt);
    assert_int_equal(pld_store(k, t, y, 5, 10), PLD_OK);
    for (size_t r = 0; r < 9; r++)
      for (size_t j = 0; j < 50; j++) {
        const int inside = r >= 5 && j >= 10 && j < 47;
        const double want = inside ? tt_get(x, (r - 3) * 45 + j - 7) : 0.0;
        if (!tt_same(tt_get(y, r * 50 + j), want))
          fail_msg("%s y[%zu, %zu] = %g, want %g", pld_dtype_name(dt), r, j,
                   tt_get(y, r * 50 + j), want);
      }
    /* The whole tensor (one flat copy) and load_into. */
    pld_tile *all = tt_load(k, x);
    pld_tensor z = tt_tensor(dt, 7, 45, PLD_DIR_INOUT, "z");
    tt_store(k, all, z);
    assert_memory_equal(z.p->data, x.p->data, z.p->nbytes);
    pld_tile *part = pld_tile_new(k, dt, 2, 5);
    assert_int_equal(pld_load_into(k, part, x, 5, 40), PLD_OK);
    assert_int_equal(pld_store(k, part, z, 0, 0), PLD_OK);
    for (size_t r = 0; r < 2; r++)
      for (size_t j = 0; j < 5; j++)
        assert_true(
            tt_same(tt_get(z, r * 45 + j), tt_get(x, (5 + r) * 45 + 40 + j)));
    assert_int_equal(k.p->status, PLD_OK);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(z);
    tt_core_release(&c);
  }
}

void test_load_sees_tensor_as_matrix(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x;
  const int64_t shape[3] = {2, 3, 8};
  assert_int_equal(pld_tensor_create(PLD_INT32, 3, shape, &x), PLD_OK);
  x.p->flags |= PLD__T_DEVICE;
  x.p->name = "x";
  for (size_t i = 0; i < 48; i++)
    tt_set(x, i, (double)i);
  /* [2, 3, 8] is a [6, 8] matrix: rows 4 and 5 are x[1][1] and x[1][2]. */
  pld_tile *t = pld_load(k, x, 4, 0, 2, 8);
  pld_tensor y = tt_tensor(PLD_INT32, 2, 8, PLD_DIR_OUT, "y");
  tt_store(k, t, y);
  for (size_t i = 0; i < 16; i++)
    assert_true(tt_get(y, i) == (double)(32 + i));
  assert_null(pld_load(k, x, 5, 0, 2, 8));
  tt_assert_failed(k, PLD_ERR_BOUNDS, "rows [5, 7) cols [0, 8)",
                   "tensor 'x' INT32[2, 3, 8]", "[6, 8] matrix", NULL);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  tt_core_release(&c);
}

void test_load_store_out_of_bounds(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 8, 8, PLD_DIR_INOUT, "x");
  assert_null(pld_load(k, x, 6, 0, 4, 8));
  tt_assert_failed(k, PLD_ERR_BOUNDS, "pld_load", "kernel k",
                   "rows [6, 10) cols [0, 8)", "tensor 'x' FP32[8, 8]", NULL);
  assert_int_equal(k.p->used, 0);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_null(pld_load(k, x, 0, -1, 1, 1));
  tt_assert_failed(k, PLD_ERR_BOUNDS, "cols [-1, 0)", NULL);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  pld_tile *t = pld_full(k, PLD_FP32, 3, 3, 1.0);
  assert_int_equal(pld_store(k, t, x, 0, 6), PLD_ERR_BOUNDS);
  tt_assert_failed(k, PLD_ERR_BOUNDS, "pld_store", "rows [0, 3) cols [6, 9)",
                   NULL);
  for (size_t i = 0; i < 64; i++)
    assert_true(tt_get(x, i) == 0.0);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  t = pld_full(k, PLD_FP32, 3, 3, 1.0);
  assert_int_equal(pld_load_into(k, t, x, INT64_MAX, 0), PLD_ERR_BOUNDS);
  tt_assert_failed(k, PLD_ERR_BOUNDS, "pld_load_into", NULL);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

void test_store_to_in_tensor(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 4, 4, PLD_DIR_IN, "x");
  pld_tile *t = pld_full(k, PLD_FP32, 4, 4, 1.0);
  assert_int_equal(pld_store(k, t, x, 0, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_store",
                   "tensor 'x' is an In parameter: only Out and InOut "
                   "tensors can be written",
                   NULL);
  assert_true(tt_get(x, 0) == 0.0);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

void test_load_store_dtype_mismatch(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 4, 4, PLD_DIR_OUT, "x");
  pld_tile *t = pld_full(k, PLD_FP16, 4, 4, 1.0);
  assert_int_equal(pld_store(k, t, x, 0, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "t is FP16[4, 4], tensor 'x' is FP32[4, 4]",
                   "dtypes must match", NULL);
  pld__core_begin(&c, "k", 0, 0, 0, 1);
  t = pld_full(k, PLD_INT8, 4, 4, 1.0);
  assert_int_equal(pld_load_into(k, t, x, 0, 0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "dst is INT8[4, 4]", NULL);
  pld_tensor_destroy(x);

  tt_core_release(&c);
}

void test_tensor_without_data(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 4, 4, PLD_DIR_IN, "x");
  x.p->flags |= PLD__T_INVALID;
  assert_null(pld_load(k, x, 0, 0, 1, 1));
  tt_assert_failed(k, PLD_ERR_ARG, "tensor 'x'", "failed call", NULL);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  x.p->flags = PLD__T_TRACE;
  assert_null(pld_load(k, x, 0, 0, 1, 1));
  tt_assert_failed(k, PLD_ERR_ARG, "tensor 'x' has no data", "traced", NULL);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  x.p->flags = PLD__T_DEVICE;
  void *data = x.p->data;
  x.p->data = NULL;
  x.p->name = NULL;
  assert_true(pld_read(k, x, PLD_AT(0, 0)) == 0.0);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_read", "tensor has no data", NULL);
  x.p->data = data;
  x.p->flags |= PLD__T_OWNED;

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_null(pld_load(k, (pld_tensor){NULL}, 0, 0, 1, 1));
  tt_assert_failed(k, PLD_ERR_ARG, "NULL handle", NULL);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

/* ---- pld_read / pld_write ------------------------------------------------ */

void test_read_write_elements(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  static const struct {
    pld_dtype dt;
    double write, want;
  } cases[] = {
      {PLD_FP32, 1.5, 1.5},
      {PLD_FP32, 0.1, (double)0.1f},
      {PLD_FP64, 0.1, 0.1},
      {PLD_FP16, 1.0 + 0x1p-11, 1.0}, /* tie: to even */
      {PLD_FP16, 1.0 + 0x3p-11, 1.0 + 0x1p-9},
      {PLD_FP16, 1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-10}, /* above the tie */
      {PLD_FP16, 65520.0, INFINITY},
      {PLD_BF16, 1.0 + 0x1p-8, 1.0},
      {PLD_BF16, 1.0 + 0x3p-8, 1.0 + 0x1p-6},
      {PLD_INT8, 300.0, 127.0},
      {PLD_INT8, -2.5, -2.0},
      {PLD_UINT8, -3.0, 0.0},
      {PLD_INT32, 3.5, 4.0},
      {PLD_INT32, NAN, 0.0},
      {PLD_INT32, 1e12, 2147483647.0},
      {PLD_INT64, -1e30, -9223372036854775808.0},
      {PLD_BOOL, 0.25, 1.0},
      {PLD_BOOL, 0.0, 0.0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    pld_tensor t = tt_tensor(cases[i].dt, 3, 4, PLD_DIR_OUT, "t");
    assert_int_equal(pld_write(k, t, PLD_AT(2, 1), cases[i].write), PLD_OK);
    const double got = pld_read(k, t, PLD_AT(2, 1));
    if (!tt_same(got, cases[i].want) || !tt_same(tt_get(t, 9), got))
      fail_msg("case %zu: %s write %.17g read %.17g, want %.17g", i,
               pld_dtype_name(cases[i].dt), cases[i].write, got, cases[i].want);
    pld_tensor_destroy(t);
  }
  /* A 1-D and a 3-D tensor. */
  pld_tensor v;
  const int64_t shape[3] = {2, 3, 4};
  assert_int_equal(pld_tensor_create(PLD_INT16, 3, shape, &v), PLD_OK);
  v.p->flags |= PLD__T_DEVICE;
  assert_int_equal(pld_write(k, v, PLD_AT(1, 2, 3), -7.0), PLD_OK);
  assert_true(tt_get(v, 23) == -7.0);
  assert_true(pld_read(k, v, PLD_AT(1, 2, 3)) == -7.0);
  assert_int_equal(k.p->status, PLD_OK);
  pld_tensor_destroy(v);
  tt_core_release(&c);
}

void test_read_write_errors(void **state) {
  (void)state;
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, 8, 8, PLD_DIR_IN, "x");
  assert_true(pld_read(k, x, PLD_AT(1, 2, 3)) == 0.0);
  tt_assert_failed(k, PLD_ERR_BOUNDS, "pld_read",
                   "index has 3 coordinates, tensor 'x' FP32[8, 8] has 2",
                   NULL);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  tt_set(x, 0, 5.0);
  assert_true(pld_read(k, x, PLD_AT(0, 8)) == 0.0);
  tt_assert_failed(k, PLD_ERR_BOUNDS, "index [0, 8] is outside tensor 'x'",
                   NULL);

  pld__core_begin(&c, "k", 0, 0, 0, 1);
  assert_int_equal(pld_write(k, x, PLD_AT(0, 0), 1.0), PLD_ERR_ARG);
  tt_assert_failed(k, PLD_ERR_ARG, "pld_write", "In parameter", NULL);
  assert_true(tt_get(x, 0) == 5.0);
  pld_tensor_destroy(x);
  tt_core_release(&c);
}

/* ---- pld_full / pld_fill ------------------------------------------------- */

void test_full_and_fill_convert(void **state) {
  (void)state;
  static const double values[] = {2.5,   3.5, -2.5, -200.0, 1e10,
                                  65520, 0.1, NAN,  -0.0,   1.0 + 0x1p-11};
  for (int d = 0; d < 7; d++) {
    const pld_dtype dt = tt_tile_dtypes[d];
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor y = tt_tensor(dt, 3, 21, PLD_DIR_OUT, "y");
    for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
      pld_tile *t = v % 2 ? pld_full(k, dt, 3, 21, values[v])
                          : pld_tile_new(k, dt, 3, 21);
      if (v % 2 == 0)
        assert_int_equal(pld_fill(k, t, values[v]), PLD_OK);
      tt_store(k, t, y);
      const double want = tt_cast(dt, values[v]);
      for (size_t i = 0; i < 63; i++)
        if (!tt_same(tt_get(y, i), want))
          fail_msg("%s fill %g: got %g, want %g", pld_dtype_name(dt), values[v],
                   tt_get(y, i), want);
      pld_tile_free(k, t);
    }
    pld_tensor_destroy(y);
    tt_core_release(&c);
  }
}

/* ---- prefetch ----------------------------------------------------------- */

/* A double-buffered sum of the row blocks of x: the next block's prefetch
 * is in flight while the current one is added; the sum is the plain C
 * loop's, bit for bit, and the first prefetched tile holds what pld_load
 * gives. */
void test_prefetch_double_buffered(void **state) {
  (void)state;
  enum { BR = 8, NB = 8, C = 16 };
  struct pld__core c;
  pld_core k = tt_vector_core(&c);
  pld_tensor x = tt_tensor(PLD_FP32, BR * NB, C, PLD_DIR_IN, "x");
  pld_tensor y = tt_tensor(PLD_FP32, BR, C, PLD_DIR_OUT, "y");
  uint64_t seed = 7;
  for (size_t i = 0; i < BR * NB * C; i++)
    tt_set(x, i, (double)(float)((double)(tt_rand(&seed) % 2001) / 8 - 125));
  pld_tile *buf[2] = {pld_tile_new(k, PLD_FP32, BR, C),
                      pld_tile_new(k, PLD_FP32, BR, C)};
  pld_tile *acc = pld_full(k, PLD_FP32, BR, C, 0.0);
  assert_int_equal(pld_prefetch(k, buf[0], x, 0, 0), PLD_OK);
  assert_int_equal(k.p->prefetching, 1);
  for (int b = 0; b < NB; b++) {
    if (b + 1 < NB)
      assert_int_equal(pld_prefetch(k, buf[(b + 1) % 2], x, (b + 1) * BR, 0),
                       PLD_OK);
    assert_int_equal(pld_prefetch_wait(k, buf[b % 2]), PLD_OK);
    if (b == 0) {
      pld_tile *ref = pld_load(k, x, 0, 0, BR, C);
      assert_memory_equal(ref->data, buf[0]->data, pld_tile_bytes(ref));
      pld_tile_free(k, ref);
    }
    assert_int_equal(pld_add(k, acc, acc, buf[b % 2]), PLD_OK);
  }
  assert_int_equal(k.p->prefetching, 0);
  tt_store(k, acc, y);
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y);
  for (int i = 0; i < BR * C; i++) {
    float want = 0.0f;
    for (int b = 0; b < NB; b++)
      want += xs[b * BR * C + i];
    assert_true(ys[i] == want);
  }
  assert_int_equal(k.p->status, PLD_OK);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  tt_core_release(&c);
}

/* A tile in flight is used, stored, freed or prefetched into again before
 * its wait; a wait with none in flight; a prefetch out of bounds (nothing
 * in flight after it). */
void test_prefetch_misuse(void **state) {
  (void)state;
  enum { USE, STORE, FREE, AGAIN, NO_PREFETCH, BOUNDS, NCASES };
  static const char *const want[NCASES][2] = {
      [USE] = {"pld_add", "a: a prefetch into the tile is in flight: wait for "
                          "it (pld_prefetch_wait) before using the tile"},
      [STORE] = {"pld_store", "t: a prefetch into the tile is in flight"},
      [FREE] = {"pld_tile_free", "t: a prefetch into the tile is in flight"},
      [AGAIN] = {"pld_prefetch", "dst: a prefetch into the tile is in flight"},
      [NO_PREFETCH] = {"pld_prefetch_wait",
                       "dst: no prefetch into the tile is in flight (one "
                       "pld_prefetch, one wait)"},
      [BOUNDS] = {"pld_prefetch", "rows [4, 12) cols [0, 16) are outside"},
  };
  for (int i = 0; i < NCASES; i++) {
    struct pld__core c;
    pld_core k = tt_vector_core(&c);
    pld_tensor x = tt_tensor(PLD_FP32, 8, 16, PLD_DIR_IN, "x");
    pld_tensor y = tt_tensor(PLD_FP32, 8, 16, PLD_DIR_OUT, "y");
    pld_tile *t = pld_tile_new(k, PLD_FP32, 8, 16);
    pld_tile *u = pld_tile_new(k, PLD_FP32, 8, 16);
    int st = i == NO_PREFETCH ? PLD_OK
             : i == BOUNDS    ? pld_prefetch(k, t, x, 4, 0)
                              : pld_prefetch(k, t, x, 0, 0);
    assert_int_equal(st, i == BOUNDS ? PLD_ERR_BOUNDS : PLD_OK);
    if (i == USE)
      st = pld_add(k, u, t, u);
    else if (i == STORE)
      st = pld_store(k, t, y, 0, 0);
    else if (i == FREE)
      pld_tile_free(k, t), st = k.p->status;
    else if (i == AGAIN)
      st = pld_prefetch(k, t, x, 0, 0);
    else if (i == NO_PREFETCH)
      st = pld_prefetch_wait(k, t);
    else
      st = k.p->status;
    assert_int_equal(st, i == BOUNDS ? PLD_ERR_BOUNDS : PLD_ERR_ARG);
    tt_assert_failed(k, st, want[i][0], want[i][1], NULL);
    assert_int_equal(k.p->prefetching, i == BOUNDS || i == NO_PREFETCH ? 0 : 1);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    tt_core_release(&c);
  }
}
