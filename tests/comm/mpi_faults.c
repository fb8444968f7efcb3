/* tests/comm/mpi_faults.c: faults of a program under mpirun, one case per
 * run (mpi_faults.sh runs them and checks what the job printed and left):
 *   deadlock  every rank waits on a cell nobody notifies: the run fails
 *             with PLD_ERR_DEADLOCK on every process, the report printed
 *             by process 0 alone; exit 0 if so and within 2 s
 *   crash     rank 1's kernel writes through a NULL pointer: its process
 *             prints the crash report and dies; mpirun ends the others
 *   kill      rank 1's process is killed (SIGKILL, no handler runs) while
 *             the others wait for it: mpirun ends the job
 *   ok        a run that succeeds, then the program is destroyed
 *   stale     no deadlock, though it looks like one in old snapshots:
 *             rank 1 waits for rank 0, which runs 250 ms first; then
 *             rank 1 runs 250 ms while rank 0 waits for it; twice.
 *             Snapshots come every 200 ms and 10 ms of quiet make a
 *             deadlock, so that process 0 holds rank 1's snapshot of its
 *             wait while rank 0 waits: the watch must ask for a fresh one
 *             before it reports, in each of the two quiets (PLD_OK
 *             expected)
 *   stale-limit no wait timeout, though old snapshots show one: rank 1
 *             runs 20 ms, then waits 100 ms for rank 0 (which runs 120
 *             ms), then runs 100 ms while rank 0 waits for it.  The wait
 *             timeout is 150 ms and snapshots come every 100 ms, so that
 *             from 170 ms to 200 ms process 0 holds rank 1's snapshot of
 *             its wait, 150 ms old: the watch must ask for a fresh one
 *             before it reports (PLD_OK expected; 1 s of quiet makes a
 *             deadlock, so that only the limit asks) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pld.h"

PLD_DYNAMIC(NR);

static const char *mode;

/* Runs (never waits) for ms milliseconds. */
static void busy_ms(int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
         ms);
}

PLD_KERNEL(k_fault, k, PLD_WINDOW(sig, INT32, NR), PLD_SCALAR(what, INT32)) {
  int32_t me = pld_rank(k, pld_window_comm(sig));
  if (what == 1 && me == 1)
    *(volatile int *)NULL = 1;
  if (what == 2 && me == 1)
    kill(getpid(), SIGKILL);
  if (what == 3) { /* ok: a ring of notifies */
    int32_t n = pld_nranks(k, pld_window_comm(sig));
    pld_notify(k, sig, (me + 1) % n, PLD_AT(me), 1, PLD_NOTIFY_ADD);
    pld_wait(k, sig, PLD_AT((me + n - 1) % n), 1, PLD_WAIT_GE);
    return;
  }
  if (what == 4 || what == 5) { /* stale, stale-limit */
    for (int32_t round = 1; round <= (what == 4 ? 2 : 1); round++) {
      if (me == 0) {
        busy_ms(what == 4 ? 250 : 120);
        pld_notify(k, sig, 1, PLD_AT(1), 1, PLD_NOTIFY_ADD);
        pld_wait(k, sig, PLD_AT(0), round, PLD_WAIT_GE);
      } else if (me == 1) {
        if (what == 5)
          busy_ms(20);
        pld_wait(k, sig, PLD_AT(1), round, PLD_WAIT_GE);
        busy_ms(what == 4 ? 250 : 100);
        pld_notify(k, sig, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
      }
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

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "";
  int32_t what = !strcmp(mode, "crash")         ? 1
                 : !strcmp(mode, "kill")        ? 2
                 : !strcmp(mode, "ok")          ? 3
                 : !strcmp(mode, "stale")       ? 4
                 : !strcmp(mode, "stale-limit") ? 5
                                                : 0;
  if (what == 4) { /* before the library reads its tunables */
    setenv("PLD_SNAPSHOT_MS", "200", 1);
    setenv("PLD_DEADLOCK_QUIET_MS", "10", 1);
  }
  if (what == 5) {
    setenv("PLD_SNAPSHOT_MS", "100", 1);
    setenv("PLD_DEADLOCK_QUIET_MS", "1000", 1);
    setenv("PLD_WAIT_TIMEOUT_MS", "150", 1);
  }
  pld_config cfg = PLD_CONFIG_INIT;
  pld_program *p;
  int st = pld_compile(h_fault, &cfg, PLD_ARGS(what), &p);
  if (st) {
    fprintf(stderr, "pld_compile: %s\n", pld_last_error());
    return 1;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  st = pld_program_run(p, PLD_ARGS(what));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s =
      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  int lead = pld_process_index() == 0;
  if (lead && st)
    fprintf(stderr, "%s: %s\n", pld_status_name(st), pld_last_error());
  if (lead)
    printf("process 0: status %s after %.2f s\n", pld_status_name(st), s);
  pld_program_destroy(p);
  if (what == 0)
    return st == PLD_ERR_DEADLOCK && s < 2.0 ? 0 : 1;
  return st == PLD_OK ? 0 : 1;
}
