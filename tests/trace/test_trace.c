/* The trace writer (host/trace.c), checked by reading the file it writes
 * (docs/trace-format.md: one event a line) against what the programs'
 * structure makes them record:
 *   - at the event cap (PLD_TRACE_EVENTS; test_trace.test_cap_per_lane
 *     runs with the default, test_trace.test_cap_per_lane.cap16 with the
 *     smallest cap): a lane keeps at most the cap per run, and exactly the
 *     cap in a run it lost events in; kept plus lost is what the program
 *     records, run after run, on the host's lane too; every lane is one the
 *     format names;
 *   - flows on a window whose domain leaves rank 0 out: each wait that
 *     ended is joined to the last notify of its cell at or before its end,
 *     on the rank it waits on (world ranks, not domain ranks);
 *   - a notify and a wait stamped at the same nanosecond: joined.
 * A case reads only what the file gained since it began: a process has one
 * trace file, shared by its programs. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pld_test.h"
#include "../host/programs.h"
#include "core/futex.h"
#include "core/tunables.h"
#include "host/trace.h"

static int ids[16];

/* ---- reading the file ---------------------------------------------------- */

struct tev {
  char ph;
  int pid, tid;
  int64_t ts, dur; /* nanoseconds */
  long long id, lost, to;
  char cell[32]; /* a wait's or notify's, "[3]": its index */
  char cat[16], name[48], window[32], outcome[12], meta[48];
};

struct trace {
  struct tev *ev;
  int n;
  long long lost_events, runs; /* otherData's, since the mark */
};

/* Where a case's part of the file starts, and otherData's totals then. */
struct mark {
  long offset;
  long long lost_events, runs;
};

/* The text after "key": in s, or NULL. */
static const char *value_of(const char *s, const char *key) {
  char pat[40];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = s ? strstr(s, pat) : NULL;
  return p ? p + strlen(pat) : NULL;
}

static long long int_of(const char *s, const char *key) {
  const char *v = value_of(s, key);
  return v ? strtoll(v, NULL, 10) : -1;
}

/* A time in microseconds with up to three decimals, as nanoseconds. */
static int64_t ns_of(const char *s, const char *key) {
  const char *v = value_of(s, key);
  if (!v)
    return -1;
  char *end;
  int64_t ns = (int64_t)strtoll(v, &end, 10) * 1000;
  if (*end == '.')
    for (int i = 1, scale = 100; scale && end[i] >= '0' && end[i] <= '9';
         i++, scale /= 10)
      ns += (end[i] - '0') * scale;
  return ns;
}

/* An array of numbers, as written: "[4, 1]". */
static void array_of(const char *s, const char *key, char *out, size_t cap) {
  const char *v = value_of(s, key);
  size_t n = 0;
  if (v && *v == '[')
    for (; *v && n + 1 < cap; v++) {
      out[n++] = *v;
      if (*v == ']')
        break;
    }
  out[n] = 0;
}

/* A string value (the writer escapes none of the names used here). */
static void str_of(const char *s, const char *key, char *out, size_t cap) {
  const char *v = value_of(s, key);
  size_t n = 0;
  if (v && *v == '"')
    for (v++; *v && *v != '"' && n + 1 < cap; v++)
      out[n++] = *v;
  out[n] = 0;
}

static struct mark trace_mark(const char *path) {
  struct mark m = {0, 0, 0};
  FILE *f = fopen(path, "r");
  if (!f)
    return m;
  char *line = NULL;
  size_t cap = 0;
  long at = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (strstr(line, "\"otherData\"")) {
      /* The writer goes on where its closing lines began. */
      m.offset = at - 1;
      m.lost_events = int_of(line, "lost_events");
      m.runs = int_of(line, "runs");
    }
    at += len;
  }
  free(line);
  fclose(f);
  return m;
}

static void trace_read(const char *path, const struct mark *m,
                       struct trace *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_int_equal(fseek(f, m->offset, SEEK_SET), 0);
  char *line = NULL;
  size_t cap = 0;
  int room = 0;
  t->lost_events = t->runs = -1;
  while (getline(&line, &cap, f) > 0) {
    if (strstr(line, "\"otherData\"")) {
      t->lost_events = int_of(line, "lost_events") - m->lost_events;
      t->runs = int_of(line, "runs") - m->runs;
      continue;
    }
    if (line[0] != '{' || !value_of(line, "ph"))
      continue;
    if (t->n == room) {
      room = room ? 2 * room : 1024;
      t->ev = realloc(t->ev, (size_t)room * sizeof *t->ev);
      assert_non_null(t->ev);
    }
    struct tev *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    char ph[4];
    str_of(line, "ph", ph, sizeof ph);
    e->ph = ph[0];
    e->pid = (int)int_of(line, "pid");
    e->tid = (int)int_of(line, "tid");
    e->ts = ns_of(line, "ts");
    e->dur = ns_of(line, "dur");
    e->id = int_of(line, "id");
    e->lost = int_of(line, "lost");
    e->to = int_of(line, "to");
    array_of(line, "cell", e->cell, sizeof e->cell);
    str_of(line, "cat", e->cat, sizeof e->cat);
    str_of(line, "name", e->name, sizeof e->name);
    str_of(line, "window", e->window, sizeof e->window);
    str_of(line, "outcome", e->outcome, sizeof e->outcome);
    if (e->ph == 'M')
      str_of(value_of(line, "args"), "name", e->meta, sizeof e->meta);
  }
  free(line);
  fclose(f);
  assert_true(t->runs >= 0); /* the closing lines were read */
}

/* ---- what the file must say ---------------------------------------------- */

/* A pid's program (pids of program k start at 1 + 1000 k) and world rank;
 * -1 for the host. */
static int program_of(int pid) { return pid > 0 ? (pid - 1) / 1000 : -1; }
static int rank_of(int pid) { return pid > 0 ? (pid - 1) % 1000 : -1; }

static int is_recorded(const struct tev *e) {
  return e->ph == 'X' || (e->ph == 'i' && !strcmp(e->cat, "notify"));
}
static int is_lost(const struct tev *e) {
  return e->ph == 'i' && !strcmp(e->name, "events lost");
}

/* The metadata event naming (pid, tid) (tid -1: the process), or NULL. */
static const struct tev *meta_of(const struct trace *t, int pid, int tid) {
  for (int i = 0; i < t->n; i++) {
    const struct tev *e = &t->ev[i];
    if (e->ph == 'M' && e->pid == pid &&
        (tid < 0 ? !strcmp(e->name, "process_name")
                 : e->tid == tid && !strcmp(e->name, "thread_name")))
      return e;
  }
  return NULL;
}

/* Every lane with events is one the format names: the host's (pid 0, tid
 * 0), or a rank's AICPU (tid 0) or core ("AIV core 3", "AIC core 0"), named
 * once per process, in a process named for its rank. */
static void expect_known_lanes(const struct trace *t, int nranks) {
  for (int i = 0; i < t->n; i++) {
    const struct tev *e = &t->ev[i];
    if (e->ph == 'M')
      continue;
    if (e->pid == 0) {
      if (e->tid != 0) {
        print_error("a host lane of tid %d\n", e->tid);
        fail();
      }
      continue;
    }
    const struct tev *p = meta_of(t, e->pid, -1),
                     *l = meta_of(t, e->pid, e->tid);
    char type[8] = "";
    int rank = -1, device, core = -1, end = 0;
    const char *pname = p ? strstr(p->meta, "rank ") : NULL;
    int named =
        pname &&
        sscanf(pname, "rank %d (device %d)%n", &rank, &device, &end) == 2 &&
        rank == rank_of(e->pid) && !pname[end];
    int lane_ok =
        l && (e->tid == 0
                  ? !strcmp(l->meta, "AICPU")
                  : sscanf(l->meta, "%3s core %d%n", type, &core, &end) == 2 &&
                        !l->meta[end] && core >= 0 &&
                        (!strcmp(type, "AIV") || !strcmp(type, "AIC")));
    if (!named || rank >= nranks || !lane_ok) {
      print_error("an unknown lane: pid %d (%s) tid %d (%s): %s\n", e->pid,
                  p ? p->meta : "no name", e->tid, l ? l->meta : "no name",
                  e->name);
      fail();
    }
    for (int j = 0; j < t->n; j++) {
      const struct tev *o = &t->ev[j];
      if (o->ph == 'M' && o->pid == e->pid && o->tid != e->tid &&
          !strcmp(o->name, "thread_name") && !strcmp(o->meta, l->meta)) {
        print_error("pid %d: tids %d and %d are both %s\n", e->pid, e->tid,
                    o->tid, l->meta);
        fail();
      }
    }
  }
}

/* Each lane keeps at most cap events a run: between two of its "events
 * lost" instants (one per run it lost events in, after that run's events)
 * it has exactly cap, a full buffer, in the programs here, whose lanes that
 * lose events lose some in every run they record in. */
static void expect_capped(const struct trace *t, long long cap) {
  for (int i = 0; i < t->n; i++) {
    const struct tev *first = &t->ev[i];
    int seen_before = 0;
    for (int j = 0; j < i && !seen_before; j++)
      seen_before = t->ev[j].ph != 'M' && t->ev[j].pid == first->pid &&
                    t->ev[j].tid == first->tid;
    if (first->ph == 'M' || seen_before)
      continue;
    long long kept = 0, total = 0;
    for (int j = i; j < t->n; j++) {
      const struct tev *e = &t->ev[j];
      if (e->pid != first->pid || e->tid != first->tid)
        continue;
      kept += is_recorded(e);
      total += is_recorded(e);
      if (!is_lost(e))
        continue;
      if (kept != cap || e->lost <= 0) {
        print_error("pid %d tid %d: %lld events kept in a run that lost %lld; "
                    "the cap is %lld\n",
                    e->pid, e->tid, kept, e->lost, cap);
        fail();
      }
      kept = 0;
    }
    if (total > cap * t->runs) {
      print_error("pid %d tid %d: %lld events in %lld runs; the cap is %lld\n",
                  first->pid, first->tid, total, t->runs, cap);
      fail();
    }
  }
}

/* Events rank's lanes recorded (-1: the host's): kept (spans, notifies)
 * plus those their "events lost" instants count. */
static long long recorded_by(const struct trace *t, int rank) {
  long long n = 0;
  for (int i = 0; i < t->n; i++)
    if (rank_of(t->ev[i].pid) == rank && t->ev[i].ph != 'M')
      n += is_lost(&t->ev[i]) ? t->ev[i].lost : is_recorded(&t->ev[i]);
  return n;
}

static long long lost_in(const struct trace *t) {
  long long n = 0;
  for (int i = 0; i < t->n; i++)
    n += is_lost(&t->ev[i]) ? t->ev[i].lost : 0;
  return n;
}

static const struct tev *flow_start(const struct trace *t, long long id) {
  for (int i = 0; i < t->n; i++)
    if (t->ev[i].ph == 's' && t->ev[i].id == id)
      return &t->ev[i];
  return NULL;
}

/* The notify instant at the place and time of a flow's start, or NULL. */
static const struct tev *notify_at(const struct trace *t, const struct tev *s) {
  for (int i = 0; i < t->n; i++) {
    const struct tev *e = &t->ev[i];
    if (e->ph == 'i' && !strcmp(e->cat, "notify") && e->pid == s->pid &&
        e->tid == s->tid && e->ts == s->ts)
      return e;
  }
  return NULL;
}

/* Flows: every wait that ended ok carries one flow end, inside it on its
 * lane, from the last notify before its end (or at the same time) of its
 * cell (window and cell, to its world rank, in its program); every flow
 * start has an end.  Returns the number of such waits. */
static int expect_flows(const struct trace *t) {
  int waits = 0;
  for (int i = 0; i < t->n; i++) {
    const struct tev *w = &t->ev[i];
    if (w->ph != 'X' || strcmp(w->cat, "wait") || strcmp(w->outcome, "ok"))
      continue;
    waits++;
    int64_t end = w->ts + w->dur;
    const struct tev *f = NULL;
    int ends = 0;
    for (int j = 0; j < t->n; j++) {
      const struct tev *e = &t->ev[j];
      if (e->ph == 'f' && e->pid == w->pid && e->tid == w->tid &&
          e->ts >= w->ts && e->ts <= end) {
        f = e;
        ends++;
      }
    }
    /* The last notify of the cell at or before the wait's end. */
    int64_t last = -1;
    for (int j = 0; j < t->n; j++) {
      const struct tev *e = &t->ev[j];
      if (e->ph == 'i' && !strcmp(e->cat, "notify") &&
          program_of(e->pid) == program_of(w->pid) &&
          e->to == rank_of(w->pid) && !strcmp(e->window, w->window) &&
          !strcmp(e->cell, w->cell) && e->ts <= end && e->ts > last)
        last = e->ts;
    }
    const struct tev *s = f ? flow_start(t, f->id) : NULL;
    const struct tev *n = s ? notify_at(t, s) : NULL;
    if (ends != 1 || !n || program_of(n->pid) != program_of(w->pid) ||
        n->to != rank_of(w->pid) || strcmp(n->window, w->window) ||
        strcmp(n->cell, w->cell) || n->ts != last) {
      print_error(
          "the wait on %s cell %s of rank %d (pid %d tid %d) ending at %lld "
          "ns has %d flow ends; its flow starts at %s (pid %d, to rank %lld, "
          "%s cell %s, at %lld ns); the last notify of its cell by then is "
          "at %lld ns\n",
          w->window, w->cell, rank_of(w->pid), w->pid, w->tid, (long long)end,
          ends, n ? "a notify" : "no notify", n ? n->pid : -1, n ? n->to : -1,
          n ? n->window : "", n ? n->cell : "", n ? (long long)n->ts : -1,
          (long long)last);
      fail();
    }
  }
  for (int i = 0; i < t->n; i++) {
    const struct tev *s = &t->ev[i];
    int ended = 0;
    for (int j = 0; j < t->n && s->ph == 's' && !ended; j++)
      ended = t->ev[j].ph == 'f' && t->ev[j].id == s->id;
    if (s->ph == 's' && (!ended || !notify_at(t, s))) {
      print_error("flow %lld (pid %d tid %d) %s\n", s->id, s->pid, s->tid,
                  ended ? "starts where no notify is" : "has no end");
      fail();
    }
  }
  return waits;
}

/* This process's trace file, the same for every case (a process writes one
 * trace), and its debug log; both removed when the process exits. */
static char trace_file[64], debug_log[64];

static void remove_files(void) {
  unlink(trace_file);
  unlink(debug_log);
}

static const char *trace_path(void) {
  if (!trace_file[0]) {
    snprintf(trace_file, sizeof trace_file, "/tmp/pld-test-trace-%d.json",
             (int)getpid());
    snprintf(debug_log, sizeof debug_log, "/tmp/pld-test-trace-%d.log",
             (int)getpid());
    atexit(remove_files);
  }
  return trace_file;
}

/* ---- at the cap ---------------------------------------------------------- */

/* Every rank's kernel makes LOADS remote loads (a span each) in one block;
 * the host calls TASKS host tasks (a span each). */
enum { LOADS = 40, TASKS = 20, RUNS = 3, WR = 4, WC = 8 };

PLD_KERNEL(k_loads, k, PLD_WINDOW(w, FP32, WR, WC)) {
  pld_comm c = pld_window_comm(w);
  int32_t next = (pld_rank(k, c) + 1) % pld_nranks(k, c);
  for (int i = 0; i < LOADS; i++)
    pld_tile_free(k, pld_remote_load(k, w, next, 0, 0, WR, WC));
}
PLD_DEVICE(d_loads, a, PLD_WINDOW(w, FP32, WR, WC)) {
  pld_launch(a, k_loads, 1, w);
}
PLD_HOST_TASK(t_nothing, t, PLD_SCALAR(i, INT32)) {
  (void)t;
  (void)i;
}
PLD_HOST(h_many, h, PLD_SCALAR(tasks, INT32)) {
  pld_window_buf b = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(WR, WC));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_loads, r,
                 pld_window_view(h, b, PLD_FP32, PLD_SHAPE(WR, WC)));
  for (int32_t i = 0; i < tasks; i++)
    pld_host_task(h, t_nothing, i);
}

static void test_cap_per_lane(void **state) {
  (void)state;
  const int n = 3;
  const long long cap = pld__tunables()->PLD_TRACE_EVENTS;
  struct mark m = trace_mark(trace_path());
  pld_config cfg = test_config(ids, n, 0, 1);
  cfg.trace = trace_path();
  int32_t tasks = TASKS;
  pld_program *p;
  assert_ok(pld_compile(h_many, &cfg, PLD_ARGS(tasks), &p));
  for (int run = 0; run < RUNS; run++)
    assert_ok(pld_program_run(p, PLD_ARGS(tasks)));
  pld_program_destroy(p);

  struct trace t;
  trace_read(trace_path(), &m, &t);
  assert_int_equal(t.runs, RUNS);
  expect_known_lanes(&t, n);
  expect_capped(&t, cap);
  /* What the programs record (docs/trace-format.md's spans): the host a
   * compile and a prepare, then per run a run, a copy in, a copy out and a
   * span per task; each rank per run its dispatch and launch (AICPU), and
   * its block with a span per load (a core). */
  long long host = recorded_by(&t, -1);
  if (host != 2 + RUNS * (3 + TASKS)) {
    print_error("the host recorded %lld events (kept and lost), expected "
                "%d\n",
                host, 2 + RUNS * (3 + TASKS));
    fail();
  }
  for (int r = 0; r < n; r++) {
    long long got = recorded_by(&t, r);
    if (got != RUNS * (3 + LOADS)) {
      print_error("rank %d recorded %lld events (kept and lost), expected "
                  "%d\n",
                  r, got, RUNS * (3 + LOADS));
      fail();
    }
  }
  /* Lost: counted once, in the instants and in otherData; none under a
   * cap the runs never reach. */
  assert_int_equal(t.lost_events, lost_in(&t));
  if (cap > 3 + LOADS + 2 + TASKS)
    assert_int_equal(t.lost_events, 0);
  else
    assert_true(t.lost_events > 0);
  free(t.ev);
}

/* ---- flows --------------------------------------------------------------- */

/* The debug log (PLD_DEBUG=signal) says when a wait blocks: a notifier
 * waits for that line before it notifies, so every wait here blocks and is
 * recorded, whatever the machine's speed. */
enum { ROUNDS = 3 };

/* Whether the log has world rank `rank` blocked on flag cell [0] >= value. */
static int logged_blocked(int32_t rank, int32_t value) {
  FILE *f = fopen(debug_log, "r");
  if (!f)
    return 0;
  char line[512], who[32], what[64];
  snprintf(who, sizeof who, "pld: rank %d ", (int)rank);
  snprintf(what, sizeof what,
           ": signal: wait on window 'flag' cell [0] >= %d blocks", (int)value);
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = !strncmp(line, who, strlen(who)) && strstr(line, what);
  fclose(f);
  return found;
}

/* At most 30 s: a run stopped meanwhile stops the kernel itself. */
static void await_blocked(int32_t rank, int32_t value) {
  struct timespec nap = {0, 1000000L};
  for (int i = 0; i < 30000 && !logged_blocked(rank, value); i++)
    nanosleep(&nap, NULL);
}

/* A chain over the window's domain, the world ranks from `first` on: in
 * each round domain rank d > 0 waits on its flag[0], then d notifies d + 1
 * once d + 1 is blocked in that wait. */
PLD_KERNEL(k_chain, k, PLD_WINDOW(flag, INT32, 1), PLD_SCALAR(first, INT32)) {
  pld_comm c = pld_window_comm(flag);
  int32_t me = pld_rank(k, c), m = pld_nranks(k, c);
  for (int32_t round = 1; round <= ROUNDS; round++) {
    if (me > 0)
      pld_wait(k, flag, PLD_AT(0), round, PLD_WAIT_GE);
    if (me < m - 1) {
      await_blocked(first + me + 1, round);
      pld_notify(k, flag, me + 1, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    }
  }
}
PLD_DEVICE(d_chain, a, PLD_WINDOW(flag, INT32, 1), PLD_SCALAR(first, INT32)) {
  pld_launch(a, k_chain, 1, flag, first);
}
PLD_KERNEL(k_idle, k, PLD_SCALAR(v, INT32)) {
  (void)k;
  (void)v;
}
PLD_DEVICE(d_idle, a, PLD_SCALAR(v, INT32)) { pld_launch(a, k_idle, 1, v); }
/* Ranks below `first` run d_idle: the window's domain leaves them out. */
PLD_HOST(h_domain, h, PLD_SCALAR(first, INT32)) {
  pld_window_buf b = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    if (r < first)
      pld_dispatch(h, d_idle, r, r);
    else
      pld_dispatch(h, d_chain, r,
                   pld_window_view(h, b, PLD_INT32, PLD_SHAPE(1)), first);
}

/* h_domain on n ranks, prepared, its trace and debug log on. */
static pld_program *domain_program(int n, int32_t first) {
  pld_config cfg = test_config(ids, n, 0, 1);
  cfg.trace = trace_path();
  setenv("PLD_DEBUG", "signal", 1);
  setenv("PLD_DEBUG_FILE", debug_log, 1);
  pld_program *p;
  assert_ok(pld_compile(h_domain, &cfg, PLD_ARGS(first), &p));
  assert_ok(pld_program_prepare(p));
  return p;
}

/* A run with the log emptied first: its lines are this run's. */
static void domain_run(pld_program *p, int32_t first) {
  assert_int_equal(truncate(debug_log, 0), 0);
  assert_ok(pld_program_run(p, PLD_ARGS(first)));
}

static void test_flows_of_a_domain_without_rank_0(void **state) {
  (void)state;
  struct mark m = trace_mark(trace_path());
  const int32_t first = 1;
  int expected = 0;
  for (int n = 3; n <= 4; n++) {
    pld_program *p = domain_program(n, first);
    for (int run = 0; run < 2; run++)
      domain_run(p, first);
    pld_program_destroy(p);
    expected += 2 * (n - first - 1) * ROUNDS;
  }
  struct trace t;
  trace_read(trace_path(), &m, &t);
  expect_known_lanes(&t, 4);
  assert_int_equal(expect_flows(&t), expected);
  free(t.ev);
}

/* A notify stamped at the very nanosecond a wait ends is the one that
 * released it.  No two threads can be made to stamp one time, so the
 * events are recorded by hand into two ranks' buffers before a run, as
 * their AICPUs would: on rank 0, notifies to rank 2's cell tie[3] at T -
 * 50, T and T + 1 ns; on rank 2, a wait on that cell from T - 1000 to T.
 * The run writes them with its own events. */
static void record(struct pld__tbuf *b, const struct pld__tev *e) {
  b->ev[b->n++] = *e;
  b->used = 1;
}

static void test_flow_at_equal_times(void **state) {
  (void)state;
  struct mark m = trace_mark(trace_path());
  const int32_t first = 1;
  pld_program *p = domain_program(3, first);
  struct pld__tbuf *from = pld__trace_tbuf(pld__trace_area_of(p, 0, NULL), 0);
  struct pld__tbuf *to = pld__trace_tbuf(pld__trace_area_of(p, 2, NULL), 0);
  int64_t at = pld__now_ns();
  struct pld__tev e;
  for (int i = 0; i < 3; i++) {
    pld__tev_init(&e, PLD__TEV_NOTIFY, PLD_NOTIFY_ADD, "tie");
    e.t0 = e.t1 = at + (int64_t[]){-50, 0, 1}[i];
    pld__tev_cell(&e, 1, (const int64_t[]){4}, 3); /* cell [3] */
    e.b = 1;                                       /* value */
    e.c = 1;                                       /* domain peer */
    e.e = 2;                                       /* world peer */
    e.d = 77;                                      /* buffer */
    e.x = 12;                                      /* offset */
    record(from, &e);
  }
  pld__tev_init(&e, PLD__TEV_WAIT, PLD_WAIT_GE, "tie");
  e.t0 = at - 1000;
  e.t1 = at;
  pld__tev_cell(&e, 1, (const int64_t[]){4}, 3);
  e.b = e.c = 1;
  e.d = 77;
  e.x = 12;
  record(to, &e);
  domain_run(p, first);
  pld_program_destroy(p);
  struct trace t;
  trace_read(trace_path(), &m, &t);
  expect_known_lanes(&t, 3);
  /* The chain's waits and the one by hand, each joined to its notify (the
   * tie's: the one at its end). */
  assert_int_equal(expect_flows(&t), ROUNDS + 1);
  free(t.ev);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cap_per_lane),
    cmocka_unit_test(test_flows_of_a_domain_without_rank_0),
    cmocka_unit_test(test_flow_at_equal_times),
};

PLD_TEST_MAIN("trace", tests)
