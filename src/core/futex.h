/* core/futex.h: sleeping on a 32-bit word, within a process or across the
 * processes sharing its page (Linux futexes).  Waiters always re-check
 * their condition: a wake may be spurious. */
#ifndef PLD_CORE_FUTEX_H
#define PLD_CORE_FUTEX_H

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
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
  syscall(SYS_futex, (uint32_t *)word,
          shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected, tp, NULL, 0);
}

static inline void pld__futex_wake(_Atomic uint32_t *word, int shared) {
  syscall(SYS_futex, (uint32_t *)word,
          shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static inline int64_t pld__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}


/* How a waiter polls before it sleeps: for ns nanoseconds, pausing
 * between looks, and yielding the CPU instead only while more threads poll
 * than there are CPUs (spinners counts them across all the processes of a
 * program), so polling threads never starve the thread they wait for. */
struct pld__spin {
  int64_t ns;
  _Atomic uint32_t *spinners;
  uint32_t cpus;
};

/* Polls until *word != old, as spin says.  Returns the new value, or old
 * if the time ran out and the caller should sleep. */
static inline uint32_t pld__spin_change(_Atomic uint32_t *word, uint32_t old,
                                        const struct pld__spin *spin) {
  uint32_t v = atomic_load_explicit(word, memory_order_acquire);
  if (v != old || spin->ns <= 0)
    return v;
  atomic_fetch_add_explicit(spin->spinners, 1, memory_order_relaxed);
  int64_t deadline = pld__now_ns() + spin->ns;
  for (int i = 0;; i++) {
    v = atomic_load_explicit(word, memory_order_acquire);
    if (v != old)
      break;
    if ((i & 63) == 63 && pld__now_ns() > deadline)
      break;
    if (i >= 64 && atomic_load_explicit(spin->spinners,
                                        memory_order_relaxed) > spin->cpus)
      sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
      __builtin_ia32_pause();
#endif
  }
  atomic_fetch_sub_explicit(spin->spinners, 1, memory_order_relaxed);
  return v;
}

/* Waits until *word != old: polls as spin says, then sleeps, at most
 * timeout_ns in all (< 0: no limit).  sleepers counts the threads asleep
 * on word, so that pld__event_signal wakes only when someone sleeps. */
static inline uint32_t pld__event_wait(_Atomic uint32_t *word, uint32_t old,
                                       _Atomic uint32_t *sleepers,
                                       const struct pld__spin *spin,
                                       int64_t timeout_ns, int shared) {
  uint32_t v = pld__spin_change(word, old, spin);
  if (v != old)
    return v;
  atomic_fetch_add(sleepers, 1);
  v = atomic_load(word);
  if (v == old)
    pld__futex_wait(word, old, timeout_ns, shared);
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
