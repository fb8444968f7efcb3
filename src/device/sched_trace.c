/* device/sched_trace.c: the trace and the debug log (core/trace.h) as
 * hooks of the scheduler (device/sched_hooks.h): the thread that runs a
 * block observes as its core (its lane, its trace buffer) and the block
 * is a span. */
#include "core/trace.h"
#include "device/sched_hooks.h"

/* The thread's own identity while it runs a block as a core, and the
 * block's span if observed. */
static _Thread_local struct {
  struct pld__observer obs;
  struct pld__tev ev;
  int observed;
} me_block;

static void trace_block_begin(void *ctx, void *task,
                              const struct pld__sched_block *b) {
  (void)ctx;
  (void)task;
  me_block.obs = pld__obs;
  pld__observe_as(b->rank, b->device, b->lane, b->tbuf);
  me_block.observed = pld__observed(PLD__TEV_BLOCK);
  if (me_block.observed) {
    struct pld__tev *e = &me_block.ev;
    pld__tev_init(e, PLD__TEV_BLOCK, 0, b->kernel);
    e->a = b->block;
    e->b = b->blocks;
    e->c = b->seq;
    pld__obs_begin(e);
  }
}

static void trace_block_return(void *ctx, void *task,
                               const struct pld__sched_block *b) {
  (void)ctx;
  (void)task;
  (void)b;
  if (me_block.observed)
    pld__obs_end(&me_block.ev);
}

static void trace_block_leave(void *ctx, void *task,
                              const struct pld__sched_block *b) {
  (void)ctx;
  (void)task;
  (void)b;
  pld__obs = me_block.obs;
}

const struct pld__sched_hooks pld__sched_trace_hooks = {
    .name = "trace",
    .block_begin = trace_block_begin,
    .block_return = trace_block_return,
    .block_leave = trace_block_leave,
};
