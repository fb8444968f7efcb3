/* bench_util.h: what the benchmarks share - the clock, medians, the
 * memcpy reference, how many iterations a time budget holds, starting
 * mpi_ref and the benchmarks themselves as MPI jobs (--fabric), printing
 * figures, how busy the machine is, and
 * (after pld.h) reporting a failed pld call.  Header-only (static inline)
 * and needing no pld otherwise, so that mpi_ref, an MPI program built
 * without pld, includes it too. */
#ifndef PLD_BENCH_UTIL_H
#define PLD_BENCH_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC: one clock for every process of the machine, so a
 * kernel in a device process reads the same clock as the host. */
static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The first two CPUs this process may run on, in cpu[0, 2): how many it
 * may run on (a reference between two CPUs needs 2). */
static inline int first_cpus(int cpu[2]) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set))
    return 0;
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET((size_t)c, &set)) {
      if (n < 2)
        cpu[n] = c;
      n++;
    }
  return n;
}

/* Pins the calling thread to CPU cpu: 0, or pthread_setaffinity_np's
 * error. */
static inline int pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The median of v[0, n); sorts v. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The machine's floor under a message between two CPUs (a notify ->
 * wait, a small collective's exchange): two threads pinned to two CPUs
 * pass one cache line each way, spinning (never yielding), for LINE_ITERS
 * round trips per timing.  Whatever a signal does, its waiter learns of it
 * through at least one line written on another CPU. */
#define LINE_ITERS 20000
enum { LINE_REPS_MOST = 64 }; /* timings, at most */

struct line_pp {
  _Alignas(64) atomic_int ping;
  _Alignas(64) atomic_int pong;
  _Alignas(64) atomic_int go; /* 1: both threads started; -1: one did not */
  int cpu[2], pin_err[2], reps;
  double t[LINE_REPS_MOST];
};

struct line_arg {
  struct line_pp *l;
  int me;
};

static inline void *line_thread(void *arg) {
  const struct line_arg *a = arg;
  struct line_pp *l = a->l;
  l->pin_err[a->me] = pin_self(l->cpu[a->me]);
  while (!atomic_load(&l->go))
    sched_yield();
  if (atomic_load(&l->go) < 0)
    return NULL;
  int i = 0;
  for (int r = -1; r < l->reps; r++) { /* -1: a round that warms up */
    const double t0 = now_s();
    for (int k = 0; k < LINE_ITERS; k++) {
      i++;
      if (a->me == 0) {
        atomic_store_explicit(&l->ping, i, memory_order_release);
        while (atomic_load_explicit(&l->pong, memory_order_acquire) != i)
          ;
      } else {
        while (atomic_load_explicit(&l->ping, memory_order_acquire) != i)
          ;
        atomic_store_explicit(&l->pong, i, memory_order_release);
      }
    }
    if (a->me == 0 && r >= 0)
      l->t[r] = (now_s() - t0) / LINE_ITERS / 2 * 1e6;
  }
  return NULL;
}

/* Half a round trip of one line each way between two pinned CPUs, us: the
 * median of reps timings (at most LINE_REPS_MOST); -1 with fewer than 2
 * CPUs to run on, or if the threads could not start or be pinned (why:
 * the message). */
static inline double line_floor(int reps, char *why, size_t cap) {
  struct line_pp l = {.reps = reps < LINE_REPS_MOST ? reps : LINE_REPS_MOST};
  if (first_cpus(l.cpu) < 2) {
    snprintf(why, cap, "not measurable: this process may run on 1 CPU");
    return -1;
  }
  pthread_t th[2];
  struct line_arg a[2] = {{&l, 0}, {&l, 1}};
  int st = pthread_create(&th[0], NULL, line_thread, &a[0]);
  if (!st) {
    const int st1 = pthread_create(&th[1], NULL, line_thread, &a[1]);
    atomic_store(&l.go, st1 ? -1 : 1);
    pthread_join(th[0], NULL);
    if (!st1)
      pthread_join(th[1], NULL);
    st = st1;
  }
  const int err = st ? st : l.pin_err[0] ? l.pin_err[0] : l.pin_err[1];
  if (err) {
    snprintf(why, cap, "not measured: %s", strerror(err));
    return -1;
  }
  snprintf(why, cap, "CPUs %d and %d", l.cpu[0], l.cpu[1]);
  return median(l.t, l.reps);
}

/* The reference copy: memcpy between two private buffers of this process,
 * with an effect the compiler cannot see through. */
static inline void copy_private(unsigned char *dst, const unsigned char *src,
                                size_t bytes) {
  memcpy(dst, src, bytes);
  __asm__ volatile("" : : "r"(dst) : "memory");
}

/* A figure whose call takes about `t` seconds, timed `reps` times within
 * about `budget` seconds: *iters calls per timing (at least 1), and
 * *nreps timings - reps, or fewer (at least 3) when even one call per
 * timing would go past the budget. */
static inline void bench_plan(double t, double budget, int reps, int64_t *iters,
                              int *nreps) {
  const double per = budget / reps, most = 1e7;
  t = t > 1e-9 ? t : 1e-9;
  *iters = per / t < 1      ? 1
           : per / t > most ? (int64_t)most
                            : (int64_t)(per / t);
  *nreps = reps;
  if (t * reps > budget)
    *nreps = budget / t < 3 ? 3 : (int)(budget / t);
}

/* Iterations of a loop whose one iteration takes about t seconds, so
 * that it lasts about `seconds`, within [least, most]: the same loop
 * length whatever the transport, within a bound for the fast ones. */
static inline int64_t iters_for(double t, double seconds, int64_t least,
                                int64_t most) {
  const double v = seconds / (t > 1e-9 ? t : 1e-9);
  return v < (double)least ? least : v > (double)most ? most : (int64_t)v;
}

/* The seconds a batch of transfers may take: a timing of bench_comm's
 * and mpi_ref's bandwidth moves at least 32 MiB, unless that takes
 * longer than this on a slow transport (MPI RMA over TCP moves 4 KiB in
 * tens of microseconds). */
#define BATCH_SECONDS 0.02

/* The loop condition of the warm-up before timings of *batch transfers
 * (i done so far, since t0): the whole batch, but only BATCH_SECONDS'
 * worth when it takes longer, *batch then becoming what fitted, so that
 * a timing takes about that long too. */
static inline int warm_more(int64_t i, int64_t *batch, double t0) {
  if (i > 0 && i < *batch && now_s() - t0 > BATCH_SECONDS)
    *batch = i;
  return i < *batch;
}

/* ---- the MPI reference, and pld under mpirun ----------------------------- */

/* Where mpirun, mpi_ref and tools/mpirun.sh are (bench/CMakeLists.txt
 * defines them when Open MPI was found); without them the MPI figures
 * print as n/a. */
#ifdef PLD_MPI_REF
#define HAVE_MPI 1
#else
#define HAVE_MPI 0
#define PLD_MPIEXEC "mpirun"
#define PLD_MPI_REF "mpi_ref"
#define PLD_MPIRUN_SH "tools/mpirun.sh"
#endif

/* --fabric: where pld's figures come from.  shm: this process, pld's
 * shared-memory fabric, and mpi_ref under mpirun with shared memory only
 * (mpi_cmd).  The others: pld's MPI fabric, the bench starting itself as
 * an MPI job (one rank per process) under tools/mpirun.sh with setting
 * `setting`, and mpi_ref under the same script and setting, so that both
 * columns use one transport. */
static const struct fabric {
  const char *name;
  const char *setting; /* tools/mpirun.sh's FABRIC, or NULL */
  int rma;             /* every peer through MPI RMA (not shared memory) */
  const char *what;    /* printed in the heading */
} fabrics[] = {
    {"shm", NULL, 0,
     "pld's shared-memory fabric (a2a3sim, one process per device)"},
    {"mpi-shm", "shm", 0,
     "pld's MPI fabric, peers through shared memory (a2a3sim, one rank "
     "per MPI process; tools/mpirun.sh shm)"},
    {"mpi-tcp", "tcp", 1,
     "pld's MPI fabric, every peer through MPI RMA (a2a3sim, one rank per "
     "MPI process; tools/mpirun.sh tcp: osc pt2pt over btl tcp on "
     "loopback)"},
    {"mpi-ucx", "ucx", 1,
     "pld's MPI fabric, every peer through MPI RMA (a2a3sim, one rank per "
     "MPI process; tools/mpirun.sh ucx: osc ucx, UCX's tcp transport on "
     "loopback)"},
};

/* This run's (main sets it from --fabric). */
static const struct fabric *fabric = &fabrics[0];

/* Whether the run also measures pld's shared-memory fabric: mpi-shm,
 * whose target is to be within 10% of it. */
static inline int vs_shm(void) { return fabric->setting && !fabric->rma; }

/* Sets `fabric` from --fabric's value; 0, or -1 (a message said why) for
 * an unknown name or an MPI setting in a build without Open MPI. */
static inline int fabric_select(const char *name) {
  for (size_t i = 0; i < sizeof fabrics / sizeof fabrics[0]; i++)
    if (strcmp(name, fabrics[i].name) == 0) {
      if (fabrics[i].setting && !HAVE_MPI) {
        fprintf(stderr,
                "%s: --fabric %s: Open MPI was not found when building "
                "(bench/run.sh installs it)\n",
                program_invocation_short_name, name);
        return -1;
      }
      fabric = &fabrics[i];
      return 0;
    }
  fprintf(stderr,
          "%s: --fabric: expected shm, mpi-shm, mpi-tcp or mpi-ucx, got "
          "'%s'\n",
          program_invocation_short_name, name);
  return -1;
}

/* The command line of `prog args` as np MPI processes.  With the shm
 * fabric: mpirun, --allow-run-as-root (mpirun refuses root without it),
 * --oversubscribe (4 and 8 ranks on fewer CPUs), btl self,vader (shared
 * memory only, no probing of network interfaces) and mca, more options
 * ("--mca osc sm ") or "".  Otherwise tools/mpirun.sh with the fabric's
 * setting (mca must be ""). */
static inline void mpi_cmd(char *buf, size_t cap, int np, const char *mca,
                           const char *prog, const char *args) {
  if (fabric->setting)
    snprintf(buf, cap, "sh %s %s %d %s %s", PLD_MPIRUN_SH, fabric->setting, np,
             prog, args);
  else
    snprintf(buf, cap,
             "%s %s--oversubscribe --mca btl self,vader %s-np %d %s %s",
             PLD_MPIEXEC, geteuid() == 0 ? "--allow-run-as-root " : "", mca, np,
             prog, args);
}

/* Runs `prog args` as np MPI processes (mpi_cmd) and reads up to cap
 * numbers from what they print (whitespace-separated).  Returns how many
 * it read, or -1 when the job failed.  If it fails once, it and every
 * later job go without what containers most often refuse: the vader
 * BTL's single-copy mechanism (CMA, process_vm_readv, needs ptrace
 * rights) and its backing files in /dev/shm (64 MiB in a default Docker
 * container). */
static inline int mpi_job(int np, const char *mca, const char *prog,
                          const char *args, double *out, int cap) {
  static int single_copy_off;
  char cmd[8192];
  mpi_cmd(cmd, sizeof cmd, np, mca, prog, args);
  for (;;) {
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    int n = 0;
    while (f && n < cap && fscanf(f, "%lf", &out[n]) == 1)
      n++;
    const int rc = f ? pclose(f) : -1;
    if (rc == 0)
      return n;
    fprintf(stderr, "%s: '%s' failed (status %d)%s\n",
            program_invocation_short_name, cmd, rc,
            single_copy_off ? "" : "; again without single-copy transfers");
    if (single_copy_off)
      return -1;
    single_copy_off = 1;
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_btl_vader_backing_directory", "/tmp", 1);
    printf("  (mpirun failed with Open MPI's defaults; MPI figures from here "
           "on use OMPI_MCA_btl_vader_single_copy_mechanism=none and "
           "OMPI_MCA_btl_vader_backing_directory=/tmp)\n");
  }
}

/* mpi_ref under mpirun (mpi_job): how many numbers it read, 0 when it
 * could not run. */
static inline int mpi_run(int np, const char *mca, const char *args,
                          double *out, int cap) {
  const int n = HAVE_MPI ? mpi_job(np, mca, PLD_MPI_REF, args, out, cap) : 0;
  return n > 0 ? n : 0;
}

/* This program's own path, to start it as an MPI job ("" if unknown). */
static inline const char *self_exe(void) {
  static char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  return path;
}

/* Prints the mpirun command line of mpi_ref with `args` (2 ranks) and a
 * note on the others, or that the MPI figures are n/a; under an MPI
 * fabric, pld's job's command line (`job`, this program's arguments in
 * it) first. */
static inline void print_mpi_cmd(const char *job, const char *args,
                                 const char *note) {
  char cmd[8192];
  if (fabric->setting) {
    mpi_cmd(cmd, sizeof cmd, 2, "", self_exe(), job);
    printf("pld figures: %s\n  (process 0 prints them)\n", cmd);
  }
  if (HAVE_MPI) {
    mpi_cmd(cmd, sizeof cmd, 2, "", PLD_MPI_REF, args);
    printf("MPI figures: %s\n  (%s; see bench/mpi_ref.c)\n", cmd, note);
  } else {
    printf("  (Open MPI was not found when building: MPI figures are n/a; "
           "bench/run.sh installs it)\n");
  }
}

/* ---- printing ------------------------------------------------------------ */

/* v with prec decimals and a unit ("x", "%"), or "n/a" when v < 0 (not
 * measured). */
static inline const char *fmt(char *buf, size_t cap, int prec, const char *unit,
                              double v) {
  if (v < 0)
    snprintf(buf, cap, "n/a");
  else
    snprintf(buf, cap, "%.*f%s", prec, v, unit);
  return buf;
}

/* The machine's CPU time so far, in clock ticks, from /proc/stat (all
 * processes, also those of other containers on this kernel): *busy, and
 * *all including idle and iowait.  0, or -1 if it cannot be read. */
static inline int cpu_ticks(double *busy, double *all) {
  unsigned long long v[8];
  FILE *f = fopen("/proc/stat", "r");
  int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                     &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
            : 0;
  if (f)
    fclose(f);
  if (n != 8)
    return -1;
  *busy = *all = 0;
  for (int j = 0; j < 8; j++) {
    *all += (double)v[j];
    if (j != 3 && j != 4) /* idle, iowait */
      *busy += (double)v[j];
  }
  return 0;
}

/* The share of the machine's CPU time that was busy over `seconds`, or -1.
 * Printed before the figures: the waits spin while there is a CPU for
 * them, so other load on a small machine moves the latencies by integer
 * factors. */
static inline double busy_share(double seconds) {
  double b0, a0, b1, a1;
  if (cpu_ticks(&b0, &a0))
    return -1;
  struct timespec ts = {(time_t)seconds,
                        (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  if (cpu_ticks(&b1, &a1))
    return -1;
  return a1 > a0 ? (b1 - b0) / (a1 - a0) : -1;
}

/* Prints busy_share over a second, saying that `what` (the latencies,
 * the figures) below suffer when it is over 10%. */
static inline void print_busy(const char *what) {
  const double busy = busy_share(1.0);
  if (busy >= 0)
    printf(
        "CPU time used by other processes in the second before: %.0f%%%s%s%s\n",
        busy * 100, busy > 0.1 ? " (a busy machine: the " : "",
        busy > 0.1 ? what : "", busy > 0.1 ? " below suffer)" : "");
}

/* Before two programs of one process are compared (the timing model off
 * and on), each device's threads pinned alike in both (PLD_PIN_DEVICES=2,
 * unless the environment sets it): where ranks outnumber CPUs the OS
 * otherwise places each program's threads its own way for the program's
 * life, and that, not what is compared, decides which is faster (4 ranks
 * on 2 CPUs: a program's 64 B allreduces took 9 us, the other's 16 us,
 * both with the model off).  Call it before the first pld call: the
 * settings are read once.  Prints the setting in use. */
static inline void pin_devices_alike(void) {
  setenv("PLD_PIN_DEVICES", "2", 0);
  const char *pin = getenv("PLD_PIN_DEVICES");
  if (strcmp(pin, "2") == 0)
    printf("devices pinned alike in both programs (PLD_PIN_DEVICES=2)\n");
  else
    printf("PLD_PIN_DEVICES=%s, as set: where ranks outnumber CPUs, the OS "
           "places each program's threads\n",
           pin);
}

/* ---- pld failures (benchmarks that include pld.h first) ------------------ */

#ifdef PLD_H
static int failed; /* a pld call failed: exit status 1 */

/* A pld call failed: say which and what pld said; the figure becomes n/a
 * and the exit status 1. */
static inline int pld_failed(int st, const char *what) {
  fprintf(stderr, "%s: %s failed (%s): %s\n", program_invocation_short_name,
          what, pld_status_name(st), pld_last_error());
  failed = 1;
  return st;
}

/* pld's figures from this program started as an MPI job of np processes
 * (mpi_job) with `args`, which process 0 prints, and after them whether a
 * pld call failed or a result was wrong there (job_done): how many
 * figures it read, at most cap - 1.  A job that failed so, or did not
 * finish, is a failure of this run too. */
static inline int pld_mpi_job(int np, const char *args, double *out, int cap) {
  const int n = mpi_job(np, "", self_exe(), args, out, cap);
  if (n < 1 || out[n - 1] != 0)
    failed = 1;
  return n > 1 ? n - 1 : 0;
}

/* In such a job, only process 0 prints the figures: every process runs
 * the same main, and all end with the same Out tensors. */
static inline void job_quiet(void) {
  if (pld_process_index() != 0 && !freopen("/dev/null", "w", stdout))
    exit(2);
}

/* The end of such a job: whether it failed, after its figures; exit
 * status 0, so that its figures arrive (mpi_job takes a job that exits
 * otherwise for one mpirun could not run, and runs it again). */
static inline int job_done(void) {
  printf("%d\n", failed);
  return 0;
}
#endif

#endif /* PLD_BENCH_UTIL_H */
