/* core/futex.h: sleeping on a 32-bit word, within a process or across the
 * processes sharing its page (Linux futexes).  Waiters always re-check
 * their condition: a wake may be spurious. */
#ifndef PLD_CORE_FUTEX_H
#define PLD_CORE_FUTEX_H

#include <errno.h>
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

#endif
