/* tests/load.h: how busy the machine is, for the tests whose verdict
 * depends on time.  CI runs them on machines busy with other builds and
 * tests (a load average of 15 to 40 on 2 CPUs was seen), and
 * tools/stress-tests.sh runs them beside 6 busy processes.  A test that
 * bounds how long something takes splits the bound into what the library
 * waits by the clock (a limit, a grace), which stays, and the work around
 * it, which is allowed as many times longer as the machine is slower than
 * an idle one, measured around the timed part (pld_test_slowdown before
 * and after, the larger). */
#ifndef PLD_TEST_LOAD_H
#define PLD_TEST_LOAD_H

#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double pld_test_clock_s(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Threads ready to run per CPU, from /proc/loadavg: the runnable ones now
 * (its fourth field, "runnable/total") and the average of the last
 * minute, the larger (0 if unknown). */
static inline double pld_test_runnable_per_cpu(void) {
  double avg = 0, now = 0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    double a5, a15;
    int running = 0;
    if (fscanf(f, "%lf %lf %lf %d", &avg, &a5, &a15, &running) >= 1)
      now = running;
    fclose(f);
  }
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  double most = avg > now ? avg : now;
  return cpus > 0 ? most / cpus : most;
}

/* How many times slower than on an idle machine a thread gets its work
 * done now, at least 1: the largest of the wall time this thread takes to
 * get 50 ms of CPU time over 50 ms (other threads ready to run share the
 * CPUs with it; long enough that the start a scheduler gives a thread
 * that slept does not count much), and the threads ready to run per CPU
 * before and after (pld_test_runnable_per_cpu: a load that comes and goes
 * in bursts shorter than the probe). */
static inline double pld_test_slowdown(void) {
  const double cpu_s = 0.05;
  double slow = pld_test_runnable_per_cpu();
  double w0 = pld_test_clock_s(CLOCK_MONOTONIC);
  double c0 = pld_test_clock_s(CLOCK_THREAD_CPUTIME_ID);
  while (pld_test_clock_s(CLOCK_THREAD_CPUTIME_ID) - c0 < cpu_s)
    ;
  double probe = (pld_test_clock_s(CLOCK_MONOTONIC) - w0) / cpu_s;
  double after = pld_test_runnable_per_cpu();
  if (probe > slow)
    slow = probe;
  if (after > slow)
    slow = after;
  return slow > 1 ? slow : 1;
}

/* The larger of *slowdown and the slowdown now: call it before and after
 * the timed part. */
static inline double pld_test_slowdown_max(double *slowdown) {
  double now = pld_test_slowdown();
  if (now > *slowdown)
    *slowdown = now;
  return *slowdown;
}

/* The bound on something that waits `fixed_s` seconds by the clock and
 * does `work_s` seconds of work on an idle machine, at this slowdown. */
static inline double pld_test_bound(double fixed_s, double work_s,
                                    double slowdown) {
  return fixed_s + work_s * slowdown;
}

#endif
