/* core/race.c: the race detector of core/race.h. */
#include "core/race.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kctx.h"
#include "core/watch.h"

/* Reads a granule remembers (besides its write). */
#define RACE_READS 3
/* Accesses each slot remembers for reports. */
#define RING 1024
/* Signal cells one run may use: STRIPES tables of CELLS / STRIPES, each
 * with its lock. */
#define CELLS 16384
#define STRIPES 64
#define GRANULE 4

struct lock {
  _Atomic uint32_t held;
};

static void stripe_lock(struct lock *l) {
  for (unsigned i = 0;
       atomic_exchange_explicit(&l->held, 1, memory_order_acquire); i++) {
    if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
    }
  }
}

static void stripe_unlock(struct lock *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* One access: a slot's epoch, the bytes of a granule it touched, and its
 * record.  slot 0xffff: none. */
struct ep {
  uint16_t slot;
  uint8_t mask, kind;
  uint32_t clock;
  uint32_t rec;
};

/* A granule: the last write (or atomic add) of each of its bytes (mask
 * 0: none), and reads of some of its bytes not yet ordered before a
 * write of them. */
struct shadow {
  uint32_t gen; /* the run it belongs to: another's is empty */
  struct ep w[GRANULE];
  struct ep r[RACE_READS];
};

/* What a report says of an access. */
struct record {
  uint32_t seq;
  int32_t kind, rank, device, core_type, core, block, blocks, buf, copy;
  uint64_t lo, hi;
  char kernel[32], fn[32], window[32];
};

struct cell {
  uint32_t gen, buf, copy, used;
  uint64_t off;
  struct ep set, add; /* the last Set and Add notified */
  uint32_t vc[];      /* what was released to it */
};

struct pld__race {
  uint32_t nranks, spr, nslots, nbufs;
  uint32_t gen; /* the run */
  size_t cell_stride;
  size_t off_vc, off_clock, off_host, off_cells, off_rings, off_sindex,
      off_slocks;
  struct lock host_lock;
  struct lock stripe[STRIPES];
};

_Thread_local struct pld__race_thread pld__race_me;
/* The block this thread runs (for records). */
static _Thread_local struct pld__core *me_core; /* the block's core */

static unsigned char *region_at(const struct pld__race *r, size_t off) {
  return (unsigned char *)r + off;
}
/* Slot s's vector clock; its clock (epoch counter). */
static _Atomic uint32_t *vc_of(const struct pld__race *r, uint32_t s) {
  return (_Atomic uint32_t *)region_at(r, r->off_vc) + (size_t)s * r->nslots;
}
static _Atomic uint32_t *clock_of(const struct pld__race *r, uint32_t s) {
  return (_Atomic uint32_t *)region_at(r, r->off_clock) + s;
}
static struct record *ring_of(const struct pld__race *r, uint32_t s) {
  return (struct record *)region_at(r, r->off_rings) + (size_t)s * RING;
}
static struct cell *cell_at(const struct pld__race *r, size_t i) {
  return (struct cell *)region_at(r, r->off_cells + i * r->cell_stride);
}
/* The shadow of copy's copy of buf, and its lock. */
static struct shadow *shadow_of(const struct pld__race *r, int buf, int copy) {
  const size_t *index = (const size_t *)region_at(r, r->off_sindex);
  return (struct shadow *)region_at(
      r, index[(size_t)buf * r->nranks + (size_t)copy]);
}
static struct lock *shadow_lock(const struct pld__race *r, int buf, int copy) {
  return (struct lock *)region_at(r, r->off_slocks) +
         ((size_t)buf * r->nranks + (size_t)copy);
}

/* Every part of the region starts on a cache line. */
static size_t up(size_t n) { return pld__round_up(n, 64); }

/* Lays the region out (r NULL: only sizes it).  Returns its bytes. */
static size_t layout(struct pld__race *r, const struct pld__race_shape *s) {
  size_t nslots = (size_t)s->nranks * (size_t)s->slots_per_rank;
  size_t cell_stride = up(sizeof(struct cell) + nslots * sizeof(uint32_t));
  size_t n = up(sizeof(struct pld__race));
  size_t off_vc = n;
  n += up(nslots * nslots * sizeof(uint32_t));
  size_t off_clock = n;
  n += up(nslots * sizeof(uint32_t));
  size_t off_host = n;
  n += up(nslots * sizeof(uint32_t));
  size_t off_cells = n;
  n += CELLS * cell_stride;
  size_t off_rings = n;
  n += up(nslots * RING * sizeof(struct record));
  size_t copies = (size_t)s->nbufs * (size_t)s->nranks;
  size_t off_sindex = n;
  n += up(copies * sizeof(size_t));
  size_t off_slocks = n;
  n += up(copies * sizeof(struct lock));
  for (int b = 0; b < s->nbufs; b++)
    for (int q = 0; q < s->nranks; q++) {
      if (r)
        ((size_t *)((unsigned char *)r +
                    off_sindex))[(size_t)b * (size_t)s->nranks + (size_t)q] = n;
      n += up((s->copy_bytes[b] + GRANULE - 1) / GRANULE *
              sizeof(struct shadow));
    }
  if (r) {
    r->nranks = (uint32_t)s->nranks;
    r->spr = (uint32_t)s->slots_per_rank;
    r->nslots = (uint32_t)nslots;
    r->nbufs = (uint32_t)s->nbufs;
    r->cell_stride = cell_stride;
    r->off_vc = off_vc;
    r->off_clock = off_clock;
    r->off_host = off_host;
    r->off_cells = off_cells;
    r->off_rings = off_rings;
    r->off_sindex = off_sindex;
    r->off_slocks = off_slocks;
  }
  return n;
}

size_t pld__race_bytes(const struct pld__race_shape *s) {
  return layout(NULL, s);
}

/* The region is fresh zeroed memory (an anonymous mapping): only the
 * layout is written. */
void pld__race_init(struct pld__race *r, const struct pld__race_shape *s) {
  layout(r, s);
  r->gen = 1;
}

void pld__race_run_begin(struct pld__race *r) {
  /* The devices are idle: nothing reads these now. */
  for (uint32_t s = 0; s < r->nslots; s++) {
    _Atomic uint32_t *vc = vc_of(r, s);
    for (uint32_t i = 0; i < r->nslots; i++)
      atomic_store_explicit(&vc[i], 0, memory_order_relaxed);
  }
  _Atomic uint32_t *host = (_Atomic uint32_t *)region_at(r, r->off_host);
  for (uint32_t i = 0; i < r->nslots; i++)
    atomic_store_explicit(&host[i], 0, memory_order_relaxed);
  /* Shadows and cells of the last run are empty from now on. */
  atomic_thread_fence(memory_order_release);
  __atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
}

static uint32_t gen_of(const struct pld__race *r) {
  return __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
}

/* dst = max(dst, src) over n shared components. */
static void join_shared(_Atomic uint32_t *dst, const _Atomic uint32_t *src,
                        uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = atomic_load_explicit(&src[i], memory_order_relaxed);
    if (v > atomic_load_explicit(&dst[i], memory_order_relaxed))
      atomic_store_explicit(&dst[i], v, memory_order_relaxed);
  }
}

void pld__race_host_task(struct pld__race *r) {
  _Atomic uint32_t *host = (_Atomic uint32_t *)region_at(r, r->off_host);
  stripe_lock(&r->host_lock);
  for (uint32_t s = 0; s < r->nslots; s++) {
    join_shared(host, vc_of(r, s), r->nslots);
    uint32_t c = atomic_load_explicit(clock_of(r, s), memory_order_relaxed);
    if (c > atomic_load_explicit(&host[s], memory_order_relaxed))
      atomic_store_explicit(&host[s], c, memory_order_relaxed);
  }
  stripe_unlock(&r->host_lock);
}

/* ---- threads ------------------------------------------------------------- */

void pld__race_attach(struct pld__race *r, int rank, int local) {
  pld__race_me.r = r;
  pld__race_me.slot = r ? rank * (int)r->spr + local : 0;
  pld__race_me.block_start = 0;
}

static uint32_t nslots(void) { return pld__race_me.r->nslots; }

uint32_t *pld__race_vc_new(void) {
  return pld__race_on() ? pld__calloc(nslots(), sizeof(uint32_t)) : NULL;
}

void pld__race_vc_free(uint32_t *vc) { pld__free(vc); }

void pld__race_vc_join(uint32_t *dst, const uint32_t *src) {
  if (!dst || !src)
    return;
  for (uint32_t i = 0; i < nslots(); i++)
    if (src[i] > dst[i])
      dst[i] = src[i];
}

void pld__race_vc_clear(uint32_t *vc) {
  if (vc)
    memset(vc, 0, nslots() * sizeof *vc);
}

/* This thread's clock now, then a new epoch. */
static uint32_t tick(void) {
  return atomic_fetch_add_explicit(
             clock_of(pld__race_me.r, (uint32_t)pld__race_me.slot), 1,
             memory_order_relaxed) +
         1;
}

static uint32_t now(void) {
  return atomic_load_explicit(
      clock_of(pld__race_me.r, (uint32_t)pld__race_me.slot),
      memory_order_relaxed);
}

/* into = this thread's clock, its own component its current epoch. */
static void publish_into(uint32_t *into) {
  struct pld__race *r = pld__race_me.r;
  const _Atomic uint32_t *vc = vc_of(r, (uint32_t)pld__race_me.slot);
  for (uint32_t i = 0; i < r->nslots; i++) {
    uint32_t v = atomic_load_explicit(&vc[i], memory_order_relaxed);
    if (v > into[i])
      into[i] = v;
  }
  uint32_t c = now();
  if (c > into[pld__race_me.slot])
    into[pld__race_me.slot] = c;
}

void pld__race_launch(uint32_t *task_start) {
  if (!task_start)
    return;
  publish_into(task_start);
  tick();
}

void pld__race_absorb(const uint32_t *src) {
  struct pld__race *r = pld__race_me.r;
  if (!r || !src)
    return;
  _Atomic uint32_t *vc = vc_of(r, (uint32_t)pld__race_me.slot);
  for (uint32_t i = 0; i < r->nslots; i++)
    if (src[i] > atomic_load_explicit(&vc[i], memory_order_relaxed))
      atomic_store_explicit(&vc[i], src[i], memory_order_relaxed);
}

void pld__race_absorb_host(void) {
  struct pld__race *r = pld__race_me.r;
  if (!r)
    return;
  stripe_lock(&r->host_lock);
  join_shared(vc_of(r, (uint32_t)pld__race_me.slot),
              (_Atomic uint32_t *)region_at(r, r->off_host), r->nslots);
  stripe_unlock(&r->host_lock);
}

void pld__race_block_begin(const uint32_t *start, struct pld__core *core) {
  struct pld__race *r = pld__race_me.r;
  if (!r)
    return;
  me_core = core;
  _Atomic uint32_t *vc = vc_of(r, (uint32_t)pld__race_me.slot);
  for (uint32_t i = 0; i < r->nslots; i++)
    atomic_store_explicit(&vc[i], start ? start[i] : 0, memory_order_relaxed);
  pld__race_me.block_start = tick();
}

void pld__race_block_end(uint32_t *task_end) {
  me_core = NULL;
  if (!pld__race_me.r || !task_end)
    return;
  publish_into(task_end);
  tick();
}

void pld__race_release_into(uint32_t *vc) {
  if (!pld__race_me.r || !vc)
    return;
  publish_into(vc);
  tick();
}

/* ---- records ------------------------------------------------------------- */

static uint32_t record(int kind, const char *fn, const char *window, int buf,
                       int copy, uint64_t lo, uint64_t hi) {
  struct pld__race *r = pld__race_me.r;
  struct record *ring = ring_of(r, (uint32_t)pld__race_me.slot);
  /* One thread at a time writes a slot's ring: the AICPU its own, the
   * thread running a block on a core the core's; the core (or the AICPU
   * thread) numbers the records. */
  static _Thread_local uint32_t aicpu_seq;
  struct pld__core *c = me_core;
  uint32_t n = c ? ++c->race_seq : ++aicpu_seq;
  struct record *x = &ring[n % RING];
  __atomic_store_n(&x->seq, 0, __ATOMIC_RELAXED);
  x->kind = kind;
  x->rank = c ? c->rank : -1;
  x->device = c ? c->device : -1;
  x->core_type = c ? (int32_t)c->spec.type : -1;
  x->core = c ? c->spec.index : -1;
  x->block = c ? c->block_idx : -1;
  x->blocks = c ? c->block_num : 0;
  x->buf = buf;
  x->copy = copy;
  x->lo = lo;
  x->hi = hi;
  pld__name_copy(x->kernel, sizeof x->kernel, c && c->kernel ? c->kernel : "?");
  pld__name_copy(x->fn, sizeof x->fn, fn);
  pld__name_copy(x->window, sizeof x->window, window ? window : "?");
  __atomic_store_n(&x->seq, n, __ATOMIC_RELEASE);
  return n;
}

static const char *kind_name(int kind) {
  return kind == PLD__RACE_READ    ? "read"
         : kind == PLD__RACE_WRITE ? "write"
                                   : "atomic add";
}

/* "by rank 0 (device 0) kernel k on AIV core 0, block 0 of 1 (pld_store,
 * bytes [0, 256))", or what is left of it. */
static size_t describe(char *buf, size_t cap, const struct pld__race *r,
                       const struct ep *e) {
  const struct record *x = &ring_of(r, e->slot)[e->rec % RING];
  struct record c;
  memcpy(&c, x, sizeof c);
  if (__atomic_load_n(&x->seq, __ATOMIC_ACQUIRE) != e->rec || c.seq != e->rec)
    return pld__catf(buf, cap,
                     "by rank %u (core slot %u; the details of that "
                     "access are no longer held)",
                     e->slot / r->spr, e->slot % r->spr);
  c.kernel[sizeof c.kernel - 1] = c.fn[sizeof c.fn - 1] = 0;
  return pld__catf(
      buf, cap,
      "by rank %d (device %d) kernel %s on %s core %d, block %d "
      "of %d (%s, bytes [%llu, %llu))",
      c.rank, c.device, c.kernel,
      c.core_type >= 0 ? pld__core_type_name((pld_core_type)c.core_type) : "?",
      c.core, c.block, c.blocks, c.fn, (unsigned long long)c.lo,
      (unsigned long long)c.hi);
}

/* ---- ordering ------------------------------------------------------------ */

/* Whether e happened before what this thread does now. */
static int ordered(const struct pld__race *r, const struct ep *e) {
  uint32_t me = (uint32_t)pld__race_me.slot;
  uint32_t known =
      atomic_load_explicit(&vc_of(r, me)[e->slot], memory_order_relaxed);
  if (e->slot == me && e->clock >= pld__race_me.block_start)
    return 1; /* this block: program order */
  return e->clock <= known;
}

/* ---- accesses ------------------------------------------------------------ */

static const char *why(int earlier, int now_kind) {
  if (earlier == PLD__RACE_ATOMIC || now_kind == PLD__RACE_ATOMIC)
    return "an atomic add and a plain access to the same bytes with no "
           "signal ordering them";
  if (earlier == PLD__RACE_WRITE && now_kind == PLD__RACE_READ)
    return "no signal orders that write before this read";
  if (earlier == PLD__RACE_READ)
    return "the reader may still be reading these bytes";
  return "two writes to the same bytes with no signal ordering them";
}

static int race_report(const struct pld__race *r, int kind, const char *window,
                       int buf, int copy, uint64_t lo, uint64_t hi,
                       const struct ep *other) {
  char them[512];
  describe(them, sizeof them, r, other);
  return pld__fail(PLD_ERR_RACE,
                   "data race on window '%s' (buffer #%d) of rank %d, bytes "
                   "[%llu, %llu): this %s is not ordered after the %s %s: %s",
                   window ? window : "?", buf, copy, (unsigned long long)lo,
                   (unsigned long long)hi, kind_name(kind),
                   kind_name(other->kind), them, why(other->kind, kind));
}

/* Whether an earlier access e conflicts with one of kind `kind`. */
static int access_conflicts(const struct pld__race *r, const struct ep *e,
                            int kind) {
  if (kind == PLD__RACE_READ && e->kind == PLD__RACE_READ)
    return 0;
  if (kind == PLD__RACE_ATOMIC && e->kind == PLD__RACE_ATOMIC)
    return 0;
  return !ordered(r, e);
}

/* Checks and records one granule; the conflicting access in *bad. */
static int granule(const struct pld__race *r, struct shadow *g, uint32_t gen,
                   int kind, uint8_t mask, const struct ep *mine,
                   struct ep *bad) {
  if (g->gen != gen) {
    memset(g, 0, sizeof *g);
    g->gen = gen;
  }
  for (int b = 0; b < GRANULE; b++)
    if ((mask >> b & 1) && g->w[b].mask &&
        access_conflicts(r, &g->w[b], kind)) {
      *bad = g->w[b];
      return 1;
    }
  if (kind != PLD__RACE_READ)
    for (int i = 0; i < RACE_READS; i++)
      if ((g->r[i].mask & mask) && access_conflicts(r, &g->r[i], kind)) {
        *bad = g->r[i];
        return 1;
      }
  if (kind == PLD__RACE_READ) {
    /* Reads ordered before this one, of bytes it reads too, are covered
     * by it; when every entry holds an unordered read, the oldest goes. */
    int slot = -1;
    for (int i = 0; i < RACE_READS; i++) {
      struct ep *e = &g->r[i];
      if (e->mask && ordered(r, e) && (e->mask & ~mask) == 0)
        e->mask = 0;
      if (!e->mask && slot < 0)
        slot = i;
    }
    if (slot < 0) {
      memmove(&g->r[0], &g->r[1], (RACE_READS - 1) * sizeof g->r[0]);
      slot = RACE_READS - 1;
    }
    g->r[slot] = *mine;
    g->r[slot].mask = mask;
  } else {
    /* Reads and writes of these bytes are ordered before this one. */
    for (int i = 0; i < RACE_READS; i++)
      g->r[i].mask &= (uint8_t)~mask;
    for (int b = 0; b < GRANULE; b++)
      if (mask >> b & 1) {
        g->w[b] = *mine;
        g->w[b].mask = (uint8_t)(1u << b);
      }
  }
  return 0;
}

int pld__race_access(int kind, const char *fn, const char *window, int buf,
                     int copy, size_t off, size_t row_bytes, size_t rows,
                     size_t stride) {
  struct pld__race *r = pld__race_me.r;
  if (!r || !row_bytes || !rows || buf < 0 || (uint32_t)buf >= r->nbufs ||
      copy < 0 || (uint32_t)copy >= r->nranks)
    return PLD_OK;
  uint64_t lo = off, hi = off + (rows - 1) * stride + row_bytes;
  struct ep mine = {(uint16_t)pld__race_me.slot, 0, (uint8_t)kind, now(),
                    record(kind, fn, window, buf, copy, lo, hi)};
  uint32_t gen = gen_of(r);
  struct shadow *sh = shadow_of(r, buf, copy);
  struct lock *l = shadow_lock(r, buf, copy);
  struct ep bad;
  int conflict = 0;
  stripe_lock(l);
  for (size_t row = 0; row < rows && !conflict; row++) {
    size_t b = off + row * stride, e = b + row_bytes;
    for (size_t gi = b / GRANULE; gi * GRANULE < e && !conflict; gi++) {
      size_t g0 = gi * GRANULE;
      uint8_t mask = 0;
      for (size_t k = 0; k < GRANULE; k++)
        if (g0 + k >= b && g0 + k < e)
          mask |= (uint8_t)(1u << k);
      conflict = granule(r, &sh[gi], gen, kind, mask, &mine, &bad);
    }
  }
  stripe_unlock(l);
  return conflict ? race_report(r, kind, window, buf, copy, lo, hi, &bad)
                  : PLD_OK;
}

/* ---- signals ------------------------------------------------------------- */

static size_t stripe_of(int buf, int copy, size_t off) {
  return ((size_t)buf * 1000003u ^ (size_t)copy * 7919u ^ off / 4 * 131u) %
         STRIPES;
}

void pld__race_cell_lock(int buf, int copy, size_t off) {
  stripe_lock(&pld__race_me.r->stripe[stripe_of(buf, copy, off)]);
}

void pld__race_cell_unlock(int buf, int copy, size_t off) {
  stripe_unlock(&pld__race_me.r->stripe[stripe_of(buf, copy, off)]);
}

/* Called with the cell's stripe locked: its entry (NULL: the stripe's
 * table is full). */
static struct cell *cell_find(struct pld__race *r, int buf, int copy,
                              size_t off, uint32_t gen) {
  const size_t per = CELLS / STRIPES, base = stripe_of(buf, copy, off) * per;
  size_t h = (off / 4 + (size_t)copy * 17u + (size_t)buf * 31u) % per;
  for (size_t i = 0; i < per; i++) {
    struct cell *c = cell_at(r, base + (h + i) % per);
    if (c->gen != gen) {
      memset(c, 0, r->cell_stride);
      c->gen = gen;
      c->buf = (uint32_t)buf;
      c->copy = (uint32_t)copy;
      c->off = off;
      return c;
    }
    if (c->buf == (uint32_t)buf && c->copy == (uint32_t)copy && c->off == off)
      return c;
  }
  return NULL;
}

int pld__race_release_locked(const char *fn, const char *window, int buf,
                             int copy, size_t off, int64_t cell, int set) {
  struct pld__race *r = pld__race_me.r;
  uint32_t gen = gen_of(r);
  struct cell *c = cell_find(r, buf, copy, off, gen);
  if (!c)
    return pld__fail(PLD_ERR_UNSUPPORTED,
                     "race check: more than %d signal cells notified in one "
                     "run (or too many in one of its %d tables)",
                     CELLS, STRIPES);
  struct ep mine = {(uint16_t)pld__race_me.slot, 1,
                    (uint8_t)(set ? PLD__RACE_WRITE : PLD__RACE_ATOMIC), now(),
                    record(set ? PLD__RACE_WRITE : PLD__RACE_ATOMIC, fn, window,
                           buf, copy, off, off + 4)};
  int st = PLD_OK;
  struct ep *other = set ? &c->add : &c->set;
  if (other->mask && !ordered(r, other)) {
    char them[512];
    describe(them, sizeof them, r, other);
    st = pld__fail(PLD_ERR_RACE,
                   "signal cell %s[%lld] (buffer #%d) of rank %d: "
                   "PLD_NOTIFY_SET and PLD_NOTIFY_ADD on one cell with no "
                   "signal ordering them: this %s and the %s %s",
                   window ? window : "?", (long long)cell, buf, copy,
                   set ? "set" : "add", set ? "add" : "set", them);
  }
  *(set ? &c->set : &c->add) = mine;
  /* Release: the cell learns this thread's clock. */
  const _Atomic uint32_t *vc = vc_of(r, (uint32_t)pld__race_me.slot);
  for (uint32_t i = 0; i < r->nslots; i++) {
    uint32_t v = atomic_load_explicit(&vc[i], memory_order_relaxed);
    if (v > c->vc[i])
      c->vc[i] = v;
  }
  if (mine.clock > c->vc[pld__race_me.slot])
    c->vc[pld__race_me.slot] = mine.clock;
  tick();
  return st;
}

void pld__race_acquire_locked(int buf, int copy, size_t off, uint32_t *into) {
  struct pld__race *r = pld__race_me.r;
  struct cell *c = cell_find(r, buf, copy, off, gen_of(r));
  if (!c)
    return;
  if (into) {
    for (uint32_t i = 0; i < r->nslots; i++)
      if (c->vc[i] > into[i])
        into[i] = c->vc[i];
    return;
  }
  _Atomic uint32_t *vc = vc_of(r, (uint32_t)pld__race_me.slot);
  for (uint32_t i = 0; i < r->nslots; i++)
    if (c->vc[i] > atomic_load_explicit(&vc[i], memory_order_relaxed))
      atomic_store_explicit(&vc[i], c->vc[i], memory_order_relaxed);
}
