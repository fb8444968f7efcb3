/* pld/signal.h: ordering between ranks - notify and wait on INT32 cells of
 * a window.  Kernels only.
 *
 * Ordering: everything a kernel wrote to peers' windows (remote stores,
 * puts) before a notify is visible to a peer once its wait on that notify
 * returns (release / acquire), on every fabric.  Counters only grow by
 * notifies: nothing resets a cell but an explicit write (Set) or a
 * collective's epilogue.  Never mix Set and AtomicAdd on one cell.
 *
 * A wait that can never return is not waited out: when every core of every
 * device is finished or blocked in a wait, nothing is in flight, and no
 * ready block can start (every core of its type holds a block that waits,
 * as happens with more blocks than cores when the running ones wait for
 * one that has not started), the run stops within a second with
 * PLD_ERR_DEADLOCK and a report of each blocked wait (rank, device,
 * kernel, core, window, cell, comparison, the value the cell holds, who
 * could still notify it), of the blocks that cannot start, and of the ranks
 * already finished.  A wait pending longer than its limit
 * (pld_config.wait_timeout_ms, PLD_WAIT_TIMEOUT_MS) is reported the same
 * way with PLD_ERR_TIMEOUT, and so is a kernel running longer than its
 * limit without waiting (pld_config.kernel_timeout_ms,
 * PLD_KERNEL_TIMEOUT_MS).
 */
#ifndef PLD_SIGNAL_H
#define PLD_SIGNAL_H

#include "pld/window.h"

/* Values 0 and 1 are the original ABI's; the other comparisons are pld's. */
typedef enum pld_notify_op {
  PLD_NOTIFY_ADD = 0,
  PLD_NOTIFY_SET = 1
} pld_notify_op;
typedef enum pld_wait_cmp {
  PLD_WAIT_EQ = 0, /* cell == expected */
  PLD_WAIT_GE = 1, /* cell >= expected */
  PLD_WAIT_NE = 2, /* cell != expected */
  PLD_WAIT_GT = 3, /* cell > expected */
  PLD_WAIT_LT = 4, /* cell < expected */
  PLD_WAIT_LE = 5  /* cell <= expected */
} pld_wait_cmp;

/* On peer's copy of sig[idx] (an INT32 cell): add value (signed; a notify
 * to this rank's own number hits its own cell) or set it.  idx is given
 * with PLD_AT(i, j, ...).  Returns PLD_OK, PLD_ERR_ARG (not an INT32
 * window, NULL idx, unknown op), PLD_ERR_BOUNDS (peer or cell outside, an
 * index of the wrong rank), or an earlier failure. */
int pld_notify(pld_core k, pld_window sig, int32_t peer, int n,
               const int64_t *idx, int32_t value, pld_notify_op op);

/* Blocks until this rank's sig[idx] compares with expected as cmp says
 * (==, >=, !=, >, <, <=).  Other cores keep running meanwhile.  Returns
 * PLD_OK, PLD_ERR_ARG (also an unknown cmp), PLD_ERR_BOUNDS, PLD_ERR_DEADLOCK
 * or PLD_ERR_TIMEOUT (the run's report says which waits), PLD_ERR_ABORTED
 * (another rank failed). */
int pld_wait(pld_core k, pld_window sig, int n, const int64_t *idx,
             int32_t expected, pld_wait_cmp cmp);

/* A deferred wait: the block goes on (and should end soon, releasing its
 * core) without waiting, and its launch counts as finished only once
 * sig[idx] compares with expected as cmp says.  So what depends on the
 * launch (a later launch whose tensors overlap it: a continuation kernel;
 * the device function's return, and with it the rank's next dispatch)
 * starts when the cell reaches its value, while the core is free for other
 * blocks: programs with more waiting blocks than cores complete where
 * pld_wait would deadlock.  Nothing the block does after the call may
 * depend on the signal.  At most PLD_MAX_DEFERRED_WAITS per block, and 128
 * pending per device (PLD_ERR_UNSUPPORTED beyond).  A deferred wait never
 * satisfied is a deadlock (or a wait timeout) like any other, reported as
 * deferred.  Returns as pld_notify's checks do (PLD_ERR_ARG for a window
 * that is no INT32 signal window, PLD_ERR_BOUNDS), or an earlier failure. */
#define PLD_MAX_DEFERRED_WAITS 8
int pld_wait_deferred(pld_core k, pld_window sig, int n, const int64_t *idx,
                      int32_t expected, pld_wait_cmp cmp);

#endif /* PLD_SIGNAL_H */
