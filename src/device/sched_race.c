/* device/sched_race.c: the race detector (core/race.h) as hooks of the
 * scheduler (device/sched_hooks.h): a task's clocks (what its blocks start
 * from, and the join of their ends), a block's thread seen as its core,
 * and the join of finished tasks the AICPU learns after its drain. */
#include "core/alloc.h"
#include "core/race.h"
#include "device/sched_hooks.h"

/* The scheduler's state: the region, and the join of finished tasks. */
struct race_sched {
  struct pld__race *r;
  uint32_t *finished;
};

/* A task's clocks. */
struct race_task {
  uint32_t *start, *end;
};

/* The thread's own identity while it runs a block as a core. */
static _Thread_local struct pld__race_thread saved;

static int race_open(const struct pld__comm_env *env, int rank, void **ctx) {
  (void)rank;
  struct race_sched *rs = pld__calloc(1, sizeof *rs);
  /* Made on the AICPU's thread, which the race detector knows by now. */
  if (!rs || !(rs->finished = pld__race_vc_new())) {
    pld__free(rs);
    return PLD_ERR_NOMEM;
  }
  rs->r = env->race;
  *ctx = rs;
  return PLD_OK;
}

static void race_close(void *ctx) {
  struct race_sched *rs = ctx;
  if (!rs)
    return;
  pld__race_vc_free(rs->finished);
  pld__free(rs);
}

static void race_task_free(void *ctx, void *task) {
  (void)ctx;
  struct race_task *rt = task;
  if (!rt)
    return;
  pld__race_vc_free(rt->start);
  pld__race_vc_free(rt->end);
  pld__free(rt);
}

static int race_task_new(void *ctx, void **task) {
  struct race_task *rt = pld__calloc(1, sizeof *rt);
  if (!rt || !(rt->start = pld__race_vc_new()) ||
      !(rt->end = pld__race_vc_new())) {
    race_task_free(ctx, rt);
    return PLD_ERR_NOMEM;
  }
  /* Its blocks start from what the AICPU knows at the launch. */
  pld__race_launch(rt->start);
  *task = rt;
  return PLD_OK;
}

static void race_task_after(void *ctx, void *task, const void *before) {
  (void)ctx;
  pld__race_vc_join(((struct race_task *)task)->start,
                    ((const struct race_task *)before)->end);
}

static void race_task_done(void *ctx, void *task) {
  pld__race_vc_join(((struct race_sched *)ctx)->finished,
                    ((struct race_task *)task)->end);
}

static void race_block_begin(void *ctx, void *task,
                             const struct pld__sched_block *b) {
  saved = pld__race_me;
  pld__race_attach(((struct race_sched *)ctx)->r, b->rank, 1 + b->core->slot);
  pld__race_block_begin(((struct race_task *)task)->start, b->core);
}

static void race_block_end(void *ctx, void *task,
                           const struct pld__sched_block *b) {
  (void)ctx;
  (void)b;
  pld__race_block_end(((struct race_task *)task)->end);
}

static void race_block_leave(void *ctx, void *task,
                             const struct pld__sched_block *b) {
  (void)ctx;
  (void)task;
  (void)b;
  pld__race_me = saved;
}

static uint32_t *race_wait_into(void *ctx, void *task) {
  (void)ctx;
  return ((struct race_task *)task)->end;
}

static void race_drained(void *ctx) {
  struct race_sched *rs = ctx;
  pld__race_absorb(rs->finished);
  pld__race_vc_clear(rs->finished);
}

const struct pld__sched_hooks pld__sched_race_hooks = {
    .name = "race",
    .open = race_open,
    .close = race_close,
    .task_new = race_task_new,
    .task_free = race_task_free,
    .task_after = race_task_after,
    .task_done = race_task_done,
    .block_begin = race_block_begin,
    .block_end = race_block_end,
    .block_leave = race_block_leave,
    .wait_into = race_wait_into,
    .drained = race_drained,
};
