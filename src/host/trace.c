/* host/trace.c: the trace file (PLD_TRACE, pld_config.trace).  One file
 * per host process, shared by its traced programs: opened at the first
 * traced compile, events appended after each run (every rank's buffers,
 * and the host's), closed with its totals when the last traced program is
 * destroyed - and reopened over its closing lines if another is compiled.
 * Under the MPI fabric every process gathers the events of every rank,
 * and process 0 writes them.  The format: docs/trace-format.md. */
#include "host/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "core/watch.h"
#include "host/backends.h"
#include "host/ctl.h"
#include "host/model.h"
#include "pld/signal.h"

/* Threads of a rank in the file: its AICPU, then its cores' slots; one
 * more flag per rank says its process is named. */
#define LANES (2 + PLD__MAX_CORES)
/* Pids of program k's ranks start at 1 + k * PIDS_PER_PROGRAM. */
#define PIDS_PER_PROGRAM 1000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  FILE *f;
  char *path;
  int64_t epoch;  /* ts 0 */
  long footer_at; /* where the closing lines start, once written */
  int events;     /* written since the file was opened */
  int programs;   /* traced programs alive */
  int next_k;     /* the next traced program's number */
  int runs;
  uint64_t lost;
  uint64_t flows;         /* flow ids given */
  struct pld__tbuf *host; /* the host thread's events */
  pid_t pid;              /* the process that writes it */
} w;

/* ---- JSON ----------------------------------------------------------------
 * Each event is composed in a line buffer by hand (no format strings: the
 * writer runs once per recorded event, after every run) and written with
 * one fwrite. */

struct line {
  char b[1024];
  size_t n;
};

static void put_raw(struct line *l, const char *s) {
  size_t k = strlen(s);
  if (k > sizeof l->b - l->n)
    k = sizeof l->b - l->n;
  memcpy(l->b + l->n, s, k);
  l->n += k;
}

static void put_char(struct line *l, char c) {
  if (l->n < sizeof l->b)
    l->b[l->n++] = c;
}

static void put_int(struct line *l, long long v) {
  char d[24];
  int k = 0;
  unsigned long long u =
      v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do
    d[k++] = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0)
    put_char(l, '-');
  while (k)
    put_char(l, d[--k]);
}

/* The characters of a JSON string, escaped. */
static void put_esc(struct line *l, const char *s) {
  for (; *s; s++) {
    char e[8];
    size_t k = pld__json_char(e, (unsigned char)*s);
    for (size_t i = 0; i < k; i++)
      put_char(l, e[i]);
  }
}

/* A JSON string. */
static void put_str(struct line *l, const char *s) {
  put_char(l, '"');
  put_esc(l, s);
  put_char(l, '"');
}

/* ,"key":<ns as microseconds, three decimals> */
static void put_us(struct line *l, const char *key, int64_t ns) {
  put_raw(l, ",\"");
  put_raw(l, key);
  put_raw(l, "\":");
  if (ns < 0) {
    put_char(l, '-');
    ns = -ns;
  }
  put_int(l, ns / 1000);
  put_char(l, '.');
  put_char(l, (char)('0' + ns / 100 % 10));
  put_char(l, (char)('0' + ns / 10 % 10));
  put_char(l, (char)('0' + ns % 10));
}

/* ,"key":value */
static void put_field(struct line *l, const char *key, long long v) {
  put_raw(l, ",\"");
  put_raw(l, key);
  put_raw(l, "\":");
  put_int(l, v);
}

/* Starts an event's line: {"ph":ph,"pid":..,"tid":..,"ts":.. (the caller
 * adds the rest and ends it). */
static void event_head(struct line *l, const char *ph, int pid, int tid,
                       int64_t t) {
  l->n = 0;
  put_raw(l, "{\"ph\":\"");
  put_raw(l, ph);
  put_char(l, '"');
  put_field(l, "pid", pid);
  put_field(l, "tid", tid);
  put_us(l, "ts", t - w.epoch);
}

static void line_end(struct line *l) {
  fputs(w.events++ ? ",\n" : "\n", w.f);
  fwrite(l->b, 1, l->n, w.f);
}

/* The name and sort index of a process (tid < 0) or thread. */
static void meta(int pid, int tid, const char *what, const char *name) {
  for (int i = 0; i < 2; i++) {
    struct line l = {.n = 0};
    put_raw(&l, "{\"ph\":\"M\"");
    put_field(&l, "pid", pid);
    if (tid >= 0)
      put_field(&l, "tid", tid);
    put_raw(&l, ",\"name\":\"");
    put_raw(&l, what);
    put_raw(&l, i ? "_sort_index\",\"args\":{\"sort_index\":"
                  : "_name\",\"args\":{\"name\":");
    if (i)
      put_int(&l, tid >= 0 ? tid : pid);
    else
      put_str(&l, name);
    put_raw(&l, "}}");
    line_end(&l);
  }
}

/* ---- the file ------------------------------------------------------------ */

static void footer(void);

/* At exit: the closing lines, unless written (only in the process that
 * opened the file: a device process never runs exit hooks, but a child
 * the program forks itself might). */
static void at_exit(void) {
  pthread_mutex_lock(&mu);
  if (w.f && w.footer_at < 0 && w.pid == getpid())
    footer();
  pthread_mutex_unlock(&mu);
}

static int file_open(const char *path) {
  if (w.f && !strcmp(path, w.path)) {
    /* Reopened over the closing lines of the last traced program. */
    if (w.footer_at >= 0) {
      fflush(w.f);
      if (fseek(w.f, w.footer_at, SEEK_SET) != 0 ||
          ftruncate(fileno(w.f), w.footer_at) != 0)
        return pld__fail_api(PLD_ERR_SYSTEM, "trace %s: %s", path,
                             strerror(errno));
      w.footer_at = -1;
    }
    return PLD_OK;
  }
  if (w.f)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "trace: this process writes its trace to "
                         "%s already, got another file %s",
                         w.path, path);
  FILE *f = fopen(path, "w+");
  if (!f)
    return pld__fail_api(PLD_ERR_SYSTEM, "trace: cannot write %s: %s", path,
                         strerror(errno));
  char *dup = pld__malloc(strlen(path) + 1);
  uint32_t cap = (uint32_t)pld__tunables()->PLD_TRACE_EVENTS;
  struct pld__tbuf *host =
      pld__calloc(1, sizeof *host + (size_t)cap * sizeof host->ev[0]);
  if (!dup || !host) {
    fclose(f);
    pld__free(dup);
    pld__free(host);
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory (trace)");
  }
  strcpy(dup, path);
  host->cap = cap;
  memset(&w, 0, sizeof w);
  w.f = f;
  w.path = dup;
  w.host = host;
  w.epoch = pld__now_ns();
  w.footer_at = -1;
  /* A process that ends with traced programs alive (never destroyed) still
   * leaves a whole file. */
  static int hooked;
  if (!hooked && atexit(at_exit) == 0)
    hooked = 1;
  w.pid = getpid();
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  meta(0, -1, "process", "host");
  meta(0, 0, "thread", "host");
  return PLD_OK;
}

static void footer(void) {
  fflush(w.f);
  w.footer_at = ftell(w.f);
  fprintf(w.f,
          "\n],\"otherData\":{\"producer\":\"pld\",\"clock\":"
          "\"CLOCK_MONOTONIC\",\"lost_events\":%llu,\"runs\":%d}}\n",
          (unsigned long long)w.lost, w.runs);
  fflush(w.f);
}

/* ---- events ---------------------------------------------------------------
 */

struct lane {
  int pid, tid, rank; /* rank: world rank, -1 on the host */
  const struct pld__tbuf *b;
  int64_t offset; /* added to its times (another machine's clock) */
};

/* A notify as the matcher sees it. */
struct note {
  int32_t to, buf;
  int64_t off, t;
  long seq; /* its place among the notifies, in lane order */
};

static int note_cmp(const void *a, const void *b) {
  const struct note *x = a, *y = b;
  if (x->to != y->to)
    return x->to < y->to ? -1 : 1;
  if (x->buf != y->buf)
    return x->buf < y->buf ? -1 : 1;
  if (x->off != y->off)
    return x->off < y->off ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* The last notify of (to, buf, off) at or before t, or -1. */
static long note_find(const struct note *v, long n, int32_t to, int32_t buf,
                      int64_t off, int64_t t) {
  long lo = 0, hi = n; /* first element > key */
  struct note key = {to, buf, off, t, 0};
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (note_cmp(&v[mid], &key) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return -1;
  const struct note *c = &v[lo - 1];
  return c->to == to && c->buf == buf && c->off == off ? lo - 1 : -1;
}

static void put_event(const struct lane *l, const struct pld__tev *e, int run,
                      uint64_t flow_in, int64_t flow_in_t) {
  int64_t t0 = e->t0 + l->offset, t1 = e->t1 + l->offset;
  struct line ln;
  /* A wait's or notify's cell, "[4, 1]": in its name and its args. */
  char cell[12 * PLD_MAX_DIMS + 4];
  pld__tev_cell_str(cell, sizeof cell, e);
  if (e->kind == PLD__TEV_NOTIFY) {
    event_head(&ln, "i", l->pid, l->tid, t0);
    put_raw(&ln, ",\"s\":\"t\",\"cat\":\"notify\",\"name\":\"notify ");
    put_esc(&ln, e->name);
    put_raw(&ln, " cell ");
    put_raw(&ln, cell);
    put_raw(&ln, "\",\"args\":{\"peer\":");
    put_int(&ln, e->c);
    put_field(&ln, "to", e->e);
    put_raw(&ln, ",\"window\":");
    put_str(&ln, e->name);
    put_raw(&ln, ",\"cell\":");
    put_raw(&ln, cell);
    put_raw(&ln,
            e->sub == PLD_NOTIFY_SET ? ",\"op\":\"set\"" : ",\"op\":\"add\"");
    put_field(&ln, "value", e->b);
    put_raw(&ln, "}}");
    line_end(&ln);
    return;
  }
  static const char *const cats[PLD__TEV_KINDS] = {
      [PLD__TEV_HOST] = "host",     [PLD__TEV_DISPATCH] = "dispatch",
      [PLD__TEV_LAUNCH] = "launch", [PLD__TEV_BLOCK] = "block",
      [PLD__TEV_WAIT] = "wait",     [PLD__TEV_RMA] = "rma",
      [PLD__TEV_COLL] = "coll"};
  event_head(&ln, "X", l->pid, l->tid, t0);
  put_us(&ln, "dur", t1 - t0);
  put_raw(&ln, ",\"cat\":\"");
  put_raw(&ln, cats[e->kind] ? cats[e->kind] : "?");
  put_raw(&ln, "\",\"name\":");
  /* The name: a prefix, then (escaped) the event's name. */
  const char *prefix = e->kind == PLD__TEV_LAUNCH ? "launch "
                       : e->kind == PLD__TEV_WAIT ? "wait "
                       : e->kind == PLD__TEV_HOST && e->sub == PLD__TH_TASK
                           ? "host task "
                           : "";
  const char *name =
      e->kind == PLD__TEV_HOST && e->sub != PLD__TH_TASK
          ? pld__tev_host_name(e->sub)
      : e->kind == PLD__TEV_RMA ? pld__tev_rma_name(e->sub)
      : e->kind == PLD__TEV_COLL
          ? (pld__coll_name(e->sub) ? pld__coll_name(e->sub) : "?")
          : e->name;
  put_char(&ln, '"');
  put_raw(&ln, prefix);
  put_esc(&ln, name);
  if (e->kind == PLD__TEV_WAIT) {
    put_raw(&ln, " cell ");
    put_raw(&ln, cell);
  }
  put_raw(&ln, "\",\"args\":{");
  switch (e->kind) {
  case PLD__TEV_HOST:
    put_raw(&ln, "\"run\":");
    put_int(&ln, run);
    if (e->x)
      put_field(&ln, "bytes", e->x);
    break;
  case PLD__TEV_DISPATCH:
    put_raw(&ln, "\"run\":");
    put_int(&ln, run);
    put_field(&ln, "call", e->a);
    break;
  case PLD__TEV_LAUNCH:
    put_raw(&ln, "\"kernel\":");
    put_str(&ln, e->name);
    put_field(&ln, "blocks", e->a);
    put_field(&ln, "task", e->b);
    break;
  case PLD__TEV_BLOCK:
    put_raw(&ln, "\"kernel\":");
    put_str(&ln, e->name);
    put_field(&ln, "block", e->a);
    put_field(&ln, "blocks", e->b);
    put_field(&ln, "task", e->c);
    break;
  case PLD__TEV_WAIT:
    put_raw(&ln, "\"window\":");
    put_str(&ln, e->name);
    put_raw(&ln, ",\"cell\":");
    put_raw(&ln, cell);
    put_raw(&ln, ",\"cmp\":\"");
    put_raw(&ln, pld__wait_cmp_str(e->sub));
    put_char(&ln, '"');
    put_field(&ln, "expected", e->b);
    put_field(&ln, "seen", e->c);
    put_raw(&ln, e->flag ? ",\"outcome\":\"stopped\"" : ",\"outcome\":\"ok\"");
    if (e->e && pld__coll_name(e->e)) {
      put_raw(&ln, ",\"coll\":\"");
      put_raw(&ln, pld__coll_name(e->e));
      put_char(&ln, '"');
      put_field(&ln, "call", e->f);
      put_field(&ln, "round", e->g);
    }
    break;
  case PLD__TEV_RMA:
    put_raw(&ln, "\"peer\":");
    put_int(&ln, e->c);
    put_raw(&ln, ",\"window\":");
    put_str(&ln, e->name);
    put_field(&ln, "bytes", e->x);
    break;
  case PLD__TEV_COLL:
    put_raw(&ln, "\"call\":");
    put_int(&ln, e->a);
    put_field(&ln, "rounds", e->b);
    put_field(&ln, "bytes", e->x);
    break;
  }
  put_raw(&ln, "}}");
  line_end(&ln);
  if (flow_in) {
    event_head(&ln, "f", l->pid, l->tid, flow_in_t);
    put_raw(&ln, ",\"bp\":\"e\",\"cat\":\"signal\",\"name\":\"signal\"");
    put_field(&ln, "id", (long long)flow_in);
    put_char(&ln, '}');
    line_end(&ln);
  }
}

/* Writes the events of every lane, with flows from each notify to the
 * recorded waits it released. */
static void put_lanes(const struct lane *lanes, int nlanes, int run) {
  long nnotes = 0, nwaits = 0;
  for (int l = 0; l < nlanes; l++)
    for (uint32_t i = 0; i < lanes[l].b->n; i++) {
      nnotes += lanes[l].b->ev[i].kind == PLD__TEV_NOTIFY;
      nwaits += lanes[l].b->ev[i].kind == PLD__TEV_WAIT;
    }
  struct note *notes = pld__calloc((size_t)nnotes + 1, sizeof *notes);
  uint64_t *note_id = pld__calloc((size_t)nnotes + 1, sizeof *note_id);
  uint64_t *wait_id = pld__calloc((size_t)nwaits + 1, sizeof *wait_id);
  if (notes && note_id && wait_id) {
    long k = 0;
    for (int l = 0; l < nlanes; l++)
      for (uint32_t i = 0; i < lanes[l].b->n; i++) {
        const struct pld__tev *e = &lanes[l].b->ev[i];
        if (e->kind == PLD__TEV_NOTIFY) {
          notes[k] =
              (struct note){e->e, e->d, e->x, e->t0 + lanes[l].offset, k};
          k++;
        }
      }
    qsort(notes, (size_t)k, sizeof *notes, note_cmp);
    long wi = 0;
    for (int l = 0; l < nlanes; l++)
      for (uint32_t i = 0; i < lanes[l].b->n; i++) {
        const struct pld__tev *e = &lanes[l].b->ev[i];
        if (e->kind != PLD__TEV_WAIT)
          continue;
        long at = e->flag ? -1
                          : note_find(notes, k, lanes[l].rank, e->d, e->x,
                                      e->t1 + lanes[l].offset);
        if (at >= 0) {
          uint64_t *id = &note_id[notes[at].seq];
          if (!*id)
            *id = ++w.flows;
          wait_id[wi] = *id;
        }
        wi++;
      }
  }
  long ni = 0, wi = 0;
  for (int l = 0; l < nlanes; l++) {
    const struct lane *ln = &lanes[l];
    for (uint32_t i = 0; i < ln->b->n; i++) {
      const struct pld__tev *e = &ln->b->ev[i];
      if (e->kind >= PLD__TEV_MODEL) /* the timing model's alone */
        continue;
      uint64_t in = 0;
      if (e->kind == PLD__TEV_WAIT)
        in = wait_id ? wait_id[wi++] : 0;
      put_event(ln, e, run, in, e->t1 + ln->offset - (e->t1 > e->t0 ? 1 : 0));
      if (e->kind == PLD__TEV_NOTIFY) {
        uint64_t id = note_id ? note_id[ni] : 0;
        ni++;
        if (id) {
          struct line sl;
          event_head(&sl, "s", ln->pid, ln->tid, e->t0 + ln->offset);
          put_raw(&sl, ",\"cat\":\"signal\",\"name\":\"signal\"");
          put_field(&sl, "id", (long long)id);
          put_char(&sl, '}');
          line_end(&sl);
        }
      }
    }
    if (ln->b->lost) {
      int64_t t = w.epoch; /* after the last event with a time */
      for (uint32_t i = ln->b->n; i-- > 0 && t == w.epoch;)
        if (ln->b->ev[i].kind < PLD__TEV_MODEL)
          t = ln->b->ev[i].t1 + ln->offset;
      struct line sl;
      event_head(&sl, "i", ln->pid, ln->tid, t);
      put_raw(&sl, ",\"s\":\"t\",\"cat\":\"pld\",\"name\":\"events lost\","
                   "\"args\":{\"lost\":");
      put_int(&sl, (long long)ln->b->lost);
      put_raw(&sl, "}}");
      line_end(&sl);
    }
  }
  pld__free(wait_id);
  pld__free(note_id);
  pld__free(notes);
}

/* ---- programs -------------------------------------------------------------
 */

static int lane_named(struct pld_program *p, int r, int tid) {
  unsigned char *n = &p->rs.trace.named[(size_t)r * LANES + (size_t)tid];
  int was = *n;
  *n = 1;
  return was;
}

int pld__trace_config(struct pld_program *p, const pld_config *cfg) {
  static int debug_fd = -1; /* PLD_DEBUG_FILE, opened once */
  const char *dbg = pld__setting(PLD__SET_DEBUG);
  unsigned mask = 0;
  int st = pld__debug_parse("pld_compile", dbg ? dbg : "", &mask);
  if (st)
    return st;
  const char *dfile = pld__setting(PLD__SET_DEBUG_FILE);
  if (mask && dfile && *dfile && debug_fd < 0) {
    debug_fd = open(dfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (debug_fd < 0)
      return pld__fail_api(PLD_ERR_CONFIG,
                           "environment: PLD_DEBUG_FILE='%s': "
                           "cannot write it: %s",
                           dfile, strerror(errno));
  }
  pld__debug_set(mask, debug_fd >= 0 ? debug_fd : 2);

  const char *path = cfg->trace ? cfg->trace : pld__setting(PLD__SET_TRACE);
  if (path && *path) {
    p->rs.trace.named = pld__calloc((size_t)p->plan.nranks, LANES);
    if (!p->rs.trace.named)
      return pld__fail_api(PLD_ERR_NOMEM, "out of memory (trace)");
    pthread_mutex_lock(&mu);
    /* Under mpirun only process 0 writes; the others record and send. */
    if (pld_process_index() == 0)
      st = file_open(path);
    if (!st) {
      p->plan.tracing = 1;
      p->rs.trace.k = w.next_k++;
      w.programs++;
    }
    pthread_mutex_unlock(&mu);
  }
  /* The timing model records in the trace's buffers. */
  if (!st)
    st = pld__model_config(p, cfg);
  p->rs.trace.cap = pld__trace_cap(p);
  return st;
}

uint32_t pld__trace_cap(const struct pld_program *p) {
  const struct pld__tunables *t = pld__tunables();
  int64_t cap = p->plan.tracing ? t->PLD_TRACE_EVENTS : 0;
  int64_t model = (t->PLD_MODEL_RECORDS + PLD__PACK_RECS - 1) / PLD__PACK_RECS;
  if (p->plan.modeling && model > cap)
    cap = model;
  return (uint32_t)cap;
}

/* The host's lane records e (under the writer's lock). */
static void host_store(struct pld_program *p, struct pld__tev *e, int end) {
  if (!p->plan.tracing || !w.host) {
    (end ? pld__obs_end : pld__obs_begin)(e);
    return;
  }
  pthread_mutex_lock(&mu);
  struct pld__observer own = pld__obs;
  pld__obs.buf = end ? w.host : NULL;
  pld__obs.traced = 1;
  pld__obs.model = 0;
  (end ? pld__obs_end : pld__obs_begin)(e);
  pld__obs = own;
  pthread_mutex_unlock(&mu);
}

int pld__htrace_begin(struct pld_program *p, struct pld__tev *e, int sub,
                      const char *name) {
  if (!p->plan.tracing && !(pld__debug_mask & PLD__DBG_HOST))
    return 0;
  pld__tev_init(e, PLD__TEV_HOST, sub, name);
  host_store(p, e, 0);
  return 1;
}

void pld__htrace_end(struct pld_program *p, struct pld__tev *e, int64_t bytes) {
  e->x = bytes;
  host_store(p, e, 1);
}

int pld__trace_prepare(struct pld_program *p) {
  if ((!p->plan.tracing && !p->plan.modeling) || p->rs.trace.area)
    return PLD_OK;
  p->rs.trace.area =
      pld__calloc((size_t)p->plan.nranks, sizeof *p->rs.trace.area);
  p->rs.trace.bytes =
      pld__calloc((size_t)p->plan.nranks, sizeof *p->rs.trace.bytes);
  if (!p->rs.trace.area || !p->rs.trace.bytes)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory "
                                        "(trace)");
  int threads = 1 + p->plan.plat->vector_cores + p->plan.plat->cube_cores;
  size_t bytes = pld__trace_area_bytes(threads, p->rs.trace.cap);
  int me = p->be.cp->caps & PLD__CTL_OWN_RANK ? pld_process_index() : -1;
  for (int r = 0; r < p->plan.nranks; r++) {
    if (me >= 0 && r != me)
      continue;
    /* Shared with the device process under shm; its pages are committed
     * only as events fill them. */
    void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
      return pld__fail_api(PLD_ERR_SYSTEM,
                           "trace: mapping %zu bytes for "
                           "rank %d: %s",
                           bytes, r, strerror(errno));
    p->rs.trace.area[r] = a;
    p->rs.trace.bytes[r] = bytes;
    pld__trace_area_init(a, threads, p->rs.trace.cap, p->plan.tracing,
                         p->plan.modeling);
  }
  return PLD_OK;
}

/* Under mpi: the events of this process's rank, packed (each used
 * buffer's header with cap = n, then its n events), its times moved to
 * process 0's clock. */
static unsigned char *pack(const struct pld__trace_area *a, int64_t offset,
                           size_t *len) {
  size_t n = sizeof(uint32_t);
  for (uint32_t i = 0; i < a->nthreads; i++) {
    const struct pld__tbuf *b = pld__trace_tbuf(a, (int)i);
    n += sizeof *b + (size_t)b->n * sizeof b->ev[0];
  }
  unsigned char *out = pld__malloc(n);
  if (!out)
    return NULL;
  memcpy(out, &a->nthreads, sizeof(uint32_t));
  size_t at = sizeof(uint32_t);
  for (uint32_t i = 0; i < a->nthreads; i++) {
    const struct pld__tbuf *b = pld__trace_tbuf(a, (int)i);
    struct pld__tbuf *c = (struct pld__tbuf *)(out + at);
    memcpy(c, b, sizeof *b + (size_t)b->n * sizeof b->ev[0]);
    c->cap = c->n;
    for (uint32_t j = 0; j < c->n; j++) {
      c->ev[j].t0 -= offset;
      c->ev[j].t1 -= offset;
    }
    at += sizeof *c + (size_t)c->n * sizeof c->ev[0];
  }
  *len = n;
  return out;
}

/* Under mpi, how far this process's clock is ahead of process 0's: 0 on
 * its machine (CLOCK_MONOTONIC is the machine's), else measured once
 * (to within a broadcast's latency). */
static int64_t clock_offset(struct pld_program *p) {
  struct {
    char host[64];
    int64_t now;
  } root;
  memset(&root, 0, sizeof root);
  gethostname(root.host, sizeof root.host - 1);
  char mine[64];
  memcpy(mine, root.host, sizeof mine);
  root.now = pld__now_ns();
  p->be.cp->share(p, 0, &root, sizeof root);
  return strcmp(mine, root.host) ? pld__now_ns() - root.now : 0;
}

/* Rank r's buffers of the run (its AICPU's first) into out[0..LANES - 1):
 * from packed[r] under mpi (NULL: none), else from its trace area.
 * Returns their number. */
static int rank_bufs(const struct pld_program *p, unsigned char *const *packed,
                     int r, struct pld__tbuf **out) {
  unsigned char *at = packed ? packed[r] : NULL;
  const struct pld__trace_area *a =
      !packed && p->rs.trace.area ? p->rs.trace.area[r] : NULL;
  uint32_t nt = 0;
  if (at)
    memcpy(&nt, at, sizeof nt);
  else if (a)
    nt = a->nthreads;
  size_t off = sizeof(uint32_t);
  int n = 0;
  for (uint32_t i = 0; i < nt && i < LANES - 1; i++) {
    if (at) {
      out[n] = (struct pld__tbuf *)(void *)(at + off);
      off += sizeof *out[n] + (size_t)out[n]->n * sizeof out[n]->ev[0];
    } else {
      out[n] = pld__trace_tbuf(a, (int)i);
    }
    n++;
  }
  return n;
}

/* The run's events into the file (under the writer's lock): rank r's
 * buffers are bufs[r * LANES + i], i < nbufs[r]. */
static void write_run(struct pld_program *p, struct pld__tbuf *const *bufs,
                      const int *nbufs) {
  struct lane *lanes =
      pld__calloc((size_t)p->plan.nranks * LANES + 1, sizeof *lanes);
  int nl = 0;
  if (!lanes)
    return;
  lanes[nl++] = (struct lane){0, 0, -1, w.host, 0};
  for (int r = 0; r < p->plan.nranks; r++) {
    int pid = 1 + p->rs.trace.k * PIDS_PER_PROGRAM + r;
    for (int i = 0; i < nbufs[r]; i++) {
      const struct pld__tbuf *b = bufs[(size_t)r * LANES + (size_t)i];
      if (!b->used)
        continue;
      if (!lane_named(p, r, LANES - 1)) {
        char nm[96];
        if (p->rs.trace.k)
          snprintf(nm, sizeof nm, "program %d: rank %d (device %d)",
                   p->rs.trace.k, r, p->plan.device_ids[r]);
        else
          snprintf(nm, sizeof nm, "rank %d (device %d)", r,
                   p->plan.device_ids[r]);
        meta(pid, -1, "process", nm);
      }
      if (!lane_named(p, r, i)) {
        char nm[sizeof b->name + 1];
        pld__name_copy(nm, sizeof nm, b->name);
        meta(pid, i, "thread", nm);
      }
      lanes[nl++] = (struct lane){pid, i, r, b, 0};
    }
  }
  put_lanes(lanes, nl, p->rs.trace.runs);
  for (int l = 0; l < nl; l++)
    w.lost += lanes[l].b->lost;
  pld__free(lanes);
}

/* Under mpi: every process gathers every rank's events, in rank order,
 * into packed[r]. */
static void gather(struct pld_program *p, unsigned char **packed) {
  if (!p->rs.trace.offset_known) {
    p->rs.trace.offset = clock_offset(p);
    p->rs.trace.offset_known = 1;
  }
  int me = pld_process_index();
  for (int r = 0; r < p->plan.nranks; r++) {
    uint64_t len = 0;
    unsigned char *mine = NULL;
    if (r == me) {
      size_t n = 0;
      mine = pack(p->rs.trace.area[r], p->rs.trace.offset, &n);
      len = mine ? n : 0;
    }
    p->be.cp->share(p, r, &len, sizeof len);
    unsigned char *buf = r == me ? mine : len ? pld__malloc(len) : NULL;
    uint64_t got = buf ? len : 0;
    /* Everyone takes part in every broadcast (a process short of memory
     * with none: MPI then reports the truncation). */
    unsigned char scratch[1];
    p->be.cp->share(p, r, buf ? buf : scratch, (size_t)got);
    if (got)
      packed[r] = buf;
    else
      pld__free(buf);
  }
  pld__trace_area_clear(p->rs.trace.area[me]);
}

/* After a run (ran, of arguments argv) or before a program goes: the
 * events recorded since the last drain to the timing model and into the
 * file.  Returns the model's status. */
static int trace_drain(struct pld_program *p, int ran, const pld_arg *argv) {
  if (!p->plan.tracing && !p->plan.modeling)
    return PLD_OK;
  const int n = p->plan.nranks;
  int mpi = (p->be.cp->caps & PLD__CTL_OWN_RANK) != 0;
  unsigned char **packed = NULL;
  struct pld__tbuf **bufs = pld__calloc((size_t)n * LANES, sizeof *bufs);
  struct pld__tbuf *const **rows = pld__calloc((size_t)n, sizeof *rows);
  int *nbufs = pld__calloc((size_t)n, sizeof *nbufs);
  int st = !bufs || !rows || !nbufs
               ? pld__fail_api(PLD_ERR_NOMEM, "out of memory (trace)")
               : PLD_OK;
  if (mpi && p->rs.trace.area) {
    packed = pld__calloc((size_t)n, sizeof *packed);
    if (packed)
      gather(p, packed);
    else if (!st)
      st = pld__fail_api(PLD_ERR_NOMEM, "out of memory (trace)");
  }
  for (int r = 0; r < n && !st; r++) {
    rows[r] = bufs + (size_t)r * LANES;
    nbufs[r] = rank_bufs(p, packed, r, bufs + (size_t)r * LANES);
  }
  if (!st && ran && p->plan.modeling)
    st = pld__model_run_end(p, argv, rows, nbufs);
  pthread_mutex_lock(&mu);
  p->rs.trace.runs += ran && p->plan.tracing;
  w.runs += ran && p->plan.tracing;
  if (p->plan.tracing && w.f && bufs && rows && nbufs) {
    write_run(p, bufs, nbufs);
    fflush(w.f);
  }
  /* The buffers are empty again (their drops counted); a process that
   * does not write drops its host events. */
  if (p->plan.tracing && w.host) {
    w.host->n = 0;
    w.host->lost = 0;
  }
  for (int r = 0; r < n && !packed && p->rs.trace.area; r++)
    if (p->rs.trace.area[r])
      pld__trace_area_clear(p->rs.trace.area[r]);
  pthread_mutex_unlock(&mu);
  for (int r = 0; packed && r < n; r++)
    pld__free(packed[r]);
  pld__free(packed);
  pld__free(bufs);
  pld__free(rows);
  pld__free(nbufs);
  return st;
}

int pld__trace_run_end(struct pld_program *p, const pld_arg *argv) {
  return trace_drain(p, 1, argv);
}

void pld__trace_release(struct pld_program *p) {
  pld__model_release(p);
  if (p->plan.tracing) {
    /* Host events since the last run (a compile that never ran). */
    if (w.host && w.host->n && !(p->be.cp->caps & PLD__CTL_OWN_RANK))
      trace_drain(p, 0, NULL);
    pthread_mutex_lock(&mu);
    if (--w.programs == 0 && w.f)
      footer();
    pthread_mutex_unlock(&mu);
  }
  for (int r = 0; p->rs.trace.area && r < p->plan.nranks; r++)
    if (p->rs.trace.area[r])
      munmap(p->rs.trace.area[r], p->rs.trace.bytes[r]);
  pld__free(p->rs.trace.area);
  pld__free(p->rs.trace.bytes);
  pld__free(p->rs.trace.named);
  memset(&p->rs.trace, 0, sizeof p->rs.trace);
}
