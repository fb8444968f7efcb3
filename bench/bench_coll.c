/* bench_coll: the collectives of pld/collective.h in nccl-tests' terms,
 * next to Open MPI's on this machine and to memcpy.
 *
 * For each collective (allreduce in each mode: mesh, two-phase, ring and
 * auto; broadcast; allgather; reduce-scatter; all-to-all), each rank count
 * (2, 4, 8) and each size (8 B to 64 MiB), it prints nccl-tests' columns:
 *
 *   size   bytes of each rank's buffer, as nccl-tests counts them: the data
 *          of allreduce and broadcast; the gathered target of allgather
 *          (P rows, one per rank); the input of reduce-scatter (P rows, row
 *          r reduced into rank r); the input of all-to-all (P rows, row d
 *          to rank d).  Rows are at least one element, so the size of
 *          those three is a multiple of 4 P bytes;
 *   count  elements of that buffer;   type float;   redop sum or none;
 *   root   0 for broadcast, -1 otherwise;
 *   time   microseconds per call;   algbw = size / time (GB/s, 1e9 B/s);
 *   busbw  algbw x 2 (P-1) / P for allreduce, x (P-1) / P for allgather,
 *          reduce-scatter and all-to-all, x 1 for broadcast;
 *
 * then whether pld's result was checked against a C reference, the same
 * figures for Open MPI's collective (MPI_Allreduce, MPI_Bcast,
 * MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, measured by
 * mpi_ref under mpirun --mca btl self,vader), the ratio of pld's busbw to
 * MPI's, and memcpy's bandwidth for the size, timed right after pld's
 * figure in the same kernel (this host's memory bandwidth drifts).
 *
 * After allreduce (auto)'s table, from 256 KiB, its busbw beside the
 * reference of issue 29's target 1, the cross-core copy, with the ratio
 * and the target's verdict at each size.  The cross-core copy is the
 * bandwidth at which a thread copies into a buffer of its own data that a
 * thread on another CPU has just written: what a rank does when it reads
 * a peer's window.  Two threads, pinned to two CPUs this process may run
 * on (sched_getaffinity, pthread_setaffinity_np; the table says so if
 * they could not be pinned, and that the reference is not measurable
 * with fewer than 2 CPUs), each with a source and a destination buffer
 * of the size.  In a round the writers dirty their source (memset), so
 * that the copy reads lines the other CPU holds modified; after a barrier
 * (spinning, never yielding the CPU) the copiers copy the other thread's
 * source into their destination (memcpy), each between two clock reads,
 * and a round's time runs from the first copy's start to the last one's
 * end.  A timing's time is the median of its rounds' (a round in which a
 * thread lost its CPU to another process says nothing of the copy), the
 * figure the size over the median of the timings (GB/s, 1e9 B/s).  It is
 * measured at each size and rank count right after auto's timings,
 * planned as pld's figures are (each variant's copies hold half the -t
 * budget; the writes take about as long again).  Two variants: one way,
 * thread 0 writes and thread 1 copies; both ways at once, each thread
 * writes, then both copy (two such pairs, the figure per copy).  Target 1
 * compares busbw with both ways: an allreduce moves data in both
 * directions at once (at 2 ranks each rank reads the peer's data while
 * the peer reads its own: two cross-core copies sharing caches and
 * memory; at 4 ranks on 2 CPUs two ranks copy at a time), and busbw
 * counts what one rank moves, as the per-copy figure does.  One way, one
 * copy while the other CPU waits, is printed beside it: faster where the
 * two copies compete, and the reference to read where both ways' four
 * buffers, twice the data of a 2-rank allreduce's windows, no longer fit
 * the last-level cache that the windows still fit (16 MiB per rank on a
 * 32 MiB cache).  With more ranks than CPUs the table notes that busbw
 * can reach only about CPUs/P of the copy both ways.
 *
 * Then, per rank count, the allreduce modes side by side: the best mode
 * measured at each size (the crossover) next to the automatic choice
 * (pld_allreduce_auto); last, the targets and whether each is met
 * (among them issue 29's target 1: auto's busbw at least 80% of the
 * cross-core copy from 256 KiB, and at least min(2x Open MPI's, 80% of
 * the copy) from 1 MiB, at 2 and 4 ranks; its target 3: broadcast's time
 * at every size and every collective's from 8 B to 4 KiB at most Open
 * MPI's, at each rank count, with under a miss the latency reference
 * that explains it, measured in the run (below);
 * over the MPI fabric, issue 28's target 1 at each rank count: every
 * collective's busbw at least Open MPI's from 64 KiB and its time at most
 * 1.5x below, saying where the ranks outnumber the CPUs).
 *
 * How pld is timed: the builtin called in a loop inside one kernel (one
 * pld_program_run of many calls), on rank 0's clock (CLOCK_MONOTONIC, read
 * in the kernel as bench_comm does), FP32 SUM on a signal window of
 * PLD_SIGNAL_CELLS(P, 1) cells; each timing starts after a pld_barrier;
 * the figure is the median of several timings.  The four allreduce modes
 * share a program and take turns within each timing, so that they meet
 * the same conditions (other load, where the scheduler put the ranks'
 * threads) and their comparison - the crossover - is fair; memcpy is
 * timed after them, once for the four.  A calibration run before
 * measures how long a call takes, so that the timings hold about the time
 * budget (-t) together, whatever the size and the rank count (8 ranks
 * oversubscribe a 2-CPU machine).  Each (mode, rank count, size) is also
 * run once in a program of its own that stages integer-valued inputs,
 * makes one call and copies the result out, and the host compares every
 * element of every rank with the reference (exact: every mode must give
 * these bits).  MPI is timed the same way by mpi_ref (mpi_ref.c).
 *
 * The fabric (--fabric, as bench_comm's): pld's shared-memory one (shm,
 * the default) or its MPI fabric (mpi-shm, mpi-tcp, mpi-ucx), whose ranks
 * are the processes of an MPI job: for each rank count this program
 * starts itself under tools/mpirun.sh with that setting (--job -n P and
 * the options of the run: every selected collective and size checked and
 * timed as above, process 0 printing the figures), and mpi_ref under the
 * same script and setting.  With mpi-shm it also measures the
 * shared-memory fabric, in this process, for the target of being within
 * 10% of it.
 *
 *   bench_coll [-b BYTES] [-e BYTES] [-f FACTOR] [-n RANKS,...]
 *              [-c COLL,...] [-r REPS] [-t MS] [quick] [--fabric F]
 *     -b, -e: the smallest and largest size (8 and 64M; K, M, G: binary);
 *       the sizes are both and every power of FACTOR (4) between them;
 *     -n: rank counts, 2 to 8 (2,4,8);
 *     -c: allreduce (its four modes), mesh, two-phase, ring, auto,
 *       broadcast, allgather, reduce_scatter, all_to_all (all);
 *     -r: timings per figure, 3 to 63 (11); -t: milliseconds of timings
 *       per figure (100);
 *     quick: 5 timings of 20 ms, sizes up to 1 MiB, for a smoke test;
 *     F: shm (the default), mpi-shm, mpi-tcp, mpi-ucx.
 *
 *   bench_coll model-cost [-b -e -f -n -c] [-r ROUNDS] [-t MS] [--control]
 *     what the timing model's recording costs each collective, on the shm
 *     fabric (model_cost, below): sizes 64 B to 1 MiB by 16, 2 and 4
 *     ranks, 21 rounds, runs of about 10 ms, unless given; --control:
 *     both programs with the model off.
 *
 * Nothing here fails on a slow result: figures are printed next to their
 * targets.  The exit status is 1 only if a pld call failed or a result
 * was wrong, 2 on bad usage. */
#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pld.h"

#include "bench_util.h"

enum {
  MAX_RANKS = 8,
  MAX_WORLDS = 7, /* rank counts in one run: 2 to 8 */
  MAX_REPS = 64,  /* timings per figure, at most */
  MAX_SIZES = 64,
  COPY_COLS = 4096,         /* staging copies: one-row tiles of 16 KiB */
  MC_BATCH_BYTES = 4 << 20, /* a memcpy timing copies at least this much */
  XCOPY_FROM = 256 << 10,   /* the cross-core copy: sizes from this one */
  MPI_BW_FROM = 64 << 10    /* issue 28's target 1: busbw from this size */
};

/* The collectives, as bench_coll names and times them.  The allreduce
 * modes come first, numbered as pld_allreduce_mode. */
enum coll {
  C_AUTO = PLD_ALLREDUCE_AUTO,
  C_MESH = PLD_ALLREDUCE_MESH,
  C_TWO_PHASE = PLD_ALLREDUCE_TWO_PHASE,
  C_RING = PLD_ALLREDUCE_RING,
  C_BROADCAST,
  C_ALLGATHER,
  C_REDUCE_SCATTER,
  C_ALL_TO_ALL,
  NCOLLS
};

/* busbw = algbw x factor (nccl-tests). */
enum busbw { BUS_ALLREDUCE, BUS_SPLIT, BUS_ONE };

static const struct coll_info {
  const char *name; /* on the command line */
  const char *pld;  /* what pld times */
  const char *mpi;  /* mpi_ref's name for MPI's collective */
  const char *mpi_call;
  int rows;        /* buffers of P rows, one per rank */
  int staged_in_s; /* input in window s, result in w (else in place) */
  enum busbw bus;
} colls[NCOLLS] = {
    [C_AUTO] = {"auto", "pld_allreduce(SUM, AUTO)", "allreduce",
                "MPI_Allreduce(MPI_IN_PLACE, SUM)", 0, 0, BUS_ALLREDUCE},
    [C_MESH] = {"mesh", "pld_allreduce(SUM, MESH)", "allreduce",
                "MPI_Allreduce(MPI_IN_PLACE, SUM)", 0, 0, BUS_ALLREDUCE},
    [C_TWO_PHASE] = {"two-phase", "pld_allreduce(SUM, TWO_PHASE)", "allreduce",
                     "MPI_Allreduce(MPI_IN_PLACE, SUM)", 0, 0, BUS_ALLREDUCE},
    [C_RING] = {"ring", "pld_allreduce(SUM, RING)", "allreduce",
                "MPI_Allreduce(MPI_IN_PLACE, SUM)", 0, 0, BUS_ALLREDUCE},
    [C_BROADCAST] = {"broadcast", "pld_broadcast(root 0)", "bcast",
                     "MPI_Bcast(root 0)", 0, 0, BUS_ONE},
    [C_ALLGATHER] = {"allgather", "pld_allgather", "allgather", "MPI_Allgather",
                     1, 1, BUS_SPLIT},
    [C_REDUCE_SCATTER] = {"reduce_scatter", "pld_reduce_scatter(SUM)",
                          "reduce_scatter",
                          "MPI_Reduce_scatter_block(MPI_IN_PLACE, SUM)", 1, 0,
                          BUS_SPLIT},
    [C_ALL_TO_ALL] = {"all_to_all", "pld_all_to_all", "alltoall",
                      "MPI_Alltoall", 1, 1, BUS_SPLIT},
};

/* The order in which they run and print; the allreduce modes share their
 * programs (same windows) and MPI's figure. */
static const int order[NCOLLS] = {C_MESH,           C_TWO_PHASE, C_RING,
                                  C_AUTO,           C_BROADCAST, C_ALLGATHER,
                                  C_REDUCE_SCATTER, C_ALL_TO_ALL};

static int is_allreduce(int c) { return c <= C_RING; }

/* ---- kernels ------------------------------------------------------------- */

PLD_DYNAMIC(NR);
PLD_DYNAMIC(WR); /* w: the data (in place) or the target, [WR, WC] */
PLD_DYNAMIC(WC);
PLD_DYNAMIC(SR); /* s: the input of allgather and all-to-all, [SR, SC] */
PLD_DYNAMIC(SC);
PLD_DYNAMIC(XR); /* the staged input, [XR, XC]: s's or w's shape */
PLD_DYNAMIC(XC);
PLD_DYNAMIC(NS); /* signal cells */

#define COLL_WINDOWS                                                           \
  PLD_WINDOW(w, FP32, WR, WC), PLD_WINDOW(s, FP32, SR, SC),                    \
      PLD_WINDOW(sig, INT32, NS)

/* Parameters of a run (an In tensor, so that the calibration and the
 * measured run share one program): the collectives to time (a bit per
 * enum coll; the check: the one to run); timings; the memcpy reference's
 * bytes, copies per timing and timings (0: none); per collective, the
 * calls before the first timing and the calls per timing. */
enum {
  P_MASK,
  P_REPS,
  P_MC_BYTES,
  P_MC_BATCH,
  P_MC_REPS,
  P_WARM,
  P_ITERS = P_WARM + NCOLLS,
  NPARAMS = P_ITERS + NCOLLS
};

/* One call of collective c. */
static void coll_call(pld_core k, int64_t c, pld_window w, pld_window s,
                      pld_window sig) {
  switch (c) {
  case C_BROADCAST:
    pld_broadcast(k, w, sig, 0);
    break;
  case C_ALLGATHER:
    pld_allgather(k, pld_local(s), w, sig);
    break;
  case C_REDUCE_SCATTER:
    pld_reduce_scatter(k, w, sig, PLD_REDUCE_SUM);
    break;
  case C_ALL_TO_ALL:
    pld_all_to_all(k, pld_local(s), w, sig);
    break;
  default:
    pld_allreduce(k, w, sig, PLD_REDUCE_SUM, (pld_allreduce_mode)c);
  }
}

/* t[c][r]: seconds per call of collective c in timing r.  The
 * collectives of the mask take turns within each timing, so that they
 * meet the same conditions (a moment of other load, the placement of
 * this program's threads on the CPUs) and compare fairly.  Then on rank 0
 * alone, while the others have returned, t[NCOLLS][r]: seconds per memcpy
 * of the same size between two private buffers (-1 if they could not be
 * allocated). */
PLD_KERNEL(coll_time, k, PLD_IN(params, INT64, NPARAMS), COLL_WINDOWS,
           PLD_OUT(t, FP64, NCOLLS + 1, MAX_REPS)) {
  const int64_t mask = (int64_t)pld_read(k, params, PLD_AT(P_MASK));
  const int64_t reps = (int64_t)pld_read(k, params, PLD_AT(P_REPS));
  int64_t warm[NCOLLS], iters[NCOLLS];
  for (int64_t c = 0; c < NCOLLS; c++) {
    warm[c] = (int64_t)pld_read(k, params, PLD_AT(P_WARM + c));
    iters[c] = (int64_t)pld_read(k, params, PLD_AT(P_ITERS + c));
  }
  for (int64_t c = 0; c < NCOLLS; c++)
    for (int64_t i = 0; mask >> c & 1 && i < warm[c]; i++)
      coll_call(k, c, w, s, sig);
  for (int64_t r = 0; r < reps; r++)
    for (int64_t c = 0; c < NCOLLS; c++) {
      if (!(mask >> c & 1))
        continue;
      pld_barrier(k, sig);
      const double t0 = now_s();
      for (int64_t i = 0; i < iters[c]; i++)
        coll_call(k, c, w, s, sig);
      pld_write(k, t, PLD_AT(c, r), (now_s() - t0) / (double)iters[c]);
    }
  const size_t bytes = (size_t)pld_read(k, params, PLD_AT(P_MC_BYTES));
  const int64_t batch = (int64_t)pld_read(k, params, PLD_AT(P_MC_BATCH));
  const int64_t mc_reps = (int64_t)pld_read(k, params, PLD_AT(P_MC_REPS));
  if (pld_rank(k, pld_window_comm(sig)) != 0 || mc_reps <= 0)
    return;
  unsigned char *pa = malloc(bytes), *pb = malloc(bytes);
  if (pa && pb) {
    memset(pa, 1, bytes); /* every page present, as in the windows */
    memset(pb, 2, bytes);
  }
  for (int64_t r = -1; r < mc_reps; r++) { /* -1 warms up */
    const double t0 = now_s();
    for (int64_t i = 0; i < batch && pa && pb; i++)
      copy_private(pb, pa, bytes);
    if (r >= 0)
      pld_write(k, t, PLD_AT(NCOLLS, r),
                pa && pb ? (now_s() - t0) / (double)batch : -1);
  }
  free(pa);
  free(pb);
}

/* Copies src to dst, of the same shape [rows, cols], through one-row
 * tiles. */
static void copy_tensor(pld_core k, pld_tensor src, pld_tensor dst) {
  const int64_t rows = pld_tensor_dim(dst, 0), cols = pld_tensor_dim(dst, 1);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c0 = 0; c0 < cols; c0 += COPY_COLS) {
      const int32_t n =
          (int32_t)(cols - c0 < COPY_COLS ? cols - c0 : COPY_COLS);
      pld_tile *tl = pld_load(k, src, r, c0, 1, n);
      pld_store(k, tl, dst, r, c0);
      pld_tile_free(k, tl);
    }
}

/* The check: stages x as the input, one call, copies w (the result) to
 * y. */
PLD_KERNEL(coll_check, k, PLD_IN(params, INT64, NPARAMS),
           PLD_IN(x, FP32, XR, XC), COLL_WINDOWS, PLD_OUT(y, FP32, WR, WC)) {
  const int64_t c = (int64_t)pld_read(k, params, PLD_AT(P_MASK));
  copy_tensor(k, x, pld_local(colls[c].staged_in_s ? s : w));
  coll_call(k, c, w, s, sig);
  copy_tensor(k, pld_local(w), y);
}

PLD_DEVICE(time_device, a, PLD_IN(params, INT64, NPARAMS), COLL_WINDOWS,
           PLD_OUT(t, FP64, NCOLLS + 1, MAX_REPS)) {
  pld_launch(a, coll_time, 1, params, w, s, sig, t);
}

PLD_DEVICE(check_device, a, PLD_IN(params, INT64, NPARAMS),
           PLD_IN(x, FP32, XR, XC), COLL_WINDOWS, PLD_OUT(y, FP32, WR, WC)) {
  pld_launch(a, coll_check, 1, params, x, w, s, sig, y);
}

/* The windows of a program, [wr, wc], [sr, sc] and the signal. */
struct bufs {
  pld_window_buf w, s, sig;
  int64_t wr, wc, sr, sc, ns;
};

static struct bufs bufs_alloc(pld_host h, int64_t wr, int64_t wc, int64_t sr,
                              int64_t sc) {
  struct bufs b = {.wr = wr, .wc = wc, .sr = sr, .sc = sc};
  b.ns = PLD_SIGNAL_CELLS(pld_world_size(h), 1);
  b.w = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(wr, wc));
  b.s = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(sr, sc));
  b.sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(b.ns));
  return b;
}

#define VIEWS(h, b)                                                            \
  pld_window_view(h, (b).w, PLD_FP32, PLD_SHAPE((b).wr, (b).wc)),              \
      pld_window_view(h, (b).s, PLD_FP32, PLD_SHAPE((b).sr, (b).sc)),          \
      pld_window_view(h, (b).sig, PLD_INT32, PLD_SHAPE((b).ns))

PLD_HOST(time_host, h, PLD_IN(params, INT64, NR, NPARAMS),
         PLD_OUT(t, FP64, NR, NCOLLS + 1, MAX_REPS), PLD_SCALAR(wr, INT64),
         PLD_SCALAR(wc, INT64), PLD_SCALAR(sr, INT64), PLD_SCALAR(sc, INT64)) {
  struct bufs b = bufs_alloc(h, wr, wc, sr, sc);
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, time_device, r, pld_slice(h, params, r), VIEWS(h, b),
                 pld_slice(h, t, r));
}

PLD_HOST(check_host, h, PLD_IN(params, INT64, NR, NPARAMS),
         PLD_IN(x, FP32, NR, XR, XC), PLD_OUT(y, FP32, NR, WR, WC),
         PLD_SCALAR(wr, INT64), PLD_SCALAR(wc, INT64), PLD_SCALAR(sr, INT64),
         PLD_SCALAR(sc, INT64)) {
  struct bufs b = bufs_alloc(h, wr, wc, sr, sc);
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, check_device, r, pld_slice(h, params, r),
                 pld_slice(h, x, r), VIEWS(h, b), pld_slice(h, y, r));
}

/* ---- host side: shapes, programs, the reference -------------------------- */

/* The buffers of collective c at `bytes` bytes over p ranks: w [wr, wc],
 * s [sr, sc] (a [1, 1] placeholder where unused), the staged input
 * [xr, xc]; count = wr * wc elements per rank (the size printed). */
struct shape {
  int64_t wr, wc, sr, sc, xr, xc, count;
};

static struct shape shape_of(int c, int p, int64_t bytes) {
  struct shape s = {1, 1, 1, 1, 1, 1, 1};
  const int64_t n = bytes / 4 > 0 ? bytes / 4 : 1;
  if (colls[c].rows) {
    s.wr = p;
    s.wc = n / p > 0 ? n / p : 1;
  } else {
    s.wc = n;
  }
  if (c == C_ALLGATHER)
    s.sc = s.wc;
  else if (c == C_ALL_TO_ALL)
    s.sr = s.wr, s.sc = s.wc;
  s.xr = colls[c].staged_in_s ? s.sr : s.wr;
  s.xc = colls[c].staged_in_s ? s.sc : s.wc;
  s.count = s.wr * s.wc;
  return s;
}

/* Rank q's input element i: integers, so that every sum is exact in FP32
 * and every mode must give the same bits. */
static float input(int q, int64_t i) {
  return (float)((i * 7 + 3) % 251 + 1000 * q);
}

/* Element i of rank q's result of collective c over p ranks (rows of
 * `row` elements). */
static float expected(int c, int p, int64_t row, int q, int64_t i) {
  /* The sum of input(r, i) over r < p. */
  const float sum = (float)(p * ((i * 7 + 3) % 251) + 500 * p * (p - 1));
  switch (c) {
  case C_BROADCAST:
    return input(0, i);
  case C_ALLGATHER:
    return input((int)(i / row), i % row);
  case C_ALL_TO_ALL:
    return input((int)(i / row), q * row + i % row);
  case C_REDUCE_SCATTER: /* row q reduced, the others as they were */
    return i / row == q ? sum : input(q, i);
  default:
    return sum;
  }
}

/* A prepared program with its host tensors. */
struct prog {
  pld_program *p;
  int nranks;
  struct shape sh;
  pld_tensor params, t, x, y;
};

static void prog_release(struct prog *g) {
  pld_program_destroy(g->p);
  pld_tensor_destroy(g->params);
  pld_tensor_destroy(g->t);
  pld_tensor_destroy(g->x);
  pld_tensor_destroy(g->y);
  memset(g, 0, sizeof *g);
}

static int tensor(pld_dtype dt, int ndim, const int64_t *shape,
                  pld_tensor *out) {
  int st = pld_tensor_create(dt, ndim, shape, out);
  return st ? pld_failed(st, "pld_tensor_create") : PLD_OK;
}

/* The timing program (check = 0) or the check program of shape sh over
 * nranks ranks, compiled and prepared, with pld_config.model `model`
 * (NULL: PLD_MODEL's). */
static int prog_init(struct prog *g, int nranks, struct shape sh, int check,
                     const char *model) {
  static const int ids[MAX_RANKS] = {0, 1, 2, 3, 4, 5, 6, 7};
  memset(g, 0, sizeof *g);
  g->nranks = nranks;
  g->sh = sh;
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = nranks;
  /* The timing runs keep their windows: the calibration run touches every
   * page, and the signal window is zero again after every call. */
  cfg.keep_windows = !check;
  cfg.model = model;
  int st = tensor(PLD_INT64, PLD_SHAPE(nranks, NPARAMS), &g->params);
  if (!st && check)
    st = tensor(PLD_FP32, PLD_SHAPE(nranks, sh.xr, sh.xc), &g->x);
  if (!st && check)
    st = tensor(PLD_FP32, PLD_SHAPE(nranks, sh.wr, sh.wc), &g->y);
  if (!st && !check)
    st = tensor(PLD_FP64, PLD_SHAPE(nranks, NCOLLS + 1, MAX_REPS), &g->t);
  if (st)
    return st;
  if (check)
    st = pld_compile(
        check_host, &cfg,
        PLD_ARGS(g->params, g->x, g->y, sh.wr, sh.wc, sh.sr, sh.sc), &g->p);
  else
    st = pld_compile(time_host, &cfg,
                     PLD_ARGS(g->params, g->t, sh.wr, sh.wc, sh.sr, sh.sc),
                     &g->p);
  if (st)
    return pld_failed(st, "pld_compile");
  if ((st = pld_program_prepare(g->p)))
    return pld_failed(st, "pld_program_prepare");
  return PLD_OK;
}

/* Sets every rank's parameters and runs the program. */
static int prog_run(struct prog *g, const int64_t *pv) {
  int64_t *d = pld_tensor_data(g->params);
  for (int r = 0; r < g->nranks; r++)
    memcpy(d + r * NPARAMS, pv, NPARAMS * sizeof *pv);
  int st = g->x.p
               ? pld_program_run(g->p, PLD_ARGS(g->params, g->x, g->y, g->sh.wr,
                                                g->sh.wc, g->sh.sr, g->sh.sc))
               : pld_program_run(g->p, PLD_ARGS(g->params, g->t, g->sh.wr,
                                                g->sh.wc, g->sh.sr, g->sh.sc));
  return st ? pld_failed(st, "pld_program_run") : PLD_OK;
}

/* Runs collective c once in the check program and compares every rank's
 * result with the reference: the number of wrong elements, or -1 if the
 * run failed. */
static int64_t check(struct prog *g, int c) {
  const struct shape sh = g->sh;
  float *x = pld_tensor_data(g->x), *y = pld_tensor_data(g->y);
  const int64_t xn = sh.xr * sh.xc, yn = sh.count;
  for (int q = 0; q < g->nranks; q++)
    for (int64_t i = 0; i < xn; i++)
      x[q * xn + i] = input(q, i);
  const int64_t pv[NPARAMS] = {[P_MASK] = c};
  if (prog_run(g, pv))
    return -1;
  int64_t wrong = 0;
  for (int q = 0; q < g->nranks; q++)
    for (int64_t i = 0; i < yn; i++) {
      const float want = expected(c, g->nranks, sh.wc, q, i);
      if (!(y[q * yn + i] == want) && wrong++ == 0)
        fprintf(stderr,
                "bench_coll: %s, %d ranks, %lld elements: rank %d element "
                "%lld is %.9g, expected %.9g\n",
                colls[c].name, g->nranks, (long long)yn, q, (long long)i,
                (double)y[q * yn + i], (double)want);
    }
  if (wrong)
    failed = 1;
  return wrong;
}

/* ---- host side: timing --------------------------------------------------- */

/* What one figure is: pld's time, memcpy's GB/s, the check's wrong
 * elements (-1: not checked), MPI's time, and (mpi-shm) the time of pld's
 * shared-memory fabric; -1 where not measured. */
struct fig {
  double us, mc_gbs, mpi_us, shm_us;
  double xc_gbs[2]; /* allreduce (auto): the cross-core copy, XC_* */
  int64_t wrong;
  int64_t bytes, count;
  int same; /* the same buffer as the size before: not measured again */
};

struct opts {
  int reps;
  double budget; /* seconds of timings per figure */
};

/* The fastest of timings [0, 3) of c in the last run. */
static double fastest3(const double *tv, int c) {
  const double *v = tv + c * MAX_REPS;
  const double m = v[0] < v[1] ? v[0] : v[1];
  return v[2] < m ? v[2] : m;
}

/* est[c]: about how long a call of each of the n collectives cs takes in
 * the timing program: three single calls of each after one (which
 * touches the windows' pages); those under a millisecond again, three
 * times about a millisecond of calls.  The fastest timing: a moment of
 * other load on the machine must not make every timing too short.
 * Returns nonzero if a run failed. */
static int calibrate(struct prog *g, const int *cs, int n, double *est) {
  int64_t pv[NPARAMS] = {[P_REPS] = 3};
  const double *tv = pld_tensor_data(g->t); /* rank 0's first */
  for (int j = 0; j < n; j++) {
    pv[P_MASK] |= (int64_t)1 << cs[j];
    pv[P_WARM + cs[j]] = pv[P_ITERS + cs[j]] = 1;
  }
  if (prog_run(g, pv))
    return 1;
  pv[P_MASK] = 0;
  for (int j = 0; j < n; j++) {
    const int c = cs[j];
    est[c] = fastest3(tv, c);
    pv[P_WARM + c] = 0;
    if (est[c] < 1e-3) {
      pv[P_MASK] |= (int64_t)1 << c;
      pv[P_ITERS + c] = (int64_t)(1e-3 / (est[c] > 1e-8 ? est[c] : 1e-8)) + 1;
    }
  }
  if (pv[P_MASK] && prog_run(g, pv))
    return 1;
  for (int j = 0; j < n; j++)
    if (pv[P_MASK] >> cs[j] & 1)
      est[cs[j]] = fastest3(tv, cs[j]);
  return 0;
}

/* Times the n collectives cs in the timing program, taking turns: f[j]
 * gets cs[j]'s time per call and memcpy's GB/s (medians over the
 * timings); they stay -1 if a run fails. */
static void measure(struct prog *g, const int *cs, int n, const struct opts *o,
                    struct fig **f) {
  int64_t pv[NPARAMS] = {0};
  const double *tv = pld_tensor_data(g->t); /* rank 0's first */
  double est[NCOLLS];
  if (calibrate(g, cs, n, est))
    return;
  int nreps = o->reps;
  for (int j = 0; j < n; j++) {
    const int c = cs[j];
    pv[P_MASK] |= (int64_t)1 << c;
    int r;
    bench_plan(est[c], o->budget, o->reps, &pv[P_ITERS + c], &r);
    nreps = r < nreps ? r : nreps;
    /* Short calls: a timing's worth first (core threads awake, caches). */
    pv[P_WARM + c] = est[c] < 1e-3 ? pv[P_ITERS + c] : 0;
  }
  const int64_t bytes = f[0]->bytes;
  pv[P_REPS] = nreps;
  pv[P_MC_BYTES] = bytes;
  pv[P_MC_BATCH] = bytes >= MC_BATCH_BYTES ? 1 : MC_BATCH_BYTES / bytes;
  pv[P_MC_REPS] = nreps;
  if (prog_run(g, pv))
    return;
  double v[MAX_REPS];
  memcpy(v, tv + NCOLLS * MAX_REPS, (size_t)nreps * sizeof *v);
  const double m = median(v, nreps);
  for (int j = 0; j < n; j++) {
    memcpy(v, tv + cs[j] * MAX_REPS, (size_t)nreps * sizeof *v);
    f[j]->us = median(v, nreps) * 1e6;
    f[j]->mc_gbs = m > 0 ? (double)bytes / m * 1e-9 : -1;
  }
}

/* ---- host side: the cross-core copy -------------------------------------- */

/* Its two variants: one way, thread 0 writes its source and thread 1
 * copies it into its destination; both ways at once, each thread writing
 * its source and copying the other's (the figure is per copy).  Target 1
 * compares with XC_TARGET. */
enum { XC_ONE_WAY, XC_BOTH_WAYS, XC_TARGET = XC_BOTH_WAYS };

/* Two threads on CPUs of their own (cpu[0], cpu[1]), each with a source
 * and a destination of `bytes`.  In a round, the writers dirty their
 * source (memset); after a barrier the copiers copy the other thread's
 * source into their own destination, each between two clock reads;
 * after another barrier thread 0 notes the round's time, round_s[i]: the
 * copies' span, from the first one's start to the last one's end.  t[r]:
 * the median of timing r's round_s. */
struct xcopy {
  unsigned char *src[2], *dst[2];
  size_t bytes;
  int both;
  int64_t iters; /* rounds per timing */
  int reps;      /* timings */
  int cpu[2];
  int pin_err[2]; /* pthread_setaffinity_np's error, per thread */
  double t0[2], t1[2];
  double *round_s; /* [iters] */
  double t[MAX_REPS];
  atomic_int go;              /* 1: both threads started, -1: one did not */
  atomic_int arrived, rounds; /* the barrier */
};

struct xc_thread_arg {
  struct xcopy *x;
  int me;
};

/* Both threads wait here until the other arrives, spinning, each on a
 * CPU of its own.  Never yielding: with another process runnable on the
 * CPU, a yield gives the CPU away for a time slice, and the reference is
 * what the CPUs do while they run these threads. */
static void xc_barrier(struct xcopy *x) {
  const int r = atomic_load(&x->rounds);
  if (atomic_fetch_add(&x->arrived, 1) == 1) {
    atomic_store(&x->arrived, 0);
    atomic_store(&x->rounds, r + 1);
    return;
  }
  while (atomic_load(&x->rounds) == r) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

static void *xc_thread(void *arg) {
  const struct xc_thread_arg *a = arg;
  struct xcopy *x = a->x;
  const int me = a->me, writes = x->both || me == 0,
            copies = x->both || me == 1;
  x->pin_err[me] = pin_self(x->cpu[me]);
  while (!atomic_load(&x->go))
    sched_yield();
  if (atomic_load(&x->go) < 0) /* the other thread did not start */
    return NULL;
  for (int r = -1; r < x->reps; r++) { /* -1: a round that warms up */
    const int64_t n = r < 0 ? 1 : x->iters;
    for (int64_t i = 0; i < n; i++) {
      if (writes)
        memset(x->src[me], (int)(i & 0x7f), x->bytes);
      xc_barrier(x);
      if (copies) {
        x->t0[me] = now_s();
        copy_private(x->dst[me], x->src[!me], x->bytes);
        x->t1[me] = now_s();
      }
      xc_barrier(x);
      if (me == 0)
        x->round_s[i] = x->both
                            ? (x->t1[0] > x->t1[1] ? x->t1[0] : x->t1[1]) -
                                  (x->t0[0] < x->t0[1] ? x->t0[0] : x->t0[1])
                            : x->t1[1] - x->t0[1];
    }
    if (me == 0 && r >= 0)
      x->t[r] = median(x->round_s, (int)n);
  }
  return NULL;
}

/* Runs x's timings in two threads: 0, or pthread_create's error. */
static int xc_run(struct xcopy *x) {
  pthread_t th[2];
  struct xc_thread_arg a[2] = {{x, 0}, {x, 1}};
  atomic_store(&x->go, 0);
  int st = pthread_create(&th[0], NULL, xc_thread, &a[0]);
  if (st)
    return st;
  st = pthread_create(&th[1], NULL, xc_thread, &a[1]);
  atomic_store(&x->go, st ? -1 : 1);
  pthread_join(th[0], NULL);
  if (!st)
    pthread_join(th[1], NULL);
  return st;
}

/* Why the copying threads were not pinned (an errno), 0 while they were
 * every time. */
static int xc_unpinned;

/* The cross-core copy of `bytes` between CPUs cpu[0] and cpu[1]: GB/s
 * per copier of each variant in gbs[XC_*] (median of the timings, planned
 * as pld's figures are, each variant's copies holding half the time
 * budget), -1 if it could not be measured. */
static void measure_xcopy(int64_t bytes, const int cpu[2], const struct opts *o,
                          double gbs[2]) {
  struct xcopy x = {.bytes = (size_t)bytes, .cpu = {cpu[0], cpu[1]}};
  const size_t cap = (x.bytes + 63) / 64 * 64;
  int ok = 1;
  for (int j = 0; j < 2; j++) {
    x.src[j] = aligned_alloc(64, cap);
    x.dst[j] = aligned_alloc(64, cap);
    ok = ok && x.src[j] && x.dst[j];
    for (int b = 0; b < 2 && ok; b++) /* every page present */
      memset(b ? x.dst[j] : x.src[j], 1, x.bytes);
  }
  for (int v = 0; v < 2; v++) {
    gbs[v] = -1;
    x.both = v == XC_BOTH_WAYS;
    x.iters = 3, x.reps = 1; /* calibration */
    free(x.round_s);
    x.round_s = malloc(3 * sizeof *x.round_s);
    ok = ok && x.round_s;
    if (!ok || xc_run(&x))
      continue;
    bench_plan(x.t[0], o->budget / 2, o->reps, &x.iters, &x.reps);
    free(x.round_s);
    x.round_s = malloc((size_t)x.iters * sizeof *x.round_s);
    if (!x.round_s || xc_run(&x))
      continue;
    xc_unpinned = x.pin_err[0] ? x.pin_err[0] : x.pin_err[1];
    gbs[v] = (double)bytes / median(x.t, x.reps) * 1e-9;
  }
  for (int j = 0; j < 2; j++) {
    free(x.src[j]);
    free(x.dst[j]);
  }
  free(x.round_s);
}

/* ---- the latency references of issue 29's target 3 ----------------------
 * What a small collective cannot go below on this machine, measured in
 * this run (the shared-memory fabric's runs, 2 CPUs or more):
 *   a line: half a round trip of a cache line between two threads pinned
 *     to two CPUs (line_floor, bench_util.h), the least a call costs in
 *     which each of 2 ranks hears from the other;
 *   a switch: this process and a child of it, both pinned to one CPU,
 *     hand a token back and forth, each yielding the CPU (sched_yield)
 *     until the token is its own: a switch per handoff, what a rank costs
 *     each time it has to run on a CPU another rank's process holds
 *     (ranks are processes; with more of them than CPUs they take turns).
 * Each figure is the median of LAT_REPS timings. */
enum { LAT_REPS = 7, SWITCH_ROUNDS = 2000 };

/* Hands the token on when it is `mine` (its parity) until it is negative.
 * Returns the seconds of `rounds` handoffs of the caller's. */
static double switch_rounds(atomic_long *token, long mine, long rounds) {
  const double t0 = now_s();
  for (long i = 0; i < rounds; i++) {
    long v;
    while (((v = atomic_load(token)) & 1) != mine) {
      if (v < 0)
        return now_s() - t0;
      sched_yield();
    }
    atomic_store(token, v + 1);
  }
  return now_s() - t0;
}

/* One switch between two processes on CPU cpu, in microseconds; -1 if it
 * could not be measured.  The calling thread's CPUs are restored. */
static double measure_switch(int cpu) {
  cpu_set_t was;
  if (pthread_getaffinity_np(pthread_self(), sizeof was, &was))
    return -1;
  atomic_long *token = mmap(NULL, sizeof *token, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (token == MAP_FAILED)
    return -1;
  atomic_store(token, 0);
  double t[LAT_REPS], us = -1;
  const pid_t child = pin_self(cpu) ? -1 : fork();
  if (child == 0) { /* odd tokens, until the parent's negative one */
    switch_rounds(token, 1, LONG_MAX);
    _exit(0);
  }
  if (child > 0) {
    for (int r = -1; r < LAT_REPS; r++) { /* -1: warms up */
      const double s = switch_rounds(token, 0, SWITCH_ROUNDS);
      if (r >= 0)
        t[r] = s / (2.0 * SWITCH_ROUNDS); /* two switches a round */
    }
    /* The child takes the next (odd) token; the one after it, negative
     * and even, is the parent's and ends the child's loop. */
    while (atomic_load(token) & 1)
      sched_yield();
    atomic_store(token, -2);
    waitpid(child, NULL, 0);
    us = median(t, LAT_REPS) * 1e6;
  }
  pthread_setaffinity_np(pthread_self(), sizeof was, &was);
  munmap(token, sizeof *token);
  return us;
}

/* ---- results ------------------------------------------------------------- */

struct run {
  struct opts o;
  int nworlds, worlds[MAX_WORLDS];
  int nsizes;
  int64_t sizes[MAX_SIZES];
  int want[NCOLLS]; /* selected */
  /* CPUs this process may run on, and the two the cross-core copy runs
   * on (0: it is not measured, as in an MPI job's processes). */
  int xc_ncpu, xc_cpu[2];
  /* The latency references of target 3 (microseconds; -1: not
   * measured). */
  double line_us, switch_us;
  struct fig fig[MAX_WORLDS][NCOLLS][MAX_SIZES];
};

static double factor(int c, int p) {
  switch (colls[c].bus) {
  case BUS_ALLREDUCE:
    return 2.0 * (p - 1) / p;
  case BUS_SPLIT:
    return (double)(p - 1) / p;
  default:
    return 1;
  }
}

/* busbw in GB/s of `us` microseconds per call of c over p ranks. */
static double busbw(int c, int p, int64_t bytes, double us) {
  return us > 0 ? (double)bytes / us * 1e-3 * factor(c, p) : -1;
}

static const char *size_str(char *buf, size_t cap, int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0)
    snprintf(buf, cap, "%lld MiB", (long long)(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, cap, "%lld KiB", (long long)(b >> 10));
  else
    snprintf(buf, cap, "%lld B", (long long)b);
  return buf;
}

/* The MPI figures of c at rank count w (all sizes), from one mpirun. */
static void measure_mpi(struct run *R, int w, int c) {
  char args[4096];
  int n = snprintf(args, sizeof args, "%s %d %g", colls[c].mpi, R->o.reps,
                   R->o.budget * 1e3);
  for (int s = 0; s < R->nsizes && n < (int)sizeof args - 24; s++)
    if (!R->fig[w][c][s].same)
      n += snprintf(args + n, sizeof args - (size_t)n, " %lld",
                    (long long)R->fig[w][c][s].count);
  double v[2 * MAX_SIZES];
  const int got = mpi_run(R->worlds[w], "", args, v, 2 * MAX_SIZES);
  for (int i = 0; i + 1 < got; i += 2)
    for (int s = 0; s < R->nsizes; s++)
      if ((double)R->fig[w][c][s].count == v[i])
        R->fig[w][c][s].mpi_us = v[i + 1];
}

static void print_table(const struct run *R, int w, int c, int ncpu) {
  const int p = R->worlds[w];
  printf("\n%s, %d ranks%s: %s vs %s\n", colls[c].name, p,
         p > ncpu ? " (oversubscribed)" : "", colls[c].pld, colls[c].mpi_call);
  /* mpi-shm: the shared-memory fabric's time, and pld's over it. */
  printf("  %10s %10s %5s %5s %4s | %9s %7s %7s %7s | %9s %7s %7s | %7s | "
         "%7s %7s%s\n",
         "", "", "", "", "", "pld", "", "", "", "Open MPI", "", "", "busbw",
         "memcpy", "busbw/", vs_shm() ? " | shm fabric   time" : "");
  printf("  %10s %10s %5s %5s %4s | %9s %7s %7s %7s | %9s %7s %7s | %7s | "
         "%7s %7s%s\n",
         "size (B)", "count", "type", "redop", "root", "time (us)", "algbw",
         "busbw", "checked", "time (us)", "algbw", "busbw", "pld/MPI", "GB/s",
         "memcpy", vs_shm() ? " |  time (us) mpi/shm" : "");
  for (int s = 0; s < R->nsizes; s++) {
    const struct fig *f = &R->fig[w][c][s];
    if (f->same)
      continue;
    const double pb = busbw(c, p, f->bytes, f->us);
    const double mb = busbw(c, p, f->bytes, f->mpi_us);
    const double fa = factor(c, p); /* algbw = busbw / fa */
    char a[11][24], chk[24], shm[64] = "";
    if (f->wrong < 0)
      snprintf(chk, sizeof chk, "n/a");
    else if (f->wrong == 0)
      snprintf(chk, sizeof chk, "ok");
    else
      snprintf(chk, sizeof chk, "%lld bad", (long long)f->wrong);
    if (vs_shm())
      snprintf(shm, sizeof shm, " | %10s %7s", fmt(a[9], 24, 2, "", f->shm_us),
               fmt(a[10], 24, 2, "x",
                   f->us > 0 && f->shm_us > 0 ? f->us / f->shm_us : -1));
    printf("  %10lld %10lld %5s %5s %4d | %9s %7s %7s %7s | %9s %7s "
           "%7s | %7s | %7s %7s%s\n",
           (long long)f->bytes, (long long)f->count, "float",
           is_allreduce(c) || c == C_REDUCE_SCATTER ? "sum" : "none",
           c == C_BROADCAST ? 0 : -1, fmt(a[0], 24, 2, "", f->us),
           fmt(a[7], 24, 3, "", pb > 0 ? pb / fa : -1),
           fmt(a[1], 24, 3, "", pb), chk, fmt(a[2], 24, 2, "", f->mpi_us),
           fmt(a[8], 24, 3, "", mb > 0 ? mb / fa : -1),
           fmt(a[3], 24, 3, "", mb),
           fmt(a[4], 24, 2, "x", pb > 0 && mb > 0 ? pb / mb : -1),
           fmt(a[5], 24, 2, "", f->mc_gbs),
           fmt(a[6], 24, 0, "%",
               pb > 0 && f->mc_gbs > 0 ? pb / f->mc_gbs * 100 : -1),
           shm);
  }
  fflush(stdout);
}

/* The group starting at order[i] (the allreduce modes, or one
 * collective): its selected collectives in cs[0, *n).  Returns the
 * number of entries of `order` it took. */
static int group_at(const struct run *R, int i, int *cs, int *n) {
  int took = 0;
  *n = 0;
  for (int j = i; j < NCOLLS; j++) {
    if (j > i && !(is_allreduce(order[i]) && is_allreduce(order[j])))
      break;
    took++;
    if (R->want[order[j]])
      cs[(*n)++] = order[j];
  }
  return took;
}

/* The figures of collectives cs (a group) at rank count w, every size:
 * their buffers, and with `here`, pld's figures measured in this process
 * (the shared-memory fabric, or this process's rank of an MPI job): the
 * check, then the timing.  After allreduce (auto)'s figure, from
 * XCOPY_FROM, the cross-core copy, in this process whatever the fabric
 * (not in an MPI job's processes: R->xc_ncpu is 0 there). */
static void group_figs(struct run *R, int w, const int *cs, int n, int here) {
  const int p = R->worlds[w];
  for (int s = 0; s < R->nsizes; s++) {
    const struct shape sh = shape_of(cs[0], p, R->sizes[s]);
    struct fig *f[NCOLLS];
    for (int j = 0; j < n; j++) {
      f[j] = &R->fig[w][cs[j]][s];
      f[j]->us = f[j]->mc_gbs = f[j]->mpi_us = f[j]->shm_us = -1;
      f[j]->xc_gbs[XC_ONE_WAY] = f[j]->xc_gbs[XC_BOTH_WAYS] = -1;
      f[j]->wrong = -1;
      f[j]->count = sh.count;
      f[j]->bytes = sh.count * 4;
      /* Sizes below a row per rank come out as the one before. */
      f[j]->same = s > 0 && R->fig[w][cs[j]][s - 1].count == sh.count;
    }
    if (f[0]->same)
      continue;
    if (here) {
      struct prog g;
      if (prog_init(&g, p, sh, 1, NULL) == PLD_OK)
        for (int j = 0; j < n; j++)
          f[j]->wrong = check(&g, cs[j]);
      prog_release(&g);
      if (prog_init(&g, p, sh, 0, NULL) == PLD_OK)
        measure(&g, cs, n, &R->o, f);
      prog_release(&g);
    }
    /* Auto's reference, right after its figure. */
    if (cs[n - 1] == C_AUTO && f[0]->bytes >= XCOPY_FROM && R->xc_ncpu >= 2)
      measure_xcopy(f[0]->bytes, R->xc_cpu, &R->o, f[n - 1]->xc_gbs);
  }
}

/* The numbers a figure travels as from an MPI job (--job) to this
 * process: collective, size index, time, memcpy's GB/s, wrong elements. */
enum { JOB_NUMS = 5 };

/* --job: prints pld's figures at rank count w (the job's), JOB_NUMS
 * numbers a line. */
static void print_job_figs(const struct run *R, int w) {
  for (int c = 0; c < NCOLLS; c++)
    for (int s = 0; R->want[c] && s < R->nsizes; s++) {
      const struct fig *f = &R->fig[w][c][s];
      if (!f->same)
        printf("%d %d %.9g %.9g %lld\n", c, s, f->us, f->mc_gbs,
               (long long)f->wrong);
    }
}

/* pld's figures at rank count w from an MPI job of that many processes
 * under tools/mpirun.sh (`job`: this run's options for it), which
 * measures every selected collective as group_figs does.  What group_figs
 * measured here before (mpi-shm: the shared-memory fabric) becomes the
 * shm column.  A wrong result in the job counts as a failure here
 * (pld_job). */
static void job_figs(struct run *R, int w, const char *job) {
  for (int c = 0; c < NCOLLS; c++)
    for (int s = 0; s < R->nsizes; s++) {
      struct fig *f = &R->fig[w][c][s];
      f->shm_us = f->us;
      f->us = f->mc_gbs = -1;
      f->wrong = -1;
    }
  char args[1024];
  snprintf(args, sizeof args, "--job -n %d %s", R->worlds[w], job);
  static double v[JOB_NUMS * NCOLLS * MAX_SIZES + 1]; /* + job_done's */
  const int got =
      pld_mpi_job(R->worlds[w], args, v, JOB_NUMS * NCOLLS * MAX_SIZES + 1);
  for (int i = 0; i + JOB_NUMS <= got; i += JOB_NUMS) {
    const int c = (int)v[i], s = (int)v[i + 1];
    if (c < 0 || c >= NCOLLS || s < 0 || s >= R->nsizes)
      continue;
    struct fig *f = &R->fig[w][c][s];
    f->us = v[i + 2];
    f->mc_gbs = v[i + 3];
    f->wrong = (int64_t)v[i + 4];
  }
}

/* Issue 29's target 1 for allreduce (auto) at (w, s): busbw, Open MPI's
 * and the cross-core copy's (XC_TARGET), -1 where not measured; whether
 * busbw is at least 80% of the copy from XCOPY_FROM (copy_met), and at
 * least min(2x Open MPI's, 80% of the copy) from 1 MiB (goal_met): 1 or
 * 0, -1 where not judged. */
struct target1 {
  double bw, mpi, copy;
  int copy_met, goal_met;
};

static struct target1 target1_at(const struct run *R, int w, int s) {
  const int p = R->worlds[w];
  const struct fig *f = &R->fig[w][C_AUTO][s];
  struct target1 t = {busbw(C_AUTO, p, f->bytes, f->us),
                      busbw(C_AUTO, p, f->bytes, f->mpi_us),
                      f->xc_gbs[XC_TARGET], -1, -1};
  if (f->same || f->bytes < XCOPY_FROM || t.bw <= 0)
    return t;
  if (t.copy > 0)
    t.copy_met = t.bw >= 0.8 * t.copy;
  if (f->bytes >= (1 << 20) && t.mpi > 0) {
    const double goal =
        t.copy > 0 && 0.8 * t.copy < 2 * t.mpi ? 0.8 * t.copy : 2 * t.mpi;
    t.goal_met = t.bw >= goal;
  }
  return t;
}

static const char *verdict(int met) {
  return met < 0 ? "-" : met ? "met" : "MISSED";
}

/* Allreduce (auto) at rank count w from XCOPY_FROM beside the cross-core
 * copy, and target 1's verdicts at each size. */
static void print_xcopy(const struct run *R, int w) {
  const int p = R->worlds[w];
  char a[6][24], sz[24];
  if (R->sizes[R->nsizes - 1] < XCOPY_FROM)
    return;
  printf("\nallreduce (auto), %d ranks, against the cross-core copy (target "
         "1; busbw and copies in GB/s)\n",
         p);
  if (R->xc_ncpu < 2) {
    printf("  cross-core copy: not measurable (this process may run on %d "
           "CPU; the copy needs 2)\n",
           R->xc_ncpu);
    return;
  }
  printf("  copy: GB/s per copy of what a thread on the other CPU has just "
         "written, both ways at\n  once (target 1's reference) and one way; "
         "threads: ");
  if (xc_unpinned)
    printf("NOT pinned (pthread_setaffinity_np: %s)\n", strerror(xc_unpinned));
  else
    printf("pinned to CPUs %d and %d\n", R->xc_cpu[0], R->xc_cpu[1]);
  printf("  %-8s %7s | %9s %8s %7s %7s | %9s %7s %7s\n", "size", "busbw",
         "copy both", "one way", "busbw/", ">= 80%", "Open MPI", "pld/",
         "min(2x,");
  printf("  %-8s %7s | %9s %8s %7s %7s | %9s %7s %7s\n", "", "", "ways", "",
         "copy", "copy", "busbw", "MPI", "80%)");
  for (int s = 0; s < R->nsizes; s++) {
    const struct fig *f = &R->fig[w][C_AUTO][s];
    if (f->same || f->bytes < XCOPY_FROM)
      continue;
    const struct target1 t = target1_at(R, w, s);
    printf("  %-8s %7s | %9s %8s %7s %7s | %9s %7s %7s\n",
           size_str(sz, sizeof sz, f->bytes), fmt(a[0], 24, 3, "", t.bw),
           fmt(a[1], 24, 3, "", t.copy),
           fmt(a[2], 24, 3, "", f->xc_gbs[XC_ONE_WAY]),
           fmt(a[3], 24, 0, "%",
               t.bw > 0 && t.copy > 0 ? t.bw / t.copy * 100 : -1),
           verdict(t.copy_met), fmt(a[4], 24, 3, "", t.mpi),
           fmt(a[5], 24, 2, "x", t.bw > 0 && t.mpi > 0 ? t.bw / t.mpi : -1),
           verdict(t.goal_met));
  }
  if (p > R->xc_ncpu)
    printf("  (%d ranks on %d CPUs take turns: each rank copies about 2(P-1)/P "
           "of the size per call,\n  %d at a time, so busbw can reach about "
           "%d/%d of the copy both ways)\n",
           p, R->xc_ncpu, R->xc_ncpu, R->xc_ncpu, p);
}

/* The group's MPI figures (one mpirun; the allreduce modes share MPI's
 * figure), then a table per collective. */
static void finish_group(struct run *R, int w, const int *cs, int n, int ncpu) {
  measure_mpi(R, w, cs[0]);
  for (int j = 1; j < n; j++)
    for (int s = 0; s < R->nsizes; s++)
      R->fig[w][cs[j]][s].mpi_us = R->fig[w][cs[0]][s].mpi_us;
  for (int j = 0; j < n; j++)
    print_table(R, w, cs[j], ncpu);
  if (cs[n - 1] == C_AUTO)
    print_xcopy(R, w);
}

/* Every selected collective at rank count w, every size: pld's figures
 * (here, or from an MPI job: job_figs), then MPI's, and the tables, a
 * group at a time; under the shared-memory fabric each group's tables
 * follow its measurement at once. */
static void run_world(struct run *R, int w, const char *job, int ncpu) {
  int cs[NCOLLS], n;
  for (int i = 0; i < NCOLLS;) {
    i += group_at(R, i, cs, &n);
    if (!n)
      continue;
    group_figs(R, w, cs, n, !fabric->rma);
    if (!fabric->setting)
      finish_group(R, w, cs, n, ncpu);
  }
  if (!fabric->setting)
    return;
  job_figs(R, w, job);
  for (int i = 0; i < NCOLLS;) {
    i += group_at(R, i, cs, &n);
    if (n)
      finish_group(R, w, cs, n, ncpu);
  }
}

/* ---- the crossover and the targets --------------------------------------- */

static const int modes[3] = {C_MESH, C_TWO_PHASE, C_RING};

/* The mode of the best busbw at (w, s), or -1. */
static int best_mode(const struct run *R, int w, int s) {
  int best = -1;
  for (int m = 0; m < 3; m++) {
    const double us = R->fig[w][modes[m]][s].us;
    if (us > 0 && (best < 0 || us < R->fig[w][best][s].us))
      best = modes[m];
  }
  return best;
}

static int all_modes(const struct run *R) {
  return R->want[C_MESH] && R->want[C_TWO_PHASE] && R->want[C_RING] &&
         R->want[C_AUTO];
}

/* The allreduce modes side by side at rank count w: busbw of each, the
 * best measured, the automatic choice, auto's busbw over the best's; then
 * the crossover, as runs of sizes with the same best mode. */
static void print_crossover(const struct run *R, int w) {
  const int p = R->worlds[w];
  char a[5][24], sz[24];
  printf("\nallreduce modes at %d ranks: busbw (GB/s), the best mode "
         "measured, pld_allreduce_auto's choice\n",
         p);
  printf("  %-8s %9s %9s %9s %9s   %-9s %-9s %9s\n", "size", "mesh",
         "two-phase", "ring", "auto", "best", "auto is", "auto/best");
  for (int s = 0; s < R->nsizes; s++) {
    const int64_t b = R->fig[w][C_AUTO][s].bytes;
    const int best = best_mode(R, w, s);
    double bw[4];
    for (int m = 0; m < 4; m++) {
      const int c = m < 3 ? modes[m] : C_AUTO;
      bw[m] = busbw(c, p, b, R->fig[w][c][s].us);
    }
    const double bb = best >= 0 ? busbw(best, p, b, R->fig[w][best][s].us) : -1;
    printf("  %-8s %9s %9s %9s %9s   %-9s %-9s %9s\n",
           size_str(sz, sizeof sz, b), fmt(a[0], 24, 3, "", bw[0]),
           fmt(a[1], 24, 3, "", bw[1]), fmt(a[2], 24, 3, "", bw[2]),
           fmt(a[3], 24, 3, "", bw[3]), best >= 0 ? colls[best].name : "n/a",
           colls[pld_allreduce_auto(p, b)].name,
           fmt(a[4], 24, 0, "%", bw[3] > 0 && bb > 0 ? bw[3] / bb * 100 : -1));
  }
  printf("  crossover measured at %d ranks (best mode by size):", p);
  for (int s = 0; s < R->nsizes;) {
    const int best = best_mode(R, w, s);
    int e = s;
    while (e + 1 < R->nsizes && best_mode(R, w, e + 1) == best)
      e++;
    char lo[24], hi[24];
    size_str(lo, sizeof lo, R->fig[w][C_AUTO][s].bytes);
    size_str(hi, sizeof hi, R->fig[w][C_AUTO][e].bytes);
    printf("%s %s %s%s%s", s ? "," : "", best >= 0 ? colls[best].name : "n/a",
           lo, e > s ? " - " : "", e > s ? hi : "");
    s = e + 1;
  }
  printf("\n");
}

/* The index of rank count p among the run's, or -1. */
static int world_index(const struct run *R, int p) {
  for (int w = 0; w < R->nworlds; w++)
    if (R->worlds[w] == p)
      return w;
  return -1;
}

/* A target: the figures it was judged on, and whether it is met. */
struct target {
  char items[1024];
  size_t n;
  int measured, met;
};

/* Adds a figure (printf-style) that meets the target or not. */
__attribute__((format(printf, 3, 4))) static void
target_add(struct target *t, int ok, const char *fmt_, ...) {
  va_list ap;
  va_start(ap, fmt_);
  if (t->n < sizeof t->items - 2) {
    if (t->n)
      t->n += (size_t)snprintf(t->items + t->n, sizeof t->items - t->n, ", ");
    const int m = vsnprintf(t->items + t->n, sizeof t->items - t->n, fmt_, ap);
    t->n = m < 0 ? t->n : t->n + (size_t)m;
    t->n = t->n < sizeof t->items ? t->n : sizeof t->items - 1;
  }
  va_end(ap);
  t->measured = 1;
  t->met = t->met && ok;
}

/* "label: met (figures)", MISSED, or n/a when nothing was measured. */
static void target_print(const char *label, const struct target *t) {
  printf("  %s: %s%s%s%s\n", label,
         !t->measured ? "n/a (not measured)"
         : t->met     ? "met"
                      : "MISSED",
         t->n ? " (" : "", t->items, t->n ? ")" : "");
}

/* A target over every collective at every size measured with the run's
 * rank count w: small, broadcast at every size and the others from 8 B to
 * 4 KiB (allreduce in auto mode, not the forced modes) in at most Open
 * MPI's time; otherwise each size in at most 1.1x the shared-memory
 * fabric's time.  Names the sizes missed; returns whether it is met. */
static int every_coll_target(const struct run *R, int w, int small,
                             const char *label) {
  char sz[24];
  struct target t = {.met = 1};
  for (int c = 0; c < NCOLLS; c++)
    for (int s = 0; (!small || c == C_AUTO || !is_allreduce(c)) && R->want[c] &&
                    s < R->nsizes;
         s++) {
      const struct fig *f = &R->fig[w][c][s];
      const double ref = small ? f->mpi_us : f->shm_us;
      if (f->same || f->us <= 0 || ref <= 0 ||
          (small && f->bytes > 4096 && c != C_BROADCAST))
        continue;
      size_str(sz, sizeof sz, f->bytes);
      if (small && f->us > ref)
        target_add(&t, 0, "%s %s %.2f/%.2f", colls[c].name, sz, f->us, ref);
      else if (!small && f->us > 1.1 * ref)
        target_add(&t, 0, "%s %s %.2fx", colls[c].name, sz, f->us / ref);
      t.measured = 1;
    }
  target_print(label, &t);
  return !t.measured || t.met;
}

/* Issue 28's target 1, over the MPI fabric, at the run's rank count w:
 * every collective (allreduce in auto mode, not the forced modes) with at
 * least Open MPI's busbw from MPI_BW_FROM and at most 1.5x its time below
 * it.  Names, per collective, the figures missed and the worst of each
 * side.  Ranks that outnumber the CPUs are said, not taken as the reason
 * for a miss: Open MPI's figures come from as many ranks on those CPUs. */
static void mpi_target(const struct run *R, int w) {
  const int p = R->worlds[w];
  char sz[24], cpus[64] = "", label[320];
  struct target t = {.met = 1};
  int figs = 0, missed = 0;
  for (int c = 0; c < NCOLLS; c++) {
    /* Below MPI_BW_FROM (time, pld/MPI: the largest) and from it (busbw,
     * pld/MPI: the smallest), the worst miss and its size. */
    double worst[2] = {0, 0};
    int64_t at[2] = {0, 0};
    int n = 0, m = 0;
    for (int s = 0;
         (c == C_AUTO || !is_allreduce(c)) && R->want[c] && s < R->nsizes;
         s++) {
      const struct fig *f = &R->fig[w][c][s];
      if (f->same || f->us <= 0 || f->mpi_us <= 0)
        continue;
      const int bw = f->bytes >= MPI_BW_FROM;
      const double r = f->us / f->mpi_us; /* time; busbw's is 1 / r */
      n++;
      if (bw ? r <= 1.0 : r <= 1.5)
        continue;
      m++;
      if (r > worst[bw]) {
        worst[bw] = r;
        at[bw] = f->bytes;
      }
    }
    figs += n;
    missed += m;
    t.measured |= n > 0;
    if (!m)
      continue;
    char lo[48] = "", hi[48] = "", hs[24];
    if (worst[0] > 0)
      snprintf(lo, sizeof lo, "%s %.2fx time", size_str(sz, sizeof sz, at[0]),
               worst[0]);
    if (worst[1] > 0)
      snprintf(hi, sizeof hi, "%s%s %.2fx busbw", lo[0] ? "; " : "",
               size_str(hs, sizeof hs, at[1]), 1 / worst[1]);
    target_add(&t, 0, "%s %d/%d, worst: %s%s", colls[c].name, m, n, lo, hi);
  }
  if (R->xc_ncpu > 0 && p > R->xc_ncpu)
    snprintf(cpus, sizeof cpus, " (on %d CPUs, for pld and Open MPI alike)",
             R->xc_ncpu);
  snprintf(label, sizeof label,
           "issue 28 target 1, %d ranks%s: every collective's busbw >= "
           "1.0x Open MPI's from %s, time <= 1.5x below it (%d of %d "
           "figures missed; per collective missed/measured, pld/MPI)",
           p, cpus, size_str(sz, sizeof sz, MPI_BW_FROM), missed, figs);
  target_print(label, &t);
}

/* Under a missed target 3 at rank count p: the latency reference that
 * explains the miss, if it was measured. */
static void print_target3_reference(const struct run *R, int p) {
  const int ncpu = R->xc_ncpu;
  if (p <= ncpu && R->line_us > 0)
    printf("    (the reference: a cache line from one CPU to the other, half "
           "a round trip, takes\n    %.3f us here, in this run; a call's "
           "time above it is pld's own work per call: its\n    checks, its "
           "description written and compared, its credits)\n",
           R->line_us);
  if (p > ncpu && ncpu > 0 && R->switch_us > 0)
    printf("    (the reference: %d ranks on %d CPUs take turns, and a switch "
           "between two processes\n    on one CPU takes %.2f us here, in this "
           "run: a call that needs every rank's entry\n    waits for at least "
           "%d switches, %.2f us; a small broadcast, which needs every "
           "rank's\n    entry once in %d calls, for at least %.2f us a call; "
           "Open MPI's root does not\n    wait for its receivers)\n",
           p, ncpu, R->switch_us, p - ncpu, (p - ncpu) * R->switch_us,
           PLD_COLL_SLOTS_USED(p) / 2,
           (p - ncpu) * R->switch_us / (PLD_COLL_SLOTS_USED(p) / 2));
}

static void print_targets(const struct run *R) {
  char sz[24], label[256];
  printf("\nTargets (FP32; allreduce: pld_allreduce(SUM, AUTO))\n");
  for (int k = 0; k < 2; k++) { /* issue 29's target 1, 2 and 4 ranks */
    const int p = k ? 4 : 2, w = world_index(R, p);
    struct target copy = {.met = 1}, goal = {.met = 1};
    for (int s = 0; w >= 0 && R->want[C_AUTO] && s < R->nsizes; s++) {
      const struct target1 t = target1_at(R, w, s);
      char a[2][24];
      size_str(sz, sizeof sz, R->fig[w][C_AUTO][s].bytes);
      if (t.copy_met >= 0)
        target_add(&copy, t.copy_met, "%s %.0f%%", sz, t.bw / t.copy * 100);
      if (t.goal_met >= 0)
        target_add(
            &goal, t.goal_met, "%s %s %s", sz,
            fmt(a[0], 24, 2, "x", t.bw / t.mpi),
            fmt(a[1], 24, 0, "%", t.copy > 0 ? t.bw / t.copy * 100 : -1));
    }
    snprintf(label, sizeof label,
             "issue 29 target 1, allreduce (auto) busbw >= 80%% of the "
             "cross-core copy from %s, %d ranks (busbw/copy)",
             size_str(sz, sizeof sz, XCOPY_FROM), p);
    target_print(label, &copy);
    if (copy.measured && !copy.met && p > R->xc_ncpu && R->xc_ncpu > 0)
      printf("    (the reference that explains it: %d ranks on %d CPUs take "
             "turns, so busbw can reach\n    about %d/%d of the copy both "
             "ways; 80%% needs a CPU per rank)\n",
             p, R->xc_ncpu, R->xc_ncpu, p);
    snprintf(label, sizeof label,
             "issue 29 target 1, busbw >= min(2x Open MPI's, 80%% of the "
             "cross-core copy) from 1 MiB, %d ranks (pld/MPI, busbw/copy)",
             p);
    target_print(label, &goal);
  }
  const int w2 = world_index(R, 2);
  struct target t = {.met = 1};
  for (int s = 0; w2 >= 0 && R->want[C_AUTO] && s < R->nsizes; s++) {
    const struct fig *f = &R->fig[w2][C_AUTO][s];
    const double b = busbw(C_AUTO, 2, f->bytes, f->us);
    if (f->bytes >= (1 << 20) && b > 0 && f->mc_gbs > 0)
      target_add(&t, b >= 0.6 * f->mc_gbs, "%s %.0f%%",
                 size_str(sz, sizeof sz, f->bytes), b / f->mc_gbs * 100);
  }
  target_print("busbw >= 60% of memcpy from 1 MiB, 2 ranks", &t);
  t = (struct target){.met = 1};
  for (int s = 0; w2 >= 0 && R->want[C_AUTO] && s < R->nsizes; s++) {
    const struct fig *f = &R->fig[w2][C_AUTO][s];
    if (f->bytes <= 1024 && f->us > 0 && f->mpi_us > 0)
      target_add(&t, f->us <= f->mpi_us, "%s %.2f/%.2f",
                 size_str(sz, sizeof sz, f->bytes), f->us, f->mpi_us);
  }
  target_print("time of 8 B - 1 KiB <= Open MPI's, 2 ranks (us, pld/MPI)", &t);
  for (int w = 0; w < R->nworlds; w++) {
    snprintf(label, sizeof label,
             "%stime <= Open MPI's, broadcast at every size and every "
             "collective from 8 B to 4 KiB,\n    %d ranks (us, pld/MPI where "
             "missed)",
             fabric->setting ? "" : "issue 29 target 3, ", R->worlds[w]);
    if (!every_coll_target(R, w, 1, label))
      print_target3_reference(R, R->worlds[w]);
  }
  for (int w = 0; w < R->nworlds; w++) {
    t = (struct target){.met = 1};
    for (int s = 0; all_modes(R) && s < R->nsizes; s++) {
      const int best = best_mode(R, w, s);
      const double us = R->fig[w][C_AUTO][s].us;
      if (best < 0 || us <= 0)
        continue;
      const double r = R->fig[w][best][s].us / us; /* busbw ratio */
      if (r < 0.9)
        target_add(&t, 0, "%s %.0f%% of %s",
                   size_str(sz, sizeof sz, R->fig[w][C_AUTO][s].bytes), r * 100,
                   colls[best].name);
      t.measured = 1;
    }
    snprintf(label, sizeof label,
             "auto within 10%% of the best mode at every size, %d ranks",
             R->worlds[w]);
    target_print(label, &t);
  }
  for (int w = 0; vs_shm() && w < R->nworlds; w++) {
    snprintf(label, sizeof label,
             "time <= 1.1x the shared-memory fabric's at every size, %d "
             "ranks (mpi/shm where missed)",
             R->worlds[w]);
    every_coll_target(R, w, 0, label);
  }
  for (int w = 0; fabric->setting && w < R->nworlds; w++)
    mpi_target(R, w);
}

/* ---- main ---------------------------------------------------------------- */

/* ---- the timing model's cost --------------------------------------------
 * model-cost: what recording for the timing model costs each collective
 * (issue 26, target 6: at most 10% more wall time with it on).  For each
 * rank count, collective and size, the timing program twice, prepared
 * with pld_config.model "off" and "on" (both "off" with `control`), their
 * devices pinned alike (pin_devices_alike), run alternately R->o.reps rounds
 * in this process, each first in every other round, so that a machine
 * that gets busier or quieter, and the threads of the program that ran
 * just before (still polling for work), weigh on both alike.  A run is
 * MC_TIMINGS timings of about run_s seconds in all (calls per timing planned
 * from the "off" program's calibration); its figure rank 0's median.  Printed:
 * the medians over the rounds and the median of the rounds' on/off ratios, with
 * the target's verdict. Returns 1 if a pld call failed. */
enum { MC_TIMINGS = 5 };

static int model_cost(const struct run *R, double run_s, int control) {
  const char *const model[2] = {"off", control ? "off" : "on"};
  int rows = 0, met = 0, bad = 0;
  double worst = 0;
  printf("bench_coll model-cost: each collective (FP32 SUM) with the timing "
         "model off and %s,\n  two prepared programs run alternately, %d "
         "rounds of %d timings of about %.0f ms in all each,\n  us per call "
         "(medians); on/off: the median of the rounds' ratios\n",
         model[1], R->o.reps, MC_TIMINGS, run_s * 1e3);
  if (control)
    printf("  control: both programs with the model off, so the verdicts "
           "show this method's own noise\n");
  pin_devices_alike();
  print_busy("figures");
  printf("%5s  %-15s %9s %11s %11s %7s   issue 26 target 6: on/off <= "
         "1.10x\n",
         "ranks", "collective", "size", "off", "on", "on/off");
  for (int w = 0; w < R->nworlds; w++)
    for (int c = 0; c < NCOLLS; c++)
      for (int i = 0; i < R->nsizes && R->want[c]; i++) {
        const int p = R->worlds[w];
        const struct shape sh = shape_of(c, p, R->sizes[i]);
        struct prog g[2];
        double fig[2][MAX_REPS], ratio[MAX_REPS], est[NCOLLS];
        int64_t pv[NPARAMS] = {
            [P_MASK] = (int64_t)1 << c, [P_REPS] = MC_TIMINGS};
        int st = 0, nr;
        for (int m = 0; m < 2; m++)
          st |= prog_init(&g[m], p, sh, 0, model[m]);
        if (!st && !(st = calibrate(&g[0], &c, 1, est))) {
          bench_plan(est[c], run_s, MC_TIMINGS, &pv[P_ITERS + c], &nr);
          pv[P_WARM + c] = est[c] < 1e-3 ? pv[P_ITERS + c] : 0;
        }
        for (int r = 0; r < R->o.reps && !st; r++) {
          for (int k = 0; k < 2 && !st; k++) {
            const int m = k ^ (r & 1); /* (off first every other round) */
            if ((st = prog_run(&g[m], pv)))
              break;
            double v[MC_TIMINGS];
            memcpy(v, (const double *)pld_tensor_data(g[m].t) + c * MAX_REPS,
                   sizeof v);
            fig[m][r] = median(v, MC_TIMINGS);
          }
          ratio[r] = st ? 0 : fig[1][r] / fig[0][r];
        }
        for (int m = 0; m < 2; m++)
          prog_release(&g[m]);
        if (st) {
          bad = 1;
          continue;
        }
        char size[32];
        const double q = median(ratio, R->o.reps);
        printf("%5d  %-15s %9s %11.2f %11.2f %6.2fx   %s\n", p, colls[c].name,
               size_str(size, sizeof size, R->sizes[i]),
               median(fig[0], R->o.reps) * 1e6, median(fig[1], R->o.reps) * 1e6,
               q, q <= 1.10 ? "met" : "MISSED");
        rows++;
        met += q <= 1.10;
        worst = q > worst ? q : worst;
      }
  printf("model-cost: on/off <= 1.10x at %d of %d rows, the largest %.2fx\n",
         met, rows, worst);
  return bad;
}

static double cpu_seconds(const struct rusage *u) {
  return (double)u->ru_utime.tv_sec + (double)u->ru_utime.tv_usec * 1e-6 +
         (double)u->ru_stime.tv_sec + (double)u->ru_stime.tv_usec * 1e-6;
}

/* "64M" -> 67108864; K, M, G binary.  -1 if it does not parse. */
static int64_t parse_bytes(const char *s) {
  char *end;
  const long long v = strtoll(s, &end, 10);
  int shift = 0;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  case '\0':
    break;
  default:
    return -1;
  }
  if (shift && end[1] != '\0')
    return -1;
  return end == s || v < 1 || v > (1LL << 30) >> shift ? -1 : v << shift;
}

/* b, every power of f strictly between b and e, and e. */
static int make_sizes(struct run *R, int64_t b, int64_t e, int64_t f) {
  R->nsizes = 0;
  R->sizes[R->nsizes++] = b;
  for (int64_t v = f; v < e && R->nsizes < MAX_SIZES - 1; v *= f)
    if (v > b)
      R->sizes[R->nsizes++] = v;
  if (e > b)
    R->sizes[R->nsizes++] = e;
  return R->nsizes;
}

static int select_colls(struct run *R, char *list) {
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    int known = 0;
    for (int c = 0; c < NCOLLS; c++)
      if (strcmp(tok, colls[c].name) == 0 ||
          (strcmp(tok, "allreduce") == 0 && is_allreduce(c)))
        R->want[c] = known = 1;
    if (!known)
      return -1;
  }
  return 0;
}

static int select_worlds(struct run *R, char *list) {
  R->nworlds = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    const int p = atoi(tok);
    if (p < 2 || p > MAX_RANKS || R->nworlds == MAX_WORLDS)
      return -1;
    R->worlds[R->nworlds++] = p;
  }
  return R->nworlds ? 0 : -1;
}

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [-b BYTES] [-e BYTES] [-f FACTOR] [-n RANKS,...] "
          "[-c COLL,...] [-r REPS] [-t MS] [quick | model-cost [--control]] "
          "[--fabric F]\n"
          "  sizes: -b and -e (K, M, G) and every power of -f between "
          "(8, 64M, 4)\n"
          "  -n: rank counts 2 to 8 (2,4,8); -r timings per figure, 3 to 63 "
          "(11); -t ms of timings per figure (100)\n"
          "  -c: allreduce, mesh, two-phase, ring, auto, broadcast, "
          "allgather, reduce_scatter, all_to_all (all)\n"
          "  quick: 5 timings of 20 ms, sizes up to 1 MiB\n"
          "  model-cost: each collective with the timing model off and on, "
          "alternately:\n"
          "    -r rounds (21), -t ms a run (10), sizes 64 B to 1 MiB by 16, "
          "2 and 4 ranks;\n"
          "    --control: both with the model off (the method's own noise)\n"
          "  --fabric: shm (pld's shared-memory fabric, the default), "
          "mpi-shm, mpi-tcp, mpi-ucx\n"
          "    (pld's MPI fabric and Open MPI under tools/mpirun.sh shm, tcp, "
          "ucx)\n",
          argv0);
}

int main(int argc, char **argv) {
  static struct run R; /* large: not on the stack */
  int64_t b = 8, e = -1, f = 4;
  int reps = 0, opt, quick = 0, any = 0, in_job = 0, cost = 0, sized = 0;
  int worlds_given = 0, control = 0;
  double ms = 0;
  char worlds[] = "2,4,8";
  select_worlds(&R, worlds);
  /* --job: the MPI job job_figs starts, one rank per process. */
  static const struct option longs[] = {
      {"fabric", required_argument, NULL, 'F'},
      {"job", no_argument, NULL, 'J'},
      {"control", no_argument, NULL, 'K'},
      {NULL, 0, NULL, 0}};
  while ((opt = getopt_long(argc, argv, "b:e:f:n:c:r:t:h", longs, NULL)) !=
         -1) {
    int bad = 0;
    switch (opt) {
    case 'F':
      bad = fabric_select(optarg) < 0;
      break;
    case 'J':
      in_job = 1;
      break;
    case 'K':
      control = 1;
      break;
    case 'b': /* at least an element */
      bad = (b = parse_bytes(optarg)) < 4;
      sized = 1;
      break;
    case 'e':
      bad = (e = parse_bytes(optarg)) < 0;
      sized = 1;
      break;
    case 'f':
      bad = (f = atoi(optarg)) < 2;
      sized = 1;
      break;
    case 'n':
      bad = select_worlds(&R, optarg) < 0;
      worlds_given = 1;
      break;
    case 'c':
      bad = select_colls(&R, optarg) < 0;
      any = 1;
      break;
    case 'r':
      bad = (reps = atoi(optarg)) < 3 || reps >= MAX_REPS;
      break;
    case 't':
      bad = (ms = atof(optarg)) <= 0;
      break;
    default:
      bad = 1;
    }
    if (bad) {
      usage(argv[0]);
      return 2;
    }
  }
  for (int i = optind; i < argc; i++) {
    quick |= strcmp(argv[i], "quick") == 0;
    cost |= strcmp(argv[i], "model-cost") == 0;
    if (quick + cost != i - optind + 1 || (quick && cost) ||
        (cost && (fabric->setting || in_job)) || (control && !cost)) {
      usage(argv[0]);
      return 2;
    }
  }
  if (cost) {
    char two_four[] = "2,4";
    if (!worlds_given)
      select_worlds(&R, two_four);
    if (!sized)
      b = 64, e = 1 << 20, f = 16;
    make_sizes(&R, b, e < 0 ? 1 << 20 : e, f);
    R.o.reps = reps ? reps : 21;
    for (int c = 0; c < NCOLLS && !any; c++)
      R.want[c] = 1;
    return model_cost(&R, (ms > 0 ? ms : 10) * 1e-3, control) || failed;
  }
  if (e < 0)
    e = quick ? 1 << 20 : 64 << 20;
  if (e < b) {
    usage(argv[0]);
    return 2;
  }
  R.o.reps = reps ? reps : quick ? 5 : 11;
  R.o.budget = (ms > 0 ? ms : quick ? 20 : 100) * 1e-3;
  for (int c = 0; c < NCOLLS && !any; c++)
    R.want[c] = 1;
  make_sizes(&R, b, e, f);
  int cs[NCOLLS], n;
  if (in_job) {
    if (R.nworlds != 1 || R.worlds[0] != pld_process_count()) {
      fprintf(stderr,
              "bench_coll: --job: -n must be the job's process count, %d\n",
              pld_process_count());
      return 2;
    }
    job_quiet();
    for (int i = 0; i < NCOLLS;) {
      i += group_at(&R, i, cs, &n);
      if (n)
        group_figs(&R, 0, cs, n, 1);
    }
    print_job_figs(&R, 0);
    return job_done();
  }
  R.xc_ncpu = first_cpus(R.xc_cpu);
  /* The options of an MPI job (--job -n P before them) measuring what
   * this run measures. */
  char job[512];
  int len = snprintf(job, sizeof job, "-b %lld -e %lld -f %lld -r %d -t %g -c ",
                     (long long)b, (long long)e, (long long)f, R.o.reps,
                     R.o.budget * 1e3);
  for (int c = 0; c < NCOLLS; c++)
    if (R.want[c])
      len += snprintf(job + len, sizeof job - (size_t)len, "%s%s",
                      job[len - 1] == ' ' ? "" : ",", colls[c].name);

  const double t0 = now_s();
  double busy0, all0;
  const int ticks = cpu_ticks(&busy0, &all0) == 0;
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (fabric->setting)
    printf("bench_coll: pld's collectives (FP32 SUM) on %s vs Open MPI on "
           "the same transport, %ld CPUs\n",
           fabric->what, ncpu);
  else
    printf("bench_coll: pld's collectives (a2a3sim, one process per device, "
           "FP32 SUM) vs Open MPI, %ld CPUs\n",
           ncpu);
  print_busy("figures");
  printf("pld: the builtin in a loop in one kernel, rank 0's clock, median "
         "of %d timings of about %.0f ms in all;\n"
         "memcpy: rank 0, private buffers, right after pld's timings; "
         "checked: every element of every rank,\n"
         "one call on integer-valued inputs, against a C reference;\n"
         "cross-core copy: two threads on two CPUs, right after "
         "allreduce (auto)'s timings, from 256 KiB\n",
         R.o.reps, R.o.budget * 1e3);
  char job2[600];
  snprintf(job2, sizeof job2, "--job -n 2 %s", job);
  print_mpi_cmd(job2, "<coll> REPS MS COUNT...",
                "-np 4 and 8 likewise; the same timing");
  if (vs_shm())
    printf("shm fabric: pld's shared-memory fabric in this process, timed "
           "the same way (the mpi-shm target)\n");
  for (int w = 0; w < R.nworlds; w++) {
    run_world(&R, w, job, (int)ncpu);
    if (all_modes(&R))
      print_crossover(&R, w);
  }
  R.line_us = R.switch_us = -1;
  if (!fabric->setting && R.xc_ncpu >= 2) {
    char where[96];
    R.line_us = line_floor(LAT_REPS, where, sizeof where);
    R.switch_us = measure_switch(R.xc_cpu[0]);
  }
  print_targets(&R);
  printf("\nbench_coll took %.0f s", now_s() - t0);
  double busy1, all1;
  if (ticks && cpu_ticks(&busy1, &all1) == 0 && all1 > all0) {
    /* Others' share: the machine's busy time but this process's and its
     * children's (the device processes, mpirun and its ranks, all reaped
     * by now). */
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    const double tck = (double)sysconf(_SC_CLK_TCK);
    const double mine = cpu_seconds(&self) + cpu_seconds(&kids);
    const double others =
        ((busy1 - busy0) / tck - mine) / ((all1 - all0) / tck);
    printf("; CPU time used by other processes meanwhile: %.0f%% of the "
           "machine%s",
           (others > 0 ? others : 0) * 100,
           others > 0.1 ? " (a busy machine: the figures suffer)" : "");
  }
  printf("\n%s", failed ? "bench_coll: a pld call failed or a result was "
                          "wrong (above)\n"
                        : "");
  return failed;
}
