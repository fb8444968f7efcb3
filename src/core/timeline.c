/* core/timeline.c: the timing model's arithmetic and the checks of a
 * timeline before its replay (core/timeline.h). */
#include "core/timeline.h"

#include "core/error.h"
#include "pld/status.h"

int64_t pld__tl_cycles_ps(int64_t cycles, int64_t mhz) {
  return (cycles * 1000000 + mhz - 1) / mhz;
}

int64_t pld__tl_bytes_ps(int64_t bytes, int64_t gbps) {
  return (bytes * 1000 + gbps - 1) / gbps;
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
