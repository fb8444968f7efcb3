/* core/watch.h: what a device publishes about itself for the host's watch
 * (deadlocks, time limits, crash reports): what each of its AI cores and
 * its AICPU are doing and since when, and its ready queues.
 *
 * It lives in memory shared with the host that the device's own code,
 * kernels included, can write.  A kernel that scribbles over it must not
 * make the host read out of bounds or report nonsense as success, so the
 * host validates every field before it uses it (see host/run.c). */
#ifndef PLD_CORE_WATCH_H
#define PLD_CORE_WATCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pld/collective.h"
#include "pld/signal.h"

/* The most cores a device has (a5: 36 AIC + 72 AIV). */
#define PLD__MAX_CORES 128
/* Deferred waits a device keeps at once (pld_wait_deferred), each in a
 * slot of the watch after the cores' slots. */
#define PLD__MAX_DEFERRED 128
#define PLD__MAX_SLOTS (PLD__MAX_CORES + PLD__MAX_DEFERRED)

/* Room for a kernel, function or window name, terminator included; longer
 * names are cut. */
#define PLD__NAME_MAX 48

/* The collectives, as the watch names them. */
#define PLD__COLLECTIVES(X)                                                    \
  X(NONE, "")                                                                  \
  X(BARRIER, "pld_barrier")                                                    \
  X(ALLREDUCE, "pld_allreduce")                                                \
  X(BROADCAST, "pld_broadcast")                                                \
  X(ALLGATHER, "pld_allgather")                                                \
  X(REDUCE_SCATTER, "pld_reduce_scatter")                                      \
  X(ALL_TO_ALL, "pld_all_to_all")                                              \
  X(ALL_TO_ALL_V, "pld_all_to_all_v")                                          \
  X(ALL_TO_ALL_PACKED, "pld_all_to_all_packed")                                \
  X(EP_DISPATCH, "pld_ep_dispatch")                                            \
  X(EP_COMBINE, "pld_ep_combine")
enum {
#define PLD__COLL_ENUM(name, fn) PLD__COLL_##name,
  PLD__COLLECTIVES(PLD__COLL_ENUM)
#undef PLD__COLL_ENUM
      PLD__COLL_COUNT
};

/* The function of collective kind, or NULL for no known kind. */
static inline const char *pld__coll_name(int kind) {
  static const char *const names[] = {
#define PLD__COLL_NAME(name, fn) fn,
      PLD__COLLECTIVES(PLD__COLL_NAME)
#undef PLD__COLL_NAME
  };
  return kind >= 0 && kind < PLD__COLL_COUNT ? names[kind] : NULL;
}

/* What a core is doing. */
enum { PLD__CORE_IDLE = 0, PLD__CORE_RUNNING = 1, PLD__CORE_WAITING = 2 };

/* One core, or one deferred wait (a block that ended waiting: core -1,
 * always PLD__CORE_WAITING while in use).  Its core (the device's
 * scheduler for a deferred wait) writes it, the host reads it: `seq` is
 * odd while it is written, so that the host can tell a consistent copy
 * from one taken while the fields changed (pld__slot_write_begin / _end on
 * the device, a retry or "in passing" on the host). */
struct pld__coreslot {
  _Atomic uint32_t seq;
  _Atomic int32_t state;
  /* Running since the block started, or waiting since the wait began.  A
   * wait that returns does not read the clock (on the notify-to-wait path
   * that costs more than the rest of the hand-over): it sets since_ns to 0
   * and bumps `resumes`, and the host counts the kernel's running time
   * from when it first sees that resume. */
  _Atomic int64_t since_ns;
  _Atomic uint32_t resumes;
  int32_t core_type, core, block, blocks;
  char kernel[PLD__NAME_MAX];
  /* While waiting: the cell (window buffer, byte offset), the condition,
   * and the index and window name for the report. */
  int32_t buf;
  int32_t cmp;
  int32_t expected;
  int32_t ndim;
  uint64_t off;
  int64_t idx[PLD_MAX_DIMS];
  char window[PLD__NAME_MAX];
  /* The collective the wait belongs to (PLD__COLL_*, 0 for none), the
   * call's number on its signal window and the round within the call. */
  int32_t coll, call, round;
};

/* The ready queue of one core type. */
struct pld__readyq {
  _Atomic int32_t blocks; /* blocks ready to start, not started */
  _Atomic int32_t held;   /* cores of this type holding a block */
  /* The first ready task, for the report of blocks that cannot start. */
  int32_t next_block, nblocks;
  char kernel[PLD__NAME_MAX];
};

struct pld__watch {
  _Atomic int32_t running;    /* blocks running, not in a wait */
  _Atomic uint32_t progress;  /* bumped by every signal sent, every block
                                 finished */
  _Atomic int32_t aicpu_busy; /* the AICPU runs device-function code */
  _Atomic int64_t aicpu_since_ns;
  char aicpu_fn[PLD__NAME_MAX]; /* the device function it runs */
  struct pld__readyq queue[2];  /* by pld_core_type */
  /* The cores' slots, then the deferred waits' (PLD__MAX_CORES on). */
  struct pld__coreslot slots[PLD__MAX_SLOTS];
};

/* Orders a slot's stores (the writer, after making seq odd) or loads (the
 * reader, before reading seq again).  x86 keeps stores in order and loads
 * in order, so there the compiler's order is enough; ThreadSanitizer, which
 * has no model of fences (gcc refuses them under -fsanitize=thread), runs
 * on x86 only.  Elsewhere it is a real fence. */
#if defined(__x86_64__) || defined(__i386__)
#define PLD__SLOT_FENCE(order) atomic_signal_fence(order)
#else
#define PLD__SLOT_FENCE(order) atomic_thread_fence(order)
#endif

/* Brackets the core's writes to its slot. */
static inline void pld__slot_write_begin(struct pld__coreslot *s) {
  uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
  PLD__SLOT_FENCE(memory_order_release);
}
static inline void pld__slot_write_end(struct pld__coreslot *s) {
  uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_release);
}

/* A bounded copy of a name (NULL copies as ""): it runs on hot paths,
 * where printf would not do. */
static inline void pld__name_copy(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src && src[i] && i + 1 < cap; i++)
    dst[i] = src[i];
  dst[i] = '\0';
}

/* Between pld__slot_write_begin and _end: the block a slot shows (core
 * -1 for a deferred wait), and the wait it is in. */
static inline void pld__slot_set_block(struct pld__coreslot *s,
                                       int32_t core_type, int32_t core,
                                       int32_t block, int32_t blocks,
                                       const char *kernel) {
  s->core_type = core_type;
  s->core = core;
  s->block = block;
  s->blocks = blocks;
  pld__name_copy(s->kernel, sizeof s->kernel, kernel);
}
static inline void pld__slot_set_wait(struct pld__coreslot *s, int32_t buf,
                                      uint64_t off, int32_t cmp,
                                      int32_t expected, int32_t ndim,
                                      const int64_t *idx, const char *window,
                                      int32_t coll, int32_t call,
                                      int32_t round) {
  s->buf = buf;
  s->off = off;
  s->cmp = cmp;
  s->expected = expected;
  s->ndim = ndim;
  memcpy(s->idx, idx, (size_t)ndim * sizeof *idx);
  s->coll = coll;
  s->call = call;
  s->round = round;
  pld__name_copy(s->window, sizeof s->window, window);
}

/* The rank of a domain of `size` ranks whose credit waiting slot s waits
 * for, or -1 if its cell is no credit: the collectives' credits are the
 * first `size` cells of each lane of the signal window (comm/coll.h). */
static inline int32_t pld__slot_credit_from(const struct pld__coreslot *s,
                                            int32_t size) {
  int64_t cell =
      s->ndim == 1 && size > 0 ? s->idx[0] % PLD_SIGNAL_LANE_CELLS(size) : -1;
  return cell >= 0 && cell < size ? (int32_t)cell : -1;
}

/* The window buffer of a waiting slot that waits in the path between the
 * parts of a mixed block (pld_push_tile, pld_pop_tile of pld/mix.h), not
 * on a cell: cmp is 1 for a push (waiting for room) and 0 for a pop
 * (waiting for a tile), expected the part waited for (PLD_MIX_CUBE or a
 * vector part's index), window the function; ndim 0.  Only the part it
 * waits for can end it, which the host cannot see: it is never satisfied
 * to the watch, and the part that ends it marks it running again. */
#define PLD__WAIT_PIPE (-2)

/* The one definition of a satisfied wait, used by the waiting core and by
 * the host's deadlock watch alike. */
static inline int pld__wait_satisfied(int32_t value, int32_t expected,
                                      int cmp) {
  switch (cmp) {
  case PLD_WAIT_EQ:
    return value == expected;
  case PLD_WAIT_GE:
    return value >= expected;
  case PLD_WAIT_NE:
    return value != expected;
  case PLD_WAIT_GT:
    return value > expected;
  case PLD_WAIT_LT:
    return value < expected;
  case PLD_WAIT_LE:
    return value <= expected;
  default:
    return 0;
  }
}

/* "==", ">=", ...; NULL for no comparison. */
static inline const char *pld__wait_cmp_str(int cmp) {
  static const char *const str[] = {"==", ">=", "!=", ">", "<", "<="};
  return cmp >= 0 && cmp < (int)(sizeof str / sizeof str[0]) ? str[cmp] : NULL;
}

#endif
