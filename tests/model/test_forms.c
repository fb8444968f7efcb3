/* The timing model on real runs (issue 26, point 4): closed forms a run's
 * modeled report must reproduce within 2% - a matmul at the cube's peak,
 * an elementwise operation's compute and its moves bound by the device's
 * memory, a put of n bytes at latency + n / bandwidth, a notify and its
 * wait, the builtin ring allreduce at 2(P-1)(alpha + n/(P beta)) + (P-1)
 * n/P gamma, a small mesh allreduce, a barrier, and k moves at k
 * latencies - and monotonicity: more bytes never take less modeled time,
 * more cores never more for independent blocks.  Every expected time is
 * computed here from the figures the program itself uses
 * (model_figures), never from the machine's speed. */
#include "model_test.h"

/* ---- compute: vector and cube ------------------------------------------- */

enum { ER = 64, EC = 128 };            /* an elementwise block's tile */
enum { MM = 128, KK = 256, NN = 128 }; /* the cube's: L0A, L0B full */
PLD_DYNAMIC(NBR);                      /* rows of all blocks: blocks * ER */

/* Block b: its ER rows of x loaded `loads` times, `reps` elementwise
 * adds, stored into y if `store`. */
#define VEC_PARAMS                                                             \
  PLD_IN(x, FP32, NBR, EC), PLD_OUT(y, FP32, NBR, EC),                         \
      PLD_SCALAR(loads, INT32), PLD_SCALAR(reps, INT32),                       \
      PLD_SCALAR(store, INT32)

PLD_KERNEL(k_vec, k, VEC_PARAMS) {
  int64_t row = (int64_t)pld_block_idx(k) * ER;
  pld_tile *t = pld_load(k, x, row, 0, ER, EC);
  for (int32_t i = 1; i < loads; i++)
    pld_load_into(k, t, x, row, 0);
  for (int32_t i = 0; i < reps; i++)
    pld_add(k, t, t, t);
  if (store)
    pld_store(k, t, y, row, 0);
}

PLD_DEVICE(d_vec, a, VEC_PARAMS, PLD_SCALAR(blocks, INT32)) {
  pld_launch(a, k_vec, blocks, x, y, loads, reps, store);
}

PLD_HOST(h_vec, h, PLD_IN(x, FP32, NR, NBR, EC), PLD_OUT(y, FP32, NR, NBR, EC),
         PLD_SCALAR(loads, INT32), PLD_SCALAR(reps, INT32),
         PLD_SCALAR(store, INT32), PLD_SCALAR(blocks, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_vec, r, pld_slice(h, x, r), pld_slice(h, y, r), loads,
                 reps, store, blocks);
}

/* One block through x's tiles of ER rows, `reps` adds on each: with
 * `pref`, double-buffered (the next tile's pld_prefetch before the adds,
 * its wait after), else each loaded after the adds of the one before. */
#define PREF_PARAMS                                                            \
  PLD_IN(x, FP32, NBR, EC), PLD_SCALAR(reps, INT32), PLD_SCALAR(pref, INT32)

PLD_KERNEL(k_pref, k, PREF_PARAMS) {
  const int64_t n = pld_tensor_dim(x, 0) / ER;
  pld_tile *t[2] = {pld_tile_new(k, PLD_FP32, ER, EC),
                    pld_tile_new(k, PLD_FP32, ER, EC)};
  if (pref) {
    pld_prefetch(k, t[0], x, 0, 0);
    pld_prefetch_wait(k, t[0]);
  } else {
    pld_load_into(k, t[0], x, 0, 0);
  }
  for (int64_t i = 0; i < n; i++) {
    pld_tile *cur = t[i % 2], *next = t[(i + 1) % 2];
    if (pref && i + 1 < n)
      pld_prefetch(k, next, x, (i + 1) * ER, 0);
    for (int32_t r = 0; r < reps; r++)
      pld_add(k, cur, cur, cur);
    if (i + 1 < n && pref)
      pld_prefetch_wait(k, next);
    else if (i + 1 < n)
      pld_load_into(k, next, x, (i + 1) * ER, 0);
  }
}

PLD_DEVICE(d_pref, a, PREF_PARAMS) { pld_launch(a, k_pref, 1, x, reps, pref); }

PLD_HOST(h_pref, h, PLD_IN(x, FP32, NR, NBR, EC), PLD_SCALAR(reps, INT32),
         PLD_SCALAR(pref, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_pref, r, pld_slice(h, x, r), reps, pref);
}

/* `reps` FP16 matmuls of full L0 operands into one FP32 tile. */
PLD_CUBE_KERNEL(k_mm, k, PLD_IN(a, FP16, MM, KK), PLD_IN(b, FP16, KK, NN),
                PLD_OUT(c, FP32, MM, NN), PLD_SCALAR(reps, INT32)) {
  pld_tile *ta = pld_load(k, a, 0, 0, MM, KK);
  pld_tile *tb = pld_load(k, b, 0, 0, KK, NN);
  pld_tile *tc = pld_tile_new(k, PLD_FP32, MM, NN);
  for (int32_t i = 0; i < reps; i++)
    pld_matmul_acc(k, tc, ta, tb);
  pld_store(k, tc, c, 0, 0);
}

PLD_DEVICE(d_mm, d, PLD_IN(a, FP16, MM, KK), PLD_IN(b, FP16, KK, NN),
           PLD_OUT(c, FP32, MM, NN), PLD_SCALAR(reps, INT32)) {
  pld_launch(d, k_mm, 1, a, b, c, reps);
}

PLD_HOST(h_mm, h, PLD_IN(a, FP16, NR, MM, KK), PLD_IN(b, FP16, NR, KK, NN),
         PLD_OUT(c, FP32, NR, MM, NN), PLD_SCALAR(reps, INT32)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_mm, r, pld_slice(h, a, r), pld_slice(h, b, r),
                 pld_slice(h, c, r), reps);
}

/* A program compiled with the model on, for n ranks (comm_config). */
static pld_config model_config(int n) {
  pld_config cfg = comm_config(n);
  cfg.model = "on";
  cfg.model_out = "";
  return cfg;
}

/* What a block of h_vec does: loads, adds, a store or none. */
struct vec_work {
  int loads, reps, store;
};

/* The modeled time of the last run_vec: the run's. */
static double vec_total;

/* h_vec on n ranks of `blocks` blocks doing w: its report's busiest span
 * of a rank's launch (the run's in vec_total), and rank 0's core 0's busy
 * time of class cls in *busy. */
static double run_vec(pld_config cfg, int n, int blocks, struct vec_work w,
                      pld_model_class cls, double *busy) {
  const int64_t shape[] = {n, (int64_t)blocks * ER, EC};
  pld_tensor x = pld_test_tensor(3, shape, 0, 1);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_program *p;
  assert_ok(pld_compile(h_vec, &cfg,
                        PLD_ARGS(x, y, w.loads, w.reps, w.store, blocks), &p));
  assert_ok(
      pld_program_run(p, PLD_ARGS(x, y, w.loads, w.reps, w.store, blocks)));
  pld_model_report r = model_report(p);
  double span = model_max_span(&r);
  vec_total = r.total_ns;
  if (busy)
    *busy = model_busy(&r, 0, PLD_CORE_VECTOR, 0, cls);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return span;
}

/* An elementwise add goes through three tiles' bytes (two operands and the
 * result) at VEC_BYTES a cycle, and VEC_OP_CYCLES more each. */
static void test_elementwise(void **state) {
  (void)state;
  pld_config cfg = model_config(2);
  struct pld__machine m = model_figures(&cfg);
  const int reps = 40;
  double compute;
  run_vec(cfg, 2, 1, (struct vec_work){1, reps, 1}, PLD_MODEL_COMPUTE,
          &compute);
  double bytes = 3.0 * ER * EC * sizeof(float);
  double want = model_cycles_ns(
      reps * (FIG(m, VEC_OP_CYCLES) + bytes / FIG(m, VEC_BYTES)),
      FIG(m, AIV_MHZ));
  assert_within_2pct("compute of 40 adds of 32 KiB", compute, want);
}

/* On every vector core at once, a block that loads a tile and adds is
 * bound by the device's memory: the launch takes the blocks' bytes at
 * HBM_GBPS (their cores together could move faster), a move's latency and
 * one block's compute.  (One move a block: test_moves_latency.) */
static void test_elementwise_memory_bound(void **state) {
  (void)state;
  pld_config cfg = model_config(2);
  struct pld__machine m = model_figures(&cfg);
  const pld_platform_info *plat = pld_platform_find(cfg.platform);
  const int blocks = plat->vector_cores;
  const double tile = (double)ER * EC * sizeof(float);
  /* The premise: the cores could move more than the memory gives. */
  assert_true(blocks * FIG(m, MOVE_BYTES) * FIG(m, AIV_MHZ) / 1000 >
              FIG(m, HBM_GBPS));
  double span =
      run_vec(cfg, 2, blocks, (struct vec_work){1, 1, 0}, PLD_MODEL_MOVE, NULL);
  double want =
      model_bytes_ns(blocks * tile, FIG(m, HBM_GBPS)) + FIG(m, MOVE_NS) +
      model_cycles_ns(FIG(m, VEC_OP_CYCLES) + 3 * tile / FIG(m, VEC_BYTES),
                      FIG(m, AIV_MHZ));
  assert_within_2pct("48 blocks' load and add", span, want);
}

/* Each move between global and tile memory pays its latency (MOVE_NS,
 * "latency of a move"): 8 loads of a 32 KiB tile by one core take 8 x
 * (MOVE_NS + 32 KiB at MOVE_BYTES a cycle), although the recording folds
 * them into one record. */
static void test_moves_latency(void **state) {
  (void)state;
  pld_config cfg = model_config(2);
  struct pld__machine m = model_figures(&cfg);
  const int loads = 8;
  double move;
  run_vec(cfg, 2, 1, (struct vec_work){loads, 0, 0}, PLD_MODEL_MOVE, &move);
  double tile = (double)ER * EC * sizeof(float);
  double want =
      loads * (FIG(m, MOVE_NS) +
               model_cycles_ns(tile / FIG(m, MOVE_BYTES), FIG(m, AIV_MHZ)));
  assert_within_2pct("8 loads of 32 KiB", move, want);
}

/* A tile's pld_prefetch goes on the core's move engine while the core
 * computes: n tiles double-buffered, each tile's adds (c) outlasting a
 * move (m at MOVE_BYTES a cycle, then MOVE_NS), take m + MOVE_NS + n c;
 * loaded one after the other, n (m + MOVE_NS + c). */
static void test_prefetch_overlaps(void **state) {
  (void)state;
  pld_config cfg = model_config(2);
  struct pld__machine m = model_figures(&cfg);
  enum { TILES = 8, REPS = 8 };
  const double tile = (double)ER * EC * sizeof(float);
  const double mv = model_cycles_ns(tile / FIG(m, MOVE_BYTES), FIG(m, AIV_MHZ));
  const double c = model_cycles_ns(
      REPS * (FIG(m, VEC_OP_CYCLES) + 3 * tile / FIG(m, VEC_BYTES)),
      FIG(m, AIV_MHZ));
  assert_true(c > mv + FIG(m, MOVE_NS)); /* the premise: compute binds */
  const int64_t shape[] = {2, TILES * ER, EC};
  pld_tensor x = pld_test_tensor(3, shape, 0, 1);
  double span[2];
  for (int pref = 0; pref < 2; pref++) {
    pld_program *p;
    assert_ok(pld_compile(h_pref, &cfg, PLD_ARGS(x, REPS, pref), &p));
    assert_ok(pld_program_run(p, PLD_ARGS(x, REPS, pref)));
    pld_model_report r = model_report(p);
    span[pref] = model_max_span(&r);
    pld_program_destroy(p);
  }
  pld_tensor_destroy(x);
  assert_within_2pct("8 tiles loaded one after the other", span[0],
                     TILES * (mv + FIG(m, MOVE_NS) + c));
  assert_within_2pct("8 tiles double-buffered", span[1],
                     mv + FIG(m, MOVE_NS) + TILES * c);
}

/* The cube core's compute: each matmul MM x NN x KK multiply-adds at
 * CUBE_MACS_FP16 a cycle, and CUBE_OP_CYCLES more. */
static void test_matmul_peak(void **state) {
  (void)state;
  pld_config cfg = model_config(2);
  struct pld__machine m = model_figures(&cfg);
  const int reps = 16;
  const int64_t sa[] = {2, MM, KK}, sb[] = {2, KK, NN}, sc[] = {2, MM, NN};
  pld_tensor a = comm_tensor(PLD_FP16, 3, sa), b = comm_tensor(PLD_FP16, 3, sb);
  pld_tensor c = comm_tensor(PLD_FP32, 3, sc);
  pld_program *p;
  assert_ok(pld_compile(h_mm, &cfg, PLD_ARGS(a, b, c, reps), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(a, b, c, reps)));
  pld_model_report r = model_report(p);
  double macs = (double)MM * NN * KK;
  double want = model_cycles_ns(
      reps * (macs / FIG(m, CUBE_MACS_FP16) + FIG(m, CUBE_OP_CYCLES)),
      FIG(m, AIC_MHZ));
  for (int q = 0; q < 2; q++)
    assert_within_2pct("compute of 16 matmuls 128x256x128",
                       model_busy(&r, q, PLD_CORE_CUBE, 0, PLD_MODEL_COMPUTE),
                       want);
  /* Large tiles run at the cube's peak but for its fixed cycles: within
   * 7% of 2 MACs x CUBE_MACS_FP16 x AIC_MHZ. */
  double flops =
      2 * reps * macs / model_busy(&r, 0, PLD_CORE_CUBE, 0, PLD_MODEL_COMPUTE);
  double peak = 2 * FIG(m, CUBE_MACS_FP16) * FIG(m, AIC_MHZ) / 1000;
  assert_true(flops <= peak && flops >= 0.93 * peak);
  pld_program_destroy(p);
  pld_tensor_destroy(a);
  pld_tensor_destroy(b);
  pld_tensor_destroy(c);
}

/* ---- communication ------------------------------------------------------ */

PLD_DYNAMIC(PN); /* elements of the data */
PLD_DYNAMIC(SC); /* cells of the collectives' signal window */

enum { DO_PUT, DO_PING, DO_BARRIER, DO_ALLREDUCE, DO_COLLS, DO_PUT_HALVES };

#define COMM_PARAMS                                                            \
  PLD_IN(x, FP32, PN), PLD_WINDOW(data, FP32, PN), PLD_WINDOW(sig, INT32, SC), \
      PLD_WINDOW(ping, INT32, 2), PLD_SCALAR(what, INT32),                     \
      PLD_SCALAR(arg, INT32)

/* One block: rank 0 puts x into rank 1's window (DO_PUT), `arg` times
 * one after the other (at least once), or x and its first half in turn,
 * `arg` times each (DO_PUT_HALVES); ranks 0 and 1
 * hand a signal back and forth `arg` times (DO_PING); every rank meets
 * in a barrier, `arg` times (at least once; DO_BARRIER) or allreduces its
 * window in mode `arg` (DO_ALLREDUCE); or allreduces in each mode, then
 * broadcasts from rank 0 and from rank 1, `arg` times each in a row
 * (DO_COLLS). */
PLD_KERNEL(k_comm, k, COMM_PARAMS) {
  int32_t me = pld_rank(k, pld_window_comm(data));
  for (int32_t i = 0; what == DO_PUT && me == 0 && i < (arg > 1 ? arg : 1); i++)
    pld_put(k, data, 1, x, NULL);
  pld_xfer half = {.rows = 1, .cols = (int32_t)(pld_tensor_dim(x, 0) / 2)};
  for (int32_t i = 0; what == DO_PUT_HALVES && me == 0 && i < 2 * arg; i++)
    pld_put(k, data, 1, x, i % 2 ? &half : NULL);
  for (int32_t i = 0; what == DO_PING && me < 2 && i < arg; i++) {
    if (me == 1)
      pld_wait(k, ping, PLD_AT(0), i + 1, PLD_WAIT_GE);
    pld_notify(k, ping, 1 - me, PLD_AT(me), 1, PLD_NOTIFY_ADD);
    if (me == 0)
      pld_wait(k, ping, PLD_AT(1), i + 1, PLD_WAIT_GE);
  }
  for (int32_t i = 0; what == DO_BARRIER && i < (arg > 1 ? arg : 1); i++)
    pld_barrier(k, sig);
  if (what == DO_ALLREDUCE)
    pld_allreduce(k, data, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)arg);
  for (int c = 0; what == DO_COLLS && c < 5; c++)
    for (int32_t i = 0; i < arg; i++) {
      if (c < 3)
        pld_allreduce(k, data, sig, PLD_REDUCE_SUM,
                      (pld_allreduce_mode)(PLD_ALLREDUCE_MESH + c));
      else
        pld_broadcast(k, data, sig, c - 3);
    }
}

PLD_DEVICE(d_comm, a, COMM_PARAMS) {
  pld_launch(a, k_comm, 1, x, data, sig, ping, what, arg);
}

PLD_HOST(h_comm, h, PLD_IN(x, FP32, NR, PN), PLD_SCALAR(what, INT32),
         PLD_SCALAR(arg, INT32)) {
  int n = pld_world_size(h);
  int64_t pn = pld_tensor_dim(x, 1), sc = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(pn));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(sc));
  pld_window_buf ping = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_comm, r, pld_slice(h, x, r),
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(pn)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(sc)),
                 pld_window_view(h, ping, PLD_INT32, PLD_SHAPE(2)), what, arg);
}

/* What run_comm keeps of a run's report (its program is destroyed). */
struct comm_run {
  double span[4]; /* each rank's task 0 */
  double most;    /* the largest of them */
  double total;
  double start; /* rank 0's task 0's start */
};

/* h_comm on n ranks with `elems` elements each, doing what with arg. */
/* A trace file for run_comm's programs (NULL: none). */
static const char *comm_trace;

static struct comm_run run_comm(int n, int64_t elems, int what, int arg) {
  pld_config cfg = model_config(n);
  cfg.trace = comm_trace;
  const int64_t shape[] = {n, elems};
  pld_tensor x = pld_test_tensor(2, shape, 0, 1);
  pld_program *p;
  assert_ok(pld_compile(h_comm, &cfg, PLD_ARGS(x, what, arg), &p));
  assert_ok(pld_program_run(p, PLD_ARGS(x, what, arg)));
  pld_model_report r = model_report(p);
  struct comm_run c = {.most = model_max_span(&r), .total = r.total_ns};
  assert_int_equal(r.nranks, n);
  for (int q = 0; q < n; q++)
    c.span[q] = model_task_span(&r, q, 0, 0);
  for (int32_t i = 0; i < r.ranks[0].ntasks; i++)
    if (r.ranks[0].tasks[i].call == 0 && r.ranks[0].tasks[i].task == 0)
      c.start = r.ranks[0].tasks[i].start_ns;
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  return c;
}

/* A put of n bytes to a peer of the same server: LINK_NS + n / LINK_GBPS
 * (the ports are faster than a link), from 4 B to 16 MiB; and never less
 * time for more bytes. */
static void run_put(int n) {
  pld_config cfg = model_config(n);
  struct pld__machine m = model_figures(&cfg);
  double last = 0, last_total = 0;
  for (int64_t elems = 1; elems <= ((int64_t)4 << 20); elems *= 4) {
    struct comm_run c = run_comm(n, elems, DO_PUT, 0);
    double want =
        FIG(m, LINK_NS) + model_bytes_ns((double)elems * 4, FIG(m, LINK_GBPS));
    assert_within_2pct("a put", c.span[0], want);
    assert_true(c.span[0] >= last && c.total >= last_total);
    last = c.span[0];
    last_total = c.total;
  }
  /* A loop of 50 puts of 4 KiB (one record with its count): 50 of them,
   * one after the other. */
  struct comm_run l = run_comm(n, 1024, DO_PUT, 50);
  assert_within_2pct(
      "50 puts of 4 KiB", l.span[0],
      50 * (FIG(m, LINK_NS) + model_bytes_ns(4096, FIG(m, LINK_GBPS))));
  /* Puts of 4 KiB and 2 KiB in turn: each its own size, none counted as
   * a repetition of the other. */
  struct comm_run h = run_comm(n, 1024, DO_PUT_HALVES, 50);
  assert_within_2pct("50 puts of 4 KiB and 50 of 2 KiB in turn", h.span[0],
                     50 * (2 * FIG(m, LINK_NS) +
                           model_bytes_ns(4096, FIG(m, LINK_GBPS)) +
                           model_bytes_ns(2048, FIG(m, LINK_GBPS))));
  /* The difference of two puts isolates the bandwidths: the link's, and
   * the host's copying each rank's slice of x in first (each rank's own
   * link to the host, at once; x is In, nothing is copied out). */
  struct comm_run a = run_comm(n, (int64_t)1 << 20, DO_PUT, 0);
  struct comm_run b = run_comm(n, (int64_t)3 << 20, DO_PUT, 0);
  assert_within_2pct("8 MiB more put and copied in", b.total - a.total,
                     model_bytes_ns((double)(8 << 20), FIG(m, LINK_GBPS)) +
                         model_bytes_ns((double)(8 << 20), FIG(m, HOST_GBPS)));
  /* The copy in is before the first kernel starts. */
  assert_within_2pct("8 MiB more copied in", b.start - a.start,
                     model_bytes_ns((double)(8 << 20), FIG(m, HOST_GBPS)));
}

static void test_put(void **state) {
  (void)state;
  comm_over_rank_counts(run_put);
}

/* Rank 0 notifies rank 1, which waits for it and notifies back, 25 times:
 * each hand-over is NOTIFY_NS to issue, LINK_NS to land and WAIT_NS for
 * the waiter to go on. */
static void run_ping(int n) {
  pld_config cfg = model_config(n);
  struct pld__machine m = model_figures(&cfg);
  const int rounds = 25;
  struct comm_run c = run_comm(n, 8, DO_PING, rounds);
  double hop = FIG(m, NOTIFY_NS) + FIG(m, LINK_NS) + FIG(m, WAIT_NS);
  assert_within_2pct("25 round trips", c.span[0], 2 * rounds * hop);
  /* Rank 1's first wait: one hand-over after both blocks started. */
  struct comm_run one = run_comm(n, 8, DO_PING, 1);
  assert_within_2pct("a notify and its wait", one.span[1],
                     hop + FIG(m, NOTIFY_NS));
}

static void test_notify_wait(void **state) {
  (void)state;
  comm_over_rank_counts(run_ping);
}

/* pld_barrier: every rank credits the P-1 others (NOTIFY_NS each), then
 * waits for each of theirs (WAIT_NS each).  The last rank is the last
 * every other rank credits, so its credits land LINK_NS after the others'
 * last notify: L + (P-1)(NOTIFY_NS + WAIT_NS). */
static void run_barrier(int n) {
  pld_config cfg = model_config(n);
  struct pld__machine m = model_figures(&cfg);
  struct comm_run c = run_comm(n, 8, DO_BARRIER, 0);
  double want =
      FIG(m, LINK_NS) + (n - 1) * (FIG(m, NOTIFY_NS) + FIG(m, WAIT_NS));
  assert_within_2pct("a barrier", c.most, want);
  /* A loop of them (its turns one folded record, each call taking its
   * credits back): rank r leaves barrier k at e[r]; in the next it
   * credits the others in rank order, then waits for each in rank order,
   * rank q's credit landing LINK_NS after q issued it. */
  enum { LOOPS = 40 };
  double e[4] = {0}, next[4];
  for (int k = 0; k < LOOPS; k++) {
    for (int r = 0; r < n; r++) {
      double t = e[r] + (n - 1) * FIG(m, NOTIFY_NS);
      for (int q = 0; q < n; q++)
        if (q != r) {
          double lands =
              e[q] + (r < q ? r + 1 : r) * FIG(m, NOTIFY_NS) + FIG(m, LINK_NS);
          t = (t > lands ? t : lands) + FIG(m, WAIT_NS);
        }
      next[r] = t;
    }
    memcpy(e, next, sizeof e);
  }
  double last = 0;
  for (int r = 0; r < n; r++)
    last = e[r] > last ? e[r] : last;
  struct comm_run l = run_comm(n, 8, DO_BARRIER, LOOPS);
  assert_within_2pct("40 barriers", l.most, last);
}

static void test_barrier(void **state) {
  (void)state;
  comm_over_rank_counts(run_barrier);
}

/* run_comm twice: with the model alone observing (*whole), and with a
 * trace on (*steps), whose events stand between a call's records, so
 * that every call records its steps. */
static void run_comm_traced(int n, int64_t elems, int what, int arg,
                            struct comm_run *whole, struct comm_run *steps) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/pld-test-forms-%d.json", (int)getpid());
  *whole = run_comm(n, elems, what, arg);
  comm_trace = path;
  *steps = run_comm(n, elems, what, arg);
  comm_trace = NULL;
  unlink(path);
}

/* With the model alone observing, a barrier is one record that the host
 * replaces by its steps' records (pld__tl_expand_barriers); with a trace
 * on, its steps record themselves.  Both give the same modeled times,
 * bit for bit: one barrier and a folded loop of 40. */
static void run_barrier_whole(int n) {
  for (int loops = 1; loops <= 40; loops += 39) {
    struct comm_run whole, steps;
    run_comm_traced(n, 8, DO_BARRIER, loops, &whole, &steps);
    assert_true(whole.total == steps.total && whole.most == steps.most);
    for (int q = 0; q < n; q++)
      assert_true(whole.span[q] == steps.span[q]);
  }
}

static void test_barrier_whole(void **state) {
  (void)state;
  comm_over_rank_counts(run_barrier_whole);
}

/* With the model alone observing, a collective call that repeats the
 * last one, whose records were one turn of the loop the records fold,
 * records nothing and counts one more turn (pld__obs_call_begin); with a
 * trace on, every call records its steps.  Both give the same modeled
 * times, bit for bit: loops of 1, 5 and 12 calls of each mode of
 * allreduce and of broadcast from rank 0 and from rank 1, small (eager)
 * and large. */
static void run_repeated_calls(int n) {
  for (int64_t elems = 12; elems <= 12 << 10; elems <<= 10)
    for (int loops = 1; loops <= 12; loops += loops == 1 ? 4 : 7) {
      struct comm_run whole, steps;
      run_comm_traced(n, elems, DO_COLLS, loops, &whole, &steps);
      if (whole.total != steps.total || whole.most != steps.most)
        fail_msg("%d ranks, %lld elements, %d calls each: %.3f ns without a "
                 "trace, %.3f with",
                 n, (long long)elems, loops, whole.total, steps.total);
      for (int q = 0; q < n; q++)
        assert_true(whole.span[q] == steps.span[q]);
    }
}

static void test_repeated_calls(void **state) {
  (void)state;
  comm_over_rank_counts(run_repeated_calls);
}

/* The entry of a collective: each rank writes its call's description and
 * `bytes` of data into each peer's slot (a put of PLD_COLL_DESC_CELLS
 * cells and the bytes, then a credit), in turn; then it waits for a
 * credit from every peer.  A rank's last credit comes from its right
 * neighbour's last write, and ranks 0 and P-1 wait for it first:
 * (P-1)(alpha + bytes/beta + NOTIFY_NS) + LINK_NS + (P-1) WAIT_NS. */
static double entry_ns(const struct pld__machine *m, int n, double bytes) {
  double put =
      FIG(*m, LINK_NS) +
      model_bytes_ns(PLD_COLL_DESC_CELLS * 4 + bytes, FIG(*m, LINK_GBPS));
  return (n - 1) * (put + FIG(*m, NOTIFY_NS)) + FIG(*m, LINK_NS) +
         (n - 1) * FIG(*m, WAIT_NS);
}

/* The reductions of a collective: k combines of `bytes` each, each an
 * elementwise operation (one VEC_OP_CYCLES) through its two operands and
 * its result at VEC_BYTES a cycle, as test_elementwise's adds: gamma is
 * 3 / VEC_BYTES cycles a byte. */
static double combines_ns(const struct pld__machine *m, double k,
                          double bytes) {
  return model_cycles_ns(
      k * (FIG(*m, VEC_OP_CYCLES) + 3 * bytes / FIG(*m, VEC_BYTES)),
      FIG(*m, AIV_MHZ));
}

/* A mesh allreduce of at most PLD_COLL_EAGER_BYTES per rank: the data
 * travels with the entry, each rank adds what it received (P-1 combines
 * of the bytes): the entry and the adds are the whole call. */
static void run_mesh(int n) {
  pld_config cfg = model_config(n);
  struct pld__machine m = model_figures(&cfg);
  const int64_t elems = PLD_COLL_EAGER_BYTES / 4;
  struct comm_run c = run_comm(n, elems, DO_ALLREDUCE, PLD_ALLREDUCE_MESH);
  assert_within_2pct("a mesh allreduce of 1 KiB", c.most,
                     entry_ns(&m, n, (double)elems * 4) +
                         combines_ns(&m, n - 1, (double)elems * 4));
}

static void test_mesh_allreduce(void **state) {
  (void)state;
  comm_over_rank_counts(run_mesh);
}

/* Elements the collectives reduce at a time (a staging tile's, when tile
 * memory has room: pld/collective.h). */
enum { COLL_GROUP = 8192 };

/* The builtin ring on n elements of 4 bytes: stage t (1 to 2(P-1)) waits
 * for the left neighbour's credit of stage t-1 (but the first), reads n/P
 * bytes from it (one transfer, whatever the groups it is staged in) and
 * credits the right (but the last): 2(P-1)(alpha + n/(P beta)) with alpha
 * = 2 LINK_NS + NOTIFY_NS + WAIT_NS (the credit lands, then the read),
 * less one credit's alpha the first and last stages leave out.  The first
 * P-1 stages also add the bytes read to their own before the credit, a
 * combine a group: (P-1) n/P gamma.  The implementation adds what every
 * collective has: the entry (its descriptions) before the stages and a
 * round of credits after them (so that no rank returns while a peer still
 * reads its window), as pld_barrier's. */
static double ring_ns(const struct pld__machine *m, int n, double bytes) {
  double alpha = 2 * FIG(*m, LINK_NS) + FIG(*m, NOTIFY_NS) + FIG(*m, WAIT_NS);
  double stages =
      2 * (n - 1) * (alpha + model_bytes_ns(bytes / n, FIG(*m, LINK_GBPS)));
  double groups = ceil(bytes / n / 4 / COLL_GROUP);
  double adds = (n - 1) * combines_ns(m, groups, bytes / n / groups);
  double credit = FIG(*m, LINK_NS) + FIG(*m, NOTIFY_NS) + FIG(*m, WAIT_NS);
  double round =
      FIG(*m, LINK_NS) + (n - 1) * (FIG(*m, NOTIFY_NS) + FIG(*m, WAIT_NS));
  return entry_ns(m, n, 0) + stages + adds - credit + round;
}

static void run_ring(int n) {
  pld_config cfg = model_config(n);
  struct pld__machine m = model_figures(&cfg);
  /* 24 groups of the collective's elements per chunk. */
  const int64_t elems = (int64_t)n * 24 * COLL_GROUP;
  const double bytes = (double)elems * 4;
  struct comm_run c = run_comm(n, elems, DO_ALLREDUCE, PLD_ALLREDUCE_RING);
  print_message("a ring allreduce of %.0f B on %d ranks: modeled %.3f ns "
                "(the run %.3f ns), the closed form %.3f ns\n",
                bytes, n, c.most, c.total, ring_ns(&m, n, bytes));
  assert_within_2pct("a ring allreduce", c.most, ring_ns(&m, n, bytes));
  /* Twice the bytes: the stages' bandwidth and reduction terms alone,
   * 2(P-1) n/(P beta) + (P-1) n/P gamma (and as many more groups). */
  struct comm_run d = run_comm(n, 2 * elems, DO_ALLREDUCE, PLD_ALLREDUCE_RING);
  assert_within_2pct(
      "the ring's bandwidth and reduction terms", d.most - c.most,
      2 * (n - 1) * model_bytes_ns(bytes / n, FIG(m, LINK_GBPS)) +
          (n - 1) * combines_ns(&m, 24, bytes / n / 24));
}

static void test_ring_allreduce(void **state) {
  (void)state;
  comm_over_rank_counts(run_ring);
}

/* ---- monotonicity ---------------------------------------------------------
 */

/* The allreduce in every mode over sizes from 4 B to 2 MiB per rank:
 * never less modeled time for more bytes. */
static void run_allreduce_sizes(int n) {
  static const int modes[] = {PLD_ALLREDUCE_AUTO, PLD_ALLREDUCE_MESH,
                              PLD_ALLREDUCE_TWO_PHASE, PLD_ALLREDUCE_RING};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    double last = 0;
    for (int64_t elems = 1; elems <= ((int64_t)1 << 19); elems *= 8) {
      struct comm_run c = run_comm(n, elems, DO_ALLREDUCE, modes[i]);
      if (c.total < last) {
        print_error("mode %d: %lld elements took %.3f ns, fewer %.3f ns\n",
                    modes[i], (long long)elems, c.total, last);
        fail();
      }
      last = c.total;
    }
  }
}

static void test_allreduce_monotone(void **state) {
  (void)state;
  comm_over_rank_counts(run_allreduce_sizes);
}

/* The same blocks (of unequal work: block b adds 1 + b % 5 times) on
 * a5sim given a2a3sim's figures, which has more vector cores: never more
 * modeled time; nor with each platform's own figures and more blocks
 * than cores of either. */
static void test_more_cores(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  char values[4096];
  size_t len = 0;
  for (int id = 0; id < PLD__MODEL_VALUES; id++) {
    const struct pld__model_info *f = pld__model_info(id);
    len += (size_t)snprintf(values + len, sizeof values - len, "%s = %lld;",
                            f->name, (long long)f->a2a3);
    assert_true(len < sizeof values);
  }
  for (int blocks = 1; blocks <= 150; blocks = blocks * 2 + 7) {
    pld_config few = model_config(2), more = model_config(2);
    few.platform = "a2a3sim";
    more.platform = "a5sim";
    more.model_values = values;
    assert_true(pld_platform_find("a5sim")->vector_cores >
                pld_platform_find("a2a3sim")->vector_cores);
    const struct vec_work w = {1, 3, 1};
    run_vec(few, 2, blocks, w, PLD_MODEL_COMPUTE, NULL);
    double t_few = vec_total;
    run_vec(more, 2, blocks, w, PLD_MODEL_COMPUTE, NULL);
    double t_more = vec_total;
    if (t_more > t_few) {
      print_error("%d blocks: %.3f ns on 72 cores, %.3f ns on 48\n", blocks,
                  t_more, t_few);
      fail();
    }
  }
}

/* Blocks of equal work over the same cores: more blocks never take less. */
static void test_more_blocks(void **state) {
  (void)state;
  if (!comm_world_fits(2))
    skip();
  double last = 0;
  for (int blocks = 1; blocks <= 200; blocks += 13) {
    double t = run_vec(model_config(2), 2, blocks, (struct vec_work){1, 20, 1},
                       PLD_MODEL_COMPUTE, NULL);
    /* (Spans are differences of times in ns as doubles: a thousandth of
     * the model's picosecond is rounding.) */
    assert_true(t >= last - 1e-6 && vec_total >= t);
    last = t;
  }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_elementwise),
    cmocka_unit_test(test_elementwise_memory_bound),
    cmocka_unit_test(test_moves_latency),
    cmocka_unit_test(test_prefetch_overlaps),
    cmocka_unit_test(test_matmul_peak),
    cmocka_unit_test(test_put),
    cmocka_unit_test(test_notify_wait),
    cmocka_unit_test(test_barrier),
    cmocka_unit_test(test_barrier_whole),
    cmocka_unit_test(test_repeated_calls),
    cmocka_unit_test(test_mesh_allreduce),
    cmocka_unit_test(test_ring_allreduce),
    cmocka_unit_test(test_allreduce_monotone),
    cmocka_unit_test(test_more_cores),
    cmocka_unit_test(test_more_blocks),
};

PLD_TEST_MAIN("model_forms", tests)
