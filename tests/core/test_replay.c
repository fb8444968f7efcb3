/* The timing model's replay (core/timeline.h) on timelines written by
 * hand: the closed forms it must reproduce (a block's start, a compute
 * run, a matmul at the cube's peak, a put at latency + bytes / bandwidth,
 * a notify and a wait, a ring allreduce at 2(P-1)(alpha + n/(P beta)) on
 * 2 to 4 ranks), scheduling on a platform's cores, dependencies, deferred
 * waits, transfers completing at a flush (and repeated with their flush
 * in one record), contention for device memory
 * and links, servers, calls waiting for other ranks' calls, monotonicity,
 * determinism, and the refusals.  Every expected time is computed here
 * from the machine's figures. */
#include "pld_test.h"

#include "core/alloc.h"
#include "core/model.h"
#include "core/timeline.h"
#include "core/trace.h"
#include "pld/signal.h"

static char msg[1024];
static struct pld__machine m;

#define PS(id) (m.v[PLD__M_##id] * 1000)
#define V(id) (m.v[PLD__M_##id])

/* Picoseconds of cycles at mhz and of bytes at gbps, rounded up. */
static int64_t cyc(int64_t cycles, int64_t mhz) {
  return (cycles * 1000000 + mhz - 1) / mhz;
}
static int64_t bw(int64_t bytes, int64_t gbps) {
  return (bytes * 1000 + gbps - 1) / gbps;
}

static int setup(void **state) {
  (void)state;
  return pld__machine_init(&m, "a2a3sim", NULL, NULL, msg, sizeof msg);
}

/* From a call's start to its first block's first record; from a block's
 * end to its call's end. */
#define BEFORE                                                                 \
  (PS(HOST_DISPATCH_NS) + PS(LAUNCH_NS) + PS(BLOCK_DISPATCH_NS) +              \
   PS(BLOCK_START_NS))
#define AFTER PS(BLOCK_END_NS)

static int replay(const struct pld__timeline *tl, int nv, int nc,
                  struct pld__tl_report *r) {
  return pld__tl_replay(tl, &m, nv, nc, 16, r, msg, sizeof msg);
}

/* A timeline of n ranks (devices 0..n-1, or dev[]), each one call of one
 * vector task of one block whose records are rec[rank]. */
struct ranks {
  struct pld__tl_block blk[8];
  struct pld__tl_task task[8];
  struct pld__tl_call call[8];
  struct pld__tl_rank rank[8];
  struct pld__timeline tl;
};

static struct pld__timeline *one_block_each(struct ranks *w, int n,
                                            const struct pld__tl_rec *rec[],
                                            const int nrec[], const int *dev) {
  memset(w, 0, sizeof *w);
  for (int q = 0; q < n; q++) {
    w->blk[q] = (struct pld__tl_block){.nrec = nrec[q], .rec = rec[q]};
    w->task[q] =
        (struct pld__tl_task){.name = "k", .nblocks = 1, .blocks = &w->blk[q]};
    w->call[q] =
        (struct pld__tl_call){.name = "d", .ntasks = 1, .tasks = &w->task[q]};
    w->rank[q] = (struct pld__tl_rank){
        .device = dev ? dev[q] : q, .ncalls = 1, .calls = &w->call[q]};
  }
  w->tl = (struct pld__timeline){n, w->rank};
  return &w->tl;
}

static void test_compute_and_matmul(void **state) {
  (void)state;
  struct pld__tl_report r;
  /* 1 MiB of an elementwise op in 4 operations, and the copies. */
  const struct pld__tl_rec vec[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 1 << 20, 4}};
  struct pld__tl_block b = {.nrec = 1, .rec = vec};
  struct pld__tl_task t = {.name = "k", .nblocks = 1, .blocks = &b};
  struct pld__tl_call c = {.name = "d", .ntasks = 1, .tasks = &t};
  struct pld__tl_rank rk = {.device = 0,
                            .bytes_in = 4096,
                            .bytes_out = 8192,
                            .ncalls = 1,
                            .calls = &c};
  struct pld__timeline tl = {1, &rk};
  assert_ok(replay(&tl, 48, 24, &r));
  int64_t work =
      cyc(4 * V(VEC_OP_CYCLES) + (1 << 20) / V(VEC_BYTES), V(AIV_MHZ));
  int64_t start = bw(4096, V(HOST_GBPS)) + BEFORE;
  assert_int_equal(r.total_ps, start + work + AFTER + bw(8192, V(HOST_GBPS)));
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.rank_ps[0], r.total_ps);
  assert_int_equal(r.ncores, 1);
  assert_int_equal(r.cores[0].busy_ps[PLD__TB_COMPUTE], work);
  assert_int_equal(r.cores[0].finish_ps, start + work);
  assert_int_equal(r.nspans, 1);
  assert_int_equal(r.spans[0].start_ps, start);
  assert_int_equal(r.spans[0].end_ps, start + work);
  pld__tl_report_free(&r);

  /* A 1024^3 FP16 matmul: within 2% of 2MNK / (2 x MACs x clock). */
  const struct pld__tl_rec mm[] = {
      {PLD__TL_COMPUTE, PLD__TC_FP16, 0, (int64_t)1 << 30, 1}};
  b = (struct pld__tl_block){.nrec = 1, .rec = mm};
  t.cube = 1;
  rk.bytes_in = rk.bytes_out = 0;
  assert_ok(replay(&tl, 48, 24, &r));
  double peak_s = 2.0 * (1 << 30) /
                  (2.0 * (double)V(CUBE_MACS_FP16) * (double)V(AIC_MHZ) * 1e6);
  double got_s = (double)r.cores[0].busy_ps[PLD__TB_COMPUTE] * 1e-12;
  assert_true(got_s >= peak_s && got_s <= 1.02 * peak_s);
  assert_int_equal(r.cores[0].cube, 1);
  pld__tl_report_free(&r);
}

/* A put of n bytes: alpha + n beta; the same n to another server: its
 * latency and bandwidth. */
static void test_put(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  for (int far = 0; far < 2; far++) {
    const int64_t n = 1 << 20;
    const struct pld__tl_rec put[] = {{PLD__TL_XFER, PLD__TL_PUT, 1, n, 0}};
    const struct pld__tl_rec *rec[] = {put, NULL};
    const int nrec[] = {1, 0}, dev[] = {0, far ? 16 : 1};
    assert_ok(replay(one_block_each(&w, 2, rec, nrec, dev), 48, 24, &r));
    int64_t alpha = far ? PS(NET_NS) : PS(LINK_NS);
    int64_t beta = far ? bw(n, V(NET_GBPS)) : bw(n, V(LINK_GBPS));
    assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps, alpha + beta);
    assert_int_equal(r.cores[0].busy_ps[PLD__TB_COMM], alpha + beta);
    assert_int_equal(r.rank_ps[0], BEFORE + alpha + beta + AFTER);
    assert_int_equal(r.rank_ps[1], BEFORE + AFTER);
    pld__tl_report_free(&r);
  }
}

/* Rank 0 computes, then notifies rank 1's cell 7 twice; rank 1 waits for
 * it to reach 2: it goes on WAIT_NS after the second notify landed. */
static void test_notify_wait(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  const struct pld__tl_rec r0[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 25600, 1},
      {PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 7, 1},
      {PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 7, 1}};
  const struct pld__tl_rec r1[] = {{PLD__TL_WAIT, PLD_WAIT_GE, 1, 7, 2}};
  const struct pld__tl_rec *rec[] = {r0, r1};
  const int nrec[] = {3, 1};
  assert_ok(replay(one_block_each(&w, 2, rec, nrec, NULL), 48, 24, &r));
  int64_t work = cyc(V(VEC_OP_CYCLES) + 25600 / V(VEC_BYTES), V(AIV_MHZ));
  int64_t landed = BEFORE + work + 2 * PS(NOTIFY_NS) + PS(LINK_NS);
  assert_int_equal(r.spans[1].end_ps, landed + PS(WAIT_NS));
  assert_int_equal(r.cores[1].busy_ps[PLD__TB_WAIT],
                   landed + PS(WAIT_NS) - BEFORE);
  assert_int_equal(r.cores[0].busy_ps[PLD__TB_COMM], 2 * PS(NOTIFY_NS));
  pld__tl_report_free(&r);
  /* Waiting for 3 never ends in modeled order: a deadlock, said so. */
  const struct pld__tl_rec r1b[] = {{PLD__TL_WAIT, PLD_WAIT_GE, 1, 7, 3}};
  rec[1] = r1b;
  assert_int_equal(replay(one_block_each(&w, 2, rec, nrec, NULL), 48, 24, &r),
                   PLD_ERR_DEADLOCK);
  assert_string_equal(msg, "the model: rank 1, d, kernel k a block waits for "
                           "cell 7 of rank 1 to be >= 3, which holds 2 once "
                           "every notify has landed: in modeled order it is "
                           "never satisfied");
  assert_null(r.spans);
}

/* Many cells: rank 0 notifies cells 0 to N - 1 of rank 1 in turn (ids
 * spread as a window's cells are), rank 1 waits on each in the same
 * order.  The model's table of cells grows many times, moving thousands
 * of cells; every wait still sees its own cell.  Wait i ends at
 * max(the last wait's end, notify i's landing) + WAIT_NS, notify i
 * landing at BEFORE + (i + 1) NOTIFY_NS + LINK_NS. */
static void test_many_cells(void **state) {
  (void)state;
  enum { N = 5000 };
  struct pld__tl_rec *r0 = pld__calloc(N, sizeof *r0);
  struct pld__tl_rec *r1 = pld__calloc(N, sizeof *r1);
  assert_non_null(r0);
  assert_non_null(r1);
  for (int i = 0; i < N; i++) {
    const int64_t cell = 4 * (int64_t)i + 12;
    r0[i] = (struct pld__tl_rec){PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, cell, 1};
    r1[i] = (struct pld__tl_rec){PLD__TL_WAIT, PLD_WAIT_GE, 1, cell, 1};
  }
  struct ranks w;
  struct pld__tl_report r;
  const struct pld__tl_rec *rec[] = {r0, r1};
  const int nrec[] = {N, N};
  assert_ok(replay(one_block_each(&w, 2, rec, nrec, NULL), 48, 24, &r));
  int64_t end = BEFORE;
  for (int i = 0; i < N; i++) {
    const int64_t landed = BEFORE + (i + 1) * PS(NOTIFY_NS) + PS(LINK_NS);
    end = (end > landed ? end : landed) + PS(WAIT_NS);
  }
  assert_int_equal(r.spans[1].end_ps, end);
  assert_int_equal(r.spans[0].end_ps, BEFORE + N * PS(NOTIFY_NS));
  pld__tl_report_free(&r);
  pld__free(r0);
  pld__free(r1);
}

/* A put issued later, then a notify (a put with its signal): the signal
 * lands behind the data, the core goes on after issuing both (its
 * compute starts at once), and its block ends once the data is through. */
static void test_signal_behind_data(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  const int64_t n = 1 << 20;
  const struct pld__tl_rec r0[] = {
      {PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER, 1, n, 0},
      {PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 7, 1},
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 256, 1}};
  const struct pld__tl_rec r1[] = {{PLD__TL_WAIT, PLD_WAIT_GE, 1, 7, 1}};
  const struct pld__tl_rec *rec[] = {r0, r1};
  const int nrec[] = {3, 1};
  assert_ok(replay(one_block_each(&w, 2, rec, nrec, NULL), 48, 24, &r));
  const int64_t data = BEFORE + PS(LINK_NS) + bw(n, V(LINK_GBPS));
  /* The waiter goes on once the signal lands behind the data. */
  assert_int_equal(r.spans[1].end_ps, data + PS(LINK_NS) + PS(WAIT_NS));
  /* The sender computed meanwhile: all its time but the notify's issue
   * and the compute is the wait for its data at the block's end. */
  const int64_t work = cyc(V(VEC_OP_CYCLES) + 256 / V(VEC_BYTES), V(AIV_MHZ));
  assert_true(BEFORE + PS(NOTIFY_NS) + work < data);
  assert_int_equal(r.spans[0].end_ps, data);
  assert_int_equal(r.cores[0].busy_ps[PLD__TB_COMPUTE], work);
  pld__tl_report_free(&r);
}

/* The ring: 2(P-1) steps, each a put of n/P to the next rank, a notify
 * of its step cell and a wait on its own: 2(P-1)(alpha + n/(P beta)),
 * alpha = 2 LINK_NS + NOTIFY_NS + WAIT_NS (the data, then the signal). */
static void test_ring(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    const int64_t n = 3 << 20;
    struct pld__tl_rec rec[8][24];
    const struct pld__tl_rec *rp[8];
    int nrec[8];
    for (int q = 0; q < p; q++) {
      int k = 0;
      for (int step = 1; step <= 2 * (p - 1); step++) {
        rec[q][k++] = (struct pld__tl_rec){PLD__TL_XFER, PLD__TL_PUT,
                                           (q + 1) % p, n / p, 0};
        rec[q][k++] = (struct pld__tl_rec){PLD__TL_NOTIFY, PLD_NOTIFY_ADD,
                                           (q + 1) % p, 0, 1};
        rec[q][k++] =
            (struct pld__tl_rec){PLD__TL_WAIT, PLD_WAIT_GE, q, 0, step};
      }
      rp[q] = rec[q];
      nrec[q] = k;
    }
    struct ranks w;
    struct pld__tl_report r;
    assert_ok(replay(one_block_each(&w, p, rp, nrec, NULL), 48, 24, &r));
    int64_t alpha = 2 * PS(LINK_NS) + PS(NOTIFY_NS) + PS(WAIT_NS);
    int64_t want = 2 * (p - 1) * (alpha + bw(n / p, V(LINK_GBPS)));
    for (int q = 0; q < p; q++)
      assert_int_equal(r.spans[q].end_ps - r.spans[q].start_ps, want);
    assert_int_equal(r.total_ps, BEFORE + want + AFTER);
    pld__tl_report_free(&r);
  }
}

/* 3 blocks on 2 cores: the third starts on the core freed first; with 3
 * cores all start at once (more cores never take longer), and more bytes
 * never take less. */
static void test_cores(void **state) {
  (void)state;
  const struct pld__tl_rec a[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 2560, 1}};
  const struct pld__tl_rec b[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 25600, 1}};
  const struct pld__tl_block blocks[] = {
      {.nrec = 1, .rec = b}, {.nrec = 1, .rec = a}, {.nrec = 1, .rec = b}};
  struct pld__tl_task t = {.name = "k", .nblocks = 3, .blocks = blocks};
  struct pld__tl_call c = {.name = "d", .ntasks = 1, .tasks = &t};
  struct pld__tl_rank rk = {.device = 0, .ncalls = 1, .calls = &c};
  struct pld__timeline tl = {1, &rk};
  struct pld__tl_report r;
  int64_t wa = cyc(V(VEC_OP_CYCLES) + 10, V(AIV_MHZ));
  int64_t wb = cyc(V(VEC_OP_CYCLES) + 100, V(AIV_MHZ));
  int64_t start = BEFORE, again = PS(BLOCK_DISPATCH_NS) + PS(BLOCK_START_NS);
  assert_ok(replay(&tl, 2, 1, &r));
  assert_int_equal(r.spans[1].core, 1);
  assert_int_equal(r.spans[2].core, 1); /* core 1 ran the short block */
  assert_int_equal(r.spans[2].start_ps, start + wa + again);
  int64_t two = r.total_ps;
  assert_int_equal(two, start + wa + again + wb + AFTER);
  assert_int_equal(r.ncores, 2);
  pld__tl_report_free(&r);
  assert_ok(replay(&tl, 3, 1, &r));
  assert_int_equal(r.total_ps, start + wb + AFTER);
  assert_true(r.total_ps <= two);
  pld__tl_report_free(&r);
  assert_ok(replay(&tl, 1, 1, &r));
  assert_true(r.total_ps >= two);
  assert_int_equal(r.total_ps, start + wb + again + wa + again + wb + AFTER);
  pld__tl_report_free(&r);
  /* Monotone in bytes: a put of n + 1 bytes never takes less. */
  struct ranks w;
  int64_t last = 0;
  for (int64_t n = 1; n <= (1 << 16); n = n * 3 + 1) {
    const struct pld__tl_rec put[] = {{PLD__TL_XFER, PLD__TL_PUT, 1, n, 0}};
    const struct pld__tl_rec *rec[] = {put, NULL};
    const int nrec[] = {1, 0};
    assert_ok(replay(one_block_each(&w, 2, rec, nrec, NULL), 4, 1, &r));
    assert_true(r.total_ps >= last);
    last = r.total_ps;
    pld__tl_report_free(&r);
  }
}

/* Task 1 waits for task 0 (an edge), task 2 for nothing; task 3 ends with
 * a deferred wait that rank 1 satisfies late; the call ends with it. */
static void test_tasks(void **state) {
  (void)state;
  const struct pld__tl_rec w10[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 256000, 1}};
  const struct pld__tl_rec defer[] = {{PLD__TL_DEFER, PLD_WAIT_EQ, 0, 3, 1}};
  const struct pld__tl_block b0 = {.nrec = 1, .rec = w10},
                             bd = {.nrec = 1, .rec = defer};
  const int32_t dep0[] = {0};
  const struct pld__tl_task tasks[] = {
      {.name = "k0", .nblocks = 1, .blocks = &b0},
      {.name = "k1", .nblocks = 1, .blocks = &b0, .ndeps = 1, .deps = dep0},
      {.name = "k2", .nblocks = 1, .blocks = &b0},
      {.name = "k3", .nblocks = 1, .blocks = &bd}};
  const struct pld__tl_rec late[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 2560000, 1},
      {PLD__TL_NOTIFY, PLD_NOTIFY_SET, 0, 3, 1}};
  const struct pld__tl_block bl = {.nrec = 2, .rec = late};
  const struct pld__tl_task tl1 = {.name = "kl", .nblocks = 1, .blocks = &bl};
  const struct pld__tl_call calls[] = {
      {.name = "d0", .ntasks = 4, .tasks = tasks},
      {.name = "d1", .ntasks = 1, .tasks = &tl1}};
  const struct pld__tl_rank ranks[] = {
      {.device = 0, .ncalls = 1, .calls = &calls[0]},
      {.device = 1, .ncalls = 1, .calls = &calls[1]}};
  struct pld__timeline tl = {2, ranks};
  struct pld__tl_report r;
  assert_ok(replay(&tl, 48, 24, &r));
  int64_t w = cyc(V(VEC_OP_CYCLES) + 1000, V(AIV_MHZ));
  int64_t go = PS(BLOCK_DISPATCH_NS) + PS(BLOCK_START_NS);
  int64_t t0 = PS(HOST_DISPATCH_NS) + PS(LAUNCH_NS) + go;
  assert_int_equal(r.spans[0].start_ps, t0);
  assert_int_equal(r.spans[1].start_ps, t0 + w + AFTER + go);
  assert_int_equal(r.spans[2].start_ps, t0 + 2 * PS(LAUNCH_NS));
  int64_t set = BEFORE + cyc(V(VEC_OP_CYCLES) + 10000, V(AIV_MHZ)) +
                PS(NOTIFY_NS) + PS(LINK_NS);
  assert_true(set > t0 + w + AFTER + go + w);
  assert_int_equal(r.rank_ps[0], set + PS(WAIT_NS) + AFTER);
  pld__tl_report_free(&r);
}

/* Transfers issued later overlap and complete at the flush; two blocks'
 * moves queue on the device's memory; a call waits for another rank's. */
static void test_sharing(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  const int64_t n = 1 << 20;
  const struct pld__tl_rec puts[] = {
      {PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER, 1, n, 0},
      {PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER, 2, n, 0},
      {PLD__TL_FLUSH, 0, 0, 0, 0}};
  const struct pld__tl_rec *rec[] = {puts, NULL, NULL};
  const int nrec[] = {3, 0, 0};
  assert_ok(replay(one_block_each(&w, 3, rec, nrec, NULL), 48, 24, &r));
  /* Two links at once; the port (392 GB/s) takes both. */
  int64_t one = PS(LINK_NS) + bw(n, V(LINK_GBPS));
  assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps, one);
  pld__tl_report_free(&r);

  const struct pld__tl_rec mv[] = {{PLD__TL_MOVE, 0, 0, 64 << 20, 0}};
  const struct pld__tl_block bm = {.nrec = 1, .rec = mv};
  const struct pld__tl_block two[] = {bm, bm};
  struct pld__tl_task t = {.name = "k", .nblocks = 2, .blocks = two};
  struct pld__tl_call c = {.name = "d", .ntasks = 1, .tasks = &t};
  struct pld__tl_rank rk = {.device = 0, .ncalls = 1, .calls = &c};
  struct pld__timeline tl = {1, &rk};
  m.v[PLD__M_HBM_GBPS] = 10; /* below a core's 57.6 GB/s: memory binds */
  assert_ok(replay(&tl, 48, 24, &r));
  int64_t hbm = bw(64 << 20, 10);
  assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps, hbm + PS(MOVE_NS));
  assert_int_equal(r.spans[1].end_ps - r.spans[1].start_ps,
                   2 * hbm + PS(MOVE_NS));
  pld__tl_report_free(&r);
  assert_ok(setup(NULL));
  assert_ok(replay(&tl, 48, 24, &r));
  int64_t core = cyc((64 << 20) / V(MOVE_BYTES), V(AIV_MHZ));
  assert_int_equal(r.spans[1].end_ps - r.spans[1].start_ps, core + PS(MOVE_NS));
  pld__tl_report_free(&r);

  /* Rank 1's second call waits for rank 0's first. */
  const struct pld__tl_rec long_[] = {
      {PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 2560000, 1}};
  const struct pld__tl_block bl = {.nrec = 1, .rec = long_};
  const struct pld__tl_task tk = {.name = "k", .nblocks = 1, .blocks = &bl};
  const struct pld__tl_ref after = {0, 0};
  const struct pld__tl_call c0 = {.name = "a", .ntasks = 1, .tasks = &tk};
  const struct pld__tl_call c1[] = {
      {.name = "b", .ntasks = 0},
      {.name = "c", .ntasks = 0, .nafter = 1, .after = &after}};
  const struct pld__tl_rank ranks[] = {{.device = 0, .ncalls = 1, .calls = &c0},
                                       {.device = 1, .ncalls = 2, .calls = c1}};
  struct pld__timeline t2 = {2, ranks};
  assert_ok(replay(&t2, 48, 24, &r));
  assert_int_equal(r.rank_ps[1], r.rank_ps[0] + PS(HOST_DISPATCH_NS));
  pld__tl_report_free(&r);
}

/* A loop of n tiles double-buffered (pld_prefetch): the next tile's load
 * starts before the current tile's compute and is waited for after it:
 * bytes a tile, amount of vector work on each, records into rec (4 n). */
static int prefetch_loop(struct pld__tl_rec *rec, int n, int64_t bytes,
                         int64_t amount) {
  int k = 0;
  rec[k++] = (struct pld__tl_rec){PLD__TL_MOVE, PLD__TL_ASYNC, 0, bytes, 0};
  rec[k++] = (struct pld__tl_rec){PLD__TL_MOVED, 0, 0, 0, 0};
  for (int i = 0; i < n; i++) {
    if (i + 1 < n)
      rec[k++] =
          (struct pld__tl_rec){PLD__TL_MOVE, PLD__TL_ASYNC, 0, bytes, i + 1};
    rec[k++] =
        (struct pld__tl_rec){PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, amount, 1};
    if (i + 1 < n)
      rec[k++] = (struct pld__tl_rec){PLD__TL_MOVED, 0, 0, i + 1, 0};
  }
  return k;
}

/* Moves the core does not wait for (pld_prefetch): a double-buffered loop
 * of n tiles takes m + L + n c when each tile's compute c outlasts a
 * move (m through the engine, L its latency), and n (m + L) + c when the
 * moves bind, against n (m + L + c) loaded one after the other; a move
 * waits on the core's move engine behind the moves started before it. */
static void test_prefetch(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  enum { N = 6 };
  const int64_t bytes = 64 << 10;
  const int64_t mv = cyc((bytes + V(MOVE_BYTES) - 1) / V(MOVE_BYTES),
                         V(AIV_MHZ)); /* the core's engine binds */
  assert_true(mv > bw(bytes, V(HBM_GBPS)));
  const int64_t L = PS(MOVE_NS);
  struct pld__tl_rec loop[4 * N], plain[2 * N];
  const struct pld__tl_rec *rec[] = {loop};
  int nrec[] = {0};
  for (int bound = 0; bound < 2; bound++) { /* 0: compute, 1: moves */
    const int64_t amount = bound ? 64 : 16 * bytes;
    const int64_t c =
        cyc(V(VEC_OP_CYCLES) + (amount + V(VEC_BYTES) - 1) / V(VEC_BYTES),
            V(AIV_MHZ));
    assert_true(bound ? c < mv + L : c > mv + L);
    nrec[0] = prefetch_loop(loop, N, bytes, amount);
    rec[0] = loop;
    assert_ok(replay(one_block_each(&w, 1, rec, nrec, NULL), 48, 24, &r));
    assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps,
                     bound ? N * (mv + L) + c : mv + L + N * c);
    pld__tl_report_free(&r);
    for (int i = 0; i < N; i++) {
      plain[2 * i] = (struct pld__tl_rec){PLD__TL_MOVE, 0, 0, bytes, 1};
      plain[2 * i + 1] = loop[nrec[0] - 1];
    }
    rec[0] = plain;
    nrec[0] = 2 * N;
    assert_ok(replay(one_block_each(&w, 1, rec, nrec, NULL), 48, 24, &r));
    assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps, N * (mv + L + c));
    pld__tl_report_free(&r);
  }
  /* A move the core waits for, behind one it did not wait for. */
  const struct pld__tl_rec behind[] = {
      {PLD__TL_MOVE, PLD__TL_ASYNC, 0, bytes, 0},
      {PLD__TL_MOVE, 0, 0, bytes, 1},
      {PLD__TL_MOVED, 0, 0, 0, 0}};
  rec[0] = behind;
  nrec[0] = 3;
  assert_ok(replay(one_block_each(&w, 1, rec, nrec, NULL), 48, 24, &r));
  assert_int_equal(r.spans[0].end_ps - r.spans[0].start_ps, 2 * mv + L);
  pld__tl_report_free(&r);
}

/* The same timeline gives the same report, every time. */
static void test_deterministic(void **state) {
  (void)state;
  struct pld__tl_rec rec[4][16];
  const struct pld__tl_rec *rp[4];
  int nrec[4];
  for (int q = 0; q < 4; q++) { /* everyone notifies everyone, then waits */
    int k = 0;
    rec[q][k++] = (struct pld__tl_rec){PLD__TL_COMPUTE, PLD__TC_REDUCE, 0,
                                       1000 * (q + 1), 2};
    for (int p = 0; p < 4; p++)
      rec[q][k++] =
          (struct pld__tl_rec){PLD__TL_NOTIFY, PLD_NOTIFY_ADD, p, 1, 1};
    rec[q][k++] = (struct pld__tl_rec){PLD__TL_WAIT, PLD_WAIT_EQ, q, 1, 4};
    rp[q] = rec[q];
    nrec[q] = k;
  }
  struct ranks w;
  struct pld__tl_report a, b;
  assert_ok(replay(one_block_each(&w, 4, rp, nrec, NULL), 48, 24, &a));
  for (int i = 0; i < 5; i++) {
    assert_ok(replay(one_block_each(&w, 4, rp, nrec, NULL), 48, 24, &b));
    assert_int_equal(a.total_ps, b.total_ps);
    assert_int_equal(a.ncores, b.ncores);
    assert_memory_equal(a.spans, b.spans, (size_t)a.nspans * sizeof *a.spans);
    assert_memory_equal(a.cores, b.cores, (size_t)a.ncores * sizeof *a.cores);
    pld__tl_report_free(&b);
  }
  /* Each wait goes on once the last of the 4 contributions landed: rank
   * p's (q+1)-th notify, through a link unless p is q. */
  for (int q = 0; q < 4; q++) {
    int64_t last = 0;
    for (int p = 0; p < 4; p++) {
      int64_t work = cyc(2 * V(VEC_OP_CYCLES) +
                             (1000 * (p + 1) + V(VEC_REDUCE_BYTES) - 1) /
                                 V(VEC_REDUCE_BYTES),
                         V(AIV_MHZ));
      int64_t lands =
          BEFORE + work + (q + 1) * PS(NOTIFY_NS) + (p == q ? 0 : PS(LINK_NS));
      last = lands > last ? lands : last;
    }
    assert_int_equal(a.spans[q].end_ps, last + PS(WAIT_NS));
  }
  pld__tl_report_free(&a);
}

/* A transfer flushed b times (PLD__TL_FLUSHED, what a loop of plain puts
 * records) is the same as b transfers each followed by a flush, each one
 * a step of its own: here sharing rank 1's port with rank 2's puts.
 * Alone, each pays latency + bytes / bandwidth. */
static void test_flushed_repeats(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report a, b;
  const int64_t n = 1 << 20;
  enum { K = 5 };
  m.v[PLD__M_PORT_GBPS] = V(LINK_GBPS); /* a port takes one link's bytes */
  const struct pld__tl_rec folded[] = {
      {PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER | PLD__TL_FLUSHED, 1, n, K}};
  struct pld__tl_rec unfolded[2 * K];
  for (int i = 0; i < K; i++) {
    unfolded[2 * i] = (struct pld__tl_rec){
        PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER, 1, n, 0};
    unfolded[2 * i + 1] = (struct pld__tl_rec){PLD__TL_FLUSH, 0, 1, 0, 0};
  }
  const struct pld__tl_rec other[] = {{PLD__TL_XFER, PLD__TL_PUT, 1, n / 2, 0},
                                      {PLD__TL_XFER, PLD__TL_PUT, 1, 3 * n, 0},
                                      {PLD__TL_XFER, PLD__TL_PUT, 1, n, 0}};
  const struct pld__tl_rec *rec[] = {folded, NULL, other};
  int nrec[] = {1, 0, 3};
  assert_ok(replay(one_block_each(&w, 3, rec, nrec, NULL), 48, 24, &a));
  rec[0] = unfolded;
  nrec[0] = 2 * K;
  assert_ok(replay(one_block_each(&w, 3, rec, nrec, NULL), 48, 24, &b));
  assert_int_equal(a.total_ps, b.total_ps);
  for (int q = 0; q < 3; q++) {
    assert_int_equal(a.rank_ps[q], b.rank_ps[q]);
    assert_int_equal(a.spans[q].end_ps, b.spans[q].end_ps);
  }
  /* Rank 2's puts took rank 1's port in turn with rank 0's. */
  const int64_t alone = K * (PS(LINK_NS) + bw(n, V(LINK_GBPS)));
  assert_true(a.spans[0].end_ps - a.spans[0].start_ps > alone);
  pld__tl_report_free(&a);
  pld__tl_report_free(&b);

  rec[2] = NULL;
  nrec[2] = 0;
  rec[0] = folded;
  nrec[0] = 1;
  assert_ok(replay(one_block_each(&w, 3, rec, nrec, NULL), 48, 24, &a));
  assert_int_equal(a.spans[0].end_ps - a.spans[0].start_ps, alone);
  pld__tl_report_free(&a);
}

/* A barrier recorded as one record (PLD__TM_BARRIER) becomes, in its
 * place, the records its steps make (comm/coll_lane.c): a notify of each
 * peer's credit for the rank, the flush, a wait on each peer's credit,
 * the credits given back (a put of the lane's n cells to the rank itself)
 * and taken; the records around it stay.  Refused: fewer than 2 ranks,
 * more than the program's, or the rank outside them. */
static void test_barrier_records(void **state) {
  (void)state;
  const int64_t cell = ((int64_t)3 << 40) | 64;
  for (int32_t n = 2; n <= 4; n++)
    for (int32_t r = 0; r < n; r++) {
      size_t cap = 3, nr = 3;
      struct pld__tl_rec *v = pld__malloc(cap * sizeof *v);
      assert_non_null(v);
      v[0] = (struct pld__tl_rec){PLD__TL_MOVE, 0, 0, 8, 1};
      v[1] = (struct pld__tl_rec){PLD__TM_BARRIER, 0, n, cell, 0};
      v[2] = (struct pld__tl_rec){PLD__TL_MOVE, 0, 0, 16, 1};
      assert_ok(
          pld__tl_expand_barriers(&v, &nr, &cap, 1, r, 4, msg, sizeof msg));
      const size_t steps = 3 * (size_t)(n - 1) + 2;
      assert_int_equal(nr, 2 + steps);
      assert_true(v[0].a == 8 && v[nr - 1].a == 16);
      const struct pld__tl_rec *x = &v[1];
      for (int32_t q = 0; q < n; q++) /* the notifies */
        if (q != r) {
          assert_true(x->kind == PLD__TL_NOTIFY && x->peer == q &&
                      x->a == cell + 4 * r && x->b == 1);
          x++;
        }
      assert_true(x->kind == PLD__TL_FLUSH && x->peer == -1);
      x++;
      for (int32_t q = 0; q < n; q++) /* the waits */
        if (q != r) {
          assert_true(x->kind == PLD__TL_WAIT && x->sub == PLD_WAIT_GE &&
                      x->peer == r && x->a == cell + 4 * q && x->b == 1);
          x++;
        }
      assert_true(x->kind == PLD__TL_XFER && x->sub == PLD__TL_PUT &&
                  x->peer == r && x->a == 4 * n);
      x++;
      for (int32_t q = 0; q < n; q++) /* the credits taken */
        if (q != r) {
          assert_true(x->kind == PLD__TL_TAKE && x->peer == r &&
                      x->a == cell + 4 * q && x->b == 1);
          x++;
        }
      assert_ptr_equal(x, &v[nr - 1]);
      pld__free(v);
    }
  /* ranks, rank, the program's ranks */
  const int32_t bad[][3] = {{1, 0, 4}, {5, 0, 4}, {3, 3, 4}, {2, -1, 4}};
  const char *const why[] = {
      "rank 0 recorded a barrier over ranks 0 to 0, expected 2 to 4 ranks "
      "with it among them",
      "rank 0 recorded a barrier over ranks 0 to 4, expected 2 to 4 ranks "
      "with it among them",
      "rank 3 recorded a barrier over ranks 0 to 2, expected 2 to 4 ranks "
      "with it among them",
      "rank -1 recorded a barrier over ranks 0 to 1, expected 2 to 4 ranks "
      "with it among them"};
  for (int i = 0; i < 4; i++) {
    struct pld__tl_rec one = {PLD__TM_BARRIER, 0, bad[i][0], cell, 0};
    struct pld__tl_rec *v = &one;
    size_t nr = 1, cap = 1;
    msg[0] = '\0';
    assert_int_equal(pld__tl_expand_barriers(&v, &nr, &cap, 0, bad[i][1],
                                             bad[i][2], msg, sizeof msg),
                     PLD_ERR_UNSUPPORTED);
    assert_string_equal(msg, why[i]);
    assert_true(nr == 1 && v == &one);
  }
}

static void test_refusals(void **state) {
  (void)state;
  struct ranks w;
  struct pld__tl_report r;
  const struct pld__tl_rec bad[] = {{PLD__TL_XFER, PLD__TL_PUT, 5, 8, 0}};
  const struct pld__tl_rec *rec[] = {bad};
  const int nrec[] = {1};
  assert_int_equal(replay(one_block_each(&w, 1, rec, nrec, NULL), 4, 1, &r),
                   PLD_ERR_ARG);
  assert_string_equal(msg, "the timeline: rank 0, call 0: task 0, block 0, "
                           "record 0: peer 5, expected a rank in [0, 1)");
  const struct pld__tl_rec neg[] = {{PLD__TL_MOVE, 0, 0, -1, 0}};
  rec[0] = neg;
  assert_int_equal(replay(one_block_each(&w, 1, rec, nrec, NULL), 4, 1, &r),
                   PLD_ERR_ARG);
  assert_string_equal(msg, "the timeline: rank 0, call 0: task 0, block 0, "
                           "record 0: a record of kind 2, sub 0, amounts -1, "
                           "0");
  const struct pld__tl_rec ok[] = {{PLD__TL_MOVE, 0, 0, 1, 0}};
  rec[0] = ok;
  assert_int_equal(replay(one_block_each(&w, 1, rec, nrec, NULL), 0, 1, &r),
                   PLD_ERR_ARG);
  assert_string_equal(msg, "the timeline: rank 0, call 0: task 0, block 0, "
                           "record 0: a block of a vector kernel, and the "
                           "device has none");
  /* Moves the core did not wait for: numbered in order, each waited for
   * after it started. */
  const struct pld__tl_rec moves[][2] = {
      {{PLD__TL_MOVE, PLD__TL_ASYNC, 0, 8, 1}, {PLD__TL_MOVED, 0, 0, 0, 0}},
      {{PLD__TL_MOVED, 0, 0, 0, 0}, {PLD__TL_MOVE, PLD__TL_ASYNC, 0, 8, 0}},
      {{PLD__TL_MOVE, PLD__TL_ASYNC, 0, 8, 0}, {PLD__TL_MOVED, 0, 0, 1, 0}}};
  const char *const why_moves[] = {
      "record 0: move number 1 started, expected 0 (the moves the block "
      "started before it)",
      "record 0: a wait for move number 0, and the block started 0",
      "record 1: a wait for move number 1, and the block started 1"};
  const int two[] = {2};
  for (int i = 0; i < 3; i++) {
    rec[0] = moves[i];
    assert_int_equal(replay(one_block_each(&w, 1, rec, two, NULL), 4, 1, &r),
                     PLD_ERR_ARG);
    assert_non_null(strstr(msg, why_moves[i]));
  }
  /* Flushed: issued later, and at least once. */
  const struct pld__tl_rec flushed[][1] = {
      {{PLD__TL_XFER, PLD__TL_PUT | PLD__TL_FLUSHED, 0, 8, 1}},
      {{PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER | PLD__TL_FLUSHED, 0, 8, 0}}};
  const char *const why[] = {"a record of kind 3, sub 4, amounts 8, 1",
                             "a record of kind 3, sub 6, amounts 8, 0"};
  for (int i = 0; i < 2; i++) {
    rec[0] = flushed[i];
    assert_int_equal(replay(one_block_each(&w, 1, rec, nrec, NULL), 4, 1, &r),
                     PLD_ERR_ARG);
    assert_non_null(strstr(msg, why[i]));
  }
  rec[0] = ok;
  one_block_each(&w, 1, rec, nrec, NULL);
  const int32_t self[] = {0};
  w.task[0].ndeps = 1;
  w.task[0].deps = self;
  assert_int_equal(replay(&w.tl, 4, 1, &r), PLD_ERR_ARG);
  assert_string_equal(msg, "the timeline: rank 0, call 0: task 0 waits for "
                           "task 0, expected an earlier one");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_compute_and_matmul, setup),
    cmocka_unit_test_setup(test_put, setup),
    cmocka_unit_test_setup(test_notify_wait, setup),
    cmocka_unit_test_setup(test_many_cells, setup),
    cmocka_unit_test_setup(test_signal_behind_data, setup),
    cmocka_unit_test_setup(test_ring, setup),
    cmocka_unit_test_setup(test_flushed_repeats, setup),
    cmocka_unit_test_setup(test_prefetch, setup),
    cmocka_unit_test_setup(test_cores, setup),
    cmocka_unit_test_setup(test_tasks, setup),
    cmocka_unit_test_setup(test_sharing, setup),
    cmocka_unit_test_setup(test_deterministic, setup),
    cmocka_unit_test_setup(test_refusals, setup),
    cmocka_unit_test(test_barrier_records),
};

PLD_TEST_MAIN("core_replay", tests)
