/* mpi_ref: the Open MPI figures bench_comm prints next to pld's.  An MPI
 * program of its own (built with the MPI compiler wrapper's flags), started
 * by bench_comm through mpirun; rank 0 prints one result per line on
 * stdout, which bench_comm parses.  Every figure is a median over
 * repetitions, like pld's.
 *
 *   mpirun -np N mpi_ref barrier ITERS REPS
 *       one line: microseconds per MPI_Barrier.  Each repetition aligns the
 *       ranks with a barrier, times ITERS barriers, and keeps the slowest
 *       rank's time (MPI_MAX) divided by ITERS.
 *
 *   mpirun -np 2 mpi_ref pingpong ITERS REPS
 *       two lines: microseconds per half round trip of a notify ping-pong on
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
 *       complete), a batch of transfers per timing; rank 1 only waits in
 *       the closing barrier.
 *
 * Exit status 0, or 2 on bad usage. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_barrier(int me, int iters, int reps) {
  double *t = calloc((size_t)reps, sizeof *t);
  for (int i = 0; i < 100; i++) /* warm up the collective's paths */
    MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      MPI_Barrier(MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    t[r] = slowest;
  }
  if (me == 0)
    printf("%.6f\n", median(t, reps) * 1e6);
  free(t);
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

static void bench_pingpong(int me, int iters, int reps) {
  int *base;
  MPI_Win win;
  MPI_Win_allocate(64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                   &win);
  MPI_Win_lock_all(0, win);
  *base = 0;
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  double *t = calloc((size_t)reps, sizeof *t);
  const int peer = 1 - me;
  int round = 0; /* counters only grow: round r waits for >= r */
  for (int poll_load = 0; poll_load < 2; poll_load++) {
    for (int r = -1; r < reps; r++) { /* repetition -1 warms up */
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; i++) {
        round++;
        if (me == 0) {
          notify(win, peer);
          wait_for(win, me, base, round, poll_load);
        } else {
          wait_for(win, me, base, round, poll_load);
          notify(win, peer);
        }
      }
      if (r >= 0)
        t[r] = (MPI_Wtime() - t0) / (2.0 * iters);
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
  MPI_Win_allocate((MPI_Aint)max_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                   &base, &win);
  memset(base, 1, max_bytes); /* every page present, like pld's windows */
  memset(buf, 2, max_bytes);
  MPI_Win_lock_all(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  double *t = calloc((size_t)reps, sizeof *t);
  for (size_t bytes = 4096; me == 0 && bytes <= max_bytes; bytes *= 4) {
    /* A batch of at least 32 MiB per timing, as bench_comm times pld, so
     * that small sizes are not lost in the clock's cost. */
    const int inner =
        bytes >= ((size_t)32 << 20) ? 1 : (int)((32 << 20) / bytes);
    double gbs[2];
    for (int op = 0; op < 2; op++) {
      for (int r = -1; r < reps; r++) { /* repetition -1 warms up */
        const double t0 = MPI_Wtime();
        for (int i = 0; i < inner; i++) {
          if (op == 0)
            MPI_Put(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE,
                    win);
          else
            MPI_Get(buf, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE,
                    win);
          MPI_Win_flush(1, win);
        }
        if (r >= 0)
          t[r] = (MPI_Wtime() - t0) / inner;
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char *what = argc > 1 ? argv[1] : "";
  const long a = argc > 2 ? atol(argv[2]) : 0;
  const int reps = argc > 3 ? atoi(argv[3]) : 0;
  int bad = a <= 0 || reps <= 0;
  if (!bad && strcmp(what, "barrier") == 0)
    bench_barrier(me, (int)a, reps);
  else if (!bad && n == 2 && strcmp(what, "pingpong") == 0)
    bench_pingpong(me, (int)a, reps);
  else if (!bad && n == 2 && strcmp(what, "bw") == 0)
    bench_bw(me, (size_t)a, reps);
  else
    bad = 1;
  if (bad && me == 0)
    fprintf(stderr,
            "usage: mpirun -np N mpi_ref barrier ITERS REPS\n"
            "       mpirun -np 2 mpi_ref pingpong ITERS REPS\n"
            "       mpirun -np 2 mpi_ref bw MAX_BYTES REPS\n");
  MPI_Finalize();
  return bad ? 2 : 0;
}
