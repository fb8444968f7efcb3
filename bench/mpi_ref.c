/* mpi_ref: the Open MPI figures bench_comm and bench_coll print next to
 * pld's.  An MPI program of its own (built with the MPI compiler wrapper's
 * flags), started by them through mpirun; rank 0 prints one result per
 * line on stdout, which they parse.  Every figure is a median over
 * repetitions, like pld's.
 *
 *   mpirun -np N mpi_ref barrier ITERS REPS
 *       two lines: microseconds per MPI_Barrier, then per MPI_Ibarrier
 *       completed by polling MPI_Test (a waiter that returns to its caller
 *       between looks, as a pld kernel's wait does: it must still see the
 *       watch and a stop).  Each repetition aligns the ranks with a
 *       barrier, times ITERS barriers (fewer when they would take over
 *       REP_SECONDS: a slow transport), and keeps the slowest rank's time
 *       (MPI_MAX) divided by their number.
 *
 *   mpirun -np 2 mpi_ref pingpong ITERS REPS [POLLS]
 *       POLLS lines (2 by default; 1 for a transport that writes a window
 *       only when its process calls MPI, osc pt2pt or osc ucx over TCP,
 *       where the second would wait for ever): microseconds per half
 *       round trip (a repetition is ITERS round trips, or fewer as for the
 *       barrier) of a notify ping-pong on
 *       an MPI_Win_allocate window in a passive-target epoch
 *       (MPI_Win_lock_all).  A notify is MPI_Fetch_and_op(MPI_SUM, +1) on
 *       the peer's counter followed by MPI_Win_flush (the one-sided
 *       equivalent of pld_notify's remote atomic add); the waiter polls its
 *       own counter until it reaches the round number.  Line 1 polls the
 *       portable way, MPI_Fetch_and_op(MPI_NO_OP) on itself plus
 *       MPI_Win_flush; line 2 polls with an atomic load of its local window
 *       memory, MPI_Win_sync after the value arrived (allowed for windows
 *       the unified memory model exposes, which MPI_Win_allocate's are on
 *       one node) - the fastest an MPI program can wait.
 *
 *   mpirun -np 2 mpi_ref bw MAX_BYTES REPS
 *       one line per size, 4 KiB to MAX_BYTES by powers of 4:
 *       "<bytes> <MPI_Put GB/s> <MPI_Get GB/s>".  Rank 0 moves the bytes
 *       between a private buffer and rank 1's MPI_Win_allocate window
 *       (MPI_Put or MPI_Get, then MPI_Win_flush so the transfer is
 *       complete), a batch of transfers per timing (32 MiB's worth, or
 *       BATCH_SECONDS' when that takes longer); rank 1 only waits in the
 *       closing barrier.
 *
 *   mpirun -np N mpi_ref COLL REPS MS COUNT...
 *       one line per COUNT: "<COUNT> <microseconds per call>", a call of
 *       the collective COLL on COUNT floats (MPI_FLOAT, MPI_SUM, root 0),
 *       COUNT being each rank's buffer as nccl-tests counts it (and
 *       bench_coll prints it):
 *         allreduce       MPI_Allreduce, MPI_IN_PLACE on COUNT;
 *         bcast           MPI_Bcast of COUNT;
 *         allgather       MPI_Allgather of COUNT / N from each rank into
 *                         COUNT (another buffer);
 *         reduce_scatter  MPI_Reduce_scatter_block, MPI_IN_PLACE, COUNT
 *                         in, COUNT / N out;
 *         alltoall        MPI_Alltoall, COUNT / N to each rank, into
 *                         another buffer.
 *       Each figure is the median of REPS timings of a loop of calls on
 *       rank 0's clock, each timing after a barrier, the loop as long as
 *       about MS milliseconds over all timings hold (fewer timings, but at
 *       least 3, when one call takes longer), as bench_coll times pld.
 *
 * Exit status 0, or 2 on bad usage. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* The longest a repetition of the barrier or the ping-pong may take. */
#define REP_SECONDS 0.1

/* Iterations per repetition: at most `most`, fewer when they would take
 * over REP_SECONDS at t seconds each on rank 0's clock, which every rank
 * gets (so that all loop alike). */
static int capped(double t, int most) {
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return (int)iters_for(t, REP_SECONDS, 1, most);
}

/* One barrier: MPI_Barrier, or (polled) MPI_Ibarrier and MPI_Test until
 * it completes. */
static void barrier_once(int polled) {
  if (!polled) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  MPI_Request r;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  while (!done)
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
}

/* Prints microseconds per barrier (barrier_once(polled)), the median of
 * reps repetitions of at most iters. */
static void time_barriers(int me, int iters, int reps, int polled) {
  double *t = calloc((size_t)reps, sizeof *t);
  for (int i = 0; i < 100; i++) /* warm up the collective's paths */
    barrier_once(polled);
  const double tc = MPI_Wtime();
  for (int i = 0; i < 20; i++)
    barrier_once(polled);
  iters = capped((MPI_Wtime() - tc) / 20, iters);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      barrier_once(polled);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    t[r] = slowest;
  }
  if (me == 0) {
    printf("%.6f\n", median(t, reps) * 1e6);
    fflush(stdout);
  }
  free(t);
}

static void bench_barrier(int me, int iters, int reps) {
  time_barriers(me, iters, reps, 0);
  time_barriers(me, iters, reps, 1);
}

/* Adds 1 to peer's counter, complete at the target when it returns. */
static void notify(MPI_Win win, int peer) {
  const int one = 1;
  int old;
  MPI_Fetch_and_op(&one, &old, MPI_INT, peer, 0, MPI_SUM, win);
  MPI_Win_flush(peer, win);
}

/* Waits until my counter is >= want.  poll_load: atomic loads of my window
 * memory; otherwise MPI_Fetch_and_op(MPI_NO_OP) on myself. */
static void wait_for(MPI_Win win, int me, volatile int *cell, int want,
                     int poll_load) {
  if (poll_load) {
    while (__atomic_load_n(cell, __ATOMIC_ACQUIRE) < want)
      ;
    MPI_Win_sync(win); /* what the model asks before reading window data */
    return;
  }
  int v;
  do {
    MPI_Fetch_and_op(NULL, &v, MPI_INT, me, 0, MPI_NO_OP, win);
    MPI_Win_flush(me, win);
  } while (v < want);
}

/* `iters` round trips from round *round on: seconds per half round trip
 * (this rank's clock). */
static double pingpong_loop(MPI_Win win, int me, int *base, int *round,
                            int iters, int poll_load) {
  const int peer = 1 - me;
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    ++*round;
    if (me == 0) {
      notify(win, peer);
      wait_for(win, me, base, *round, poll_load);
    } else {
      wait_for(win, me, base, *round, poll_load);
      notify(win, peer);
    }
  }
  return (MPI_Wtime() - t0) / (2.0 * iters);
}

static void bench_pingpong(int me, int iters, int reps, int polls) {
  int *base;
  MPI_Win win;
  MPI_Win_allocate(64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  MPI_Win_lock_all(0, win);
  *base = 0;
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  double *t = calloc((size_t)reps, sizeof *t);
  int round = 0; /* counters only grow: round r waits for >= r */
  for (int poll_load = 0; poll_load < polls; poll_load++) {
    MPI_Barrier(MPI_COMM_WORLD);
    const int n =
        capped(2 * pingpong_loop(win, me, base, &round, 10, poll_load), iters);
    for (int r = -1; r < reps; r++) { /* repetition -1 warms up */
      MPI_Barrier(MPI_COMM_WORLD);
      const double h = pingpong_loop(win, me, base, &round, n, poll_load);
      if (r >= 0)
        t[r] = h;
    }
    if (me == 0)
      printf("%.6f\n", median(t, reps) * 1e6);
  }
  free(t);
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
}

static void bench_bw(int me, size_t max_bytes, int reps) {
  unsigned char *base, *buf = malloc(max_bytes);
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                   &win);
  memset(base, 1, max_bytes); /* every page present, like pld's windows */
  memset(buf, 2, max_bytes);
  MPI_Win_lock_all(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  double *t = calloc((size_t)reps, sizeof *t);
  for (size_t bytes = 4096; me == 0 && bytes <= max_bytes; bytes *= 4) {
    /* A batch of at least 32 MiB per timing (or BATCH_SECONDS' worth), as
     * bench_comm times pld, so that small sizes are not lost in the
     * clock's cost. */
    double gbs[2];
    for (int op = 0; op < 2; op++) {
      int64_t inner =
          bytes >= ((size_t)32 << 20) ? 1 : (int64_t)((32 << 20) / bytes);
      for (int r = -1; r < reps; r++) { /* -1 warms up, sets the batch */
        const double t0 = now_s();
        for (int64_t i = 0; r < 0 ? warm_more(i, &inner, t0) : i < inner; i++) {
          if (op == 0)
            MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
          else
            MPI_Get(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
          MPI_Win_flush(1, win);
        }
        if (r >= 0)
          t[r] = (now_s() - t0) / (double)inner;
      }
      gbs[op] = (double)bytes / median(t, reps) * 1e-9;
    }
    printf("%zu %.4f %.4f\n", bytes, gbs[0], gbs[1]);
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(t);
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  free(buf);
}

/* ---- collectives -------------------------------------------------------- */

static const char *const coll_names[] = {"allreduce", "bcast", "allgather",
                                         "reduce_scatter", "alltoall"};
enum { NCOLLS = sizeof coll_names / sizeof coll_names[0] };

static int coll_index(const char *name) {
  for (int c = 0; c < NCOLLS; c++)
    if (strcmp(name, coll_names[c]) == 0)
      return c;
  return -1;
}

/* One call of collective c on count floats of buf (out: the other buffer
 * of allgather and alltoall) over n ranks. */
static void coll_call(int c, float *buf, float *out, int count, int n) {
  const int part = count / n;
  if (c == 0)
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (c == 1)
    MPI_Bcast(buf, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  else if (c == 2)
    MPI_Allgather(buf, part, MPI_FLOAT, out, part, MPI_FLOAT, MPI_COMM_WORLD);
  else if (c == 3)
    MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, part, MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD);
  else
    MPI_Alltoall(buf, part, MPI_FLOAT, out, part, MPI_FLOAT, MPI_COMM_WORLD);
}

/* Seconds per call of `iters` calls after a barrier, on rank 0's clock,
 * which every rank gets (so that all take the same decisions from it). */
static double time_calls(int c, float *buf, float *out, int count, int n,
                         int64_t iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int64_t i = 0; i < iters; i++)
    coll_call(c, buf, out, count, n);
  double t = (MPI_Wtime() - t0) / (double)iters;
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

/* For each count: a warm-up call, a calibration (one call; if under a
 * millisecond, about a millisecond of calls), then `reps` timings within
 * `budget` seconds as bench_plan divides them, the first warming up when
 * calls are short. */
static void bench_coll(int me, int n, int c, int reps, double budget,
                       int ncounts, char **counts) {
  long most = 0;
  for (int i = 0; i < ncounts; i++)
    most = atol(counts[i]) > most ? atol(counts[i]) : most;
  float *buf = calloc((size_t)most, sizeof *buf);
  float *out = calloc((size_t)most, sizeof *out);
  double *t = calloc((size_t)reps, sizeof *t);
  for (int i = 0; i < ncounts; i++) {
    const int count = (int)atol(counts[i]);
    coll_call(c, buf, out, count, n);
    double est = time_calls(c, buf, out, count, n, 1);
    if (est < 1e-3)
      est = time_calls(c, buf, out, count, n,
                       (int64_t)(1e-3 / (est > 1e-8 ? est : 1e-8)) + 1);
    int64_t iters;
    int nreps;
    bench_plan(est, budget, reps, &iters, &nreps);
    if (est < 1e-3)
      time_calls(c, buf, out, count, n, iters);
    for (int r = 0; r < nreps; r++)
      t[r] = time_calls(c, buf, out, count, n, iters);
    if (me == 0) {
      printf("%d %.6f\n", count, median(t, nreps) * 1e6);
      fflush(stdout);
    }
  }
  free(t);
  free(buf);
  free(out);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char *what = argc > 1 ? argv[1] : "";
  const long a = argc > 2 ? atol(argv[2]) : 0;
  const int reps = argc > 3 ? atoi(argv[3]) : 0;
  int bad = a <= 0 || reps <= 0;
  const int coll = coll_index(what);
  if (coll >= 0) {
    /* COLL REPS MS COUNT...: counts of the collectives that split the
     * buffer over the ranks a multiple of the ranks */
    const double ms = argc > 3 ? atof(argv[3]) : 0;
    bad = a <= 0 || a > 1000 || ms <= 0 || argc < 5;
    for (int i = 4; i < argc && !bad; i++)
      bad = atol(argv[i]) <= 0 || atol(argv[i]) > (1L << 30) ||
            (coll >= 2 && atol(argv[i]) % n != 0);
    if (!bad)
      bench_coll(me, n, coll, (int)a, ms * 1e-3, argc - 4, argv + 4);
  } else if (!bad && strcmp(what, "barrier") == 0)
    bench_barrier(me, (int)a, reps);
  else if (!bad && n == 2 && strcmp(what, "pingpong") == 0 &&
           (argc < 5 || atoi(argv[4]) == 1 || atoi(argv[4]) == 2))
    bench_pingpong(me, (int)a, reps, argc < 5 ? 2 : atoi(argv[4]));
  else if (!bad && n == 2 && strcmp(what, "bw") == 0)
    bench_bw(me, (size_t)a, reps);
  else
    bad = 1;
  if (bad && me == 0)
    fprintf(stderr, "usage: mpirun -np N mpi_ref barrier ITERS REPS\n"
                    "       mpirun -np 2 mpi_ref pingpong ITERS REPS "
                    "[1|2]\n"
                    "       mpirun -np 2 mpi_ref bw MAX_BYTES REPS\n"
                    "       mpirun -np N mpi_ref allreduce|bcast|allgather|"
                    "reduce_scatter|alltoall REPS MS COUNT...\n");
  MPI_Finalize();
  return bad ? 2 : 0;
}
