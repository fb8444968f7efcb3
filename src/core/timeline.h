/* core/timeline.h: what a run did, in the timing model's terms, and the
 * modeled times replaying it gives (docs/model.md, the timing model).
 *
 * A run's timeline is, per rank, its calls (dispatches) in order; per
 * call, its kernel launches (tasks) in launch order with the earlier
 * tasks each waited for; per task, its blocks; per block, the records of
 * what it did, in order.  Records hold amounts (bytes, multiply-adds,
 * cells and values), never times: the same program with the same inputs
 * records the same timeline whatever the machine, its load, the
 * instruction level or the fabric, and a timeline can be replayed with
 * other figures (core/model.h).
 *
 * pld__tl_replay turns a timeline and a machine into modeled times by a
 * discrete-event simulation that runs alone, after the run, so no thread
 * interleaving reaches it: one clock per core, AICPU, link direction and
 * device memory, in integer picoseconds; events taken in (time, creation)
 * order; a task ready at the later of its launch on the AICPU and its
 * dependencies' end; its blocks, by (ready time, launch, block index), on
 * the free core of their type with the smallest clock (then the lowest
 * number), as the platform's cores allow; a notify's contribution landing
 * at its issue (behind the block's transfers issued later) plus the
 * link's latency; a wait going on once the cell's
 * contributions landed so far satisfy it (core/watch.h's definition);
 * local moves queued on the device's memory, transfers on their link and
 * on both devices' ports, first come first served. */
#ifndef PLD_CORE_TIMELINE_H
#define PLD_CORE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

/* What a record is; sub and the fields' meaning per kind. */
enum pld__tl_kind {
  /* Computing: sub a class of enum pld__tl_class, a its amount (bytes of
   * operands for vector classes, multiply-adds for cube ones), b the
   * operations (each pays the class's fixed cycles). */
  PLD__TL_COMPUTE = 1,
  /* Moves between global and tile memory: a bytes in b moves (at least
   * one), each paying the latency.  With sub PLD__TL_ASYNC, one move the
   * core starts and does not wait for (pld_prefetch), b its number in
   * the block (0, 1, ... in the order started): it goes on the core's
   * move engine after the moves before it, while the core goes on. */
  PLD__TL_MOVE,
  /* A transfer with peer (a rank): sub PLD__TL_PUT or PLD__TL_GET, with
   * PLD__TL_LATER when it completes only at the next flush or notify of
   * the block (the core goes on meanwhile); a bytes.  With PLD__TL_LATER
   * and PLD__TL_FLUSHED: b times (at least one), one after the other,
   * the transfer and then a flush (what a loop of plain puts records). */
  PLD__TL_XFER,
  /* The block's transfers issued later complete. */
  PLD__TL_FLUSH,
  /* A notify: peer the rank whose cell it hits, a the cell (an id the
   * recorder gives each cell of a rank), sub PLD_NOTIFY_ADD or _SET, b
   * the value.  It lands after the block's earlier transfers (the core
   * does not wait for them: their order, as a DMA queue keeps it). */
  PLD__TL_NOTIFY,
  /* A wait on cell a of rank peer: sub a pld_wait_cmp, b the expected
   * value.  PLD__TL_DEFER: the same, deferred to the block's task. */
  PLD__TL_WAIT,
  PLD__TL_DEFER,
  /* Credits taken back: cell a of rank peer (the recording core's own)
   * goes down by b at once, at no cost (a collective's epilogue, which
   * makes its lane zero for the next call; comm/coll_lane.c). */
  PLD__TL_TAKE,
  /* The core waits for its move number a of PLD__TL_ASYNC to complete
   * (pld_prefetch_wait). */
  PLD__TL_MOVED
};
#define PLD__TL_LAST PLD__TL_MOVED

enum pld__tl_class {
  PLD__TC_VECTOR,  /* elementwise */
  PLD__TC_SPECIAL, /* exp, log, sqrt, rsqrt, division */
  PLD__TC_REDUCE,  /* reductions, compares, select, top-k, scans */
  PLD__TC_FP16,    /* cube: multiply-adds by operand dtype */
  PLD__TC_BF16,
  PLD__TC_FP32,
  PLD__TC_INT8,
  PLD__TC_CLASSES
};

#define PLD__TL_ASYNC 1 /* a PLD__TL_MOVE's */

#define PLD__TL_PUT 0
#define PLD__TL_GET 1
#define PLD__TL_LATER 2
#define PLD__TL_FLUSHED 4

struct pld__tl_rec {
  uint8_t kind, sub;
  int32_t peer;
  int64_t a, b;
};

struct pld__tl_block {
  int32_t nrec;
  const struct pld__tl_rec *rec;
  /* NULL, or [nrec]: the replay writes when each record began and ended
   * (for a trace in modeled time). */
  int64_t *t0_ps, *t1_ps;
};

struct pld__tl_task {
  const char *name;  /* the kernel's */
  int cube;          /* runs on cube cores (else vector) */
  int with_previous; /* launched with the task before it (the parts of a
                        mixed kernel): no launch of its own */
  int32_t nblocks;
  const struct pld__tl_block *blocks;
  int32_t ndeps;
  const int32_t *deps; /* earlier tasks of the call it waits for */
};

/* A call a call waits for (through a host task): rank's call-th. */
struct pld__tl_ref {
  int32_t rank, call;
};

struct pld__tl_call {
  const char *name; /* the device function's */
  int32_t ntasks;
  const struct pld__tl_task *tasks;
  int32_t nafter;
  const struct pld__tl_ref *after;
  int64_t *span_ps; /* NULL, or [2]: the replay writes its start and end */
};

struct pld__tl_rank {
  int32_t device;              /* its device id: the server is id /
                                  server_devices */
  int64_t bytes_in, bytes_out; /* copied from and to the host */
  int32_t ncalls;
  const struct pld__tl_call *calls;
};

struct pld__timeline {
  int32_t nranks;
  const struct pld__tl_rank *ranks;
};

/* Where modeled time went on a core. */
enum pld__tl_busy {
  PLD__TB_COMPUTE,
  PLD__TB_MOVE, /* local moves */
  PLD__TB_COMM, /* transfers and notifies */
  PLD__TB_WAIT, /* blocked in waits */
  PLD__TB_CLASSES
};

struct pld__tl_core {
  int32_t rank;
  int cube;
  int32_t id; /* among the device's cores of its type */
  int32_t blocks;
  int64_t finish_ps; /* its last block's end */
  int64_t busy_ps[PLD__TB_CLASSES];
};

/* One block as the model ran it. */
struct pld__tl_span {
  int32_t rank, call, task, block;
  int cube;
  int32_t core;
  int64_t start_ps, end_ps;
};

struct pld__tl_report {
  int64_t total_ps; /* the last rank's finish */
  int64_t *rank_ps; /* [nranks]: each rank's finish */
  int32_t nranks;
  int32_t ncores; /* cores that ran a block, by (rank, type, id) */
  struct pld__tl_core *cores;
  int32_t nspans; /* every block, in (rank, call, task, block) order */
  struct pld__tl_span *spans;
};

/* Replays tl on a device of platform-size cores (vector_cores, cube_cores,
 * server_devices) with machine m into *out (freed with
 * pld__tl_report_free).  PLD_OK; PLD_ERR_NOMEM; PLD_ERR_DEADLOCK when in
 * modeled order a wait is never satisfied, or blocks are left without a
 * core (msg: the first such wait or block, by rank, call, kernel and
 * block); PLD_ERR_ARG for a timeline that is not one (msg). */
int pld__tl_replay(const struct pld__timeline *tl, const struct pld__machine *m,
                   int vector_cores, int cube_cores, int server_devices,
                   struct pld__tl_report *out, char *msg, size_t cap);
void pld__tl_report_free(struct pld__tl_report *r);

/* Whether tl is a timeline the replay takes on a device of nv vector and
 * nc cube cores: PLD_OK, or PLD_ERR_ARG with its first fault in msg
 * (where it is, formatted only then: a long run has millions of
 * records). */
int pld__tl_check(const struct pld__timeline *tl, int nv, int nc, char *msg,
                  size_t cap);

/* Puts the records of its steps in the place of each barrier recorded
 * as one record (PLD__TM_BARRIER, core/trace.h) among (*recs)[from, *n)
 * (*cap allocated), which rank of a program of nranks made.  Fails
 * (PLD_ERR_UNSUPPORTED, the reason in msg) on a barrier that rank cannot
 * have made, or out of memory. */
int pld__tl_expand_barriers(struct pld__tl_rec **recs, size_t *n, size_t *cap,
                            size_t from, int32_t rank, int32_t nranks,
                            char *msg, size_t mcap);

/* Modeled time of amounts (the model's arithmetic, shared with tests):
 * cycles at mhz, and bytes at gbps, in picoseconds, rounded up. */
int64_t pld__tl_cycles_ps(int64_t cycles, int64_t mhz);
int64_t pld__tl_bytes_ps(int64_t bytes, int64_t gbps);

#endif
