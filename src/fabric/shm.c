/* fabric/shm.c: the shared-memory fabric: window copies in one shared
 * region, remote access as plain loads and stores, signals as atomics
 * with futex wake-ups (fabric/shm.h). */
#include "fabric/shm.h"

#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/copy.h"
#include "core/futex.h"
#include "tile/convert.h"

static struct pld__bell *bell_of(unsigned char *region,
                                 const struct pld__winlayout *lay, int rank) {
  return (struct pld__bell *)(region + lay->bells + (size_t)rank * 64);
}

int pld__winlayout_init(struct pld__winlayout *lay, int nranks, int nbufs,
                        const size_t *phys, const unsigned char *member) {
  memset(lay, 0, sizeof *lay);
  lay->nranks = nranks;
  lay->nbufs = nbufs;
  lay->phys = pld__calloc((size_t)(nbufs > 0 ? nbufs : 1), sizeof *lay->phys);
  lay->copy = pld__calloc((size_t)(nbufs > 0 ? nbufs : 1) * (size_t)nranks,
                          sizeof *lay->copy);
  if (!lay->phys || !lay->copy) {
    pld__winlayout_release(lay);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  }
  lay->bells = 0;
  size_t at = pld__round_up((size_t)nranks * 64, 4096);
  for (int b = 0; b < nbufs; b++) {
    lay->phys[b] = phys[b];
    for (int r = 0; r < nranks; r++) {
      size_t *c = &lay->copy[(size_t)b * (size_t)nranks + (size_t)r];
      if (!member[(size_t)b * (size_t)nranks + (size_t)r]) {
        *c = SIZE_MAX;
        continue;
      }
      *c = at;
      /* Each buffer fits a device (the host checked), but many of them
       * over many ranks may not fit an address space. */
      if (phys[b] > SIZE_MAX - 4095 ||
          __builtin_add_overflow(at, pld__round_up(phys[b], 4096), &at)) {
        pld__winlayout_release(lay);
        return pld__fail_api(PLD_ERR_NOMEM,
                             "the window buffers of all ranks need "
                             "more bytes than an address space holds");
      }
    }
  }
  lay->total = at;
  return PLD_OK;
}

void pld__winlayout_release(struct pld__winlayout *lay) {
  pld__free(lay->phys);
  pld__free(lay->copy);
  lay->phys = NULL;
  lay->copy = NULL;
}

static unsigned char *copy_of(struct pld__shm_fabric *f, int buf, int rank) {
  return f->region +
         f->lay->copy[(size_t)buf * (size_t)f->lay->nranks + (size_t)rank];
}

static void *shm_local(struct pld__fabric *fb, int buf) {
  return copy_of((struct pld__shm_fabric *)fb, buf, fb->rank);
}

static int shm_write(struct pld__fabric *fb, int buf, int peer, size_t off,
                     const void *src, size_t n) {
  pld__copy(copy_of((struct pld__shm_fabric *)fb, buf, peer) + off, src, n);
  return PLD_OK;
}

static int shm_read(struct pld__fabric *fb, int buf, int peer, size_t off,
                    void *dst, size_t n) {
  pld__copy(dst, copy_of((struct pld__shm_fabric *)fb, buf, peer) + off, n);
  return PLD_OK;
}

void pld__shm_signal_at(unsigned char *cell, int32_t value, pld_notify_op op,
                        struct pld__bell *bell) {
  int32_t *c = (int32_t *)cell;
  /* Sequentially consistent, so release too: the writes before it are
   * visible to whoever reads the cell with acquire. */
  if (op == PLD_NOTIFY_SET)
    __atomic_store_n(c, value, __ATOMIC_SEQ_CST);
  else
    __atomic_fetch_add(c, value, __ATOMIC_SEQ_CST);
  pld__event_signal(&bell->count, &bell->sleepers, 1);
}

static int shm_accumulate(struct pld__fabric *fb, int buf, int peer, size_t off,
                          const void *src, size_t count, pld_dtype dtype) {
  pld__elems_add_atomic(copy_of((struct pld__shm_fabric *)fb, buf, peer) + off,
                        src, count, dtype);
  return PLD_OK;
}

static int shm_signal(struct pld__fabric *fb, int buf, int peer, size_t off,
                      int32_t value, pld_notify_op op) {
  struct pld__shm_fabric *f = (struct pld__shm_fabric *)fb;
  pld__shm_signal_at(copy_of(f, buf, peer) + off, value, op,
                     bell_of(f->region, f->lay, peer));
  return PLD_OK;
}

/* Every write of this fabric is done when its call returns. */
static int shm_flush(struct pld__fabric *fb, int peer) {
  (void)fb;
  (void)peer;
  return PLD_OK;
}

static int shm_put_signal(struct pld__fabric *fb, int buf, int peer, size_t off,
                          const void *src, size_t n, int sig_buf,
                          size_t sig_off, int32_t value, pld_notify_op op) {
  shm_write(fb, buf, peer, off, src, n);
  return shm_signal(fb, sig_buf, peer, sig_off, value, op);
}

static const void *shm_view(struct pld__fabric *fb, int buf, int peer,
                            size_t off, size_t n) {
  (void)n;
  return copy_of((struct pld__shm_fabric *)fb, buf, peer) + off;
}

static int32_t shm_cell(struct pld__fabric *fb, int buf, size_t off) {
  const int32_t *cell =
      (const int32_t *)(copy_of((struct pld__shm_fabric *)fb, buf, fb->rank) +
                        off);
  return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

static uint32_t shm_events(struct pld__fabric *fb) {
  struct pld__shm_fabric *f = (struct pld__shm_fabric *)fb;
  return atomic_load_explicit(&bell_of(f->region, f->lay, fb->rank)->count,
                              memory_order_acquire);
}

/* Looks at a doorbell between yields of the CPU while polling it, even
 * while every awake thread of the program can have one.  A thread polls
 * here only after its wait's short pre-poll found nothing, so the signal
 * it waits for is late: most often because the rank that sends it is not
 * running, its CPU taken by another program (the awake count knows only
 * this program's threads).  Pausing 256 times before a yield, as other
 * waits do, made bench_comm's 2-rank barrier cost 7 to 8 us instead of
 * 0.25 us in some runs on a 2-CPU machine shared with other programs; a
 * yield with nothing else to run returns at once, and yielding at every
 * look made the quiet barrier slower (0.27-0.35 us against 0.12-0.24). */
#define BELL_LOOKS_PER_YIELD 16

/* The count moves with every signal: the cell needs no watching. */
static void shm_wait_events(struct pld__fabric *fb, uint32_t seen, int buf,
                            size_t off, const struct pld__spin *spin,
                            int64_t timeout_ns) {
  (void)buf;
  (void)off;
  struct pld__shm_fabric *f = (struct pld__shm_fabric *)fb;
  struct pld__bell *b = bell_of(f->region, f->lay, fb->rank);
  struct pld__spin bell = *spin;
  bell.yield_mask = BELL_LOOKS_PER_YIELD - 1;
  pld__event_wait(&b->count, seen, &b->sleepers, &bell, timeout_ns, 1);
}

/* Copies up to this size are zeroed with memset; larger ones have their
 * pages dropped instead, which reads back as zeros: a window of many GiB
 * that a program touches only in part must not be written (and so
 * committed to memory) whole before every run. */
#define ZERO_BY_MEMSET_MAX ((size_t)1 << 20)

void pld__shm_zero_rank(struct pld__shm_fabric *f, int r) {
  const struct pld__winlayout *lay = f->lay;
  for (int b = 0; b < lay->nbufs; b++) {
    size_t c = lay->copy[(size_t)b * (size_t)lay->nranks + (size_t)r];
    if (c == SIZE_MAX)
      continue;
    /* Copies start on pages and own whole pages (winlayout_init). */
    size_t whole = pld__round_up(lay->phys[b], 4096);
    if (lay->phys[b] <= ZERO_BY_MEMSET_MAX ||
        madvise(f->region + c, whole, MADV_REMOVE) != 0)
      memset(f->region + c, 0, lay->phys[b]);
  }
}

void pld__shm_zero_all(struct pld__shm_fabric *f) {
  for (int r = 0; r < f->lay->nranks; r++)
    pld__shm_zero_rank(f, r);
}

void pld__shm_zero_bytes(struct pld__shm_fabric *f, int buf, int r, size_t off,
                         size_t n) {
  if (f->lay->copy[(size_t)buf * (size_t)f->lay->nranks + (size_t)r] !=
      SIZE_MAX)
    memset(copy_of(f, buf, r) + off, 0, n);
}

int32_t pld__shm_peek(struct pld__shm_fabric *f, int buf, int rank,
                      size_t off) {
  const int32_t *cell = (const int32_t *)(copy_of(f, buf, rank) + off);
  return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

void pld__shm_wake_all(struct pld__shm_fabric *f) {
  for (int r = 0; r < f->lay->nranks; r++) {
    struct pld__bell *b = bell_of(f->region, f->lay, r);
    atomic_fetch_add(&b->count, 1);
    pld__futex_wake(&b->count, 1);
  }
}

/* Nothing of a killed rank's process may linger: a count of sleepers on
 * its doorbell would make every later signal to the rank pay a wake-up
 * call for nobody. */
void pld__shm_reset_rank(struct pld__shm_fabric *f, int rank) {
  atomic_store(&bell_of(f->region, f->lay, rank)->sleepers, 0);
}

static const struct pld__fabric_ops shm_ops = {
    .version = PLD__FABRIC_OPS_VERSION,
    .name = "shm",
    .local = shm_local,
    .write = shm_write,
    .read = shm_read,
    .write_later = shm_write, /* done at once */
    .read_later = shm_read,
    .accumulate = shm_accumulate,
    .signal = shm_signal,
    .signal_later = shm_signal, /* lands at once */
    .flush = shm_flush,
    .put_signal = shm_put_signal,
    .view = shm_view,
    .cell = shm_cell,
    .events = shm_events,
    .wait_events = shm_wait_events,
};

void pld__shm_fabric_init(struct pld__shm_fabric *f, unsigned char *region,
                          const struct pld__winlayout *lay, int rank) {
  f->base.ops = &shm_ops;
  f->base.rank = rank;
  f->region = region;
  f->lay = lay;
}
