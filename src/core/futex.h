/* core/futex.h: sleeping on a 32-bit word, within a process or across the
 * processes sharing its page (Linux futexes).  Waiters always re-check
 * their condition: a wake may be spurious. */
#ifndef PLD_CORE_FUTEX_H
#define PLD_CORE_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word == expected, at most timeout_ns (< 0: no limit).
 * shared: the word is in memory shared between processes. */
static inline void pld__futex_wait(_Atomic uint32_t *word, uint32_t expected,
                                   int64_t timeout_ns, int shared) {
  struct timespec ts, *tp = NULL;
  if (timeout_ns >= 0) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000);
    ts.tv_nsec = (long)(timeout_ns % 1000000000);
    tp = &ts;
  }
  syscall(SYS_futex, (uint32_t *)word, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE,
          expected, tp, NULL, 0);
}

/* Wakes every thread asleep on word.  The waker changes *word first: a
 * waiter still polling it (pld__event_wait) never sees a wake that leaves
 * it as it was, and then sleeps its whole timeout on the value it saw. */
static inline void pld__futex_wake(_Atomic uint32_t *word, int shared) {
  syscall(SYS_futex, (uint32_t *)word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE,
          INT32_MAX, NULL, NULL, 0);
}

static inline int64_t pld__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps about ns nanoseconds (ns >= 0). */
static inline void pld__nap_ns(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  nanosleep(&ts, NULL);
}

/* The CLOCK_REALTIME time ns nanoseconds from now (ns >= 0), as
 * pthread_cond_timedwait takes it. */
static inline struct timespec pld__realtime_after(int64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ns += ts.tv_nsec;
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  return ts;
}

/* How a waiter polls before it sleeps: for ns nanoseconds, pausing
 * between looks while every awake thread of the program can have a CPU,
 * and yielding the CPU at every look while more are awake than there are
 * CPUs.  Then a polling thread never keeps the thread it waits for off a
 * CPU, even when that thread is not polling but computing (counting only
 * the pollers, as this did once, let two pollers hold both CPUs while the
 * thread they waited for sat in a run queue for their whole polling time).
 *
 * awake counts the threads of the program, in all its processes, that are
 * running or polling, not asleep: a thread is counted from its start, and
 * leaves the count only while it sleeps (pld__event_wait and the
 * condition waits of the device layer do that through pld__asleep /
 * pld__awake).  own, if not NULL, counts this process's share, so that the
 * share of a killed process can be taken back; it is also crowded when
 * more of this process's threads are awake than own_cpus, the CPUs this
 * process may run on (mpirun binds each process of a node to CPUs of its
 * own, while awake counts the node's threads against all of theirs).
 *
 * The polling time adapts, per thread: a thread that slept and was woken
 * soon after would have done better polling on, so it polls longer next
 * time (up to PLD__SPIN_GROWTH times ns); one that slept long is idle
 * between bursts, and polls ns again.  Without this, two devices taking
 * turns can lock into a rhythm where each one's polling runs out while it
 * waits for the other to wake up, and every run pays a wake-up, for the
 * whole life of the process. */
struct pld__spin {
  int64_t ns;
  _Atomic uint32_t *awake;
  _Atomic uint32_t *own;
  uint32_t cpus;
  /* Looks between yields while every awake thread can have a CPU, minus
   * one (a power of two minus one; 0: 255). */
  uint32_t yield_mask;
  uint32_t own_cpus; /* with own */
};

/* Whether more threads are awake than can have a CPU (see above). */
static inline int pld__spin_crowded(const struct pld__spin *spin) {
  return atomic_load_explicit(spin->awake, memory_order_relaxed) > spin->cpus ||
         (spin->own && atomic_load_explicit(spin->own, memory_order_relaxed) >
                           spin->own_cpus);
}

/* The CPUs the awake threads of a node's processes share, from each
 * process's (own: this one's count; all: the count of their union; sum
 * and least: the sum and the least of their counts): all of them where
 * the processes' sets are disjoint (mpirun binding each to its own) or
 * the same, else own, as if every other process could be on this one's
 * (partly overlapping sets: two processes bound to one CPU must not poll
 * while the other waits for it). */
static inline uint32_t pld__node_cpus(uint32_t own, uint32_t all, uint32_t sum,
                                      uint32_t least) {
  return sum == all || least == all ? all : own;
}

#define PLD__SPIN_GROWTH 16

/* What the calling thread polls beyond spin->ns now. */
extern _Thread_local int64_t pld__spin_extra_ns;

/* The calling thread starts counting as awake (at its start, or when it
 * wakes up), or stops (before it sleeps, or at its end). */
static inline void pld__awake(const struct pld__spin *spin) {
  atomic_fetch_add_explicit(spin->awake, 1, memory_order_relaxed);
  if (spin->own)
    atomic_fetch_add_explicit(spin->own, 1, memory_order_relaxed);
}
static inline void pld__asleep(const struct pld__spin *spin) {
  if (spin->own)
    atomic_fetch_sub_explicit(spin->own, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(spin->awake, 1, memory_order_relaxed);
}

/* One look of a polling loop, after the i-th look found nothing: pauses
 * (or yields the CPU, see below) and returns 1, or returns 0 once the
 * deadline has passed.  Every 256 looks (spin->yield_mask) a yield
 * regardless: the awake
 * count knows only this program's threads, and another program may be
 * taking a CPU.  A yield may give the CPU away for a whole time slice, so
 * the clock is read before each: 64 of them in a row could outlast the
 * polling time a hundredfold on a loaded machine. */
static inline int pld__spin_step(int i, int64_t deadline,
                                 const struct pld__spin *spin) {
  uint32_t mask = spin->yield_mask ? spin->yield_mask : 255;
  int yield = ((uint32_t)i & mask) == mask || pld__spin_crowded(spin);
  if ((yield || (i & 63) == 63) && pld__now_ns() > deadline)
    return 0;
  if (yield)
    sched_yield();
#if defined(__x86_64__) || defined(__i386__)
  else
    __builtin_ia32_pause();
#endif
  return 1;
}

/* When a thread polling now stops polling: after spin->ns, and what it
 * learnt to poll beyond that (pld__spin_extra_ns). */
static inline int64_t pld__spin_deadline(const struct pld__spin *spin) {
  return pld__now_ns() + spin->ns + pld__spin_extra_ns;
}

/* Polls until *word != old, as spin says.  Returns the new value, or old
 * if the time ran out and the caller should sleep. */
static inline uint32_t pld__spin_change(_Atomic uint32_t *word, uint32_t old,
                                        const struct pld__spin *spin) {
  uint32_t v = atomic_load_explicit(word, memory_order_acquire);
  if (v != old || spin->ns <= 0)
    return v;
  int64_t deadline = pld__spin_deadline(spin);
  for (int i = 0;; i++) {
    v = atomic_load_explicit(word, memory_order_acquire);
    if (v != old || !pld__spin_step(i, deadline, spin))
      break;
  }
  return v;
}

/* Brackets a sleep of the calling thread (a futex or condition wait):
 * it leaves the awake count, and on waking adapts its polling time.
 * pld__sleep_begin returns the time the sleep began. */
static inline int64_t pld__sleep_begin(const struct pld__spin *spin) {
  pld__asleep(spin);
  return pld__now_ns();
}
static inline void pld__sleep_end(const struct pld__spin *spin, int64_t began) {
  pld__awake(spin);
  int64_t slept = pld__now_ns() - began, most = PLD__SPIN_GROWTH * spin->ns;
  if (spin->ns <= 0 || slept >= most)
    pld__spin_extra_ns = 0;
  else if (pld__spin_extra_ns < most - spin->ns)
    pld__spin_extra_ns = 2 * pld__spin_extra_ns + spin->ns < most - spin->ns
                             ? 2 * pld__spin_extra_ns + spin->ns
                             : most - spin->ns;
}

/* Waits until *word != old: polls as spin says, then sleeps, at most
 * timeout_ns in all (< 0: no limit).  sleepers counts the threads asleep
 * on word, so that pld__event_signal wakes only when someone sleeps.  The
 * caller counts as awake (see struct pld__spin). */
static inline uint32_t pld__event_wait(_Atomic uint32_t *word, uint32_t old,
                                       _Atomic uint32_t *sleepers,
                                       const struct pld__spin *spin,
                                       int64_t timeout_ns, int shared) {
  uint32_t v = pld__spin_change(word, old, spin);
  if (v != old)
    return v;
  atomic_fetch_add(sleepers, 1);
  v = atomic_load(word);
  if (v == old) {
    int64_t began = pld__sleep_begin(spin);
    pld__futex_wait(word, old, timeout_ns, shared);
    pld__sleep_end(spin, began);
  }
  atomic_fetch_sub(sleepers, 1);
  return atomic_load_explicit(word, memory_order_acquire);
}

/* Bumps *word and wakes its sleepers, if any. */
static inline void pld__event_signal(_Atomic uint32_t *word,
                                     _Atomic uint32_t *sleepers, int shared) {
  atomic_fetch_add(word, 1);
  if (atomic_load(sleepers))
    pld__futex_wake(word, shared);
}

#endif
