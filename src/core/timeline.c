/* core/timeline.c: the timing model's arithmetic and the checks of a
 * timeline before its replay (core/timeline.h). */
#include "core/timeline.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/trace.h"
#include "pld/signal.h"
#include "pld/status.h"

int64_t pld__tl_cycles_ps(int64_t cycles, int64_t mhz) {
  return (cycles * 1000000 + mhz - 1) / mhz;
}

int64_t pld__tl_bytes_ps(int64_t bytes, int64_t gbps) {
  return (bytes * 1000 + gbps - 1) / gbps;
}

/* Record k of the 3 (n - 1) + 2 that a barrier over n ranks on rank r
 * makes by its steps (comm/coll_lane.c), its lane's credits from cell
 * `cell` on: a notify to each peer's credit for r, the flush, a wait on
 * each peer's credit, the credits given back (a put of the lane's n
 * credits to itself) and taken. */
static struct pld__tl_rec barrier_step(int32_t n, int32_t r, int64_t cell,
                                       int32_t k) {
  const int32_t p = n - 1;
  if (k == p)
    return (struct pld__tl_rec){.kind = PLD__TL_FLUSH, .peer = -1};
  if (k == 2 * p + 1)
    return (struct pld__tl_rec){
        .kind = PLD__TL_XFER, .sub = PLD__TL_PUT, .peer = r, .a = 4 * n};
  const int32_t i = k < p ? k : k < 2 * p + 1 ? k - p - 1 : k - 2 * p - 2;
  const int32_t q = i < r ? i : i + 1; /* the i-th peer */
  const int64_t credit = cell + 4 * (int64_t)q;
  if (k < p)
    return (struct pld__tl_rec){.kind = PLD__TL_NOTIFY,
                                .sub = PLD_NOTIFY_ADD,
                                .peer = q,
                                .a = cell + 4 * (int64_t)r,
                                .b = 1};
  if (k < 2 * p + 1)
    return (struct pld__tl_rec){.kind = PLD__TL_WAIT,
                                .sub = PLD_WAIT_GE,
                                .peer = r,
                                .a = credit,
                                .b = 1};
  return (struct pld__tl_rec){
      .kind = PLD__TL_TAKE, .peer = r, .a = credit, .b = 1};
}

int pld__tl_expand_barriers(struct pld__tl_rec **recs, size_t *n, size_t *cap,
                            size_t from, int32_t rank, int32_t nranks,
                            char *msg, size_t mcap) {
  size_t more = 0;
  for (size_t i = from; i < *n; i++) {
    const struct pld__tl_rec *x = &(*recs)[i];
    if (x->kind != PLD__TM_BARRIER)
      continue;
    if (x->peer < 2 || x->peer > nranks || rank < 0 || rank >= x->peer) {
      pld__catf(msg, mcap,
                "rank %d recorded a barrier over ranks 0 to %d, expected "
                "2 to %d ranks with it among them",
                rank, x->peer - 1, nranks);
      return PLD_ERR_UNSUPPORTED;
    }
    more += 3 * (size_t)(x->peer - 1) + 1;
  }
  if (!more)
    return PLD_OK;
  if (*n + more > *cap) {
    struct pld__tl_rec *w = pld__realloc(*recs, (*n + more) * sizeof *w);
    if (!w) {
      pld__catf(msg, mcap, "out of memory");
      return PLD_ERR_NOMEM;
    }
    *recs = w;
    *cap = *n + more;
  }
  /* From the end back, each record to its place, a barrier's last step
   * first. */
  struct pld__tl_rec *v = *recs;
  size_t to = *n + more;
  for (size_t i = *n; i-- > from;) {
    if (v[i].kind != PLD__TM_BARRIER) {
      v[--to] = v[i];
      continue;
    }
    const int32_t ranks = v[i].peer;
    const int64_t cell = v[i].a;
    for (int32_t k = 3 * (ranks - 1) + 2; k-- > 0;)
      v[--to] = barrier_step(ranks, rank, cell, k);
  }
  *n += more;
  return PLD_OK;
}

/* Record r of a block that started *moves moves of PLD__TL_ASYNC before
 * it (counted on). */
static int check_rec(const struct pld__timeline *tl, int cube, int nv, int nc,
                     const struct pld__tl_rec *r, int64_t *moves, char *msg,
                     size_t cap) {
  int peer = r->kind >= PLD__TL_XFER && r->kind != PLD__TL_FLUSH &&
             r->kind != PLD__TL_MOVED;
  if (peer && (r->peer < 0 || r->peer >= tl->nranks)) {
    pld__catf(msg, cap, "peer %d, expected a rank in [0, %d)", r->peer,
              tl->nranks);
    return PLD_ERR_ARG;
  }
  int sub_max[] = {0, PLD__TC_CLASSES - 1, PLD__TL_ASYNC, 7, 0, 1, 5, 5, 0, 0};
  const int flushed = PLD__TL_LATER | PLD__TL_FLUSHED;
  if (r->kind < PLD__TL_COMPUTE || r->kind > PLD__TL_LAST ||
      r->sub > sub_max[r->kind] ||
      (r->kind <= PLD__TL_XFER && (r->a < 0 || r->b < 0)) ||
      (r->kind == PLD__TL_XFER && (r->sub & PLD__TL_FLUSHED) &&
       ((r->sub & flushed) != flushed || r->b < 1))) {
    pld__catf(msg, cap, "a record of kind %d, sub %d, amounts %lld, %lld",
              r->kind, r->sub, (long long)r->a, (long long)r->b);
    return PLD_ERR_ARG;
  }
  if (r->kind == PLD__TL_MOVE && (r->sub & PLD__TL_ASYNC) &&
      r->b != (*moves)++) {
    pld__catf(msg, cap,
              "move number %lld started, expected %lld (the moves "
              "the block started before it)",
              (long long)r->b, (long long)*moves - 1);
    return PLD_ERR_ARG;
  }
  if (r->kind == PLD__TL_MOVED && (r->a < 0 || r->a >= *moves)) {
    pld__catf(msg, cap,
              "a wait for move number %lld, and the block started "
              "%lld",
              (long long)r->a, (long long)*moves);
    return PLD_ERR_ARG;
  }
  if (!(cube ? nc : nv)) {
    pld__catf(msg, cap, "a block of a %s kernel, and the device has none",
              cube ? "cube" : "vector");
    return PLD_ERR_ARG;
  }
  return PLD_OK;
}

int pld__tl_check(const struct pld__timeline *tl, int nv, int nc, char *msg,
                  size_t cap) {
  char why[512];
  for (int32_t q = 0; q < tl->nranks; q++) {
    const struct pld__tl_rank *rk = &tl->ranks[q];
    for (int32_t c = 0; c < rk->ncalls; c++) {
      const struct pld__tl_call *call = &rk->calls[c];
      for (int32_t i = 0; i < call->nafter; i++)
        if (call->after[i].rank < 0 || call->after[i].rank >= tl->nranks ||
            call->after[i].call < 0 ||
            call->after[i].call >= tl->ranks[call->after[i].rank].ncalls) {
          pld__catf(msg, cap,
                    "the timeline: rank %d, call %d: waits for call %d of "
                    "rank %d, which is none",
                    q, c, call->after[i].call, call->after[i].rank);
          return PLD_ERR_ARG;
        }
      for (int32_t k = 0; k < call->ntasks; k++) {
        const struct pld__tl_task *t = &call->tasks[k];
        for (int32_t d = 0; d < t->ndeps; d++)
          if (t->deps[d] < 0 || t->deps[d] >= k) {
            pld__catf(msg, cap,
                      "the timeline: rank %d, call %d: task %d waits for "
                      "task %d, expected an earlier one",
                      q, c, k, t->deps[d]);
            return PLD_ERR_ARG;
          }
        for (int32_t b = 0; b < t->nblocks; b++) {
          int64_t moves = 0;
          for (int32_t i = 0; i < t->blocks[b].nrec; i++)
            if (check_rec(tl, t->cube, nv, nc, &t->blocks[b].rec[i], &moves,
                          why, sizeof why)) {
              pld__catf(msg, cap,
                        "the timeline: rank %d, call %d: task %d, block %d, "
                        "record %d: %s",
                        q, c, k, b, i, why);
              return PLD_ERR_ARG;
            }
        }
      }
    }
  }
  msg[0] = '\0';
  return PLD_OK;
}
