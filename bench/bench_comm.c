/* bench_comm: communication between simulated devices (the shared-memory
 * fabric), next to Open MPI doing the same on this machine.
 *
 *   (1) barrier latency at 2, 4 and 8 ranks: pld_barrier in a kernel loop
 *       against MPI_Barrier (mpirun -np 2/4/8);
 *   (2) notify-to-wait ping-pong between 2 ranks, half a round trip:
 *       pld_notify / pld_wait against MPI_Fetch_and_op + MPI_Win_flush on
 *       an MPI_Win_allocate window (see mpi_ref.c for how MPI waits);
 *   (3) put and get bandwidth between 2 ranks, 4 KiB to 64 MiB: pld_put /
 *       pld_get against memcpy in one process and MPI_Put / MPI_Get (+
 *       MPI_Win_flush) on an MPI_Win_allocate window.
 *
 * How pld is timed: inside the kernels.  A kernel is ordinary C running on
 * a core thread of its device process, so it reads CLOCK_MONOTONIC (one
 * clock for every process of the machine) around a loop of many operations
 * and writes the time per operation into an Out tensor with pld_write.
 * This leaves out what a program run adds around the kernel (dispatch, the
 * copies of tensors in and out, the zeroing of window memory), which the
 * other method - timing pld_program_run for K iterations minus a run of 0 -
 * would only cancel approximately, and with the noise of two runs.  Each
 * timing is repeated; the figures are medians.  For the barrier, each
 * repetition starts with an extra barrier so that the ranks start the
 * clock together, and the repetition's figure is the slowest rank's, as
 * for MPI (mpi_ref.c).
 *
 * The MPI figures come from mpi_ref, an MPI program this one starts with
 * mpirun (popen) and whose printed numbers it reads, so one run prints both
 * columns.  Without Open MPI they print as n/a.
 *
 *   bench_comm [quick] [barrier] [pingpong] [bandwidth]
 *       quick: 5 repetitions instead of 21, for a smoke test; naming parts
 *       runs only those (all by default).
 *
 * Nothing here fails on a slow result: the figures are printed with their
 * ratio and the target.  The exit status is 1 only if a pld call failed
 * (a bug, not a slow result). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pld.h"

#include "bench_util.h"

enum {
  MAX_RANKS = 8,     /* barrier cells: the largest world measured */
  MAX_REPS = 64,     /* timings per figure, at most */
  COLS = 1024,       /* bandwidth windows: rows of 1024 FP32 = 4 KiB */
  MAX_ROWS = 16384,  /* 16384 rows of 4 KiB = 64 MiB */
  NSIZES = 8,        /* 4 KiB, 16 KiB, ..., 64 MiB: powers of 4 */
  BATCH_BYTES = 32 << 20 /* a timing moves at least this much */
};

#define MIN_BYTES ((size_t)4096)
#define MAX_BYTES ((size_t)MAX_ROWS * COLS * sizeof(float))

PLD_DYNAMIC(NR);

/* Parameters of a run, an In tensor of each rank (a tensor rather than
 * scalars, whose values a compiled program fixes, so that a calibration
 * run and the measured run share one program). */
enum { P_ITERS = 0, P_REPS = 1, NPARAMS = 4 };

/* ---- (1) barrier --------------------------------------------------------- */

PLD_KERNEL(barrier_loop, k, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(sig, INT32, MAX_RANKS), PLD_OUT(t, FP64, MAX_REPS)) {
  const int64_t iters = (int64_t)pld_read(k, params, PLD_AT(P_ITERS));
  const int64_t reps = (int64_t)pld_read(k, params, PLD_AT(P_REPS));
  for (int i = 0; i < 20; i++) /* every rank's core thread up and hot */
    pld_barrier(k, sig);
  for (int64_t r = 0; r < reps; r++) {
    pld_barrier(k, sig); /* start the clocks together */
    const double t0 = now_s();
    for (int64_t i = 0; i < iters; i++)
      pld_barrier(k, sig);
    pld_write(k, t, PLD_AT(r), (now_s() - t0) / (double)iters);
  }
}

PLD_DEVICE(barrier_device, a, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(sig, INT32, MAX_RANKS), PLD_OUT(t, FP64, MAX_REPS)) {
  pld_launch(a, barrier_loop, 1, params, sig, t);
}

PLD_HOST(barrier_host, h, PLD_IN(params, INT64, NR, NPARAMS),
         PLD_OUT(t, FP64, NR, MAX_REPS)) {
  pld_window_buf sig =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(MAX_RANKS));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, barrier_device, r, pld_slice(h, params, r),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(MAX_RANKS)),
                 pld_slice(h, t, r));
}

/* ---- (2) ping-pong ------------------------------------------------------- */

/* Rank 0 adds 1 to rank 1's counter and waits for its own to reach the
 * round number; rank 1 waits, then answers the same way.  Counters only
 * grow, so no round needs resetting.  A repetition is `iters` round trips;
 * repetition -1 warms up.  Rank 0's clock. */
PLD_KERNEL(pingpong, k, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(sig, INT32, 1), PLD_OUT(t, FP64, MAX_REPS)) {
  const int64_t iters = (int64_t)pld_read(k, params, PLD_AT(P_ITERS));
  const int64_t reps = (int64_t)pld_read(k, params, PLD_AT(P_REPS));
  const int32_t me = pld_rank(k, pld_get_comm(sig)), peer = 1 - me;
  int32_t round = 0;
  for (int64_t r = -1; r < reps; r++) {
    const double t0 = now_s();
    for (int64_t i = 0; i < iters; i++) {
      round++;
      if (me == 0) {
        pld_notify(k, sig, peer, PLD_AT(0), 1, PLD_NOTIFY_ADD);
        pld_wait(k, sig, PLD_AT(0), round, PLD_WAIT_GE);
      } else {
        pld_wait(k, sig, PLD_AT(0), round, PLD_WAIT_GE);
        pld_notify(k, sig, peer, PLD_AT(0), 1, PLD_NOTIFY_ADD);
      }
    }
    if (r >= 0)
      pld_write(k, t, PLD_AT(r), (now_s() - t0) / (2.0 * (double)iters));
  }
}

PLD_DEVICE(pingpong_device, a, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(sig, INT32, 1), PLD_OUT(t, FP64, MAX_REPS)) {
  pld_launch(a, pingpong, 1, params, sig, t);
}

PLD_HOST(pingpong_host, h, PLD_IN(params, INT64, NR, NPARAMS),
         PLD_OUT(t, FP64, NR, MAX_REPS)) {
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, pingpong_device, r, pld_slice(h, params, r),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, t, r));
}

/* ---- (3) bandwidth ------------------------------------------------------- */

/* Transfers per timing: a batch of at least BATCH_BYTES, so that a 4 KiB
 * transfer is not lost in the cost of reading the clock. */
static int64_t batch_of(size_t bytes) {
  return bytes >= (size_t)BATCH_BYTES ? 1 : (int64_t)(BATCH_BYTES / bytes);
}

/* For every size in turn, rank 0 puts its copy of `src` into rank 1's
 * `dst`, gets rank 1's `src` into its own `dst`, and memcpys between two
 * private buffers; the region is the first bytes / 4 KiB rows, contiguous.
 * Each op loops alone over its own buffers (caches as a loop of that op
 * finds them), and the three follow each other within the same second, so
 * that the drift of a shared host's memory bandwidth (2x within a minute
 * here) stays out of the ratio.  Rank 1 only waits for the end (it must
 * not return: its windows would go away).  t[op][size][rep] is seconds per transfer (op 0 put, 1 get, 2
 * memcpy; -1 when the private buffers could not be allocated);
 * repetition -1 warms up (page tables of the freshly zeroed windows,
 * caches). */
PLD_KERNEL(bandwidth, k, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(src, FP32, MAX_ROWS, COLS),
           PLD_WINDOW(dst, FP32, MAX_ROWS, COLS), PLD_WINDOW(sig, INT32, 1),
           PLD_OUT(t, FP64, 3, NSIZES, MAX_REPS)) {
  const int64_t reps = (int64_t)pld_read(k, params, PLD_AT(P_REPS));
  if (pld_rank(k, pld_get_comm(sig)) != 0) {
    pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
    return;
  }
  unsigned char *pa = aligned_alloc(4096, MAX_BYTES);
  unsigned char *pb = aligned_alloc(4096, MAX_BYTES);
  if (pa && pb) {
    memset(pa, 1, MAX_BYTES); /* every page present, as in the windows */
    memset(pb, 2, MAX_BYTES);
  }
  int64_t s = 0;
  for (size_t bytes = MIN_BYTES; bytes <= MAX_BYTES; bytes *= 4, s++) {
    pld_xfer x;
    memset(&x, 0, sizeof x);
    x.rows = (int32_t)(bytes / (COLS * sizeof(float)));
    x.cols = COLS;
    const int64_t batch = batch_of(bytes);
    for (int64_t op = 0; op < 3; op++)
      for (int64_t r = -1; r < reps; r++) {
        if (op == 2 && !(pa && pb)) {
          pld_write(k, t, PLD_AT(op, s, r < 0 ? 0 : r), -1);
          continue;
        }
        const double t0 = now_s();
        for (int64_t i = 0; i < batch; i++)
          if (op == 0)
            pld_put(k, dst, 1, pld_local(src), &x);
          else if (op == 1)
            pld_get(k, pld_local(dst), 1, src, &x);
          else
            copy_private(pb, pa, bytes);
        if (r >= 0)
          pld_write(k, t, PLD_AT(op, s, r), (now_s() - t0) / (double)batch);
      }
  }
  free(pa);
  free(pb);
  pld_notify(k, sig, 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
}

PLD_DEVICE(bandwidth_device, a, PLD_IN(params, INT64, NPARAMS),
           PLD_WINDOW(src, FP32, MAX_ROWS, COLS),
           PLD_WINDOW(dst, FP32, MAX_ROWS, COLS), PLD_WINDOW(sig, INT32, 1),
           PLD_OUT(t, FP64, 3, NSIZES, MAX_REPS)) {
  pld_launch(a, bandwidth, 1, params, src, dst, sig, t);
}

PLD_HOST(bandwidth_host, h, PLD_IN(params, INT64, NR, NPARAMS),
         PLD_OUT(t, FP64, NR, 3, NSIZES, MAX_REPS)) {
  pld_window_buf src =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(MAX_ROWS, COLS));
  pld_window_buf dst =
      pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(MAX_ROWS, COLS));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, bandwidth_device, r, pld_slice(h, params, r),
                 pld_window_view(h, src, PLD_FP32, PLD_SHAPE(MAX_ROWS, COLS)),
                 pld_window_view(h, dst, PLD_FP32, PLD_SHAPE(MAX_ROWS, COLS)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, t, r));
}

/* ---- host side: running pld programs -------------------------------------- */

/* A program of `host` on devices 0..nranks-1, prepared, with its params
 * ([nranks, NPARAMS]) and times ([nranks, times_shape...]) tensors. */
struct prog {
  pld_program *p;
  pld_tensor params, t;
};

static int prog_init(struct prog *g, pld_host_fn host, int nranks,
                     int times_ndim, const int64_t *times_shape) {
  static const int ids[MAX_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7};
  memset(g, 0, sizeof *g);
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = nranks;
  int64_t shape[PLD_MAX_DIMS] = {nranks, NPARAMS};
  int st = pld_tensor_create(PLD_INT64, 2, shape, &g->params);
  if (st)
    return pld_failed(st, "pld_tensor_create");
  memcpy(shape + 1, times_shape, (size_t)times_ndim * sizeof *shape);
  if ((st = pld_tensor_create(PLD_FP64, times_ndim + 1, shape, &g->t)))
    return pld_failed(st, "pld_tensor_create");
  if ((st = pld_compile(host, &cfg, PLD_ARGS(g->params, g->t), &g->p)))
    return pld_failed(st, "pld_compile");
  if ((st = pld_program_prepare(g->p)))
    return pld_failed(st, "pld_program_prepare");
  return PLD_OK;
}

/* Runs it with every rank's iterations and repetitions set. */
static int prog_run(struct prog *g, int64_t iters, int64_t reps) {
  int64_t *pv = pld_tensor_data(g->params);
  for (int64_t r = 0; r < pld_tensor_dim(g->params, 0); r++) {
    pv[r * NPARAMS + P_ITERS] = iters;
    pv[r * NPARAMS + P_REPS] = reps;
  }
  int st = pld_program_run(g->p, PLD_ARGS(g->params, g->t));
  return st ? pld_failed(st, "pld_program_run") : PLD_OK;
}

static void prog_release(struct prog *g) {
  pld_program_destroy(g->p);
  pld_tensor_destroy(g->params);
  pld_tensor_destroy(g->t);
}

/* Median over repetitions of the slowest rank's figure (seconds). */
static double slowest_median(const struct prog *g, int nranks, int reps) {
  const double *tv = pld_tensor_data(g->t);
  double v[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    v[r] = 0;
    for (int q = 0; q < nranks; q++)
      if (tv[q * MAX_REPS + r] > v[r])
        v[r] = tv[q * MAX_REPS + r];
  }
  return median(v, reps);
}

/* ---- (1) ------------------------------------------------------------------ */

static void bench_barrier(int reps, int ncpu) {
  static const int worlds[] = {2, 4, 8};
  printf("\n(1) barrier latency: pld_barrier in a kernel loop vs MPI_Barrier, "
         "us per barrier\n");
  printf("    median of %d repetitions, each the slowest rank's loop time / "
         "iterations\n",
         reps);
  printf("  %5s %-19s %10s %10s %8s   %s\n", "ranks", "CPUs", "pld us",
         "MPI us", "pld/MPI", "target pld <= 2x MPI");
  for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
    const int n = worlds[w];
    double tp = -1, tm = -1;
    struct prog g;
    const int64_t tshape[] = {MAX_REPS};
    if (prog_init(&g, barrier_host, n, 1, tshape) == PLD_OK &&
        prog_run(&g, 20, 3) == PLD_OK) {
      /* Calibrated: about 20 ms per repetition. */
      const double guess = slowest_median(&g, n, 3);
      int64_t iters = (int64_t)(0.02 / (guess > 1e-8 ? guess : 1e-8));
      iters = iters < 50 ? 50 : iters > 200000 ? 200000 : iters;
      if (prog_run(&g, iters, reps) == PLD_OK)
        tp = slowest_median(&g, n, reps) * 1e6;
    }
    prog_release(&g);
    double v;
    char args[64];
    /* MPI: about 20 ms per repetition at this machine's speeds. */
    snprintf(args, sizeof args, "barrier %d %d", n == 2 ? 50000 : 1000, reps);
    if (mpi_run(n, "", args, &v, 1) == 1)
      tm = v;
    char cpus[32], a[32], b[32], c[32];
    snprintf(cpus, sizeof cpus, "%d%s", ncpu,
             n > ncpu ? " (oversubscribed)" : "");
    const double ratio = tp > 0 && tm > 0 ? tp / tm : -1;
    printf("  %5d %-19s %10s %10s %8s   %s\n", n, cpus,
           fmt(a, sizeof a, 3, "", tp), fmt(b, sizeof b, 3, "", tm),
           fmt(c, sizeof c, 2, "x", ratio),
           ratio < 0 ? "n/a" : ratio <= 2 ? "met" : "MISSED");
  }
}

/* ---- (2) ------------------------------------------------------------------ */

static void bench_pingpong(int reps) {
  enum { ITERS = 5000 };
  double tp = -1, tm[2] = {-1, -1};
  struct prog g;
  const int64_t tshape[] = {MAX_REPS};
  if (prog_init(&g, pingpong_host, 2, 1, tshape) == PLD_OK &&
      prog_run(&g, ITERS, reps) == PLD_OK) {
    const double *tv = pld_tensor_data(g.t);
    double v[MAX_REPS];
    memcpy(v, tv, (size_t)reps * sizeof *v); /* rank 0's clock */
    tp = median(v, reps) * 1e6;
  }
  prog_release(&g);
  char args[64];
  snprintf(args, sizeof args, "pingpong %d %d", ITERS, reps);
  double v[2];
  if (mpi_run(2, "", args, v, 2) == 2)
    tm[0] = v[0], tm[1] = v[1];
  char a[32], b[32], c[32], d[32];
  printf("\n(2) notify-to-wait ping-pong, 2 ranks, us per half round trip "
         "(median of %d x %d round trips)\n",
         reps, ITERS);
  printf("  %-62s %8s\n", "pld_notify(ADD) -> peer's pld_wait(GE)",
         fmt(a, sizeof a, 3, "", tp));
  printf("  %-62s %8s   pld is %s\n",
         "MPI_Fetch_and_op(SUM)+flush -> poll Fetch_and_op(NO_OP)+flush",
         fmt(b, sizeof b, 3, "", tm[0]),
         fmt(c, sizeof c, 2, "x", tp > 0 && tm[0] > 0 ? tp / tm[0] : -1));
  printf("  %-62s %8s   pld is %s\n",
         "MPI_Fetch_and_op(SUM)+flush -> poll atomic load, Win_sync",
         fmt(b, sizeof b, 3, "", tm[1]),
         fmt(d, sizeof d, 2, "x", tp > 0 && tm[1] > 0 ? tp / tm[1] : -1));
  printf("  target pld <= 1 us: %s\n",
         tp < 0 ? "n/a" : tp <= 1.0 ? "met" : "MISSED");
}

/* ---- (3) ------------------------------------------------------------------ */

static void bench_bandwidth(int reps) {
  double gbs[3][NSIZES], mpi[2][2][NSIZES]; /* [op]; [osc][op] */
  for (int s = 0; s < NSIZES; s++)
    gbs[0][s] = gbs[1][s] = gbs[2][s] = mpi[0][0][s] = mpi[0][1][s] =
        mpi[1][0][s] = mpi[1][1][s] = -1;
  struct prog g;
  const int64_t tshape[] = {3, NSIZES, MAX_REPS};
  if (prog_init(&g, bandwidth_host, 2, 3, tshape) == PLD_OK &&
      prog_run(&g, 1, reps) == PLD_OK) {
    const double *tv = pld_tensor_data(g.t); /* rank 0's */
    for (int op = 0; op < 3; op++)
      for (int s = 0; s < NSIZES; s++) {
        double v[MAX_REPS];
        memcpy(v, tv + (op * NSIZES + s) * MAX_REPS,
               (size_t)reps * sizeof *v);
        const double m = median(v, reps);
        gbs[op][s] = m > 0 ? (double)(MIN_BYTES << (2 * s)) / m * 1e-9 : -1;
      }
  }
  prog_release(&g);
  /* MPI with the one-sided component Open MPI picks for MPI_Win_allocate
   * (osc rdma over the vader BTL with Open MPI 4.1 on one node, whose
   * MPI_Get is slow at every size), and with osc sm (plain copies into
   * and out of the peer's shared segment, the mechanism of pld's shm
   * fabric). */
  static const char *const mca[2] = {"", "--mca osc sm "};
  char args[64];
  snprintf(args, sizeof args, "bw %zu %d", MAX_BYTES, reps);
  for (int o = 0; o < 2; o++) {
    double v[3 * NSIZES];
    const int n = mpi_run(2, mca[o], args, v, 3 * NSIZES);
    for (int i = 0; i + 2 < n; i += 3)
      for (int s = 0; s < NSIZES; s++)
        if ((double)(MIN_BYTES << (2 * s)) == v[i])
          mpi[o][0][s] = v[i + 1], mpi[o][1][s] = v[i + 2];
  }

  printf("\n(3) bandwidth between 2 ranks, GB/s (1e9 bytes/s), median of %d "
         "timings of >= %d MiB each\n",
         reps, BATCH_BYTES >> 20);
  printf("    pld: rank 0 puts its window into rank 1's / gets rank 1's into "
         "its own, contiguous rows\n");
  printf("    memcpy: between private buffers of rank 0's process, timed "
         "right after pld's put and get;\n"
         "    MPI: rank 0 <-> rank 1's MPI_Win_allocate window,\n"
         "    each op + MPI_Win_flush, with the osc component Open MPI picks "
         "(osc rdma over vader\n"
         "    with Open MPI 4.1 on one node) and with osc sm forced\n");
  int met = 1, measured = 0;
  for (int op = 0; op < 2; op++) {
    printf("  %-8s %8s %8s %7s %10s %10s %8s\n", "size", "memcpy",
           op ? "pld_get" : "pld_put", "/memcpy",
           op ? "MPI_Get" : "MPI_Put", op ? "MPI_Get" : "MPI_Put", "pld/MPI");
    printf("  %-8s %8s %8s %7s %10s %10s %8s\n", "", "", "", "",
           "default", "osc sm", "default");
    for (int s = 0; s < NSIZES; s++) {
      const size_t bytes = MIN_BYTES << (2 * s);
      char size[16], a[16], b[16], c[16], d[16], e[16], f[16];
      if (bytes >= ((size_t)1 << 20))
        snprintf(size, sizeof size, "%zu MiB", bytes >> 20);
      else
        snprintf(size, sizeof size, "%zu KiB", bytes >> 10);
      const double p = gbs[op][s], m = gbs[2][s], q = mpi[0][op][s];
      const double ratio = p > 0 && m > 0 ? p / m : -1;
      if (bytes >= ((size_t)1 << 20) && ratio >= 0) {
        measured = 1;
        met &= ratio >= 0.8;
      }
      printf("  %-8s %8s %8s %7s %10s %10s %8s\n", size,
             fmt(a, sizeof a, 2, "", m), fmt(b, sizeof b, 2, "", p),
             fmt(c, sizeof c, 0, "%", ratio * 100),
             fmt(d, sizeof d, 2, "", q),
             fmt(e, sizeof e, 2, "", mpi[1][op][s]),
             fmt(f, sizeof f, 2, "x", p > 0 && q > 0 ? p / q : -1));
    }
  }
  printf("  target pld put/get >= 80%% of memcpy from 1 MiB: %s\n",
         !measured ? "n/a" : met ? "met" : "MISSED");
}

int main(int argc, char **argv) {
  int quick = 0, only = 0; /* only: bit 1 barrier, 2 ping-pong, 4 bandwidth */
  static const char *const parts[] = {"barrier", "pingpong", "bandwidth"};
  for (int i = 1; i < argc; i++) {
    int known = strcmp(argv[i], "quick") == 0;
    quick |= known;
    for (int j = 0; j < 3; j++)
      if (strcmp(argv[i], parts[j]) == 0)
        only |= 1 << j, known = 1;
    if (!known) {
      fprintf(stderr, "usage: %s [quick] [barrier] [pingpong] [bandwidth]\n",
              argv[0]);
      return 2;
    }
  }
  if (!only)
    only = 7;
  const int reps = quick ? 5 : 21;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  printf("bench_comm: pld's shared-memory fabric (a2a3sim, one process per "
         "device) vs Open MPI, %ld CPUs\n",
         ncpu);
  print_busy("latencies");
  print_mpi_cmd("<mode> ...", "-np 4 and 8 for the barrier");
  if (only & 1)
    bench_barrier(reps, (int)ncpu);
  if (only & 2)
    bench_pingpong(reps);
  if (only & 4)
    bench_bandwidth(reps);
  return failed;
}
