/* Mixed kernels (pld/mix.h): one block on a cube core and the platform's
 * two vector cores, handing tiles to each other through the path between
 * them.  A matmul with its epilogue and a second matmul on the epilogue's
 * result (the cube hands each vector part its rows, the vector parts hand
 * them back) against a C reference on both simulators and several
 * blocks; the parts' identities; the path's capacity at its limit and one
 * past it; a pop whose push never comes reported as a deadlock naming
 * both parts; a mismatched pop and a push from a plain kernel refused;
 * and a vector part notifying the next rank on 2, 3 and 4 ranks.  No
 * test depends on the machine's speed: the parts meet in the path. */
#include <unistd.h>

#include "comm_test.h"

enum {
  M = 32, /* rows per block: H per vector part */
  H = 16,
  K = 32,
  N = 64,
  N2 = 32,
  B = 3, /* blocks */
  NINFO = 3
};

/* h = relu(scale * a @ b), o = h @ w, block blk its M rows; info[blk]:
 * the cube part's 10 * type + vector parts, each vector part's 100 * type
 * + index. */
#define MM_PARAMS                                                              \
  PLD_IN(a, FP32, B *M, K), PLD_IN(b, FP32, K, N), PLD_IN(w, FP32, N, N2),     \
      PLD_OUT(hh, FP32, B *M, N), PLD_OUT(o, FP32, B *M, N2),                  \
      PLD_OUT(info, INT32, B, NINFO), PLD_SCALAR(scale, FP32)

PLD_MIX_KERNEL(k_mm_relu_mm, k, MM_PARAMS) {
  int64_t row0 = (int64_t)pld_block_idx(k) * M, blk = pld_block_idx(k);
  if (pld_core_type_of(k) == PLD_CORE_CUBE) {
    int32_t nv = pld_subblock_num(k);
    pld_write(k, info, PLD_AT(blk, 0), 10.0 * PLD_CORE_CUBE + nv);
    pld_tile *bt = pld_load(k, b, 0, 0, K, N);
    for (int32_t v = 0; v < nv; v++) {
      pld_tile *at = pld_load(k, a, row0 + v * H, 0, H, K);
      pld_tile *p = pld_tile_new(k, PLD_FP32, H, N);
      pld_matmul(k, p, at, bt);
      pld_push_tile(k, v, p);
      pld_tile_free(k, p);
      pld_tile_free(k, at);
    }
    pld_tile *wt = pld_load(k, w, 0, 0, N, N2);
    for (int32_t v = 0; v < nv; v++) {
      pld_tile *g = pld_pop_tile(k, v, PLD_FP32, H, N);
      pld_tile *q = pld_tile_new(k, PLD_FP32, H, N2);
      pld_matmul(k, q, g, wt);
      pld_store(k, q, o, row0 + v * H, 0);
      pld_tile_free(k, q);
      pld_tile_free(k, g);
    }
  } else {
    int32_t v = pld_subblock_idx(k);
    pld_write(k, info, PLD_AT(blk, 1 + v), 100.0 * PLD_CORE_VECTOR + v);
    pld_tile *x = pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, H, N);
    pld_muls(k, x, x, (double)scale);
    pld_relu(k, x, x);
    pld_store(k, x, hh, row0 + v * H, 0);
    pld_push_tile(k, PLD_MIX_CUBE, x);
  }
}

PLD_DEVICE(d_mm_relu_mm, dev, MM_PARAMS) {
  pld_launch(dev, k_mm_relu_mm, B, a, b, w, hh, o, info, scale);
}

PLD_HOST(h_mm_relu_mm, h, PLD_IN(a, FP32, B *M, K), PLD_IN(b, FP32, K, N),
         PLD_IN(w, FP32, N, N2), PLD_OUT(hh, FP32, B *M, N),
         PLD_OUT(o, FP32, B *M, N2), PLD_OUT(info, INT32, B, NINFO)) {
  pld_dispatch(h, d_mm_relu_mm, 0, a, b, w, hh, o, info, 0.5f);
}

/* Small integers: every product and sum is exact in FP32, so the result
 * is the reference's bit for bit. */
static pld_tensor small_ints(int64_t rows, int64_t cols, int seed) {
  pld_tensor t = comm_tensor(PLD_FP32, 2, (int64_t[]){rows, cols});
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < rows * cols; i++)
    d[i] = (float)((i * 7 + seed * 13) % 5 - 2);
  return t;
}

/* Runs of one rank, or of the shm fabric: not under mpirun. */
static void one_process(void) {
  if (pld_process_count() > 1)
    skip();
}

static void mm_on(const char *platform) {
  int ids[1] = {0};
  pld_config cfg = test_config(ids, 1, 0, 1);
  cfg.platform = platform;
  pld_tensor a = small_ints(B * M, K, 1), b = small_ints(K, N, 2),
             w = small_ints(N, N2, 3);
  pld_tensor hh = comm_tensor(PLD_FP32, 2, (int64_t[]){B * M, N});
  pld_tensor o = comm_tensor(PLD_FP32, 2, (int64_t[]){B * M, N2});
  pld_tensor info = comm_tensor(PLD_INT32, 2, (int64_t[]){B, NINFO});
  pld_program *p;
  assert_ok(
      pld_compile(h_mm_relu_mm, &cfg, PLD_ARGS(a, b, w, hh, o, info), &p));
  for (int run = 0; run < 2; run++) {
    memset(pld_tensor_data(o), 0, sizeof(float) * B * M * N2);
    assert_ok(pld_program_run(p, PLD_ARGS(a, b, w, hh, o, info)));
    const float *as = pld_tensor_data(a), *bs = pld_tensor_data(b),
                *ws = pld_tensor_data(w), *hs = pld_tensor_data(hh),
                *os = pld_tensor_data(o);
    static float ref_h[B * M * N];
    for (int i = 0; i < B * M; i++)
      for (int j = 0; j < N; j++) {
        float s = 0;
        for (int q = 0; q < K; q++)
          s += as[i * K + q] * bs[q * N + j];
        s *= 0.5f;
        ref_h[i * N + j] = s > 0 ? s : 0;
        assert_true(hs[i * N + j] == ref_h[i * N + j]);
      }
    for (int i = 0; i < B * M; i++)
      for (int j = 0; j < N2; j++) {
        float s = 0;
        for (int q = 0; q < N; q++)
          s += ref_h[i * N + q] * ws[q * N2 + j];
        assert_true(os[i * N2 + j] == s);
      }
    const int32_t *in = pld_tensor_data(info);
    for (int blk = 0; blk < B; blk++) {
      assert_int_equal(in[blk * NINFO], 10 * PLD_CORE_CUBE + 2);
      for (int v = 0; v < 2; v++)
        assert_int_equal(in[blk * NINFO + 1 + v], 100 * PLD_CORE_VECTOR + v);
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(w);
  pld_tensor_destroy(hh);
  pld_tensor_destroy(o);
  pld_tensor_destroy(info);
}

static void test_mm_epilogue_a2a3(void **state) {
  (void)state;
  one_process(); /* one rank */
  mm_on("a2a3sim");
}

static void test_mm_epilogue_a5(void **state) {
  (void)state;
  one_process();
  mm_on("a5sim");
}

/* ---- the path's limits and its misuse ----------------------------------- */

enum {
  CAP_COLS = 128, /* FP32: 512 bytes a row */
  CAP_ROWS = 520, /* the Out tensor's rows: more than any limit here */
  /* What each part does (the `how` scalar). */
  HOW_PUSH = 0,     /* the cube pushes rows x CAP_COLS to vector part 0 */
  HOW_DEADLOCK = 1, /* the cube and vector part 0 both pop first */
  HOW_MISMATCH = 2, /* vector part 0 pops a shape other than pushed */
  HOW_UP = 3,       /* vector part 0 pushes rows x CAP_COLS to the cube */
  HOW_WRONG = 4,    /* the cube part computes a relu, vector part 1 a matmul */
  HOW_SIBLING = 5   /* the cube part fails while vector part 0 pops */
};

#define CAP_PARAMS                                                             \
  PLD_OUT(y, FP32, CAP_ROWS, CAP_COLS), PLD_SCALAR(rows, INT32),               \
      PLD_SCALAR(how, INT32)

PLD_MIX_KERNEL(k_cap, k, CAP_PARAMS) {
  int cube = pld_core_type_of(k) == PLD_CORE_CUBE;
  int v0 = !cube && pld_subblock_idx(k) == 0;
  if (how == HOW_DEADLOCK) {
    if (cube)
      pld_pop_tile(k, 0, PLD_FP32, rows, CAP_COLS);
    else if (v0)
      pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, rows, CAP_COLS);
    return;
  }
  if (how == HOW_SIBLING) {
    if (cube)
      pld_kernel_fail(k, PLD_ERR_ARG, "the cube part gives up");
    else if (v0)
      pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, rows, CAP_COLS);
    return;
  }
  if (how == HOW_WRONG) {
    pld_tile *t = pld_full(k, PLD_FP32, rows, CAP_COLS, 1);
    if (cube)
      pld_relu(k, t, t);
    else if (!v0)
      pld_matmul(k, t, t, t);
    return;
  }
  if (how == HOW_UP) {
    if (v0)
      pld_push_tile(k, PLD_MIX_CUBE, pld_full(k, PLD_FP32, rows, CAP_COLS, 2));
    else if (cube)
      pld_store(k, pld_pop_tile(k, 0, PLD_FP32, rows, CAP_COLS), y, 0, 0);
    return;
  }
  if (cube)
    pld_push_tile(k, 0, pld_full(k, PLD_FP32, rows, CAP_COLS, 1));
  else if (v0)
    pld_store(k,
              pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32,
                           how == HOW_MISMATCH ? rows - 1 : rows, CAP_COLS),
              y, 0, 0);
}

PLD_DEVICE(d_cap, dev, CAP_PARAMS) { pld_launch(dev, k_cap, 1, y, rows, how); }

PLD_HOST(h_cap_rows, h, PLD_OUT(y, FP32, CAP_ROWS, CAP_COLS),
         PLD_SCALAR(rows, INT32), PLD_SCALAR(how, INT32)) {
  pld_dispatch(h, d_cap, 0, y, rows, how);
}

/* One run of k_cap on platform with rows and how; the status, its message
 * kept in cap_msg (the program's destruction comes between). */
static char cap_msg[8192];
static int cap_run(const char *platform, int32_t rows, int32_t how) {
  int ids[1] = {0};
  pld_config cfg = test_config(ids, 1, 0, 1);
  cfg.platform = platform;
  pld_tensor y = comm_tensor(PLD_FP32, 2, (int64_t[]){CAP_ROWS, CAP_COLS});
  pld_program *p = NULL;
  int st = pld_compile(h_cap_rows, &cfg, PLD_ARGS(y, rows, how), &p);
  if (!st)
    st = pld_program_run(p, PLD_ARGS(y, rows, how));
  if (!st) { /* what vector part 0 (or the cube) received */
    const float *ys = pld_tensor_data(y);
    for (int64_t i = 0; i < (int64_t)rows * CAP_COLS; i++)
      assert_true(ys[i] == (how == HOW_UP ? 2.0f : 1.0f));
  }
  snprintf(cap_msg, sizeof cap_msg, "%s", st ? pld_last_error() : "");
  if (p)
    pld_program_destroy(p);
  pld_tensor_destroy(y);
  return st;
}

/* A run of cap_run failed with status and its message has each string. */
#define assert_cap_fails(call, status, ...)                                    \
  pld_test_assert_fails_msg((call), (status), cap_msg, __FILE__, __LINE__,     \
                            (const char *[]){__VA_ARGS__, NULL})
/* From the cube the path leaves through L0C: a2a3's 128 KiB (256 rows of
 * 512 bytes) are the limit, below its 192 KiB Unified Buffer; a5's L0C
 * and Unified Buffer are both 256 KiB (512 rows). */
static void test_push_capacity(void **state) {
  (void)state;
  one_process();
  assert_ok(cap_run("a2a3sim", 256, HOW_PUSH));
  assert_cap_fails(cap_run("a2a3sim", 257, HOW_PUSH), PLD_ERR_TILE_MEMORY,
                   "pld_push_tile: kernel k_cap (rank 0, device 0, AIC core "
                   "0, block 0 of 1): t (FP32[257, 128], 131584 bytes) does "
                   "not fit the path to vector part 0: at most 131072 bytes "
                   "(the L0C)");
  assert_ok(cap_run("a5sim", 512, HOW_PUSH));
  assert_cap_fails(cap_run("a5sim", 513, HOW_PUSH), PLD_ERR_TILE_MEMORY,
                   "does not fit the path to vector part 0: at most 262144 "
                   "bytes (the Unified Buffer)");
}

/* A vector part's tile goes into the cube's L1 (512 KiB): a whole Unified
 * Buffer fits; the vector core cannot hold one past it, so the refusal is
 * its own tile memory's. */
static void test_push_up(void **state) {
  (void)state;
  one_process();
  assert_ok(cap_run("a2a3sim", 384, HOW_UP));
  assert_cap_fails(cap_run("a2a3sim", 385, HOW_UP), PLD_ERR_TILE_MEMORY,
                   "pld_full: kernel k_cap (rank 0, device 0, AIV core 0");
}

static void test_pop_never_pushed_deadlocks(void **state) {
  (void)state;
  one_process();
  for (int round = 0; round < 2; round++) {
    assert_fails_with(
        cap_run("a2a3sim", 8, HOW_DEADLOCK), PLD_ERR_DEADLOCK,
        "deadlock: these waits can never be satisfied",
        "kernel k_cap on AIC core 0 (block 0 of 1) waits in pld_pop_tile "
        "for a tile from vector part 0 of its block",
        "kernel k_cap on AIV core 0 (block 0 of 1) waits in pld_pop_tile "
        "for a tile from the cube part of its block");
    /* The program runs again. */
    assert_ok(cap_run("a2a3sim", 8, HOW_PUSH));
  }
}

static void test_pop_mismatch(void **state) {
  (void)state;
  one_process();
  assert_cap_fails(cap_run("a5sim", 8, HOW_MISMATCH), PLD_ERR_ARG,
                   "pld_pop_tile: kernel k_cap (rank 0, device 0, AIV core "
                   "0, block 0 of 1): expected a FP32[7, 128] tile, got "
                   "FP32[8, 128] pushed by the cube part");
}

/* A call of the other core type's fails the part, naming it. */
static void test_wrong_core_type_in_part(void **state) {
  (void)state;
  one_process();
  assert_cap_fails(cap_run("a2a3sim", 8, HOW_WRONG), PLD_ERR_LEVEL,
                   "kernel k_cap (rank 0, device 0, A");
  assert_true(strstr(cap_msg,
                     "pld_relu: kernel k_cap (rank 0, device 0, AIC core 0, "
                     "block 0 of 1): runs on vector cores; the cube part of a "
                     "mixed kernel does matmul and data movement only") ||
              strstr(cap_msg, "pld_matmul: kernel k_cap (rank 0, device 0, AIV "
                              "core 1, block 0 of 1): matmul runs on cube "
                              "cores; this is a vector part of mixed kernel "
                              "k_cap: call it from the cube part"));
}

/* A part that fails stops its block's others waiting for it: the run
 * ends with its failure, not theirs. */
static void test_failed_part_stops_the_others(void **state) {
  (void)state;
  one_process();
  for (int round = 0; round < 3; round++)
    assert_cap_fails(cap_run("a5sim", 8, HOW_SIBLING), PLD_ERR_ARG,
                     "pld_kernel_fail: kernel k_cap (rank 0, device 0, AIC "
                     "core 0, block 0 of 1): the cube part gives up");
}

PLD_KERNEL(k_plain_push, k, PLD_OUT(y, FP32, 8, 8)) {
  pld_push_tile(k, PLD_MIX_CUBE, pld_full(k, PLD_FP32, 8, 8, 0));
  pld_store(k, pld_full(k, PLD_FP32, 8, 8, 0), y, 0, 0);
}
PLD_DEVICE(d_plain_push, dev, PLD_OUT(y, FP32, 8, 8)) {
  pld_launch(dev, k_plain_push, 1, y);
}
PLD_HOST(h_plain_push, h, PLD_OUT(y, FP32, 8, 8)) {
  pld_dispatch(h, d_plain_push, 0, y);
}

static void test_push_outside_mixed(void **state) {
  (void)state;
  one_process();
  int ids[1] = {0};
  pld_config cfg = test_config(ids, 1, 0, 1);
  pld_tensor y = comm_tensor(PLD_FP32, 2, (int64_t[]){8, 8});
  pld_program *p;
  assert_ok(pld_compile(h_plain_push, &cfg, PLD_ARGS(y), &p));
  assert_fails_with(pld_program_run(p, PLD_ARGS(y)), PLD_ERR_LEVEL,
                    "pld_push_tile: kernel k_plain_push (rank 0, device 0, "
                    "AIV core 0, block 0 of 1): kernel k_plain_push is not a "
                    "mixed kernel");
  pld_program_destroy(p);
  pld_tensor_destroy(y);
}

/* ---- a vector part notifies another rank ----------------------------------
 */

/* Rank me: the cube computes a @ b (a the rank's rows) and hands each
 * vector part its H rows; vector part v stores them into the next rank's
 * window rows [v H, (v + 1) H) and notifies its cell v; then waits for its
 * own cell v (the previous rank's part v) and copies what arrived out. */
#define RING_PARAMS                                                            \
  PLD_IN(a, FP32, M, K), PLD_IN(b, FP32, K, N), PLD_WINDOW(buf, FP32, M, N),   \
      PLD_WINDOW(sig, INT32, 2), PLD_OUT(got, FP32, M, N)

PLD_MIX_KERNEL(k_ring, k, RING_PARAMS) {
  if (pld_core_type_of(k) == PLD_CORE_CUBE) {
    pld_tile *bt = pld_load(k, b, 0, 0, K, N);
    for (int32_t v = 0; v < pld_subblock_num(k); v++) {
      pld_tile *p = pld_tile_new(k, PLD_FP32, H, N);
      pld_matmul(k, p, pld_load(k, a, v * H, 0, H, K), bt);
      pld_push_tile(k, v, p);
    }
    return;
  }
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  int32_t v = pld_subblock_idx(k), next = (me + 1) % n;
  pld_tile *x = pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, H, N);
  pld_remote_store(k, x, buf, next, v * H, 0, PLD_ATOMIC_NONE);
  pld_notify(k, sig, next, PLD_AT(v), 1, PLD_NOTIFY_ADD);
  pld_wait(k, sig, PLD_AT(v), 1, PLD_WAIT_GE);
  pld_store(k, pld_load(k, pld_local(buf), v * H, 0, H, N), got, v * H, 0);
  pld_notify(k, sig, me, PLD_AT(v), -1, PLD_NOTIFY_ADD);
}

PLD_DEVICE(d_ring, dev, RING_PARAMS) {
  pld_launch(dev, k_ring, 1, a, b, buf, sig, got);
}

PLD_HOST(h_ring, h, PLD_IN(a, FP32, NR, M, K), PLD_IN(b, FP32, K, N),
         PLD_OUT(got, FP32, NR, M, N)) {
  int n = pld_world_size(h);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(M, N));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_ring, r, pld_slice(h, a, r), b,
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(M, N)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, got, r));
}

static void ring_on(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor a = small_ints((int64_t)n * M, K, 4), b = small_ints(K, N, 5);
  pld_tensor a3 = comm_tensor(PLD_FP32, 3, (int64_t[]){n, M, K});
  memcpy(pld_tensor_data(a3), pld_tensor_data(a),
         sizeof(float) * (size_t)(n * M * K));
  pld_tensor got = comm_tensor(PLD_FP32, 3, (int64_t[]){n, M, N});
  pld_program *p;
  assert_ok(pld_compile(h_ring, &cfg, PLD_ARGS(a3, b, got), &p));
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(a3, b, got)));
    const float *as = pld_tensor_data(a3), *bs = pld_tensor_data(b),
                *gs = pld_tensor_data(got);
    for (int r = 0; r < n; r++) {
      int from = (r + n - 1) % n;
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          float s = 0;
          for (int q = 0; q < K; q++)
            s += as[(from * M + i) * K + q] * bs[q * N + j];
          assert_true(gs[(r * M + i) * N + j] == s);
        }
    }
  }
  pld_program_destroy(p);
  pld_tensor_destroy(a);
  pld_tensor_destroy(a3);
  pld_tensor_destroy(b);
  pld_tensor_destroy(got);
}

static void test_vector_part_notifies_ranks(void **state) {
  (void)state;
  comm_over_rank_counts(ring_on);
}

/* ---- many blocks, the race detector, the trace ----------------------------
 */

enum { MANY = 61 }; /* blocks: more than a2a3's 24 and a5's 36 clusters */

/* Block blk: the cube hands vector part v the tile blk + v, each part
 * adds 1000 and hands it back, the cube stores both in row blk.  The cube also
 * writes row blk of its window copy before its first push, which the vector
 * parts read after their pop: ordered by the path (the race detector must see
 * it so). */
PLD_MIX_KERNEL(k_many, k, PLD_WINDOW(win, FP32, MANY, 8),
               PLD_OUT(y, FP32, MANY, 16)) {
  int32_t blk = pld_block_idx(k);
  if (pld_core_type_of(k) == PLD_CORE_CUBE) {
    pld_store(k, pld_full(k, PLD_FP32, 1, 8, blk), pld_local(win), blk, 0);
    for (int32_t v = 0; v < pld_subblock_num(k); v++)
      pld_push_tile(k, v, pld_full(k, PLD_FP32, 1, 8, blk + v));
    pld_store(k, pld_pop_tile(k, 0, PLD_FP32, 1, 8), y, blk, 0);
    pld_store(k, pld_pop_tile(k, 1, PLD_FP32, 1, 8), y, blk, 8);
    return;
  }
  pld_tile *x = pld_pop_tile(k, PLD_MIX_CUBE, PLD_FP32, 1, 8);
  pld_tile *w = pld_load(k, pld_local(win), blk, 0, 1, 8);
  pld_add(k, x, x, w);
  pld_subs(k, x, x, (double)blk);
  pld_adds(k, x, x, 1000);
  pld_push_tile(k, PLD_MIX_CUBE, x);
}

PLD_DEVICE(d_many, dev, PLD_WINDOW(win, FP32, MANY, 8),
           PLD_OUT(y, FP32, MANY, 16)) {
  pld_launch(dev, k_many, MANY, win, y);
}

PLD_HOST(h_many, h, PLD_OUT(y, FP32, NR, MANY, 16)) {
  pld_window_buf win = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(MANY, 8));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_many, r,
                 pld_window_view(h, win, PLD_FP32, PLD_SHAPE(MANY, 8)),
                 pld_slice(h, y, r));
}

/* y[blk] = blk + 1000 from vector part 0, then blk + 1001 from part 1. */
static void many_on(const char *platform, const char *check,
                    const char *trace) {
  int ids[2];
  pld_config cfg = test_config(ids, 2, 0, 1);
  cfg.platform = platform;
  cfg.check = check;
  cfg.trace = trace;
  pld_tensor y = comm_tensor(PLD_FP32, 3, (int64_t[]){2, MANY, 16});
  pld_program *p;
  assert_ok(pld_compile(h_many, &cfg, PLD_ARGS(y), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(y)));
  const float *ys = pld_tensor_data(y);
  for (int r = 0; r < 2; r++)
    for (int blk = 0; blk < MANY; blk++)
      for (int j = 0; j < 16; j++)
        assert_true(ys[(r * MANY + blk) * 16 + j] ==
                    (float)(blk + 1000 + j / 8));
  pld_program_destroy(p);
  pld_tensor_destroy(y);
}

static void test_more_blocks_than_clusters(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  many_on("a2a3sim", "", "");
  many_on("a5sim", "", "");
}

/* The path orders what the cube wrote before its push before what the
 * vector parts read after their pop: no race is reported. */
static void test_path_orders_for_race_check(void **state) {
  (void)state;
  one_process(); /* the race detector needs the shm fabric */
  many_on("a2a3sim", "races", "");
}

/* The three cores of a block appear on their lanes of the trace. */
static void test_parts_on_trace_lanes(void **state) {
  (void)state;
  one_process();
  char path[] = "/tmp/pld_mix_traceXXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  many_on("a2a3sim", "", path);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[1 << 22];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  unlink(path);
  assert_non_null(strstr(text, "AIC core 0"));
  assert_non_null(strstr(text, "AIV core 0"));
  assert_non_null(strstr(text, "AIV core 1"));
  assert_non_null(strstr(text, "k_many"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mm_epilogue_a2a3),
    cmocka_unit_test(test_mm_epilogue_a5),
    cmocka_unit_test(test_push_capacity),
    cmocka_unit_test(test_push_up),
    cmocka_unit_test(test_pop_never_pushed_deadlocks),
    cmocka_unit_test(test_pop_mismatch),
    cmocka_unit_test(test_push_outside_mixed),
    cmocka_unit_test(test_wrong_core_type_in_part),
    cmocka_unit_test(test_failed_part_stops_the_others),
    cmocka_unit_test(test_vector_part_notifies_ranks),
    cmocka_unit_test(test_more_blocks_than_clusters),
    cmocka_unit_test(test_path_orders_for_race_check),
    cmocka_unit_test(test_parts_on_trace_lanes),
};

PLD_TEST_MAIN("comm_mix", tests)
