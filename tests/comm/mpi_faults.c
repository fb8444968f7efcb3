/* tests/comm/mpi_faults.c: faults of a program under mpirun, one case per
 * run (mpi_faults.sh runs them and checks what the job printed and left):
 *   deadlock  every rank waits on a cell nobody notifies: the run fails
 *             with PLD_ERR_DEADLOCK on every process, the report printed
 *             by process 0 alone; exit 0 if so and within 2 s (the work
 *             around the 50 ms quiet allowed as much longer as the
 *             machine is slower, tests/load.h)
 *   crash     rank 1's kernel writes through a NULL pointer: its process
 *             prints the crash report and dies; mpirun ends the others
 *   abort     rank 1's kernel calls abort(): as crash, the report naming
 *             no address (a signal sent by the process itself has none)
 *   kill      rank 1's process is killed (SIGKILL, no handler runs) while
 *             the others wait for it (each tells rank 1 it is about to
 *             wait; rank 1 dies 100 ms after the last has): mpirun ends
 *             the job, and every other process says, as mpirun stops it,
 *             that rank 1's process is gone and what it waited on
 *   kill-coll every rank calls pld_allreduce in a loop; rank 1's process
 *             is killed by a thread of its own 100 ms into its kernel,
 *             which says when on stderr first: every other process
 *             reports, as mpirun stops it, that rank 1's process is gone
 *             and that it waited in pld_allreduce for rank 1
 *   ok        a run that succeeds, then the program is destroyed
 *   stale     no deadlock, though it looks like one in old snapshots:
 *             rank 1 waits for rank 0, which runs 250 ms first; then
 *             rank 1 runs 250 ms while rank 0 waits for it; twice.
 *             Snapshots come every 200 ms and 10 ms of quiet make a
 *             deadlock, so that process 0 holds rank 1's snapshot of its
 *             wait while rank 0 waits: the watch must ask for a fresh one
 *             before it reports, in each of the two quiets (PLD_OK
 *             expected; a deadlock is reported on fresh snapshots only,
 *             so a slow machine cannot make one)
 *   stale-limit no wait timeout, though an old snapshot shows one: the
 *             wait limit L is 2 s, snapshots come every 0.55 L.  Rank 1
 *             tells rank 0 it starts waiting and waits; rank 0 then runs
 *             0.65 L and wakes it; rank 1 runs until 1.1 L after its wait
 *             began.  Process 0 holds rank 1's snapshot of the wait taken
 *             at 0.55 L until the next, at 1.1 L: from L on it shows a
 *             wait over the limit that ended at 0.65 L, and the watch must
 *             ask for a fresh snapshot before it reports (PLD_OK
 *             expected; no quiet is short enough to ask).  The real wait
 *             is 0.65 L and two notifies: 0.35 L (700 ms) of margin for a
 *             slow machine, and on a slow one the old snapshot may come at
 *             other times, which passes too
 *   rerun     snapshots of an earlier run are never taken for the current
 *             run's: 30 runs that fail (a deadlock in their second
 *             dispatch, after a host task), each followed by one that
 *             succeeds, with 1 ms of quiet, a snapshot every 1 ms and a
 *             look every 10 us: the snapshots a failed run's processes
 *             send last (answers to its last ask for fresh ones, sent
 *             after their rank finished) often arrive after it ended.
 *             The host task of each run takes what rank 1's first
 *             dispatch computed from the run's input in 50 ms: a
 *             snapshot of the failed run taken for the new one says
 *             rank 1 finished that dispatch, and the task takes an old
 *             value (PLD_OK and every value right expected; with
 *             mpi_look keeping snapshots of other runs, 8 or 9 of the 9
 *             entries fail)
 *   slowdown  prints how much slower than an idle one the machine runs
 *             now (tests/load.h), not under mpirun */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "pld.h"

PLD_DYNAMIC(NR);
PLD_DYNAMIC(NS);

/* The wait limit of stale-limit, in ms. */
enum { STALE_LIMIT_MS = 2000 };

static double now_ms(void) { return pld_test_clock_s(CLOCK_MONOTONIC) * 1e3; }

/* Runs (never waits) until now_ms() reaches until. */
static void busy_until(double until) {
  while (now_ms() < until)
    ;
}

/* Runs (never waits) for ms milliseconds. */
static void busy_ms(double ms) { busy_until(now_ms() + ms); }

/* Sleeps 100 ms (leaves the CPU to the others). */
static void nap_100ms(void) {
  struct timespec nap = {0, 100 * 1000 * 1000};
  nanosleep(&nap, NULL);
}

PLD_KERNEL(k_fault, k, PLD_WINDOW(sig, INT32, NR), PLD_SCALAR(what, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  if (what == 1 && me == 1)
    *(volatile int *)NULL = 1;
  if (what == 8 && me == 1)
    abort();
  if (what == 2) { /* kill: once every other rank is about to wait */
    int32_t n = pld_nranks(k, pld_window_comm(sig));
    if (me != 1) {
      pld_notify(k, sig, 1, PLD_AT(me), 1, PLD_NOTIFY_ADD);
      pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
      return;
    }
    for (int32_t r = 0; r < n; r++)
      if (r != 1)
        pld_wait(k, sig, PLD_AT(r), 1, PLD_WAIT_GE);
    nap_100ms(); /* the others go from their notify into their wait */
    kill(getpid(), SIGKILL);
  }
  if (what == 3) { /* ok: a ring of notifies */
    int32_t n = pld_nranks(k, pld_window_comm(sig));
    pld_notify(k, sig, (me + 1) % n, PLD_AT(me), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT((me + n - 1) % n), 1, PLD_WAIT_GE);
    return;
  }
  if (what == 4) { /* stale */
    for (int32_t round = 1; round <= 2; round++) {
      if (me == 0) {
        busy_ms(250);
        pld_notify(k, sig, 1, PLD_AT(1), 1, PLD_NOTIFY_ADD);
        pld_wait(k, sig, PLD_AT(0), round, PLD_WAIT_GE);
      } else if (me == 1) {
        pld_wait(k, sig, PLD_AT(1), round, PLD_WAIT_GE);
        busy_ms(250);
        pld_notify(k, sig, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
      }
    }
    return;
  }
  if (what == 5) { /* stale-limit */
    const double limit = STALE_LIMIT_MS;
    if (me == 0) {
      pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
      busy_ms(0.65 * limit);
      pld_notify(k, sig, 1, PLD_AT(1), 1, PLD_NOTIFY_ADD);
    } else if (me == 1) {
      double began = now_ms();
      pld_notify(k, sig, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
      pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);
      busy_until(began + 1.1 * limit);
    }
    return;
  }
  pld_wait(k, sig, PLD_AT(0), 1, PLD_WAIT_GE);
}

PLD_DEVICE(d_fault, a, PLD_WINDOW(sig, INT32, NR), PLD_SCALAR(what, INT32)) {
  pld_launch(a, k_fault, 1, sig, what);
}

PLD_HOST(h_fault, h, PLD_SCALAR(what, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_fault, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(n)), what);
}

/* ---- kill-coll ----------------------------------------------------------- */

/* 100 ms on, says when (CLOCK_REALTIME, ns) and kills its process. */
static void *killer(void *arg) {
  (void)arg;
  nap_100ms();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char line[64];
  int n = snprintf(line, sizeof line, "killed at %lld ns\n",
                   (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
  kill(getpid(), SIGKILL);
  return NULL;
}

/* Allreduces for up to 20 s: rank 1 is killed long before. */
PLD_KERNEL(k_kill_coll, k, PLD_WINDOW(data, FP32, 64),
           PLD_WINDOW(sig, INT32, NS)) {
  pthread_t t;
  if (pld_rank(k, pld_window_comm(sig)) == 1 &&
      pthread_create(&t, NULL, killer, NULL) != 0)
    return;
  double until = now_ms() + 20000;
  while (now_ms() < until)
    for (int i = 0; i < 1000; i++)
      if (pld_allreduce(k, data, sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_AUTO))
        return;
}

PLD_DEVICE(d_kill_coll, a, PLD_WINDOW(data, FP32, 64),
           PLD_WINDOW(sig, INT32, NS)) {
  pld_launch(a, k_kill_coll, 1, data, sig);
}

PLD_HOST(h_kill_coll, h, PLD_SCALAR(what, INT32)) {
  (void)what;
  int n = pld_world_size(h);
  int64_t cells = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(64));
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(cells));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_kill_coll, r,
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(64)),
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(cells)));
}

/* ---- rerun ---------------------------------------------------------------
 * Rank r's first dispatch: z[r] = x[r] * 10, rank 1 after computing 50 ms.
 * A host task takes rank 1's z into s, once that dispatch is done (as soon
 * as the watch believes it is).  The second dispatch: y[r] = s + r, or,
 * when the run is to fail, rank 0 waits on a cell nobody notifies. */
PLD_KERNEL(k_first, k, PLD_WINDOW(sig, INT32, 2), PLD_IN(x, INT32, 1),
           PLD_OUT(z, INT32, 1)) {
  if (pld_rank(k, pld_window_comm(sig)) == 1)
    busy_ms(50);
  pld_write(k, z, PLD_AT(0), pld_read(k, x, PLD_AT(0)) * 10);
}
PLD_DEVICE(d_first, a, PLD_WINDOW(sig, INT32, 2), PLD_IN(x, INT32, 1),
           PLD_OUT(z, INT32, 1)) {
  pld_launch(a, k_first, 1, sig, x, z);
}
PLD_HOST_TASK(t_take, t, PLD_IN(z1, INT32, 1), PLD_OUT(s, INT32, 1)) {
  (void)t;
  *(int32_t *)pld_tensor_data(s) = *(const int32_t *)pld_tensor_data(z1);
}
PLD_KERNEL(k_second, k, PLD_WINDOW(sig, INT32, 2), PLD_IN(s, INT32, 1),
           PLD_OUT(y, INT32, 1), PLD_SCALAR(fail, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  if (fail && me == 0)
    pld_wait(k, sig, PLD_AT(1), 1, PLD_WAIT_GE);
  pld_write(k, y, PLD_AT(0), pld_read(k, s, PLD_AT(0)) + me);
}
PLD_DEVICE(d_second, a, PLD_WINDOW(sig, INT32, 2), PLD_IN(s, INT32, 1),
           PLD_OUT(y, INT32, 1), PLD_SCALAR(fail, INT32)) {
  pld_launch(a, k_second, 1, sig, s, y, fail);
}
PLD_HOST(h_rerun, h, PLD_IN(x, INT32, NR, 1), PLD_OUT(y, INT32, NR, 1),
         PLD_SCALAR(fail, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf sig = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(2));
  pld_tensor z = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(n, 1));
  pld_tensor s = pld_host_tensor(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_first, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)),
                 pld_slice(h, x, r), pld_slice(h, z, r));
  pld_host_task(h, t_take, pld_slice(h, z, 1), s);
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_second, r,
                 pld_window_view(h, sig, PLD_INT32, PLD_SHAPE(2)), s,
                 pld_slice(h, y, r), fail);
}

/* Pairs of a failed run and a good one; 0 if every failed run failed with
 * a deadlock and every good one gave the right sums. */
static int rerun(void) {
  enum { PAIRS = 30 };
  int n = pld_process_count(), lead = pld_process_index() == 0;
  pld_tensor x, y;
  if (pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, 1}, &x) ||
      pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, 1}, &y))
    return 1;
  int32_t *xs = pld_tensor_data(x), *ys = pld_tensor_data(y), fail = 0;
  pld_config cfg = PLD_CONFIG_INIT;
  pld_program *p;
  if (pld_compile(h_rerun, &cfg, PLD_ARGS(x, y, fail), &p)) {
    fprintf(stderr, "pld_compile: %s\n", pld_last_error());
    return 1;
  }
  int bad = 0;
  for (int pair = 0; pair < PAIRS && !bad; pair++) {
    for (int r = 0; r < n; r++)
      xs[r] = 100 * pair + r + 1;
    fail = 1;
    int st = pld_program_run(p, PLD_ARGS(x, y, fail));
    if (st != PLD_ERR_DEADLOCK) {
      if (lead)
        fprintf(stderr, "pair %d: the failing run gave %s: %s\n", pair,
                pld_status_name(st), pld_last_error());
      bad = 1;
      break;
    }
    for (int r = 0; r < n; r++)
      xs[r] = 100 * pair + 50 + r;
    fail = 0;
    if ((st = pld_program_run(p, PLD_ARGS(x, y, fail)))) {
      if (lead)
        fprintf(stderr, "pair %d: the run after the failed one gave %s: %s\n",
                pair, pld_status_name(st), pld_last_error());
      bad = 1;
      break;
    }
    int32_t sum = xs[1] * 10;
    for (int r = 0; r < n; r++)
      if (ys[r] != sum + r) {
        if (lead)
          fprintf(stderr,
                  "pair %d: the run after the failed one gave y[%d] = %d, "
                  "expected %d (the host task took another value than the "
                  "run's)\n",
                  pair, r, (int)ys[r], (int)(sum + r));
        bad = 1;
      }
  }
  if (lead)
    printf("process 0: status %s after %d pairs\n",
           bad ? "PLD_ERR_TEST" : "PLD_OK", PAIRS);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "slowdown")) {
    printf("%.2f\n", pld_test_slowdown());
    return 0;
  }
  int32_t what = !strcmp(mode, "crash")         ? 1
                 : !strcmp(mode, "kill")        ? 2
                 : !strcmp(mode, "ok")          ? 3
                 : !strcmp(mode, "stale")       ? 4
                 : !strcmp(mode, "stale-limit") ? 5
                 : !strcmp(mode, "rerun")       ? 6
                 : !strcmp(mode, "kill-coll")   ? 7
                 : !strcmp(mode, "abort")       ? 8
                                                : 0;
  /* Before the library reads its tunables. */
  if (what == 4) {
    setenv("PLD_SNAPSHOT_MS", "200", 1);
    setenv("PLD_DEADLOCK_QUIET_MS", "10", 1);
  }
  if (what == 5) {
    char v[32];
    snprintf(v, sizeof v, "%d", (int)(0.55 * STALE_LIMIT_MS));
    setenv("PLD_SNAPSHOT_MS", v, 1);
    setenv("PLD_DEADLOCK_QUIET_MS", "60000", 1);
    snprintf(v, sizeof v, "%d", (int)STALE_LIMIT_MS);
    setenv("PLD_WAIT_TIMEOUT_MS", v, 1);
  }
  if (what == 6) {
    setenv("PLD_SNAPSHOT_MS", "1", 1);
    setenv("PLD_DEADLOCK_QUIET_MS", "1", 1);
    setenv("PLD_WATCH_US", "10", 1);
    return rerun();
  }
  double slowdown = pld_test_slowdown();
  pld_config cfg = PLD_CONFIG_INIT;
  pld_program *p;
  if (what == 7) {
    int st = pld_compile(h_kill_coll, &cfg, PLD_ARGS(what), &p);
    if (!st)
      st = pld_program_run(p, PLD_ARGS(what));
    /* Not reached: the job ends while the run is in progress. */
    fprintf(stderr, "process %d: the run ended: %s\n", pld_process_index(),
            st ? pld_last_error() : "PLD_OK");
    return 1;
  }
  int st = pld_compile(h_fault, &cfg, PLD_ARGS(what), &p);
  if (st) {
    fprintf(stderr, "pld_compile: %s\n", pld_last_error());
    return 1;
  }
  double t0 = now_ms();
  st = pld_program_run(p, PLD_ARGS(what));
  double s = (now_ms() - t0) / 1e3;
  int lead = pld_process_index() == 0;
  if (lead && st)
    fprintf(stderr, "%s: %s\n", pld_status_name(st), pld_last_error());
  if (lead)
    printf("process 0: status %s after %.2f s\n", pld_status_name(st), s);
  pld_program_destroy(p);
  if (what == 0) {
    double bound = pld_test_bound(0.05, 1.95, pld_test_slowdown_max(&slowdown));
    if (lead && s >= bound)
      fprintf(stderr, "the deadlock took %.2f s to report, more than %.2f s\n",
              s, bound);
    return st == PLD_ERR_DEADLOCK && s < bound ? 0 : 1;
  }
  return st == PLD_OK ? 0 : 1;
}
