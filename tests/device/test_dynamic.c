/* Sizes decided on the device during the run (pld_segment,
 * pld_segment_window, pld_launch_by): a routing kernel counts the tokens
 * of each expert and packs their rows by expert; then one launch per
 * expert runs on as many blocks as its rows need, over the segment of its
 * rows.  Checked against a plain C reference (a stable sort by expert) on
 * 1 to 4 ranks and both platforms; limits exactly met and one past them;
 * counts below 0 and segments past the tensor's end; zero rows; the
 * checks made when compiling; a run after a refused one. */
#include <stdlib.h>

#include "pld_test.h"
#include "../host/programs.h"

enum { T = 12, H = 8, E = 4, RPB = 2 };
/* ctl: a count the routing kernel overwrites after counting (OVR_ON 1),
 * which and with what. */
enum { OVR_ON, OVR_EXPERT, OVR_VALUE, NCTL };

/* One block: nb[e] = -1 (no block of expert e ran yet), counts[e] = the
 * tokens of expert e, and xs = the rows of x sorted by expert, stably. */
static void route(pld_core k, pld_tensor expert_of, pld_tensor x, pld_tensor xs,
                  pld_tensor counts, pld_tensor nb, pld_tensor ctl) {
  int64_t j = 0;
  for (int e = 0; e < E; e++) {
    int32_t n = 0;
    for (int t = 0; t < T; t++) {
      if ((int)pld_read(k, expert_of, PLD_AT(t)) != e)
        continue;
      pld_tile *row = pld_load(k, x, t, 0, 1, H);
      pld_store(k, row, xs, j++, 0);
      n++;
    }
    pld_write(k, counts, PLD_AT(e), n);
    pld_write(k, nb, PLD_AT(e), -1);
  }
  if (pld_read(k, ctl, PLD_AT(OVR_ON)))
    pld_write(k, counts, PLD_AT((int64_t)pld_read(k, ctl, PLD_AT(OVR_EXPERT))),
              pld_read(k, ctl, PLD_AT(OVR_VALUE)));
}

#define ROUTE_PARAMS(xs_param)                                                 \
  PLD_IN(expert_of, INT32, T), PLD_IN(x, FP32, T, H), xs_param,                \
      PLD_OUT(counts, INT32, E), PLD_OUT(nb, INT32, E),                        \
      PLD_IN(ctl, INT32, NCTL)

PLD_KERNEL(k_route, k, ROUTE_PARAMS(PLD_OUT(xs, FP32, T, H))) {
  route(k, expert_of, x, xs, counts, nb, ctl);
}

PLD_KERNEL(k_route_w, k, ROUTE_PARAMS(PLD_WINDOW(xs, FP32, T, H))) {
  route(k, expert_of, x, pld_local(xs), counts, nb, ctl);
}

PLD_DYNAMIC(R);

/* Block b of expert e: rows [b * RPB, b * RPB + RPB) of its segment,
 * times e + 1; block 0 records the launch's block count. */
static void expert(pld_core k, pld_tensor x, pld_tensor y, pld_tensor nb,
                   int32_t e) {
  const int32_t b = pld_block_idx(k);
  const int64_t rows = pld_tensor_dim(x, 0);
  if (b == 0)
    pld_write(k, nb, PLD_AT(e), pld_block_num(k));
  for (int64_t r = (int64_t)b * RPB; r < rows && r < (int64_t)(b + 1) * RPB;
       r++) {
    pld_tile *row = pld_load(k, x, r, 0, 1, H);
    pld_muls(k, row, row, (double)(e + 1));
    pld_store(k, row, y, r, 0);
  }
}

PLD_KERNEL(k_expert, k, PLD_IN(x, FP32, R, H), PLD_OUT(y, FP32, R, H),
           PLD_OUT(nb, INT32, E), PLD_SCALAR(e, INT32)) {
  expert(k, x, y, nb, e);
}

/* The same, its rows in a window. */
PLD_KERNEL(k_expert_w, k, PLD_WINDOW(x, FP32, R, H), PLD_OUT(y, FP32, R, H),
           PLD_OUT(nb, INT32, E), PLD_SCALAR(e, INT32)) {
  expert(k, pld_local(x), y, nb, e);
}

#define DYN_PARAMS                                                             \
  PLD_IN(expert_of, INT32, T), PLD_IN(x, FP32, T, H), PLD_OUT(y, FP32, T, H),  \
      PLD_OUT(counts, INT32, E), PLD_OUT(nb, INT32, E),                        \
      PLD_IN(ctl, INT32, NCTL), PLD_SCALAR(maxr, INT64),                       \
      PLD_SCALAR(maxb, INT32)

PLD_DEVICE(d_dyn, a, DYN_PARAMS) {
  pld_tensor xs = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(T, H));
  pld_launch(a, k_route, 1, expert_of, x, xs, counts, nb, ctl);
  for (int32_t e = 0; e < E; e++)
    pld_launch_by(a, k_expert, PLD_BLOCKS_BY(counts, e, RPB, maxb),
                  pld_segment(a, xs, counts, e, maxr),
                  pld_segment(a, y, counts, e, maxr), nb, e);
}

PLD_HOST(h_dyn, h, PLD_IN(expert_of, INT32, NR, T), PLD_IN(x, FP32, NR, T, H),
         PLD_OUT(y, FP32, NR, T, H), PLD_OUT(counts, INT32, NR, E),
         PLD_OUT(nb, INT32, NR, E), PLD_IN(ctl, INT32, NCTL),
         PLD_SCALAR(maxr, INT64), PLD_SCALAR(maxb, INT32)) {
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_dyn, r, pld_slice(h, expert_of, r), pld_slice(h, x, r),
                 pld_slice(h, y, r), pld_slice(h, counts, r),
                 pld_slice(h, nb, r), ctl, maxr, maxb);
}

/* The packed rows in a window (as an expert-parallel dispatch leaves
 * them): pld_segment_window. */
PLD_DEVICE(d_dyn_w, a, DYN_PARAMS, PLD_WINDOW(xs, FP32, T, H)) {
  pld_launch(a, k_route_w, 1, expert_of, x, xs, counts, nb, ctl);
  for (int32_t e = 0; e < E; e++)
    pld_launch_by(a, k_expert_w, PLD_BLOCKS_BY(counts, e, RPB, maxb),
                  pld_segment_window(a, xs, counts, e, maxr),
                  pld_segment(a, y, counts, e, maxr), nb, e);
}

PLD_HOST(h_dyn_w, h, PLD_IN(expert_of, INT32, NR, T), PLD_IN(x, FP32, NR, T, H),
         PLD_OUT(y, FP32, NR, T, H), PLD_OUT(counts, INT32, NR, E),
         PLD_OUT(nb, INT32, NR, E), PLD_IN(ctl, INT32, NCTL),
         PLD_SCALAR(maxr, INT64), PLD_SCALAR(maxb, INT32)) {
  pld_window_buf xs = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(T, H));
  for (int32_t r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_dyn_w, r, pld_slice(h, expert_of, r), pld_slice(h, x, r),
                 pld_slice(h, y, r), pld_slice(h, counts, r),
                 pld_slice(h, nb, r), ctl, maxr, maxb,
                 pld_window_view(h, xs, PLD_FP32, PLD_SHAPE(T, H)));
}

static int ids[8];

struct dyn {
  int n;
  pld_tensor expert_of, x, y, counts, nb, ctl;
};

static pld_tensor make(pld_dtype dt, int ndim, const int64_t *shape) {
  pld_tensor t;
  assert_ok(pld_tensor_create(dt, ndim, shape, &t));
  memset(pld_tensor_data(t), 0,
         (size_t)pld_tensor_numel(t) * pld_dtype_size(dt));
  return t;
}

static void dyn_init(struct dyn *d, int n) {
  d->n = n;
  d->expert_of = make(PLD_INT32, 2, (const int64_t[]){n, T});
  d->x = make(PLD_FP32, 3, (const int64_t[]){n, T, H});
  d->y = make(PLD_FP32, 3, (const int64_t[]){n, T, H});
  d->counts = make(PLD_INT32, 2, (const int64_t[]){n, E});
  d->nb = make(PLD_INT32, 2, (const int64_t[]){n, E});
  d->ctl = make(PLD_INT32, 1, (const int64_t[]){NCTL});
}

static void dyn_free(struct dyn *d) {
  pld_tensor_destroy(d->expert_of);
  pld_tensor_destroy(d->x);
  pld_tensor_destroy(d->y);
  pld_tensor_destroy(d->counts);
  pld_tensor_destroy(d->nb);
  pld_tensor_destroy(d->ctl);
}

/* Random experts (seeded) with expert `none` chosen by no token, unless
 * `all` >= 0 (every token to that expert); random x. */
static void dyn_fill(struct dyn *d, unsigned seed, int none, int all) {
  int32_t *eo = pld_tensor_data(d->expert_of);
  float *x = pld_tensor_data(d->x);
  srand(seed);
  for (int i = 0; i < d->n * T; i++) {
    int e = all >= 0 ? all : rand() % E;
    eo[i] = e == none ? (e + 1) % E : e;
  }
  for (int64_t i = 0; i < pld_tensor_numel(d->x); i++)
    x[i] = (float)(rand() % 2001 - 1000) / 64.0f;
  memset(pld_tensor_data(d->ctl), 0, NCTL * sizeof(int32_t));
}

/* The reference: per rank, the tokens sorted by expert (stable), each
 * row times expert + 1; the counts; the blocks each expert ran on (-1:
 * none). */
static void dyn_check(const struct dyn *d) {
  const int32_t *eo = pld_tensor_data(d->expert_of);
  const float *x = pld_tensor_data(d->x), *y = pld_tensor_data(d->y);
  const int32_t *counts = pld_tensor_data(d->counts),
                *nb = pld_tensor_data(d->nb);
  for (int r = 0; r < d->n; r++) {
    int j = 0;
    for (int e = 0; e < E; e++) {
      int n = 0;
      for (int t = 0; t < T; t++) {
        if (eo[r * T + t] != e)
          continue;
        for (int c = 0; c < H; c++) {
          float want =
              x[((size_t)r * T + (size_t)t) * H + (size_t)c] * (float)(e + 1);
          float got = y[((size_t)r * T + (size_t)j) * H + (size_t)c];
          if (got != want) {
            print_error("rank %d expert %d token %d col %d: y %g, want %g\n", r,
                        e, t, c, (double)got, (double)want);
            fail();
          }
        }
        j++, n++;
      }
      assert_int_equal(counts[r * E + e], n);
      assert_int_equal(nb[r * E + e], n ? (n + RPB - 1) / RPB : -1);
    }
  }
}

static void set_override(struct dyn *d, int expert, int value) {
  int32_t *ctl = pld_tensor_data(d->ctl);
  ctl[OVR_ON] = 1;
  ctl[OVR_EXPERT] = expert;
  ctl[OVR_VALUE] = value;
}

#define DYN_ARGS(d, maxr, maxb)                                                \
  PLD_ARGS((d)->expert_of, (d)->x, (d)->y, (d)->counts, (d)->nb, (d)->ctl,     \
           (int64_t)(maxr), (int32_t)(maxb))

/* n ranks: two runs of one prepared program with other routings (the
 * counts are read in each run), an expert without tokens in each. */
static void by_expert(int n, const char *platform) {
  pld_config cfg = test_config(ids, n, 0, 1);
  cfg.platform = platform;
  struct dyn d;
  dyn_init(&d, n);
  dyn_fill(&d, 7u + (unsigned)n, 2, -1);
  pld_program *p;
  assert_ok(pld_compile(h_dyn, &cfg, DYN_ARGS(&d, T, T / RPB), &p));
  for (int run = 0; run < 2; run++) {
    dyn_fill(&d, 100u * (unsigned)run + (unsigned)n, run, -1);
    assert_ok(pld_program_run(p, DYN_ARGS(&d, T, T / RPB)));
    dyn_check(&d);
  }
  pld_program_destroy(p);
  dyn_free(&d);
}

static void test_one_rank(void **s) {
  (void)s;
  by_expert(1, "a2a3sim");
}
static void test_two_ranks(void **s) {
  (void)s;
  by_expert(2, "a5sim");
}
static void test_three_ranks(void **s) {
  (void)s;
  by_expert(3, "a2a3sim");
}
static void test_four_ranks(void **s) {
  (void)s;
  by_expert(4, "a5sim");
}

/* Segments of a window view, 3 ranks: the same results. */
static void test_window_segments(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 3, 0, 1);
  struct dyn d;
  dyn_init(&d, 3);
  dyn_fill(&d, 21, 3, -1);
  assert_ok(pld_run(h_dyn_w, &cfg, DYN_ARGS(&d, T, T / RPB)));
  dyn_check(&d);
  set_override(&d, 2, T);
  assert_fails_with(pld_run(h_dyn_w, &cfg, DYN_ARGS(&d, T, T / RPB)),
                    PLD_ERR_BOUNDS, "pld_segment (rank ",
                    "kernel k_expert_w, parameter 'x': segment 2 of counts");
  dyn_free(&d);
}

/* Every token to expert 1: its segment is all T rows and its launch
 * T / RPB blocks, both exactly at their limits; the other experts run no
 * block. */
static void test_at_the_limits(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 2, 0, 1);
  struct dyn d;
  dyn_init(&d, 2);
  dyn_fill(&d, 3, -1, 1);
  assert_ok(pld_run(h_dyn, &cfg, DYN_ARGS(&d, T, T / RPB)));
  dyn_check(&d);
  dyn_free(&d);
}

/* A count one past max_rows fails the run naming the kernel, the
 * parameter, the counts and the values; the program then runs again. */
static void test_rows_one_past(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 2, 0, 1);
  struct dyn d;
  dyn_init(&d, 2);
  dyn_fill(&d, 5, -1, -1);
  pld_program *p;
  assert_ok(pld_compile(h_dyn, &cfg, DYN_ARGS(&d, 4, T), &p));
  int32_t *eo = pld_tensor_data(d.expert_of);
  for (int i = 0; i < 2 * T; i++) /* 4, 4, 2 and 2 tokens: max_rows met */
    eo[i] = i % T < 8 ? (i % T) / 4 : 2 + (i % T - 8) / 2;
  assert_ok(pld_program_run(p, DYN_ARGS(&d, 4, T)));
  dyn_check(&d);
  set_override(&d, 1, 5);
  assert_fails_with(pld_program_run(p, DYN_ARGS(&d, 4, T)), PLD_ERR_BOUNDS,
                    "pld_segment (rank ",
                    "kernel k_expert, parameter 'x': segment 1 of counts: "
                    "counts[1] = 5 rows, more than max_rows 4");
  memset(pld_tensor_data(d.ctl), 0, NCTL * sizeof(int32_t));
  assert_ok(pld_program_run(p, DYN_ARGS(&d, 4, T)));
  dyn_check(&d);
  pld_program_destroy(p);
  dyn_free(&d);
}

/* Blocks: a count needing max_blocks blocks runs; one row more fails. */
static void test_blocks_one_past(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 3, 0, 1);
  struct dyn d;
  dyn_init(&d, 3);
  int32_t *eo = pld_tensor_data(d.expert_of);
  dyn_fill(&d, 9, -1, -1);
  for (int i = 0; i < 3 * T; i++) /* expert 0: 6 tokens, then 2 each */
    eo[i] = i % T < 6 ? 0 : 1 + (i % T - 6) / 2;
  assert_ok(pld_run(h_dyn, &cfg, DYN_ARGS(&d, T, 3)));
  dyn_check(&d);
  for (int i = 0; i < 3 * T; i++) /* expert 0: 7 tokens: 4 blocks */
    eo[i] = i % T < 7 ? 0 : 1 + (i % T - 7) % 3;
  assert_fails_with(pld_run(h_dyn, &cfg, DYN_ARGS(&d, T, 3)), PLD_ERR_BOUNDS,
                    "pld_launch_by (rank ",
                    "kernel k_expert: counts[0] = 7: "
                    "expected 0 to 6 (at most 3 blocks of 2)");
  dyn_free(&d);
}

/* A count below 0, and segments that end past the tensor's rows. */
static void test_bad_counts(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 2, 0, 1);
  struct dyn d;
  dyn_init(&d, 2);
  dyn_fill(&d, 11, -1, -1);
  set_override(&d, 0, -1);
  assert_fails_with(pld_run(h_dyn, &cfg, DYN_ARGS(&d, T, T)), PLD_ERR_BOUNDS,
                    "pld_segment (rank ",
                    "kernel k_expert, parameter 'x': "
                    "counts[0] = -1: expected a count of 0 or more");
  set_override(&d, 1, T); /* the rows of experts 0 and 1 exceed T */
  assert_fails_with(pld_run(h_dyn, &cfg, DYN_ARGS(&d, T, T)), PLD_ERR_BOUNDS,
                    "pld_segment (rank ",
                    "parameter 'x': segment 1 of counts: rows [",
                    "(counts[1] = 12) end past the tensor's 12 rows");
  dyn_free(&d);
}

/* ---- refused when compiling ---------------------------------------------- */

PLD_DEVICE(d_bad, a, DYN_PARAMS, PLD_SCALAR(mode, INT32)) {
  pld_tensor xs = pld_device_alloc(a, PLD_FP32, PLD_SHAPE(T, H));
  pld_launch(a, k_route, 1, expert_of, x, xs, counts, nb, ctl);
  pld_tensor seg = mode == 0   ? pld_segment(a, xs, counts, E, maxr)
                   : mode == 1 ? pld_segment(a, xs, counts, 0, T + 1)
                   : mode == 2 ? pld_segment(a, xs, x, 0, maxr)
                               : pld_segment(a, xs, counts, 0, maxr);
  pld_blocks_by by = PLD_BLOCKS_BY(counts, 0, mode == 3 ? 0 : RPB,
                                   mode == 4   ? 0
                                   : mode == 5 ? 65536
                                               : maxb);
  pld_launch_by(a, k_expert, by, seg, seg, nb, 0);
}

PLD_HOST(h_bad, h, PLD_IN(expert_of, INT32, T), PLD_IN(x, FP32, T, H),
         PLD_OUT(y, FP32, T, H), PLD_OUT(counts, INT32, E),
         PLD_OUT(nb, INT32, E), PLD_IN(ctl, INT32, NCTL),
         PLD_SCALAR(mode, INT32)) {
  pld_dispatch(h, d_bad, 0, expert_of, x, y, counts, nb, ctl, (int64_t)T,
               (int32_t)(T / RPB), mode);
}

static void test_refused_when_compiling(void **s) {
  (void)s;
  pld_config cfg = test_config(ids, 1, 0, 1);
  struct dyn d;
  dyn_init(&d, 1);
  const struct {
    const char *a, *b;
  } want[] = {
      {"pld_segment (rank 0, device 0, in d_bad): ",
       "index: expected [0, 4) for counts INT32[4], got 4"},
      {"pld_segment (rank 0, device 0, in d_bad): ",
       "max_rows: expected [0, 12] for FP32[12, 8], got 13"},
      {"pld_segment (rank 0, device 0, in d_bad): ",
       "counts: expected a 1-D INT32 tensor, got"},
      {"pld_launch_by (rank 0, device 0, in d_bad): ",
       "k_expert: by.per_block: expected at least 1, got 0"},
      {"pld_launch_by (rank 0, device 0, in d_bad): ",
       "k_expert: by.max_blocks: expected an integer in [1, 65535], got 0"},
      {"pld_launch_by (rank 0, device 0, in d_bad): ",
       "by.max_blocks: expected an integer in [1, 65535], got 65536"},
  };
  const int64_t shape1[] = {T}, shape2[] = {T, H}, shape3[] = {E};
  pld_tensor eo = make(PLD_INT32, 1, shape1), x = make(PLD_FP32, 2, shape2),
             y = make(PLD_FP32, 2, shape2), c = make(PLD_INT32, 1, shape3),
             nb = make(PLD_INT32, 1, shape3);
  for (int mode = 0; mode < 6; mode++) {
    pld_program *p = NULL;
    assert_fails_with(
        pld_compile(h_bad, &cfg, PLD_ARGS(eo, x, y, c, nb, d.ctl, mode), &p),
        PLD_ERR_ARG, want[mode].a, want[mode].b);
    assert_null(p);
  }
  pld_tensor_destroy(eo);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(c);
  pld_tensor_destroy(nb);
  dyn_free(&d);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_one_rank),
    cmocka_unit_test(test_two_ranks),
    cmocka_unit_test(test_three_ranks),
    cmocka_unit_test(test_four_ranks),
    cmocka_unit_test(test_window_segments),
    cmocka_unit_test(test_at_the_limits),
    cmocka_unit_test(test_rows_one_past),
    cmocka_unit_test(test_blocks_one_past),
    cmocka_unit_test(test_bad_counts),
    cmocka_unit_test(test_refused_when_compiling),
};

PLD_TEST_MAIN("dynamic", tests)
