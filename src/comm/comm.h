/* comm/comm.h: what crosses devices, as kernels see it.  Windows, comm
 * contexts, and the data plane's operations table every fabric implements
 * (shared memory in fabric/shm.c, MPI-3 RMA in fabric/mpi.c).
 * Kernels, collectives and the device layer use only what is here. */
#ifndef PLD_COMM_COMM_H
#define PLD_COMM_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/futex.h"
#include "core/kctx.h"
#include "core/tensor.h"
#include "core/race.h"
#include "core/trace.h"
#include "core/watch.h"
#include "pld/signal.h"

/* A rank's view of a window buffer's comm domain. */
struct pld__comm {
  int buf;            /* window buffer id */
  int rank, nranks;   /* this rank's number in the domain, domain size */
  const int *members; /* world rank of each domain rank */
};

struct pld__fabric;
struct pld__diag;

/* The data plane: how bytes and signals cross devices.  Peers are world
 * ranks; offsets are bytes into the peer's copy of the buffer.  Every call
 * has been bounds-checked by the comm layer already, and comes from a core
 * (or AICPU) thread of this rank's device.  Calls return PLD_OK or a
 * failure with its message set (pld__fail).  Two fabrics implement it:
 * shared memory (fabric/shm.c) and MPI-3 RMA (fabric/mpi.c). */
#define PLD__FABRIC_OPS_VERSION 5

/* The peer of a flush that only sends the signals sent later. */
#define PLD__FLUSH_SENT (-2)

struct pld__fabric_ops {
  int version; /* PLD__FABRIC_OPS_VERSION of the table's layout */
  const char *name;
  /* This rank's copy of buffer buf. */
  void *(*local)(struct pld__fabric *f, int buf);
  /* The source of a write may be reused once it returns; the bytes are
   * visible at the peer at the latest when a later signal from this rank
   * (to any peer) is, or after flush. */
  int (*write)(struct pld__fabric *f, int buf, int peer, size_t off,
               const void *src, size_t n);
  int (*read)(struct pld__fabric *f, int buf, int peer, size_t off, void *dst,
              size_t n);
  /* The same, done at the latest by this rank's next flush, signal or
   * put_signal: src must not change, nor dst be read, before.  The pieces
   * of one transfer then travel as one where the fabric can join them. */
  int (*write_later)(struct pld__fabric *f, int buf, int peer, size_t off,
                     const void *src, size_t n);
  int (*read_later)(struct pld__fabric *f, int buf, int peer, size_t off,
                    void *dst, size_t n);
  /* peer[off..] += src element by element, each add atomic. */
  int (*accumulate)(struct pld__fabric *f, int buf, int peer, size_t off,
                    const void *src, size_t count, pld_dtype dtype);
  /* On peer's INT32 cell: add or set, with release semantics (everything
   * this rank wrote before, to any peer, is visible to whoever acquires
   * the cell), then wake the peer's waiters. */
  int (*signal)(struct pld__fabric *f, int buf, int peer, size_t off,
                int32_t value, pld_notify_op op);
  /* A signal that lands at the latest at this rank's next flush (of
   * every peer) or signal: the signals of one round then travel together
   * where the fabric can overlap them.  It releases every write before
   * it, as signal does, but perhaps not the signals to other peers, nor
   * a write of its round (`set_round`, below) to another peer. */
  int (*signal_later)(struct pld__fabric *f, int buf, int peer, size_t off,
                      int32_t value, pld_notify_op op);
  /* Every write of this rank to peer (-1: to every peer) is complete at
   * its target.  PLD__FLUSH_SENT: the signals sent later on their way
   * with the writes they release, landing soon but perhaps after the
   * call returns (a round of credits, whose receivers wait for them);
   * every other write complete. */
  int (*flush)(struct pld__fabric *f, int peer);
  /* A write followed by a signal to the same peer (its INT32 cell sig_off
   * in buffer sig_buf), in one operation: the fabric orders the data
   * before the signal with one completion. */
  int (*put_signal)(struct pld__fabric *f, int buf, int peer, size_t off,
                    const void *src, size_t n, int sig_buf, size_t sig_off,
                    int32_t value, pld_notify_op op);
  /* Peer's copy of n bytes at off, readable in place for the rest of the
   * caller's call, or NULL where the fabric cannot give one (the caller
   * then reads): a reduction then combines a peer's data where it lies
   * instead of copying it first.  Whether it can depends on the buffer
   * and the peer alone, and is the same seen from the peer
   * (pld_ep_combine's ranks decide by it on both sides who moves rows);
   * n 0 asks only that. */
  const void *(*view)(struct pld__fabric *f, int buf, int peer, size_t off,
                      size_t n);
  /* Waiting.  This rank's INT32 cell, with acquire semantics; the count of
   * signals delivered to this rank so far, and a sleep until it differs
   * from `seen` (after polling as spin says), at most timeout_ns.  A wait
   * on one cell names it (buf >= 0, off): a fabric whose signals land
   * before the count moves returns as soon as the cell changes. */
  int32_t (*cell)(struct pld__fabric *f, int buf, size_t off);
  uint32_t (*events)(struct pld__fabric *f);
  void (*wait_events)(struct pld__fabric *f, uint32_t seen, int buf, size_t off,
                      const struct pld__spin *spin, int64_t timeout_ns);
  /* Optional (NULL: cell, then the comparison): whether this rank's cell
   * satisfies a wait, as pld__cell_satisfied says, for a fabric that
   * takes the read and what the wait learns as one step
   * (comm/fabric_wrap.c). */
  int (*satisfied)(struct pld__fabric *f, int buf, size_t off, int32_t expected,
                   int cmp, int32_t *value, uint32_t *into);
  /* Optional (NULL: nothing to do): the calling thread begins (on 1) or
   * ends (on 0) a round of signal_later, in which each write to a peer is
   * followed by the round's signal to that peer, and is for that peer
   * alone (a collective's entry, a push: the receiver reads its own
   * copy).  The round's signal to a peer then releases that write to it,
   * and perhaps to no one else: the round's later signals need not wait
   * until the bytes its earlier ones carried to other peers have landed
   * (a round trip each over a network).  What was written before the
   * round, every signal of it releases.  Moves nothing. */
  void (*set_round)(struct pld__fabric *f, int on);
};

struct pld__fabric {
  const struct pld__fabric_ops *ops;
  int rank; /* world rank of this device; -1 on the host */
};

/* Everything a device's cores need for communication. */
struct pld__comm_env {
  struct pld__fabric *fabric;
  /* What waits poll (events, wait_events, satisfied): the device's own
   * fabric, but for the wrapper (comm/fabric_wrap.c) under the race
   * detector, whose satisfied is an acquire; the log and the model add
   * nothing to a poll. */
  struct pld__fabric *poll;
  _Atomic uint32_t *abort;  /* the run is being stopped (world) */
  struct pld__watch *watch; /* what the device publishes for the host */
  struct pld__spin spin;
  struct pld__trace_area *trace; /* the threads' events (core/trace.h) */
  struct pld__race *race;        /* the race detector (core/race.h) */
  struct pld__sig_uses *uses;    /* what the cells were used for, or NULL */
  struct pld__diag *diag;        /* the diagnostics (device/diag.h), or NULL */
  int model;                     /* the timing model records (PLD_MODEL) */
  int cores[2];                  /* the device's cores per pld_core_type */
};

/* What this device's kernels did with window cells, for the life of its
 * programs (the control block of the device holds it, struct pld__devctl,
 * so that a device started again in place of a killed one keeps it): the
 * signal views its collectives used, whose cells nothing but collectives
 * may write or wait on (pld/collective.h), and the bytes its notifies,
 * waits and remote stores (pld_remote_store, pld_put & co.) touched.  A
 * collective whose signal view holds bytes a notify, wait or store
 * touched, and a notify, wait or store of bytes of a collectives' signal
 * view, are refused, whichever came first.  The first PLD__COLL_SIGS
 * signal views and PLD__CELL_USES runs of touched bytes are known (runs
 * that meet are joined); later ones are not recorded.  All zero is empty. */
#define PLD__COLL_SIGS 64
#define PLD__CELL_USES 256
enum { PLD__USE_NOTIFY = 1, PLD__USE_WAIT = 2, PLD__USE_STORE = 4 };
struct pld__sig_uses {
  /* Read by every notify and wait: in cache lines of their own. */
  _Alignas(64) _Atomic int ncoll;
  _Atomic int nuses;
  _Atomic int lock; /* taken to add an entry (a spin lock: all zero is
                       free, and the host only reads) */
  struct pld__coll_sig {
    int32_t buf;
    int kind;          /* the first collective that used it (PLD__COLL_*) */
    uint64_t off, end; /* bytes [off, end) of buffer buf */
  } coll[PLD__COLL_SIGS];
  struct pld__cell_use {
    int32_t buf;
    _Atomic int what;          /* PLD__USE_* of the uses joined in it */
    _Atomic uint64_t off, end; /* bytes [off, end): only ever grows */
  } uses[PLD__CELL_USES];
};

/* How many signal views u holds, within its array whatever a wild write
 * left in its count (the host reads it between runs). */
int pld__coll_sig_count(struct pld__sig_uses *u);

/* Collective `kind` uses window w as its signal: refused (recorded in c as
 * fn's) if a notify, wait or store of this device touched bytes of it. */
int pld__coll_sig_use(struct pld__core *c, const char *fn,
                      const struct pld__tensor *w, int kind);
/* A notify, wait or store (what: PLD__USE_*) of bytes [off, off + n) of
 * w's buffer: refused (recorded in c as fn's) if they hold bytes of a
 * collectives' signal view.  idx (nidx coordinates, or NULL) names the
 * cell in the message. */
int pld__cell_use(struct pld__core *c, const char *fn,
                  const struct pld__tensor *w, size_t off, size_t n, int what,
                  int nidx, const int64_t *idx);

/* The fabric of a device's cores when the data plane's debug log
 * (PLD_DEBUG=fabric), the race detector (race) or the timing model
 * (model) is on: made in *w over in, the device's fabric
 * (comm/fabric_wrap.c).  pld__fabric_wrapped returns it, or in itself
 * when none is on. */
struct pld__fabric_wrap {
  struct pld__fabric base;
  struct pld__fabric *in;
  int log, race;
};
struct pld__fabric *pld__fabric_wrapped(struct pld__fabric_wrap *w,
                                        struct pld__fabric *in, int race,
                                        int model);

/* A signal cell as the timing model names it: offset off of buffer buf
 * (of the rank that holds it). */
static inline int64_t pld__cell_id(int buf, size_t off) {
  return ((int64_t)buf << 40) | (int64_t)off;
}

/* The calling thread's comm call, for what the wrapped fabric reports: the
 * kernel-level function and the signal view of the signal it makes next
 * (comm/signal.c and comm/rma.c set it before they signal; signal.c
 * holds it). */
struct pld__comm_call {
  const char *fn;
  const struct pld__tensor *sig;
};
extern _Thread_local struct pld__comm_call pld__comm_now;

/* Values of the abort word. */
enum {
  PLD__ABORT_NONE = 0,
  PLD__ABORT_FAILED = 1,
  PLD__ABORT_DEADLOCK = 2,
  PLD__ABORT_TIMEOUT = 3
};

/* The peer argument of pld__win_check for calls that take none. */
#define PLD__NO_PEER INT32_MIN

/* Checks that w is a window usable by remote operations from core c, and
 * unless peer is PLD__NO_PEER that peer is in its domain.  On failure
 * records it in c (fn names the calling function) and returns the
 * status. */
int pld__win_check(struct pld__core *c, const char *fn, pld_window w,
                   int32_t peer);

/* Checks a (row, col, rows, cols) region against the matrix view of a
 * tensor or window (peer's copy of it unless peer is PLD__NO_PEER); role
 * names a plain tensor's part in messages (NULL: "tensor"). */
int pld__region_check(struct pld__core *c, const char *fn,
                      const struct pld__tensor *t, int32_t peer,
                      const char *role, int64_t row, int64_t col, int64_t rows,
                      int64_t cols);

/* The byte offset of sig[idx] in its buffer, after checking the window
 * (an INT32 window usable from core c; peer in its domain unless
 * PLD__NO_PEER) and the index; and the same with a notify's op checked
 * too. */
int pld__cell_offset(struct pld__core *c, const char *fn, pld_window sig,
                     int32_t peer, int n, const int64_t *idx, size_t *off);
int pld__notify_check(struct pld__core *c, const char *fn, pld_window sig,
                      int32_t peer, int n, const int64_t *idx, pld_notify_op op,
                      size_t *off);

/* Notify and wait on the cell `off` bytes into the buffer of window w
 * (checked by the caller), failures reported as fn's: the body of
 * pld_notify (peer is a domain rank) and pld_wait, for the collectives.
 * idx (n coordinates) names the cell in deadlock reports. */
int pld__signal_cell(struct pld__core *c, const char *fn,
                     const struct pld__tensor *w, int32_t peer, size_t off,
                     int32_t value, pld_notify_op op);
/* The same through fabric f's signal_later (a flush of every peer
 * completes it): the device's fabric, or its own under the wrapper
 * (comm/fabric_wrap.c) where nothing the wrapper adds is wanted. */
int pld__signal_cell_later(struct pld__core *c, struct pld__fabric *f,
                           const char *fn, const struct pld__tensor *w,
                           int32_t peer, size_t off, int32_t value,
                           pld_notify_op op);
/* Whether this rank's INT32 cell off of buffer buf satisfies a wait (its
 * value in *value).  Under the race detector a satisfied wait acquires
 * what was released to the cell, into `into` (a task's clock) or (NULL)
 * the calling thread's (core/race.h), which the wrapped fabric does. */
int pld__cell_satisfied(struct pld__fabric *f, int buf, size_t off,
                        int32_t expected, int cmp, int32_t *value,
                        uint32_t *into);
int pld__wait_cell(struct pld__core *c, const char *fn,
                   const struct pld__tensor *w, size_t off, int n,
                   const int64_t *idx, int32_t expected, int cmp);

/* A collective call's arguments, as pld__coll_check sees them: on a
 * kernel's view (windows with their comm contexts), or while the host
 * orchestrator is traced (window views without data). */
struct pld__coll_args {
  int kind; /* PLD__COLL_* of core/watch.h */
  /* The data (allreduce, broadcast, reduce-scatter), stage (allgather) or
   * input (all-to-all, all-to-all-v), and the target of the last three. */
  const struct pld__tensor *data, *target, *sig;
  /* All-to-all-v and the packed one: INT32[P] each.  recv_counts is also
   * the EP calls' count per local expert. */
  const struct pld__tensor *send_counts, *recv_counts;
  /* The EP calls (pld/ep.h; the data is x or expert_out, the target
   * recv_x or the stage): their other tensors, and dispatch's expert
   * count. */
  const struct pld__tensor *topk_idx, *topk_w, *recv_meta, *recv_w, *out;
  int32_t experts;
  /* The out-of-place forms (pld_allreduce_to, ...): the source when the
   * data above is the result (allreduce), or the result when the data is
   * the source (broadcast, reduce-scatter); else NULL. */
  const struct pld__tensor *src, *dst;
  int op, mode, root;
  int32_t nranks, blocks;
  int cube; /* called on a cube core */
};

/* Checks what can be checked of a collective call without its data: the
 * signal window's size for the rank and block counts, op and dtype, mode,
 * root, shapes (the EP calls' too: dtypes, shapes and the expert count,
 * checked last), overlapping buffers.  Returns PLD_OK, or the status with
 * the message (no function prefix) in msg. */
int pld__coll_check(const struct pld__coll_args *a, char *msg, size_t cap);

/* The end of core c's block, on the thread that ran it: a collective call
 * of the block that left part of its entry to settle (comm/coll.h: a
 * small broadcast) is settled, unless the block failed; a failure is
 * recorded in c as that call's. */
void pld__coll_block_end(struct pld__core *c);

/* a and b share bytes: views of one window buffer whose byte ranges
 * overlap (known while tracing too), or tensors whose memory does. */
int pld__coll_overlap(const struct pld__tensor *a, const struct pld__tensor *b);

/* For messages, composed only when something failed: "window 'sig'
 * (buffer #2)", with " of peer 1" unless peer is PLD__NO_PEER, or "<role>
 * 'x'" for a plain tensor (role NULL: "tensor"). */
size_t pld__describe(char *buf, size_t cap, const struct pld__tensor *t,
                     int32_t peer, const char *role);

#endif
