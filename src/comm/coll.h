/* comm/coll.h: what the collectives share (comm/coll_lane.c), inside the
 * comm layer: a call in progress on its lane of the signal window, and
 * the steps every collective takes.  The collectives are built from the
 * comm layer's primitives alone (credit signals, waits, fabric reads and
 * writes), so that every fabric carries them.
 *
 * The signal window is cut into lanes, one per block of the kernel, of
 * PLD_SIGNAL_LANE_CELLS(P) INT32 cells each (P: the domain's size):
 *
 *   [0, P)        credits: cell s counts what rank s signalled this rank
 *                 (added to only; each call takes back what it received);
 *   [P, 2P)       all-to-all-v row counts: cell s is set by rank s;
 *   2P            the number of calls this rank made on the lane;
 *   [2P+1, 2P+4)  zero;
 *   2P+4 on       PLD_COLL_SLOTS slots per rank s, of which call i uses
 *                 slot (i - 1) % PLD_COLL_SLOTS_USED(P), written by rank s:
 *                 its call's descriptor, then up to PLD_COLL_EAGER_BYTES
 *                 of its data for this rank (small calls).
 *
 * A call: check the arguments locally; the entry: send every rank (this
 * one too) the call's descriptor, with the data it needs from this rank
 * if the call is small, and a credit behind it; wait for every credit;
 * compare every rank's descriptor with this one (PLD_ERR_MISMATCH); the
 * algorithm, whose synchronisations are credits too (a small call has
 * what it needs already, and none); the epilogue, which takes back every
 * credit the call waited for, so the lane is zero again.  A faster rank's
 * credits for its later calls come after those of its earlier ones, so
 * they wait in the cells for those calls, and what it sends for them goes
 * in their slots.
 *
 * A deferred call (a small broadcast's, struct coll's `defer`) sends its
 * entry and goes on without waiting for any rank's but the root's: the
 * rest of its entry (every rank's credit, every descriptor compared, the
 * credits taken back) is settled, the oldest first, before the rank's
 * next collective but a deferred one or barrier starts its entry, before
 * a deferred call starts its entry with PLD_COLL_SLOTS_USED(P) / 2 calls left
 * to settle, or at the end of its block (pld__coll_block_end).  Every call
 * has one credit coming from every rank, so a deferred call waits for
 * the root's beyond those of the calls left to settle on the lane.  A
 * rank settles its call n - PLD_COLL_SLOTS_USED(P) / 2 before it sends
 * anything for call n (coll_lane.c, PENDING_MOST), so no rank overwrites
 * a slot that another has not settled. */
#ifndef PLD_COMM_COLL_H
#define PLD_COMM_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "pld/collective.h"
#include "tile/tile.h"

/* The most ranks a domain has: the platform's device ids. */
#define MAX_RANKS 128

/* Cells of a lane (see the top of this file). */
#define CREDIT(s) (s)
#define COUNT(n, s) ((n) + (s))
#define CALLS(n) (2 * (n))
/* A pair uses fewer slots (PLD_COLL_SLOTS_USED): it gains nothing from more
 * small broadcasts in flight, each rank on a CPU of its own (bench_coll:
 * 0.20 us a call with 4 as with 16), and keeps fewer in the cache (1 KiB
 * a call: 0.25 us with 4, 0.34 with 16). */
#define SLOT(n, s, k) (2 * (n) + 4 + (PLD_COLL_SLOTS * (s) + (k)) * SLOT_CELLS)

/* Descriptor words: what a call is and the memory it works on, so that
 * ranks can compare calls (every word but D_GROUP must be equal), and the
 * call's number last.  D_GROUP is what the rank's tile memory lets it
 * reduce at a time: every rank takes the least. */
enum {
  D_WHAT,     /* collective, op, dtype, mode, blocks */
  D_COUNT_LO, /* element count, and the root */
  D_COUNT_HI,
  D_ROWS,     /* all-to-all-v: the target's leading dimension; else
                 what the caller set in struct coll's `rows` */
  D_DATA_BUF, /* the window the call works on: buffer, view offset */
  D_DATA_LO,
  D_DATA_HI,
  D_SIG_BUF, /* the signal window: buffer, view offset */
  D_SIG_LO,
  D_SIG_HI,
  D_GROUP,
  D_CALL,
  D_WORDS
};
_Static_assert(D_WORDS == PLD_COLL_DESC_CELLS, "pld/collective.h says so");

#define SLOT_CELLS (D_WORDS + PLD_COLL_EAGER_BYTES / 4)
_Static_assert(SLOT(1, 1, 0) == PLD_SIGNAL_LANE_CELLS(1) &&
                   SLOT(64, 64, 0) == PLD_SIGNAL_LANE_CELLS(64),
               "a lane holds the slots of every rank");

/* Bytes [off, off + len) of a rank's copy of a window, read ahead. */
struct pld__coll_ahead {
  size_t off, len;
};

/* A call in progress on one lane. */
struct coll {
  struct pld__core *c;
  const char *fn;
  int kind;
  const struct pld__tensor *sig;
  struct pld__fabric *f;
  const struct pld__comm *comm;
  int32_t me, n;
  int32_t lane, lanes;
  size_t base;    /* bytes into the signal's buffer of the lane's cell 0 */
  int32_t *cells; /* the lane's cells in this rank's copy */
  int32_t desc[D_WORDS];
  int32_t slot; /* the slots the call uses: its number modulo
                   PLD_COLL_SLOTS_USED(n) */
  int32_t rows; /* D_ROWS of a call other than all-to-all-v (0 unless set
                   between pld__coll_begin and pld__coll_start) */
  /* A small call: every rank's part for this rank came in its slot; it
   * holds the rank's bytes from byte `eager_off` of the call's window. */
  int eager;
  size_t eager_off;
  /* Tile memory of the call: a staging tile (bytes of the data) and, for
   * reductions, an accumulator (FP32 or INT32, `group` elements). */
  pld_tile *stage, *acc;
  size_t group;
  /* Its span in the trace (core/trace.h), when observed. */
  struct pld__tev ev;
  int observed;
  /* For the timing model: 1 if pld__obs_call_begin was asked, 2 if the
   * call repeats the last and records nothing (coll_repeats). */
  int repeat;
  /* The call goes on without waiting for any rank's entry, which its
   * rank's next collective or barrier, or the end of its block, waits for
   * (a small broadcast's root: see the top of this file). */
  int defer;
  /* Bytes read ahead from peers whose copy the fabric cannot show in
   * place (pld__coll_rank_bytes), of window ahead_w: per rank, a span of
   * at most ahead_room bytes, the spans followed by the rooms (allocated
   * when the call first reads ahead, freed by pld__coll_finish). */
  struct pld__coll_ahead *ahead;
  const struct pld__tensor *ahead_w;
  size_t ahead_room;
  /* Credits from each rank this call waited for: the first n used, and
   * zeroed (last in the struct, so that a call of a few ranks does not
   * clear all MAX_RANKS of them: a barrier of 2 ranks takes about 0.4 us,
   * and clearing 512 bytes is a tenth of it). */
  int32_t exp[MAX_RANKS];
};

/* What a call sends every rank in its entry besides its descriptor: for
 * rank q, `bytes` bytes at src + q * stride (none if bytes is 0). */
struct eager {
  const unsigned char *src;
  size_t bytes, stride;
};

/* Bytes into the signal's buffer of cell `cell` of the call's lane. */
static inline size_t pld__coll_cell_off(const struct coll *cc, int cell) {
  return cc->base + (size_t)cell * sizeof(int32_t);
}

/* Rank q's part of a small call for this rank, from its slot. */
static inline const unsigned char *pld__coll_sent(const struct coll *cc,
                                                  int32_t q) {
  return (const unsigned char *)&cc->cells[SLOT(cc->n, q, cc->slot) + D_WORDS];
}

/* Windows of domains a and b have copies on the same ranks, numbered
 * alike. */
static inline int pld__coll_same_domain(const struct pld__comm *a,
                                        const struct pld__comm *b) {
  return a->nranks == b->nranks &&
         !memcmp(a->members, b->members,
                 (size_t)a->nranks * sizeof a->members[0]);
}

/* This lane's part of n elements: [*lo, *hi). */
static inline void pld__coll_lane_part(const struct coll *cc, int64_t n,
                                       int64_t *lo, int64_t *hi) {
  *lo = n * cc->lane / cc->lanes;
  *hi = n * (cc->lane + 1) / cc->lanes;
}

/* Part c of P parts of [lo, hi). */
static inline void pld__coll_chunk(int64_t lo, int64_t hi, int32_t c, int32_t p,
                                   int64_t *c0, int64_t *c1) {
  *c0 = lo + (hi - lo) * c / p;
  *c1 = lo + (hi - lo) * (c + 1) / p;
}

/* ---- a call's steps (comm/coll_lane.c) ---------------------------------- */

/* Checks a kernel's call: the windows usable from core c, local tensors
 * with data (writes[i]: local i is written), then pld__coll_check; lays
 * out the call's lane of the signal window.  Failures are recorded in c
 * as fn's. */
int pld__coll_begin(struct coll *cc, struct pld__core *c, const char *fn,
                    struct pld__coll_args *a, pld_window sig,
                    const pld_window *windows, int nwindows,
                    const pld_tensor *locals, const int *writes, int nlocals);
/* Reserves the call's tile memory: a staging tile for groups of elements
 * of `es` bytes, and for a reduction an accumulator; groups are at most
 * `most` elements. */
int pld__coll_reserve(struct coll *cc, size_t es, int reduce, int64_t most);
/* Counts the call on window w (the window of its data or target); then
 * the entry (sending ep) and the comparison of every rank's call. */
int pld__coll_start(struct coll *cc, const struct pld__tensor *w, int op,
                    int mode, int root, int64_t count, const struct eager *ep);
/* The end of every call, however it went: the credits back, the tiles
 * freed.  Returns st, or a failure of the epilogue. */
int pld__coll_finish(struct coll *cc, int st);

/* Every rank credits every other rank and waits for every other rank's
 * credit: one round of the call.  _with: with the ranks q for which
 * with[q] is set only (NULL: every rank), who must make the same round
 * with this rank. */
int pld__coll_round(struct coll *cc);
int pld__coll_round_with(struct coll *cc, const unsigned char *with);
/* Adds 1 to my credit cell on rank `to`; waits for one more credit from
 * rank `from` than this call waited for so far. */
int pld__coll_credit(struct coll *cc, int32_t to);
int pld__coll_await(struct coll *cc, int32_t from);
/* pld__coll_await from every other rank. */
int pld__coll_await_all(struct coll *cc);

/* Moving bytes of rank q's copy of window w, `bytes` at byte `off` of the
 * view (this rank's own copy: a local copy), checked by the race detector
 * when it is on: a read into dst, a write from src, and rank q's bytes
 * where they lie (this rank's, a small call's slot, or a peer's the
 * fabric can show in place) or else read into stage (NULL on a failure,
 * recorded).  pld__coll_rank_bytes' `ahead` (at least `bytes`): the
 * bytes from off the caller reads next, which nobody writes before it
 * has: where the fabric cannot show the peer's copy in place, they are
 * read at once, up to a bound, since every read from such a peer costs a
 * round trip (over MPI); the timing model's records of a transfer group
 * are the same either way (core/trace.h merges them per peer). */
int pld__coll_read(struct coll *cc, const struct pld__tensor *w, int32_t q,
                   size_t off, void *dst, size_t bytes);
int pld__coll_write(struct coll *cc, const struct pld__tensor *w, int32_t q,
                    size_t off, const void *src, size_t bytes);
/* src (bytes) into every other rank's copy of w at off, each with a
 * credit to that rank behind it, all issued before the core waits once
 * for them (a broadcast root's push, or a two-phase rank's of its
 * reduced chunk: its transfers share its port at once). */
int pld__coll_push(struct coll *cc, const struct pld__tensor *w, size_t off,
                   const void *src, size_t bytes);
/* Rank q's `bytes` bytes at byte `off` of window w where this rank can
 * read them in place (its own, or a peer's the fabric shows), checked by
 * the race detector; NULL where the fabric cannot show them, or on a race
 * (recorded in the core).  With bytes 0 it only says whether it can:
 * nothing is checked, and the timing model records no transfer. */
const void *pld__coll_view(struct coll *cc, const struct pld__tensor *w,
                           int32_t q, size_t off, size_t bytes);
const void *pld__coll_rank_bytes(struct coll *cc, const struct pld__tensor *w,
                                 int32_t q, size_t off, void *stage,
                                 size_t bytes, size_t ahead);

/* ---- names for messages (comm/coll_check.c) ----------------------------- */

/* "SUM", ...; "auto", "mesh", ...; "?" for others. */
const char *pld__coll_op_name(int op);
const char *pld__coll_mode_name(int mode);

#endif
