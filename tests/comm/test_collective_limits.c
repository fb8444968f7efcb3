/* Collectives at their limits, as pld/collective.h states them:
 *   - the bits of an allreduce do not depend on the block count: each
 *     mode's order of the ranks, for every element, is the header's
 *     (checked against a plain C loop of that order, on 3 and 7 ranks, on
 *     1, 2 and 3 blocks);
 *   - the blocks of a collective run at once: as many blocks as the
 *     device has cores of the kernel's type work, one more is refused;
 *   - tile memory: a call whose staging fits runs, with as little as
 *     PLD_COLL_MIN_TILE_BYTES free (half of it for data movement), in one
 *     gap or two, and fails with one byte less; ranks with different free
 *     memory still agree;
 *   - the auto mode's thresholds: mesh up to 1 KiB per rank at 2 ranks and
 *     8 KiB beyond, two-phase above up to 8 ranks, the ring past 8 ranks,
 *     asserted at and one past each boundary, by value and by what a call
 *     does (an auto call agrees with the explicit mode it must take, and
 *     disagrees with the other). */
#include <stdint.h>

#include "comm_test.h"

PLD_DYNAMIC(L);  /* elements of the data */
PLD_DYNAMIC(NS); /* signal cells */

/* Per rank: the mode of its allreduce; the collective; tile memory to
 * take first (bytes), or gaps; tile memory's capacity (for the gaps). */
enum { FL_MODE, FL_BROADCAST, FL_TAKE, FL_GAPS, FL_CAP, NFL };

/* Takes tile memory as flag says: `take` bytes in one tile, or (gaps) all
 * but two 32-byte gaps apart from each other. */
static void take_tiles(pld_core k, pld_tensor flag, pld_tile **t) {
  const int32_t take = (int32_t)pld_read(k, flag, PLD_AT(FL_TAKE));
  const int32_t cap = (int32_t)pld_read(k, flag, PLD_AT(FL_CAP));
  if (pld_read(k, flag, PLD_AT(FL_GAPS))) {
    for (int i = 0; i < 3; i++)
      t[i] = pld_tile_new(k, PLD_UINT8, 1, 32);
    t[3] = pld_tile_new(k, PLD_UINT8, 1, cap - 96);
    pld_tile_free(k, t[0]);
    pld_tile_free(k, t[2]);
    t[0] = t[2] = NULL;
  } else if (take > 0) {
    t[0] = pld_tile_new(k, PLD_UINT8, 1, take);
  }
}

static void call_on(pld_core k, pld_tensor flag, pld_window a, pld_window sig) {
  pld_tile *t[4] = {NULL, NULL, NULL, NULL};
  take_tiles(k, flag, t);
  if (pld_read(k, flag, PLD_AT(FL_BROADCAST)))
    pld_broadcast(k, a, sig, 0);
  else
    pld_allreduce(k, a, sig, PLD_REDUCE_SUM,
                  (pld_allreduce_mode)pld_read(k, flag, PLD_AT(FL_MODE)));
  for (int i = 3; i >= 0; i--)
    pld_tile_free(k, t[i]);
}

PLD_KERNEL(k_call, k, PLD_IN(flag, INT32, NFL), PLD_WINDOW(a, FP32, L),
           PLD_WINDOW(sig, INT32, NS)) {
  call_on(k, flag, a, sig);
}

/* Data movement on cube cores. */
PLD_CUBE_KERNEL(k_cube_call, k, PLD_IN(flag, INT32, NFL),
                PLD_WINDOW(a, FP32, L), PLD_WINDOW(sig, INT32, NS)) {
  call_on(k, flag, a, sig);
}

PLD_KERNEL(k_in, k, PLD_IN(x, FP32, L), PLD_WINDOW(a, FP32, L)) {
  pld_tile *t = pld_load(k, x, 0, 0, 1, (int32_t)pld_tensor_dim(x, 0));
  pld_store(k, t, pld_local(a), 0, 0);
  pld_tile_free(k, t);
}

PLD_KERNEL(k_out, k, PLD_WINDOW(a, FP32, L), PLD_OUT(y, FP32, L)) {
  pld_tile *t =
      pld_load(k, pld_local(a), 0, 0, 1, (int32_t)pld_tensor_dim(y, 0));
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, t);
}

PLD_DEVICE(d_call, cpu, PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, L),
           PLD_WINDOW(a, FP32, L), PLD_WINDOW(sig, INT32, NS),
           PLD_OUT(y, FP32, L), PLD_SCALAR(blocks, INT32),
           PLD_SCALAR(cube, INT32)) {
  pld_launch(cpu, k_in, 1, x, a);
  pld_launch(cpu, cube ? k_cube_call : k_call, blocks, flag, a, sig);
  pld_launch(cpu, k_out, 1, a, y);
}

/* sig holds the lanes of `lanes` blocks. */
PLD_HOST(h_call, h, PLD_IN(flag, INT32, NR, NFL), PLD_IN(x, FP32, NR, L),
         PLD_OUT(y, FP32, NR, L), PLD_SCALAR(blocks, INT32),
         PLD_SCALAR(lanes, INT32), PLD_SCALAR(cube, INT32)) {
  const int n = pld_world_size(h);
  const int64_t len = pld_tensor_dim(x, 1), ns = PLD_SIGNAL_CELLS(n, lanes);
  pld_window_buf a = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(len));
  pld_window_buf s = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_call, q, pld_slice(h, flag, q), pld_slice(h, x, q),
                 pld_window_view(h, a, PLD_FP32, PLD_SHAPE(len)),
                 pld_window_view(h, s, PLD_INT32, PLD_SHAPE(ns)),
                 pld_slice(h, y, q), blocks, cube);
}

/* ---- running it ---------------------------------------------------------- */

struct prog {
  int p, cube;
  int64_t len;
  int32_t blocks, lanes;
  pld_tensor flag, x, y;
  pld_program *prog;
  size_t cap; /* tile memory of the kernel's cores */
};

/* A compiled h_call over p ranks of len elements, sig for `lanes`
 * blocks; x integers (exact sums) or, with `random`, floats of many
 * magnitudes, whose sums round differently in every order. */
static void prog_init(struct prog *g, int p, int64_t len, int32_t lanes,
                      int cube, int random) {
  memset(g, 0, sizeof *g);
  g->p = p, g->len = len, g->lanes = lanes, g->blocks = 1, g->cube = cube;
  g->flag = comm_int_tensor(0, 2, (int64_t[]){p, NFL});
  g->x = comm_tensor(PLD_FP32, 2, (int64_t[]){p, len});
  g->y = comm_tensor(PLD_FP32, 2, (int64_t[]){p, len});
  float *xs = pld_tensor_data(g->x);
  uint64_t z = 0x9e3779b97f4a7c15ull * (uint64_t)(p * 31 + len);
  for (int64_t i = 0; i < p * len; i++) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    const double u = (double)(z >> 11) / 9007199254740992.0 - 0.5;
    xs[i] = random ? (float)ldexp(u, (int)(z >> 3 & 15) - 7)
                   : (float)(i % 251 + 1000 * (i / len));
  }
  pld_config cfg = comm_config(p);
  const pld_platform_info *pf = pld_platform_find(cfg.platform);
  assert_non_null(pf);
  g->cap = cube ? pf->l1_bytes : pf->ub_bytes;
  int32_t *f = pld_tensor_data(g->flag);
  for (int q = 0; q < p; q++)
    f[q * NFL + FL_CAP] = (int32_t)g->cap;
  assert_ok(pld_compile(
      h_call, &cfg, PLD_ARGS(g->flag, g->x, g->y, g->blocks, g->lanes, cube),
      &g->prog));
}

static void prog_free(struct prog *g) {
  pld_program_destroy(g->prog);
  pld_tensor_destroy(g->flag);
  pld_tensor_destroy(g->x);
  pld_tensor_destroy(g->y);
}

/* Sets flag fl of rank q (every rank: q < 0). */
static void set_flag(struct prog *g, int q, int fl, int32_t v) {
  int32_t *f = pld_tensor_data(g->flag);
  for (int r = 0; r < g->p; r++)
    if (q < 0 || r == q)
      f[r * NFL + fl] = v;
}

static int prog_run(struct prog *g) {
  memset(pld_tensor_data(g->y), 0, (size_t)(g->p * g->len) * sizeof(float));
  return pld_program_run(
      g->prog, PLD_ARGS(g->flag, g->x, g->y, g->blocks, g->lanes, g->cube));
}

/* Element e of the allreduce (SUM) in mode's order (pld/collective.h), in
 * FP32: mesh and two-phase add ranks 0, 1, ..., P-1; the ring adds the
 * ranks of e's chunk c from rank c+1 on, around to rank c. */
static float reference(const struct prog *g, pld_allreduce_mode mode,
                       int64_t e) {
  const float *xs = pld_tensor_data(g->x);
  const int p = g->p;
  const int64_t n = g->len;
  int first = 0;
  if (mode == PLD_ALLREDUCE_RING)
    while (!((int64_t)first * n / p <= e && e < (int64_t)(first + 1) * n / p))
      first++;
  float acc = 0;
  for (int j = 0; j < p; j++) {
    const int q = mode == PLD_ALLREDUCE_RING ? (first + 1 + j) % p : j;
    acc = j ? acc + xs[q * n + e] : xs[q * n + e];
  }
  return acc;
}

/* y on every rank = the allreduce in `mode`'s order (or, broadcast: rank
 * 0's data), bit for bit. */
static void expect_result(const struct prog *g, pld_allreduce_mode mode,
                          int broadcast, const char *what) {
  const float *ys = pld_tensor_data(g->y), *xs = pld_tensor_data(g->x);
  for (int64_t e = 0; e < g->len; e++) {
    const float want = broadcast ? xs[e] : reference(g, mode, e);
    for (int q = 0; q < g->p; q++) {
      const float got = ys[q * g->len + e];
      if (memcmp(&got, &want, sizeof got)) {
        print_error("%s, %d ranks, %d blocks: rank %d element %lld: got "
                    "%.9g, expected %.9g\n",
                    what, g->p, (int)g->blocks, q, (long long)e, (double)got,
                    (double)want);
        fail();
      }
    }
  }
}

/* ---- the same bits on any block count ------------------------------------ */

static void bits_any_blocks(int p, int64_t len) {
  static const pld_allreduce_mode modes[] = {
      PLD_ALLREDUCE_RING, PLD_ALLREDUCE_MESH, PLD_ALLREDUCE_TWO_PHASE};
  struct prog g;
  prog_init(&g, p, len, 3, 0, 1);
  for (int m = 0; m < 3; m++)
    for (g.blocks = 1; g.blocks <= 3; g.blocks++) {
      set_flag(&g, -1, FL_MODE, modes[m]);
      assert_ok(prog_run(&g));
      expect_result(&g, modes[m], 0, "allreduce");
    }
  prog_free(&g);
}

static void test_bits_any_block_count(void **state) {
  (void)state;
  if (comm_world_fits(3))
    bits_any_blocks(3, 20011);
  if (comm_world_fits(7))
    bits_any_blocks(7, 20011);
}

/* ---- blocks at the device's core count ----------------------------------- */

/* As many blocks as the device has cores of the kernel's type (vector:
 * allreduce; cube: broadcast) work; one more is refused, naming both. */
static void blocks_at_cores(int p, int cube) {
  pld_config cfg = comm_config(p);
  const pld_platform_info *pf = pld_platform_find(cfg.platform);
  assert_non_null(pf);
  const int cores = cube ? pf->cube_cores : pf->vector_cores;
  struct prog g;
  prog_init(&g, p, 2 * (cores + 1), cores + 1, cube, 0);
  set_flag(&g, -1, FL_MODE, PLD_ALLREDUCE_RING);
  set_flag(&g, -1, FL_BROADCAST, cube);
  g.blocks = cores;
  assert_ok(prog_run(&g));
  expect_result(&g, PLD_ALLREDUCE_RING, cube, "at the core count");
  g.blocks = cores + 1;
  char says[160];
  snprintf(says, sizeof says,
           "launched on %d blocks, but the device has %d %s cores: the "
           "blocks of a collective must run at once",
           cores + 1, cores, cube ? "AIC" : "AIV");
  assert_fails_with(prog_run(&g), PLD_ERR_ARG,
                    cube ? "pld_broadcast: kernel k_cube_call"
                         : "pld_allreduce: kernel k_call",
                    says);
  prog_free(&g);
}

static void test_blocks_at_core_count(void **state) {
  (void)state;
  if (comm_world_fits(2)) {
    blocks_at_cores(2, 0);
    blocks_at_cores(2, 1);
  }
  if (comm_world_fits(3))
    blocks_at_cores(3, 0);
}

/* ---- tile memory --------------------------------------------------------- */

static const pld_allreduce_mode all_modes[] = {
    PLD_ALLREDUCE_MESH, PLD_ALLREDUCE_TWO_PHASE, PLD_ALLREDUCE_RING,
    PLD_ALLREDUCE_AUTO};

/* Every mode runs with rank `q` holding `free_bytes` of tile memory free
 * (in one tile's worth, or gaps), the others all of theirs. */
static void runs_with_free(struct prog *g, int q, int64_t free_bytes,
                           int gaps) {
  set_flag(g, -1, FL_TAKE, 0);
  set_flag(g, -1, FL_GAPS, 0);
  set_flag(g, q, FL_TAKE, (int32_t)((int64_t)g->cap - free_bytes));
  set_flag(g, q, FL_GAPS, gaps);
  for (int m = 0; m < 4; m++) {
    set_flag(g, -1, FL_MODE, all_modes[m]);
    assert_ok(prog_run(g));
    expect_result(g, all_modes[m], 0, "allreduce, tile memory short");
  }
}

/* 4000 bytes of data (the case): with 4 KiB free; with the
 * minimum free on one rank, then on every rank; in two gaps; and with
 * one byte less, PLD_ERR_TILE_MEMORY. */
static void reduce_with_little_memory(int p) {
  struct prog g;
  prog_init(&g, p, 1000, 1, 0, 0);
  runs_with_free(&g, p - 1, 4096, 0);
  runs_with_free(&g, 0, PLD_COLL_MIN_TILE_BYTES, 0);
  runs_with_free(&g, -1, PLD_COLL_MIN_TILE_BYTES, 0);
  runs_with_free(&g, p - 1, PLD_COLL_MIN_TILE_BYTES, 1);
  set_flag(&g, -1, FL_MODE, PLD_ALLREDUCE_MESH);
  set_flag(&g, -1, FL_GAPS, 0);
  set_flag(&g, p - 1, FL_TAKE, (int32_t)(g.cap - PLD_COLL_MIN_TILE_BYTES + 1));
  char rank_s[96];
  snprintf(rank_s, sizeof rank_s, "pld_allreduce: kernel k_call (rank %d, ",
           p - 1);
  assert_fails_with(prog_run(&g), PLD_ERR_TILE_MEMORY, rank_s,
                    "tile memory over capacity");
  prog_free(&g);
}

static void test_reduce_with_little_tile_memory(void **state) {
  (void)state;
  comm_over_rank_counts(reduce_with_little_memory);
}

/* A broadcast needs half the minimum: a staging tile of one granule. */
static void move_with_little_memory(int p, int cube) {
  struct prog g;
  prog_init(&g, p, 1000, 1, cube, 0);
  set_flag(&g, -1, FL_BROADCAST, 1);
  set_flag(&g, -1, FL_TAKE, (int32_t)(g.cap - PLD_COLL_MIN_TILE_BYTES / 2));
  assert_ok(prog_run(&g));
  expect_result(&g, PLD_ALLREDUCE_MESH, 1, "broadcast, tile memory short");
  set_flag(&g, 1, FL_TAKE, (int32_t)(g.cap - PLD_COLL_MIN_TILE_BYTES / 2 + 1));
  assert_fails_with(prog_run(&g), PLD_ERR_TILE_MEMORY,
                    "pld_broadcast: kernel k_", "(rank 1, ",
                    "tile memory over capacity");
  prog_free(&g);
}

static void test_move_with_little_tile_memory(void **state) {
  (void)state;
  if (comm_world_fits(2))
    move_with_little_memory(2, 1);
  if (comm_world_fits(4))
    move_with_little_memory(4, 0);
}

/* ---- the auto mode ------------------------------------------------------- */

/* The tutorial's thresholds, by value. */
static void test_auto_thresholds(void **state) {
  (void)state;
  static const struct {
    int32_t ranks;
    int64_t bytes;
    pld_allreduce_mode mode;
  } cases[] = {
      {1, 1 << 30, PLD_ALLREDUCE_MESH},      {2, 4, PLD_ALLREDUCE_MESH},
      {2, 1024, PLD_ALLREDUCE_MESH},         {2, 1025, PLD_ALLREDUCE_TWO_PHASE},
      {2, 1 << 30, PLD_ALLREDUCE_TWO_PHASE}, {3, 1025, PLD_ALLREDUCE_MESH},
      {3, 8192, PLD_ALLREDUCE_MESH},         {3, 8193, PLD_ALLREDUCE_TWO_PHASE},
      {4, 8192, PLD_ALLREDUCE_MESH},         {4, 8193, PLD_ALLREDUCE_TWO_PHASE},
      {8, 8192, PLD_ALLREDUCE_MESH},         {8, 8193, PLD_ALLREDUCE_TWO_PHASE},
      {8, 1 << 30, PLD_ALLREDUCE_TWO_PHASE}, {9, 8192, PLD_ALLREDUCE_MESH},
      {9, 8193, PLD_ALLREDUCE_RING},         {64, 1 << 30, PLD_ALLREDUCE_RING},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (pld_allreduce_auto(cases[i].ranks, cases[i].bytes) != cases[i].mode) {
      print_error("pld_allreduce_auto(%d, %lld) = %d, expected %d\n",
                  (int)cases[i].ranks, (long long)cases[i].bytes,
                  (int)pld_allreduce_auto(cases[i].ranks, cases[i].bytes),
                  (int)cases[i].mode);
      fail();
    }
}

static const char *const mode_names[] = {"auto", "mesh", "two-phase", "ring"};

/* Over p ranks with `bytes` of FP32 per rank: rank 0 calls auto, the
 * others `mode`: they agree (and the result is exact), or not (rank 0's
 * call names the mode auto took, `took`). */
static void auto_agrees(int p, int64_t bytes, pld_allreduce_mode mode,
                        pld_allreduce_mode took) {
  if (!comm_world_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, bytes / 4, 1, 0, 0);
  set_flag(&g, -1, FL_MODE, mode);
  set_flag(&g, 0, FL_MODE, PLD_ALLREDUCE_AUTO);
  int st = prog_run(&g);
  if (took == mode) {
    assert_ok(st);
    expect_result(&g, mode, 0, "auto beside its mode");
  } else {
    char mine[96], theirs[96];
    snprintf(mine, sizeof mine,
             "rank 0: pld_allreduce(SUM, FP32, %lld "
             "elements, %s, 1 block)",
             (long long)(bytes / 4), mode_names[took]);
    snprintf(theirs, sizeof theirs,
             "rank 1: pld_allreduce(SUM, FP32, %lld "
             "elements, %s, 1 block)",
             (long long)(bytes / 4), mode_names[mode]);
    assert_fails_with(st, PLD_ERR_MISMATCH, mine, theirs);
  }
  prog_free(&g);
}

/* At and one element past each boundary. */
static void test_auto_by_behaviour(void **state) {
  (void)state;
  const pld_allreduce_mode M = PLD_ALLREDUCE_MESH, T = PLD_ALLREDUCE_TWO_PHASE,
                           R = PLD_ALLREDUCE_RING;
  auto_agrees(2, 1024, M, M);
  auto_agrees(2, 1024, T, M);
  auto_agrees(2, 1028, T, T);
  auto_agrees(2, 1028, M, T);
  auto_agrees(3, 8192, M, M);
  auto_agrees(3, 8196, T, T);
  auto_agrees(4, 8192, T, M);
  auto_agrees(4, 8196, M, T);
  auto_agrees(8, 8196, T, T);
  auto_agrees(9, 8192, M, M);
  auto_agrees(9, 8196, R, R);
  auto_agrees(9, 8196, T, R);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bits_any_block_count),
    cmocka_unit_test(test_blocks_at_core_count),
    cmocka_unit_test(test_reduce_with_little_tile_memory),
    cmocka_unit_test(test_move_with_little_tile_memory),
    cmocka_unit_test(test_auto_thresholds),
    cmocka_unit_test(test_auto_by_behaviour),
};

PLD_TEST_MAIN("comm_collective_limits", tests)
