/* core/trace.h: what a run's threads observe of themselves - one event
 * record, two sinks.
 *
 * The sites that matter (a compile, a copy, a dispatch, a launch, a block,
 * a blocked wait, a notify, a transfer, a collective) describe themselves
 * in a struct pld__tev, handed to the thread's observer:
 *   - the trace (PLD_TRACE): the event is stored in the thread's buffer,
 *     which the host turns into Chrome trace-event JSON after each run
 *     (host/trace.c; docs/trace-format.md).  A device's buffers live in
 *     its trace area, memory the host reads (shared with the device
 *     process under shm); each buffer holds PLD_TRACE_EVENTS events per
 *     run and counts those it had to drop.
 *   - the debug log (PLD_DEBUG=<subsystems>): one line per event, prefixed
 *     with rank, device, core and time, on stderr or PLD_DEBUG_FILE.
 * A site asks pld__observed(kind) first: with neither sink on that is a
 * thread-local and a global load, and nothing else runs. */
#ifndef PLD_CORE_TRACE_H
#define PLD_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/timeline.h"
#include "pld/types.h"

/* Event kinds. */
enum {
  PLD__TEV_HOST,     /* host span; sub: PLD__TH_* */
  PLD__TEV_DISPATCH, /* a device function on the AICPU; a: call */
  PLD__TEV_LAUNCH,   /* a launch on the AICPU; a: blocks, b: task */
  PLD__TEV_BLOCK,    /* a block on a core; a: block, b: blocks, c: task */
  PLD__TEV_WAIT,     /* a blocked wait; sub: cmp, flag: stopped, the cell
                        (pld__tev_cell), b: expected, c: seen, d: buffer,
                        x: cell offset; in a collective e: PLD__COLL_*,
                        f: call, g: round */
  PLD__TEV_NOTIFY,   /* instant; sub: op, the cell (pld__tev_cell), b:
                        value, c: domain peer, d: buffer, x: cell offset,
                        e: world peer */
  PLD__TEV_RMA,      /* sub: PLD__TR_*; c: domain peer, x: bytes */
  PLD__TEV_COLL,     /* sub: PLD__COLL_*; a: call, b: rounds, x: bytes */
  PLD__TEV_FABRIC,   /* debug log only: one data-plane call */
  PLD__TEV_MODEL,    /* the timing model only (PLD_MODEL): one record of
                        core/timeline.h, or what the AICPU launched; sub:
                        PLD__TL_* or PLD__TM_*, below */
  PLD__TEV_PACK,     /* the timing model only: sub records of it, packed
                        (rec, struct pld__mrec); flag 1 once closed */
  PLD__TEV_KINDS
};

/* Host spans. */
enum {
  PLD__TH_COMPILE,
  PLD__TH_PREPARE,
  PLD__TH_RUN,
  PLD__TH_COPY_IN,
  PLD__TH_COPY_OUT,
  PLD__TH_TASK
};

/* Transfers. */
enum {
  PLD__TR_PUT,
  PLD__TR_GET,
  PLD__TR_RLOAD,
  PLD__TR_RSTORE,
  PLD__TR_PUT_TILES,
  PLD__TR_GET_TILES,
  PLD__TR_RLOAD_ROWS,
  PLD__TR_RSTORE_ROWS
};

/* What a PLD__TEV_MODEL event records, with sub a record kind of
 * core/timeline.h (PLD__TL_*): flag its sub, e its peer, x its a, b its b
 * (a compute's operations, a notify's value, a wait's expected value).
 * Beyond them, on the AICPU: */
enum {
  PLD__TM_TASK = 16, /* a launch: e the task (a number of the device's), x
                        its number in the dispatch, b its blocks, flag 0
                        on vector cores, 1 on cube cores, 2 + n a mixed
                        kernel's of n vector parts, name the kernel */
  PLD__TM_DEP,       /* task e goes after task x of the dispatch */
  PLD__TM_BLOCK,     /* on a core: block x of task e returned, the
                        records since the core's last one its own; flag
                        0, or 1 + its part of a mixed kernel's block */
  PLD__TM_LOOP,      /* on a core, a folded loop: the e records before it
                        and the e before those are two turns of a loop,
                        and x more turns follow, turn n the later of the
                        two with each a and b advanced by n times its
                        step from the earlier (pld__fold_value); kinds,
                        subs and peers the same */
  PLD__TM_BARRIER    /* on a core, a pld_barrier over ranks 0 to e - 1 of
                        the program, x the cell of its lane's first
                        credit: one record for the records of its steps,
                        which the host puts in its place
                        (pld__tl_expand_barriers) */
};

/* Field value v of turn n of a folded loop (PLD__TM_LOOP) whose two
 * recorded turns had v1, then v2: v2 + n (v2 - v1), wrapping as unsigned
 * arithmetic does, on the recording core and on the host alike. */
static inline int64_t pld__fold_value(int64_t v1, int64_t v2, int64_t n) {
  return (int64_t)((uint64_t)v2 + (uint64_t)n * ((uint64_t)v2 - (uint64_t)v1));
}

/* Names of host spans and transfers (PLD__TH_*, PLD__TR_*; "?" for
 * others), for the log and the trace file. */
const char *pld__tev_host_name(int sub);
const char *pld__tev_rma_name(int sub);

#define PLD__TEV_NAME 40

/* A record of the timing model without a name (all but a launch's), as a
 * PLD__TEV_PACK event holds them: kind a PLD__TL_* or PLD__TM_*, its sub,
 * peer, a and b, as the fields of a PLD__TEV_MODEL event (below).  A
 * loop's records take a quarter of the buffer its events would. */
struct pld__mrec {
  uint8_t kind, sub;
  int32_t peer;
  int64_t a;
  int32_t b;
};
#define PLD__PACK_RECS 4

struct pld__tev {
  int64_t t0, t1; /* CLOCK_MONOTONIC ns; t1 == t0 for an instant */
  uint8_t kind, sub, flag;
  uint8_t ndim; /* a wait's or notify's cell: the dimensions of idx */
  int32_t a;
  union {
    struct {
      int32_t b, c, d, e, f, g;
      int64_t x;
      char name[PLD__TEV_NAME]; /* kernel, function or window */
      /* A wait's or notify's cell: its index in the window view, one
       * number per dimension, as reports name cells ("cell [4, 1]").  A
       * transfer's or collective's span, with the timing model on:
       * idx[0] is where the thread's buffer stood at its beginning. */
      int32_t idx[PLD_MAX_DIMS];
    };
    struct pld__mrec rec[PLD__PACK_RECS]; /* PLD__TEV_PACK: sub of them */
  };
};
_Static_assert(sizeof(struct pld__tev) == 128,
               "PLD_TRACE_EVENTS' help gives an event's size");

/* One thread's events of the current run. */
struct pld__tbuf {
  uint32_t n, cap;
  uint64_t lost;    /* events dropped since the last drain */
  int32_t used;     /* recorded anything since the trace began */
  uint32_t present; /* the pages of events [0, present) are present */
  int16_t trace;    /* records the trace's events (PLD_TRACE) */
  int16_t model;    /* records the timing model's events (PLD_MODEL) */
  char name[24];    /* "AICPU", "AIV core 3" */
  struct pld__tev ev[];
};

/* A device's buffers: its AICPU's, then one per core watch slot. */
struct pld__trace_area {
  uint32_t nthreads, cap;
  size_t stride; /* bytes from one buffer to the next */
};

size_t pld__trace_area_bytes(int nthreads, uint32_t cap);
/* Its buffers record the trace's events (trace), the timing model's
 * (model), or both. */
void pld__trace_area_init(struct pld__trace_area *a, int nthreads, uint32_t cap,
                          int trace, int model);
struct pld__tbuf *pld__trace_tbuf(const struct pld__trace_area *a, int i);
/* Empties every buffer and its count of drops (after the host took
 * their events). */
void pld__trace_area_clear(struct pld__trace_area *a);

/* Debug log subsystems (PLD_DEBUG). */
enum {
  PLD__DBG_LAUNCH = 1,
  PLD__DBG_SIGNAL = 2,
  PLD__DBG_RMA = 4,
  PLD__DBG_COLL = 8,
  PLD__DBG_FABRIC = 16,
  PLD__DBG_HOST = 32,
  PLD__DBG_ALL = 63
};

/* Parses a PLD_DEBUG value ("launch,signal", "all", "" for none) into
 * *mask.  Returns PLD_OK or PLD_ERR_CONFIG with the message naming the
 * word it does not know (fn: the caller, for the message). */
int pld__debug_parse(const char *fn, const char *value, unsigned *mask);
/* Turns the debug log on for this process (and the devices it starts):
 * mask of PLD__DBG_*, written to fd. */
void pld__debug_set(unsigned mask, int fd);

/* What a block did, counted for the diagnostics (PLD_DIAG=stats): the
 * events this thread observes (waits that had to wait and their time,
 * notifies, transfers by PLD__TR_* folded into put, get, remote load and
 * store, collectives and their bytes) and the bytes tiles moved from and
 * to global memory. */
enum { PLD__CNT_PUT, PLD__CNT_GET, PLD__CNT_RLOAD, PLD__CNT_RSTORE };
struct pld__counts {
  int64_t waits, wait_ns, notifies, colls, coll_bytes;
  int64_t rma[4]; /* bytes, PLD__CNT_* */
  int64_t gm_load, gm_store;
};

/* The work a core did since its last record for the timing model:
 * operand bytes or multiply-adds per class of enum pld__tl_class (and
 * bytes moved between global and tile memory last), and operations. */
#define PLD__WORK_MOVE 7
struct pld__work {
  int64_t amount[PLD__WORK_MOVE + 1];
  int32_t ops[PLD__WORK_MOVE + 1];
  int pending;
};

/* The peers of one call's transfers merged per peer (a transfer to one
 * more peer stores those merged so far and begins anew). */
#define PLD__GROUP_PEERS 16

/* The longest turn of a loop that the records fold (PLD__TM_LOOP: a
 * two-phase allreduce or a ring step over 8 ranks is about 100 records a
 * call), the records the folder remembers (a power of 2, at least 3
 * turns), and the bits of the hash that finds a record's last like it. */
#define PLD__FOLD_TURN 128
#define PLD__FOLD_HIST 512
#define PLD__FOLD_HASH_BITS 8

/* A call whose records repeat the last call's (pld__obs_call_begin): the
 * last call's words (PLD__CALL_WORDS, those the call leaves unused 0), whether
 * it was one whole turn of the loop being folded, and where the folder stood
 * when it began (then ended). */
#define PLD__CALL_WORDS 16
struct pld__call_memo {
  int32_t w[PLD__CALL_WORDS];
  int turn; /* the last call was one turn of loop, ending at turns */
  const struct pld__mrec *loop;
  int64_t turns;
  int32_t pos; /* of the turn's records, the one the last call began at
                * (a call of one turn ends there too: one that ends one
                * turn later at another is not one turn, though records
                * between calls may bring the next call's begin there) */
};

/* A core's folder of loops: its last records (hist, by their number),
 * the turn they seem to repeat, and the loop it folds. */
struct pld__fold {
  struct pld__mrec hist[PLD__FOLD_HIST];
  uint64_t seq, base; /* records seen; the first the folder may use */
  /* By a hash of kind, sub, peer and a: the number + 1 of the last such
   * record. */
  uint64_t last[1 << PLD__FOLD_HASH_BITS];
  int32_t k, run; /* a candidate turn of k records, and how many in
                     a row repeat the record k before them */
  /* The loop being folded (lk records a turn, 0: none): its record and
   * the event holding it, the turns it holds (whole ones), where the
   * turn under way stands, and the turn's records as of turn 0
   * with their steps: record j of turn n is turn0[j] with a and b moved
   * on by n steps (pld__fold_at), so that one more turn is one more to
   * turns. */
  int32_t lk, pos;
  int64_t turns;
  uint32_t lev;
  struct pld__mrec *loop;
  struct pld__mrec turn0[PLD__FOLD_TURN];
  int64_t da[PLD__FOLD_TURN], db[PLD__FOLD_TURN];
};

/* Value v0 of turn 0 moved on by n steps of d, wrapping as unsigned
 * arithmetic does. */
static inline int64_t pld__fold_at(int64_t v0, int64_t d, int64_t n) {
  return (int64_t)((uint64_t)v0 + (uint64_t)n * (uint64_t)d);
}

/* Who this thread is, for the debug log's prefix and the trace. */
struct pld__observer {
  struct pld__tbuf *buf;      /* NULL: not tracing */
  struct pld__counts *counts; /* NULL: not counting */
  int rank, device;           /* -1 on the host */
  char lane[16];              /* "AICPU", "AIV3", "host" */
  int traced;                 /* buf records the trace's events */
  int model;                  /* buf records the timing model's events
                                 (and the dispatches, which end calls) */
  int32_t group, groups;      /* transfers of one call (PLD__TEV_MODEL) */
  /* The transfers of group pgroup not stored yet, one per peer and sub,
   * merged while nothing else is recorded: stored as they came before
   * any other record, at the group's end, or when one more peer finds
   * no room.  Stored whole, they fold as any other record. */
  struct pld__mrec pend[PLD__GROUP_PEERS];
  int32_t npend, pgroup;
  struct pld__work work;
  struct pld__fold fold;
  struct pld__call_memo call;
  /* The thread's last record if it is a transfer issued later (hold):
   * held back, since a flush right after it makes it PLD__TL_FLUSHED,
   * and the same transfer repeated and flushed adds to its count; stored
   * whole before the next other record or event.  again: the same
   * transfer issued once more since, not stored, which its flush makes
   * one more repetition of held (pld__obs_repeat). */
  struct pld__mrec held;
  int hold, again;
  /* A call that may repeat records its steps (pld__obs_call_new): no loop
   * begins inside it, where a loop of its own steps (a ring's) would end
   * within the call and take the folder from the loop of calls; one may
   * begin at its end. */
  int in_call;
};
extern _Thread_local struct pld__observer pld__obs;
extern unsigned pld__debug_mask;

/* The subsystem of each event kind. */
extern const unsigned pld__tev_subsystem[PLD__TEV_KINDS];

static inline int pld__observed(int kind) {
  return pld__obs.traced || pld__obs.counts ||
         (pld__debug_mask & pld__tev_subsystem[kind]) ||
         (pld__obs.model && kind == PLD__TEV_DISPATCH);
}

/* Whether the timing model alone observes the thread (no trace, counts
 * or debug log, whose events stand between a call's records): then a
 * call may record less than its steps (a barrier, a repeated call). */
static inline int pld__obs_model_alone(void) {
  return pld__obs.model && !pld__obs.traced && !pld__obs.counts &&
         !pld__debug_mask;
}

/* The core computed: amount (operand bytes, or multiply-adds for the
 * cube's classes) of class cls (enum pld__tl_class), in ops operations
 * (pld__obs_work: in one). */
static inline void pld__obs_work_ops(int cls, int64_t amount, int32_t ops) {
  if (pld__obs.model) {
    pld__obs.work.amount[cls] += amount;
    pld__obs.work.ops[cls] += ops;
    pld__obs.work.pending = 1;
  }
}

static inline void pld__obs_work(int cls, int64_t amount) {
  pld__obs_work_ops(cls, amount, 1);
}

/* A tile moved bytes from (store 0) or to (store 1) global memory. */
static inline void pld__obs_gm(int store, size_t bytes) {
  struct pld__counts *n = pld__obs.counts;
  if (n)
    *(store ? &n->gm_store : &n->gm_load) += (int64_t)bytes;
  pld__obs_work(PLD__WORK_MOVE, (int64_t)bytes);
}

/* The transfers the thread makes until pld__obs_group_end are one
 * call's: one transfer per peer for the timing model. */
static inline void pld__obs_group_begin(void) {
  if (pld__obs.model)
    pld__obs.group = ++pld__obs.groups;
}

/* Whether the thread's folder is in a loop with nothing pending or held
 * back (at any record of its turn: where a loop's turn begins depends on
 * where its repetition was first seen, not on where a call begins). */
static inline int pld__obs_in_loop(void) {
  const struct pld__observer *o = &pld__obs;
  const struct pld__fold *f = &o->fold;
  return f->lk && o->buf->n == f->lev + 1 && !o->work.pending && !o->npend &&
         !o->hold && !o->again && !o->group;
}

/* The call that begins does not repeat the last: its words are
 * remembered, and where the folder stands (core/trace.c). */
void pld__obs_call_new(const int32_t *w);
/* The call that did not repeat the last ends (st: its status). */
void pld__obs_call_ended(int st);

/* A call the caller knows by the words w (every argument its records
 * depend on; PLD__CALL_WORDS of them, those it needs not 0) begins: returns 1
 * if the last call had the same words and its records were exactly one turn of
 * the loop the records fold (from whichever of the turn's records it began at),
 * which this call's records repeat, stepped alike; then the call records
 * nothing (the model is muted until pld__obs_call_end), and its end counts one
 * more turn.  Only where nothing but the model observes the thread.  Inline: a
 * loop of short collectives asks at every call. */
static inline int pld__obs_call_begin(const int32_t w[PLD__CALL_WORDS]) {
  struct pld__observer *o = &pld__obs;
  const struct pld__call_memo *m = &o->call;
  const struct pld__fold *f = &o->fold;
  int same = m->turn && m->loop == f->loop && m->turns == f->turns &&
             m->pos == f->pos && pld__obs_model_alone() && pld__obs_in_loop();
  if (same) { /* (all the words, without a branch for each) */
    uint32_t d = 0;
    for (int i = 0; i < PLD__CALL_WORDS; i++)
      d |= (uint32_t)(m->w[i] ^ w[i]);
    same = !d;
  }
  if (same)
    o->model = 0;
  else
    pld__obs_call_new(w);
  return same;
}

/* The call that began ends (st: its status; skipped: what
 * pld__obs_call_begin returned). */
static inline void pld__obs_call_end(int skipped, int st) {
  struct pld__observer *o = &pld__obs;
  struct pld__fold *f = &o->fold;
  if (!skipped) {
    pld__obs_call_ended(st);
    return;
  }
  o->model = 1; /* one more turn */
  f->loop->a = ++f->turns;
  o->call.turn = !st;
  o->call.turns = f->turns;
}

/* Stores the group's transfers held back (pld__obs.pend). */
void pld__obs_group_store(void);

static inline void pld__obs_group_end(void) {
  pld__obs.group = 0;
  if (pld__obs.npend)
    pld__obs_group_store();
}

/* A record of the timing model (the thread's work so far goes first):
 * kind a PLD__TL_* or PLD__TM_*, its sub, peer, a and b; with a name (a
 * launch), an event of its own (PLD__TEV_MODEL), else packed
 * (PLD__TEV_PACK).  A transfer of the group in course (pld__obs.group,
 * nonzero) is held back and added to the group's earlier one with the
 * same peer and sub while the group's records are all transfers: one
 * call's rows, or a collective step's pieces from alternating peers, are
 * one transfer per peer.  A flush right after a transfer issued later
 * makes it PLD__TL_FLUSHED, one more repetition of the record before it
 * if that is the same. */
void pld__obs_record(int kind, int sub, int32_t peer, int64_t a, int32_t b,
                     const char *name);

/* Whether the record is the next of the loop the thread's records fold
 * (then counted, not stored; core/trace.c): the recorder's fast path. */
static inline int pld__fold_next(int kind, int sub, int32_t peer, int64_t a,
                                 int32_t b) {
  struct pld__fold *f = &pld__obs.fold;
  const int32_t j = f->pos;
  const struct pld__mrec *x = &f->turn0[j];
  if (!f->lk || x->kind != kind || x->sub != sub || x->peer != peer ||
      pld__fold_at(x->a, f->da[j], f->turns) != a ||
      pld__fold_at(x->b, f->db[j], f->turns) != b ||
      pld__obs.buf->n != f->lev + 1)
    return 0;
  if (++f->pos == f->lk) {
    f->pos = 0;
    f->loop->a = ++f->turns;
  }
  return 1;
}

/* Whether a transfer (sub, with peer, of a bytes), flushed, would be one
 * more repetition of the transfer held back, r. */
static inline int pld__obs_held_again(const struct pld__mrec *r, int sub,
                                      int32_t peer, int64_t a) {
  return peer == r->peer && !(sub & PLD__TL_FLUSHED) &&
         (sub | PLD__TL_FLUSHED) == r->sub && a == r->a && r->b < INT32_MAX;
}

/* Whether the record is the next step of a loop of plain puts or gets
 * (then counted, not stored): the transfer that the held one (of
 * PLD__TL_FLUSHED) repeats (held back in again), or the flush after it,
 * which makes it one more repetition of it.  Called with no work
 * pending. */
static inline int pld__obs_repeat(int kind, int sub, int32_t peer, int64_t a) {
  struct pld__observer *o = &pld__obs;
  struct pld__mrec *r = &o->held;
  if (!o->hold || peer != r->peer)
    return 0;
  if (!o->again) {
    if (kind != PLD__TL_XFER || !pld__obs_held_again(r, sub, peer, a))
      return 0;
    o->again = 1;
    return 1;
  }
  if (kind != PLD__TL_FLUSH)
    return 0;
  r->b++;
  o->again = 0;
  return 1;
}

/* Whether a plain transfer (sub: PLD__TL_PUT or _GET, | PLD__TL_LATER) of
 * a bytes with peer, then its flush, would be one more repetition of the
 * transfer held back: pld__obs_repeat's two steps in one test, so that a
 * loop of plain puts or gets costs its records that test and
 * pld__obs_xfer_repeated once each transfer is done. */
static inline int pld__obs_xfer_repeats(int sub, int32_t peer, int64_t a) {
  return pld__obs.model && pld__obs.hold && !pld__obs.again &&
         !pld__obs.work.pending && !pld__obs.npend &&
         pld__obs_held_again(&pld__obs.held, sub, peer, a);
}

static inline void pld__obs_xfer_repeated(void) { pld__obs.held.b++; }

static inline void pld__obs_model(int kind, int sub, int32_t peer, int64_t a,
                                  int32_t b, const char *name) {
  if (!pld__obs.model)
    return;
  /* (A transfer of a group, or one issued later, is held back first.) */
  if (!name && !pld__obs.work.pending && !pld__obs.npend &&
      ((!pld__obs.hold &&
        !(kind == PLD__TL_XFER && (pld__obs.group || sub & PLD__TL_LATER)) &&
        pld__fold_next(kind, sub, peer, a, b)) ||
       pld__obs_repeat(kind, sub, peer, a)))
    return;
  pld__obs_record(kind, sub, peer, a, b, name);
}

/* A tile's load of bytes from global memory that the core starts and
 * waits for later (pld_prefetch), its number n among the block's; then
 * pld__obs_moved(n) where the core waits for it. */
static inline void pld__obs_gm_async(size_t bytes, int32_t n) {
  struct pld__counts *c = pld__obs.counts;
  if (c)
    c->gm_load += (int64_t)bytes;
  if (pld__obs.model)
    pld__obs_model(PLD__TL_MOVE, PLD__TL_ASYNC, 0, (int64_t)bytes, n, NULL);
}

static inline void pld__obs_moved(int32_t n) {
  if (pld__obs.model)
    pld__obs_model(PLD__TL_MOVED, 0, 0, n, 0, NULL);
}

/* Adds every count of b into a. */
void pld__counts_add(struct pld__counts *a, const struct pld__counts *b);

/* Sets this thread's identity and buffer (lane: as in the debug log);
 * it records the timing model's events if the buffer does. */
void pld__observe_as(int rank, int device, const char *lane,
                     struct pld__tbuf *buf);

/* The event's start is now (t0): logs it as begun where the debug log
 * shows beginnings (blocks, waits, dispatches). */
void pld__obs_begin(struct pld__tev *e);
/* The event ended now (t1): stored in the trace and logged. */
void pld__obs_end(struct pld__tev *e);
/* An instant (notify). */
void pld__obs_instant(struct pld__tev *e);

/* An event of kind and sub named name (truncated), its other fields 0:
 * the caller sets those it has, then begins or ends it. */
void pld__tev_init(struct pld__tev *e, int kind, int sub, const char *name);
/* Sets the cell of a wait or notify: `linear`, the cell's place in a
 * window view of ndim dimensions `shape`, becomes its index (a: linear,
 * ndim and idx). */
void pld__tev_cell(struct pld__tev *e, int ndim, const int64_t *shape,
                   int64_t linear);
/* "[4, 1]": the cell's index (a JSON array too). */
size_t pld__tev_cell_str(char *buf, size_t cap, const struct pld__tev *e);

/* One data-plane call for the debug log (fabric subsystem). */
void pld__obs_fabric(const char *what, int buf, int peer, size_t off, size_t n);

#endif
