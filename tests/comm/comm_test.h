/* tests/comm/comm_test.h: what the communication suites share - the rank
 * counts every primitive runs over, host tensors and their checks, and a
 * timed program run. */
#ifndef PLD_COMM_TEST_H
#define PLD_COMM_TEST_H

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "load.h"
#include "pld_test.h"
#include "../host/programs.h"

/* Every primitive runs over each of these world sizes. */
static const int comm_rank_counts[] = {2, 3, 4};
#define COMM_NCOUNTS                                                           \
  ((int)(sizeof comm_rank_counts / sizeof comm_rank_counts[0]))

static int comm_ids[16];

/* Under mpirun (the MPI fabric: one rank per process) a world of n ranks
 * runs only in a job of n processes. */
static inline int comm_world_fits(int n) {
  int procs = pld_process_count();
  return procs == 1 || procs == n;
}

/* A test over several world sizes makes, under mpirun, the runs of the
 * job's size only, and is skipped if it made none: comm_fits(n) says
 * whether a run over n ranks is made here (and counts it), and
 * comm_ran_or_skip, at the test's end, skips a test that made none. */
static inline int *comm_runs_made(void) {
  static int made;
  return &made;
}

static inline int comm_fits(int n) {
  int fits = comm_world_fits(n);
  *comm_runs_made() += fits;
  return fits;
}

static inline void comm_ran_or_skip(void) {
  int made = *comm_runs_made();
  *comm_runs_made() = 0;
  if (!made)
    skip(); /* another job size runs it */
}

/* Runs run(n) for each of those world sizes n (under mpirun: the job's). */
static inline void comm_over_rank_counts(void (*run)(int n)) {
  for (int c = 0; c < COMM_NCOUNTS; c++)
    if (comm_world_fits(comm_rank_counts[c]))
      run(comm_rank_counts[c]);
}

/* n ranks on devices that are neither contiguous nor start at 0 for n > 2,
 * so that domain ranks, world ranks and device ids all differ; 3 ranks on
 * the a5 simulator, the others on a2a3. */
static inline pld_config comm_config(int n) {
  if (!comm_world_fits(n))
    skip(); /* another job size runs it */
  pld_config cfg = n == 2 ? test_config(comm_ids, n, 0, 1)
                          : test_config(comm_ids, n, 2 * n - 1, -2);
  cfg.platform = n == 3 ? "a5sim" : "a2a3sim";
  /* Runs that must succeed stay far from the time limits on a loaded
   * machine (a kernel of test_remote_every_dtype ran 64 s in a UCX job of
   * 4 processes on 2 CPUs at load 57); a test of a limit sets its own. */
  cfg.kernel_timeout_ms = 600000;
  cfg.wait_timeout_ms = 600000;
  return cfg;
}

/* A host tensor of `dtype` and the shape (a PLD_SHAPE list), zero-filled. */
static inline pld_tensor comm_tensor(pld_dtype dtype, int ndim,
                                     const int64_t *shape) {
  pld_tensor t;
  assert_ok(pld_tensor_create(dtype, ndim, shape, &t));
  return t;
}

/* An INT32 host tensor of the shape with every element `value`. */
static inline pld_tensor comm_int_tensor(int32_t value, int ndim,
                                         const int64_t *shape) {
  pld_tensor t = comm_tensor(PLD_INT32, ndim, shape);
  int32_t *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = value;
  return t;
}

/* Asserts got[i] == want[i] for i < n, exactly; `what` names the values in
 * the report of the first difference. */
static inline void comm_expect_f32(const char *what, const float *got,
                                   const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(got[i] == want[i])) {
      print_error("%s: element %lld: got %.9g, expected %.9g\n", what,
                  (long long)i, (double)got[i], (double)want[i]);
      fail();
    }
}

static inline void comm_expect_i32(const char *what, const int32_t *got,
                                   const int32_t *want, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      print_error("%s: element %lld: got %d, expected %d\n", what, (long long)i,
                  (int)got[i], (int)want[i]);
      fail();
    }
}

/* How much slower than an idle machine this one ran around the last
 * comm_timed_run (tests/load.h). */
static double comm_slowdown = 1;

/* Runs p and stores the wall time it took in *seconds. */
static inline int comm_timed_run(pld_program *p, int argc, const pld_arg *argv,
                                 double *seconds) {
  comm_slowdown = pld_test_slowdown();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = pld_program_run(p, argc, argv);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *seconds =
      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  pld_test_slowdown_max(&comm_slowdown);
  return st;
}

/* The last comm_timed_run, which took `seconds`, took at most `clock`
 * seconds the library waits by the clock (a quiet period, a limit) and
 * `work` seconds of an idle machine's work, allowed as much longer as the
 * machine was slower; `what` says what took that long. */
static inline void comm_assert_within(const char *what, double seconds,
                                      double clock, double work) {
  double bound = pld_test_bound(clock, work, comm_slowdown);
  if (seconds > bound) {
    print_error("%s took %.3f s, more than %.3f s (%.3f s, and %.3f s at %.1f "
                "times an idle machine's time)\n",
                what, seconds, bound, clock, work, comm_slowdown);
    fail();
  }
}

/* Files in /dev/shm, as count_dev_shm() counts them, but for Open MPI's
 * shared-memory segments: MPI jobs of other suites come and go while ctest
 * runs cases in parallel, and pld makes none (its fabric here is anonymous
 * shared memory). */
static inline int comm_count_dev_shm(void) {
  /* Under mpirun MPI's and UCX's own files come and go with every job of
   * the suite; tests/comm/mpi_faults.sh checks that a job leaves none. */
  if (pld_process_count() > 1)
    return 0;
  DIR *d = opendir("/dev/shm");
  if (!d)
    return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        strncmp(e->d_name, "vader_segment", 13) &&
        strncmp(e->d_name, "sm_segment", 10))
      n++;
  closedir(d);
  return n;
}

/* In a kernel: the blocks of this rank wait for each other (a counter on
 * this rank's own copy of bs; *gen counts the syncs), so that what one
 * block staged is there for every block's part of a collective. */
static inline void comm_block_sync(pld_core k, pld_window bs, int32_t me,
                                   int32_t *gen) {
  int32_t c = pld_block_num(k);
  if (c == 1)
    return;
  ++*gen;
  pld_notify(k, bs, me, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_wait(k, bs, PLD_AT(0), c * *gen, PLD_WAIT_GE);
}

/* Previous and next rank of r in a ring of n. */
static inline int comm_prev(int r, int n) { return (r + n - 1) % n; }
static inline int comm_next(int r, int n) { return (r + 1) % n; }

#endif
