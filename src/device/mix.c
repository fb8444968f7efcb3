/* device/mix.c: the calls of pld/mix.h, on the state a mixed block's parts
 * share (device/mix.h).  A push copies the tile into the path (a bounded
 * FIFO per direction, PLD_MIX_SLOTS tiles); a pop takes the oldest into
 * a new tile of the popper's memory.  A part that must wait tells its
 * scheduler (pld__core.on_wait, as a pld_wait does), so that the other
 * parts get threads, and publishes the wait in its watch slot for the
 * deadlock report; the part that ends the wait marks it running again at
 * once, so that the host never sees the block quiet in between. */
#include "device/mix.h"

#include <string.h>

#include "comm/comm.h"
#include "core/alloc.h"
#include "core/futex.h"
#include "core/race.h"
#include "core/timeline.h"
#include "core/tunables.h"
#include "core/watch.h"
#include "tile/tile.h"

int pld__mix_init(struct pld__mix *m, int nvec) {
  memset(m, 0, sizeof *m);
  m->nvec = nvec;
  if (pthread_mutex_init(&m->mu, NULL))
    return PLD_ERR_SYSTEM;
  if (pthread_cond_init(&m->cv, NULL)) {
    pthread_mutex_destroy(&m->mu);
    return PLD_ERR_SYSTEM;
  }
  return PLD_OK;
}

static void pipe_drop(struct pld__mix_pipe *p) {
  for (; p->count > 0; p->count--) {
    struct pld__mix_tile *x = &p->slot[p->head];
    pld__free(x->data);
    pld__race_vc_free(x->vc);
    p->head = (p->head + 1) % PLD_MIX_SLOTS;
  }
}

void pld__mix_release(struct pld__mix *m) {
  for (int v = 0; v < m->nvec; v++) {
    pipe_drop(&m->down[v]);
    pipe_drop(&m->up[v]);
  }
  pthread_cond_destroy(&m->cv);
  pthread_mutex_destroy(&m->mu);
}

int pld__mix_part_failed(struct pld__mix *m, int part) {
  pthread_mutex_lock(&m->mu);
  int none = 0,
      first = atomic_compare_exchange_strong(&m->failed, &none, 1 + part);
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
  return first;
}

int32_t pld_subblock_num(pld_core k) {
  return k.p->mix ? (int32_t)k.p->mix->nvec : 1;
}

int32_t pld_subblock_idx(pld_core k) {
  return k.p->mix && k.p->mix_part > 0 ? k.p->mix_part - 1 : 0;
}

/* "the cube part" or "vector part 1", as a part is named to the user. */
static const char *part_name(int part, char buf[32]) {
  if (part == 0)
    return "the cube part";
  pld__catf(buf, 32, "vector part %d", part - 1);
  return buf;
}

/* The path from the calling part to part `peer` (its_part: the peer's
 * part number), or NULL after failing the call: not a mixed kernel, or
 * no path between the two.  out: the caller sends. */
static struct pld__mix_pipe *pipe_of(struct pld__core *c, const char *fn,
                                     int32_t peer, int out, int *its_part) {
  struct pld__mix *m = c->mix;
  if (!m) {
    pld__kfail(c, PLD_ERR_LEVEL, fn,
               "kernel %s is not a mixed kernel: only the parts of a "
               "PLD_MIX_KERNEL hand tiles to each other",
               c->kernel ? c->kernel : "?");
    return NULL;
  }
  const char *what = out ? "to" : "from";
  if (c->mix_part == 0) {
    if (peer < 0 || peer >= m->nvec) {
      pld__kfail(c, PLD_ERR_ARG, fn,
                 "%s: expected a vector part in [0, %d) for the cube part, "
                 "got %d",
                 what, m->nvec, (int)peer);
      return NULL;
    }
    *its_part = 1 + peer;
    return out ? &m->down[peer] : &m->up[peer];
  }
  if (peer != PLD_MIX_CUBE) {
    pld__kfail(c, PLD_ERR_ARG, fn,
               "%s: expected PLD_MIX_CUBE (%d) for vector part %d (the path "
               "goes between the cube and each vector core), got %d",
               what, PLD_MIX_CUBE, (int)c->mix_part - 1, (int)peer);
    return NULL;
  }
  *its_part = 0;
  return out ? &m->up[c->mix_part - 1] : &m->down[c->mix_part - 1];
}

/* For the timing model: a push (pop 0) or pop into or from path p of m
 * is a notify of its cell of tiles pushed (popped) after a wait for room
 * (for a tile): the path holds PLD_MIX_SLOTS; a push moves its bytes. */
static void model_path(const struct pld__mix *m, struct pld__mix_pipe *p,
                       int pop, size_t bytes) {
  if (!pld__obs.model)
    return;
  const int up = p >= m->up && p < m->up + PLD__MIX_MAX_VEC;
  const int v = (int)(up ? p - m->up : p - m->down);
  const int32_t n = pop ? ++p->popped : ++p->pushed;
  if (pop || n > PLD_MIX_SLOTS)
    pld__obs_model(PLD__TL_WAIT, PLD_WAIT_GE, -1, PLD__MIX_CELL(up, v, !pop),
                   pop ? n : n - PLD_MIX_SLOTS, NULL);
  pld__obs_work(PLD__WORK_MOVE, (int64_t)bytes);
  pld__obs_model(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, -1, PLD__MIX_CELL(up, v, pop),
                 1, NULL);
}

/* Called with m->mu held: part `part`, blocked in pipe p, runs again (its
 * watch slot says so) if p is where it waits; everyone waiting looks. */
static void pipe_moved(struct pld__mix *m, int part,
                       const struct pld__mix_pipe *p) {
  struct pld__core *w = m->part[part];
  if (m->waits_in[part] == p) {
    m->waits_in[part] = NULL;
    if (w->env) {
      struct pld__coreslot *s = &w->env->watch->slots[w->slot];
      atomic_fetch_add(&w->env->watch->running, 1);
      pld__slot_write_begin(s);
      atomic_store_explicit(&s->since_ns, 0, memory_order_relaxed);
      atomic_fetch_add_explicit(&s->resumes, 1, memory_order_relaxed);
      atomic_store_explicit(&s->state, PLD__CORE_RUNNING, memory_order_relaxed);
      pld__slot_write_end(s);
    }
  }
  if (w->env)
    atomic_fetch_add_explicit(&w->env->watch->progress, 1,
                              memory_order_relaxed);
  pthread_cond_broadcast(&m->cv);
}

/* Called with m->mu held: the calling part publishes that it waits in p
 * for part `peer` (pushing: for room) and stops counting as running. */
static void wait_publish(struct pld__core *c, const char *fn,
                         const struct pld__mix_pipe *p, int peer, int pushing) {
  c->mix->waits_in[c->mix_part] = p;
  if (!c->env)
    return;
  static const int64_t none[1] = {0};
  struct pld__coreslot *s = &c->env->watch->slots[c->slot];
  pld__slot_write_begin(s);
  pld__slot_set_wait(s, PLD__WAIT_PIPE, 0, pushing, peer ? peer - 1 : -1, 0,
                     none, fn, 0, 0, 0);
  atomic_store_explicit(&s->since_ns, pld__now_ns(), memory_order_relaxed);
  atomic_store_explicit(&s->state, PLD__CORE_WAITING, memory_order_relaxed);
  pld__slot_write_end(s);
  atomic_fetch_sub(&c->env->watch->running, 1);
}

/* Called with m->mu held, returns with it held: waits until p has room
 * (pushing) or a tile, the calling part blocked meanwhile as any wait
 * (see the top).  Returns PLD_OK or the call's failure (another part
 * failed, the run is stopped). */
static int pipe_wait(struct pld__core *c, const char *fn,
                     struct pld__mix_pipe *p, int peer, int pushing) {
  struct pld__mix *m = c->mix;
  int told = 0, failed = 0;
  uint32_t why = 0;
  for (;;) {
    if (pushing ? p->count < PLD_MIX_SLOTS : p->count > 0)
      break;
    if ((failed = m->failed) != 0)
      break;
    if (c->env &&
        (why = atomic_load_explicit(c->env->abort, memory_order_acquire)))
      break;
    if (!told) {
      /* The thread blocks: the scheduler finds threads for the others. */
      pthread_mutex_unlock(&m->mu);
      if (c->on_wait)
        c->on_wait(c, PLD__WAIT_BLOCK);
      pthread_mutex_lock(&m->mu);
      told = 1;
      continue;
    }
    if (m->waits_in[c->mix_part] != p)
      wait_publish(c, fn, p, peer, pushing);
    /* The timeout only bounds the sleep: the abort word is checked again. */
    struct timespec ts = pld__realtime_after(PLD__MS(PLD_ABORT_POLL_MS));
    int64_t began = c->env ? pld__sleep_begin(&c->env->spin) : 0;
    pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    if (c->env)
      pld__sleep_end(&c->env->spin, began);
    if (c->on_wait) {
      pthread_mutex_unlock(&m->mu);
      c->on_wait(c, PLD__WAIT_WOKE);
      pthread_mutex_lock(&m->mu);
    }
  }
  if (m->waits_in[c->mix_part] == p)
    pipe_moved(m, c->mix_part, p); /* no one else did */
  if (told && c->on_wait) {
    pthread_mutex_unlock(&m->mu);
    c->on_wait(c, PLD__WAIT_RESUME);
    pthread_mutex_lock(&m->mu);
  }
  char pn[32], failer[32];
  if (failed)
    return pld__kfail(c, PLD_ERR_ABORTED, fn,
                      "stopped waiting for %s: %s of the block failed",
                      part_name(peer, pn), part_name(failed - 1, failer));
  if (why)
    return pld__kfail(c,
                      why == PLD__ABORT_DEADLOCK  ? PLD_ERR_DEADLOCK
                      : why == PLD__ABORT_TIMEOUT ? PLD_ERR_TIMEOUT
                                                  : PLD_ERR_ABORTED,
                      fn, "stopped waiting for %s: %s", part_name(peer, pn),
                      why == PLD__ABORT_DEADLOCK  ? "the run deadlocked"
                      : why == PLD__ABORT_TIMEOUT ? "a wait timed out"
                                                  : "another rank failed");
  return PLD_OK;
}

int pld_push_tile(pld_core k, int32_t to, const pld_tile *t) {
  struct pld__core *c = k.p;
  const char *fn = "pld_push_tile";
  if (c->status)
    return c->status;
  int peer;
  struct pld__mix_pipe *p = pipe_of(c, fn, to, 1, &peer);
  if (!p || pld__tile_check(c, fn, "t", t))
    return c->status;
  struct pld__mix *m = c->mix;
  /* From the cube, out of L0C through the fixpipe into a Unified Buffer;
   * from a vector core into the cube's L1. */
  const struct pld__core_spec *dst = &m->part[peer]->spec;
  size_t limit = dst->capacity;
  const char *path = dst->memory;
  if (c->mix_part == 0 && c->spec.l0c < limit) {
    limit = c->spec.l0c;
    path = "L0C";
  }
  if (t->bytes > limit) {
    char ts[64], pn[32];
    pld__tile_str(ts, sizeof ts, t);
    return pld__kfail(c, PLD_ERR_TILE_MEMORY, fn,
                      "t (%s, %zu bytes) does not fit the path to %s: at most "
                      "%zu bytes (the %s)",
                      ts, t->bytes, part_name(peer, pn), limit, path);
  }
  const size_t row = (size_t)t->cols * pld_dtype_size(t->dtype);
  unsigned char *data = pld__malloc(row * (size_t)t->rows);
  if (!data)
    return pld__kfail(c, PLD_ERR_NOMEM, fn, "out of memory for %zu bytes",
                      row * (size_t)t->rows);
  for (int32_t r = 0; r < t->rows; r++)
    memcpy(data + (size_t)r * row, t->data + (size_t)r * t->row_bytes, row);
  uint32_t *vc = pld__race_on() ? pld__race_vc_new() : NULL;
  pld__race_release_into(vc);

  model_path(m, p, 0, row * (size_t)t->rows);
  pthread_mutex_lock(&m->mu);
  int st = pipe_wait(c, fn, p, peer, 1);
  if (!st) {
    p->slot[(p->head + p->count) % PLD_MIX_SLOTS] =
        (struct pld__mix_tile){t->dtype, t->rows, t->cols, data, vc};
    p->count++;
    data = NULL;
    vc = NULL;
    pipe_moved(m, peer, p);
  }
  pthread_mutex_unlock(&m->mu);
  pld__free(data);
  pld__race_vc_free(vc);
  return st;
}

pld_tile *pld_pop_tile(pld_core k, int32_t from, pld_dtype dtype, int32_t rows,
                       int32_t cols) {
  struct pld__core *c = k.p;
  const char *fn = "pld_pop_tile";
  if (c->status)
    return NULL;
  int peer;
  struct pld__mix_pipe *p = pipe_of(c, fn, from, 0, &peer);
  if (!p)
    return NULL;
  struct pld__mix *m = c->mix;
  model_path(m, p, 1, 0);
  pthread_mutex_lock(&m->mu);
  pld_tile *t = NULL;
  if (pipe_wait(c, fn, p, peer, 0))
    goto unlock;
  struct pld__mix_tile *x = &p->slot[p->head];
  if (x->dtype != dtype || x->rows != rows || x->cols != cols) {
    char pn[32];
    pld__kfail(c, PLD_ERR_ARG, fn,
               "expected a %s[%d, %d] tile, got %s[%d, %d] pushed by %s",
               pld_dtype_name(dtype), (int)rows, (int)cols,
               pld_dtype_name(x->dtype), (int)x->rows, (int)x->cols,
               part_name(peer, pn));
    goto unlock;
  }
  if (!(t = pld__tile_alloc(c, fn, dtype, rows, cols)))
    goto unlock;
  const size_t row = (size_t)cols * pld_dtype_size(dtype);
  for (int32_t r = 0; r < rows; r++)
    memcpy(t->data + (size_t)r * t->row_bytes, x->data + (size_t)r * row, row);
  pld__race_absorb(x->vc);
  pld__free(x->data);
  pld__race_vc_free(x->vc);
  p->head = (p->head + 1) % PLD_MIX_SLOTS;
  p->count--;
  pipe_moved(m, peer, p);
unlock:
  pthread_mutex_unlock(&m->mu);
  return t;
}
