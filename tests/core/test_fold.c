/* The timing model's recorder folding loops (core/trace.c,
 * PLD__TM_LOOP): a core's records, read back from its buffer and unfolded
 * by a reference written here, are exactly the records it was given, in
 * order: loops of 1 to PLD__FOLD_TURN records a turn (and one more, which
 * is not folded), values stepping each turn (a wait's round, near
 * INT32_MAX too), a turn left unfinished by another record, a block's end
 * or a trace event, transfers completing at a flush, and random
 * streams; and a folded loop takes a handful of
 * records whatever its turns.  Plain puts and gets in a row are one
 * record with their count; a call's transfers (a group) are one record
 * per peer, stored whole, and fold. */
#include "pld_test.h"

#include <stdlib.h>
#include <string.h>

#include "core/timeline.h"
#include "core/trace.h"

enum { CAP = 1 << 16, MAXREC = 1 << 20 };

static struct pld__tbuf *buf;
/* The records given, and those read back unfolded. */
static struct pld__mrec given[MAXREC], got[MAXREC];
static size_t ngiven, ngot;

static int setup(void **state) {
  (void)state;
  buf = calloc(1, sizeof *buf + (size_t)CAP * sizeof buf->ev[0]);
  return buf ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  pld__observe_as(-1, -1, "host", NULL);
  free(buf);
  return 0;
}

/* An empty buffer, recorded by this thread as a core's. */
static void begin(void) {
  memset(buf, 0, sizeof *buf);
  buf->cap = CAP;
  buf->model = 1;
  pld__observe_as(0, 0, "AIV0", buf);
  ngiven = 0;
}

static void rec(int kind, int sub, int32_t peer, int64_t a, int32_t b) {
  assert_true(ngiven < MAXREC);
  given[ngiven++] = (struct pld__mrec){
      .kind = (uint8_t)kind, .sub = (uint8_t)sub, .peer = peer, .a = a, .b = b};
  pld__obs_model(kind, sub, peer, a, b, NULL);
}

static void block_end(void) { rec(PLD__TM_BLOCK, 0, 1, 0, 0); }

/* The buffer's records, every folded loop unfolded: turn n of a loop of k
 * records is the later recorded turn with each a and b moved on by n
 * times its difference from the earlier. */
static void read_back(void) {
  size_t block0 = 0;
  ngot = 0;
  for (uint32_t i = 0; i < buf->n; i++) {
    const struct pld__tev *e = &buf->ev[i];
    if (e->kind != PLD__TEV_PACK)
      continue;
    for (int j = 0; j < e->sub; j++) {
      const struct pld__mrec *m = &e->rec[j];
      if (m->kind != PLD__TM_LOOP) {
        assert_true(ngot < MAXREC);
        got[ngot++] = *m;
        if (m->kind == PLD__TM_BLOCK)
          block0 = ngot;
        continue;
      }
      const size_t k = (size_t)m->peer;
      assert_true(k >= 1 && ngot - block0 >= 2 * k);
      const size_t w0 = ngot - k, v0 = ngot - 2 * k;
      for (int64_t n = 1; n <= m->a; n++)
        for (size_t q = 0; q < k; q++) {
          const struct pld__mrec *v = &got[v0 + q], *w = &got[w0 + q];
          struct pld__mrec x = *w;
          x.a = (int64_t)((uint64_t)w->a +
                          (uint64_t)n * ((uint64_t)w->a - (uint64_t)v->a));
          x.b = (int32_t)(w->b + n * ((int64_t)w->b - v->b));
          assert_true(ngot < MAXREC);
          got[ngot++] = x;
        }
    }
  }
}

/* Records stored in the buffer (a folded loop's turns not counted). */
static size_t stored(void) {
  size_t n = 0;
  for (uint32_t i = 0; i < buf->n; i++)
    if (buf->ev[i].kind == PLD__TEV_PACK)
      n += buf->ev[i].sub;
  return n;
}

static void assert_same(void) {
  read_back();
  assert_int_equal(buf->lost, 0);
  assert_int_equal(ngot, ngiven);
  for (size_t i = 0; i < ngiven; i++) {
    if (got[i].kind == given[i].kind && got[i].sub == given[i].sub &&
        got[i].peer == given[i].peer && got[i].a == given[i].a &&
        got[i].b == given[i].b)
      continue;
    fail_msg("record %zu of %zu: got kind %d sub %d peer %d a %lld b %d, "
             "expected kind %d sub %d peer %d a %lld b %d",
             i, ngiven, got[i].kind, got[i].sub, got[i].peer,
             (long long)got[i].a, got[i].b, given[i].kind, given[i].sub,
             given[i].peer, (long long)given[i].a, given[i].b);
  }
}

/* A barrier's turn on 2 ranks: a credit, the flush, the wait, the credit
 * taken back. */
static void barrier_turn(void) {
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  rec(PLD__TL_FLUSH, 0, -1, 0, 0);
  rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 6, 1);
  rec(PLD__TL_XFER, PLD__TL_PUT, 0, 8, 0);
}

static void test_barrier_loop(void **state) {
  (void)state;
  begin();
  for (int t = 0; t < 100000; t++)
    barrier_turn();
  block_end();
  assert_same();
  /* Two turns, the loop, the block's end. */
  assert_int_equal(stored(), 2 * 4 + 1 + 1);
}

/* Two turns are not a loop; the third makes one. */
static void test_three_turns(void **state) {
  (void)state;
  begin();
  barrier_turn();
  barrier_turn();
  block_end();
  assert_same();
  assert_int_equal(stored(), 9);
  begin();
  for (int t = 0; t < 3; t++)
    barrier_turn();
  block_end();
  assert_same();
  assert_int_equal(stored(), 10);
}

/* A ping-pong's turn: the wait expects the next round each time; the
 * loop ends where the step changes, and a new one begins. */
static void test_stepping_values(void **state) {
  (void)state;
  begin();
  int32_t round = 0;
  for (int t = 0; t < 5000; t++) {
    round += t < 3000 ? 1 : 3;
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 2, 1);
    rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 2, round);
  }
  block_end();
  assert_same();
  assert_true(stored() < 16);
}

/* A wait's round stepping past INT32_MAX wraps: the folded loop must not
 * carry it on in 64 bits. */
static void test_step_past_int32(void **state) {
  (void)state;
  begin();
  uint32_t round = (uint32_t)INT32_MAX - 40;
  for (int t = 0; t < 100; t++) {
    round += 1;
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 2, 1);
    rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 2, (int32_t)round);
  }
  block_end();
  assert_same();
}

/* A turn of k distinct records: folded up to PLD__FOLD_TURN, not one
 * beyond. */
static void loop_of(int32_t k, int turns) {
  begin();
  for (int t = 0; t < turns; t++)
    for (int32_t j = 0; j < k; j++)
      rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 100 + j, t);
  block_end();
  assert_same();
}

static void test_longest_turn(void **state) {
  (void)state;
  loop_of(1, 50);
  assert_int_equal(stored(), 2 + 1 + 1);
  loop_of(PLD__FOLD_TURN, 50);
  assert_int_equal(stored(), 2 * PLD__FOLD_TURN + 1 + 1);
  loop_of(PLD__FOLD_TURN + 1, 50);
  assert_int_equal(stored(), 50 * (PLD__FOLD_TURN + 1) + 1);
}

/* Whatever ends a loop in the middle of a turn, the turn's records so far
 * are stored, in order: another record, a block's end, an event. */
static void test_unfinished_turn(void **state) {
  (void)state;
  begin();
  for (int t = 0; t < 10; t++)
    barrier_turn();
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  rec(PLD__TL_FLUSH, 0, -1, 0, 0);
  rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 9, 1); /* another cell */
  for (int t = 0; t < 10; t++)
    barrier_turn();
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  block_end();
  for (int t = 0; t < 10; t++)
    barrier_turn();
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  rec(PLD__TL_FLUSH, 0, -1, 0, 0);
  /* A trace event (a notify's instant) ends the loop too. */
  struct pld__tev e;
  pld__tev_init(&e, PLD__TEV_NOTIFY, PLD_NOTIFY_ADD, "sig");
  pld__obs_instant(&e);
  for (int t = 0; t < 10; t++)
    barrier_turn();
  /* Turns with stepping values, left after their first record. */
  for (int t = 0; t <= 10; t++) {
    rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 1, 7 * t);
    if (t < 10)
      rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 2, 7 * t + 1);
  }
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  for (int t = 0; t <= 10; t++) {
    rec(PLD__TL_XFER, PLD__TL_PUT, 1, 64 + 8 * t, 0);
    if (t < 10)
      rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 2, 1);
  }
  block_end();
  assert_same();
}

/* A double-buffered loop (pld_prefetch): each turn starts the next
 * tile's move, computes and waits for that move, the moves' numbers
 * stepping by one: folded, and read back exactly. */
static void test_prefetch_loop(void **state) {
  (void)state;
  begin();
  rec(PLD__TL_MOVE, PLD__TL_ASYNC, 0, 4096, 0);
  rec(PLD__TL_MOVED, 0, 0, 0, 0);
  for (int t = 0; t < 50; t++) {
    rec(PLD__TL_MOVE, PLD__TL_ASYNC, 0, 4096, t + 1);
    rec(PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 100, 1);
    rec(PLD__TL_MOVED, 0, 0, t + 1, 0);
  }
  rec(PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 100, 1);
  block_end();
  assert_same();
  assert_true(stored() < 20);
}

/* A record the recorder is expected to store, given nothing: the
 * records a loop of plain puts stores are not the ones it is given. */
static void expect(int kind, int sub, int32_t peer, int64_t a, int32_t b) {
  assert_true(ngiven < MAXREC);
  given[ngiven++] = (struct pld__mrec){
      .kind = (uint8_t)kind, .sub = (uint8_t)sub, .peer = peer, .a = a, .b = b};
}

/* A plain put or get: a transfer issued later and its flush. */
static void plain(int sub, int32_t peer, int64_t bytes) {
  pld__obs_model(PLD__TL_XFER, sub | PLD__TL_LATER, peer, bytes, 0, NULL);
  pld__obs_model(PLD__TL_FLUSH, 0, peer, 0, 0, NULL);
}

/* A transfer that completes at a flush is held back until the next
 * record shows whether the flush comes right after it (then it is one of
 * PLD__TL_FLUSHED): stored whole, it folds.  A loop of a put issued later
 * and a notify (a broadcast's root), then one of a put flushed at once
 * and a notify. */
static void test_later_transfer_folded(void **state) {
  (void)state;
  begin();
  for (int t = 0; t < 20; t++) {
    rec(PLD__TL_XFER, PLD__TL_PUT | PLD__TL_LATER, 1, 64, 0);
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
    rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 6, t + 1);
  }
  const size_t first = stored();
  for (int t = 0; t < 20; t++) {
    plain(PLD__TL_GET, 2, 128);
    expect(PLD__TL_XFER, PLD__TL_GET | PLD__TL_LATER | PLD__TL_FLUSHED, 2, 128,
           1);
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 2, 5, 1);
  }
  block_end();
  assert_same();
  assert_true(first < 12);
  assert_true(stored() - first < 12);
}

/* Plain puts and gets in a row, the same transfer each time, are one
 * record of PLD__TL_FLUSHED with their count; a transfer followed by
 * anything but its flush (another record, work, a trace event, a flush of
 * another peer, the block's end) is stored as it came, before it. */
static void test_plain_transfers(void **state) {
  (void)state;
  enum { PUT = PLD__TL_PUT | PLD__TL_LATER, GET = PLD__TL_GET | PLD__TL_LATER };
  begin();
  for (int i = 0; i < 5; i++)
    plain(PLD__TL_PUT, 1, 4096);
  expect(PLD__TL_XFER, PUT | PLD__TL_FLUSHED, 1, 4096, 5);
  /* Another record after the transfer, then its flush. */
  pld__obs_model(PLD__TL_XFER, PUT, 1, 4096, 0, NULL);
  pld__obs_model(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1, NULL);
  pld__obs_model(PLD__TL_FLUSH, 0, 1, 0, 0, NULL);
  expect(PLD__TL_XFER, PUT, 1, 4096, 0);
  expect(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  expect(PLD__TL_FLUSH, 0, 1, 0, 0);
  for (int i = 0; i < 3; i++)
    plain(PLD__TL_GET, 2, 64);
  expect(PLD__TL_XFER, GET | PLD__TL_FLUSHED, 2, 64, 3);
  /* A second flush: a record of its own. */
  pld__obs_model(PLD__TL_FLUSH, 0, 2, 0, 0, NULL);
  expect(PLD__TL_FLUSH, 0, 2, 0, 0);
  for (int i = 0; i < 3; i++)
    plain(PLD__TL_GET, 2, 64);
  expect(PLD__TL_XFER, GET | PLD__TL_FLUSHED, 2, 64, 3);
  /* Work between the transfer and its flush. */
  pld__obs_model(PLD__TL_XFER, GET, 2, 64, 0, NULL);
  pld__obs_work(PLD__TC_VECTOR, 100);
  pld__obs_model(PLD__TL_FLUSH, 0, 2, 0, 0, NULL);
  expect(PLD__TL_XFER, GET, 2, 64, 0);
  expect(PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 100, 1);
  expect(PLD__TL_FLUSH, 0, 2, 0, 0);
  /* A trace event after the transfer. */
  plain(PLD__TL_PUT, 1, 4096);
  plain(PLD__TL_PUT, 1, 4096);
  expect(PLD__TL_XFER, PUT | PLD__TL_FLUSHED, 1, 4096, 2);
  pld__obs_model(PLD__TL_XFER, PUT, 1, 4096, 0, NULL);
  struct pld__tev e;
  pld__tev_init(&e, PLD__TEV_NOTIFY, PLD_NOTIFY_ADD, "sig");
  pld__obs_instant(&e);
  pld__obs_model(PLD__TL_FLUSH, 0, 1, 0, 0, NULL);
  expect(PLD__TL_XFER, PUT, 1, 4096, 0);
  expect(PLD__TL_FLUSH, 0, 1, 0, 0);
  /* The flush of another peer; another size. */
  plain(PLD__TL_PUT, 1, 4096);
  plain(PLD__TL_PUT, 1, 4096);
  pld__obs_model(PLD__TL_XFER, PUT, 1, 4096, 0, NULL);
  pld__obs_model(PLD__TL_FLUSH, 0, 3, 0, 0, NULL);
  expect(PLD__TL_XFER, PUT | PLD__TL_FLUSHED, 1, 4096, 2);
  expect(PLD__TL_XFER, PUT, 1, 4096, 0);
  expect(PLD__TL_FLUSH, 0, 3, 0, 0);
  plain(PLD__TL_PUT, 1, 4096);
  plain(PLD__TL_PUT, 1, 4096);
  plain(PLD__TL_PUT, 1, 8192);
  expect(PLD__TL_XFER, PUT | PLD__TL_FLUSHED, 1, 4096, 2);
  expect(PLD__TL_XFER, PUT | PLD__TL_FLUSHED, 1, 8192, 1);
  /* The block's end after the transfer. */
  pld__obs_model(PLD__TL_XFER, PUT, 1, 8192, 0, NULL);
  pld__obs_model(PLD__TM_BLOCK, 0, 1, 0, 0, NULL);
  expect(PLD__TL_XFER, PUT, 1, 8192, 0);
  expect(PLD__TM_BLOCK, 0, 1, 0, 0);
  assert_same();
}

/* A piece of a group's transfer, given to the recorder only. */
static void piece(int sub, int32_t peer, int64_t bytes) {
  pld__obs_model(PLD__TL_XFER, sub, peer, bytes, 0, NULL);
}

/* A call's transfers (pld__obs_group_begin to _end) are one record per
 * peer and sub, stored whole: a loop of calls folds like any other
 * (one collective's reads from alternating peers, its sums, its
 * signals).  Work or another record ends the merging, a trace event
 * does not; one peer more than PLD__GROUP_PEERS stores the merged ones
 * and begins anew; a group not ended is stored when the next begins. */
static void test_group_transfers(void **state) {
  (void)state;
  enum { GET = PLD__TL_GET, PUT = PLD__TL_PUT };
  begin();
  for (int t = 0; t < 40; t++) {
    pld__obs_group_begin();
    for (int i = 0; i < 4; i++) {
      piece(GET, 1, 1024);
      piece(GET, 2, 1024);
      piece(PUT, 1, 8);
    }
    expect(PLD__TL_XFER, GET, 1, 4096, 0);
    expect(PLD__TL_XFER, GET, 2, 4096, 0);
    expect(PLD__TL_XFER, PUT, 1, 32, 0);
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1); /* (in the group) */
    piece(GET, 2, 512);
    pld__obs_group_end();
    expect(PLD__TL_XFER, GET, 2, 512, 0);
    rec(PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 3 * 4096, 2);
    rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 6, t + 1);
  }
  const size_t looped = stored();
  /* A loop of one-piece groups, then a group of two pieces: merged, not
   * the loop's next turn and one more; a folded notify after a piece. */
  for (int t = 0; t < 6; t++) {
    pld__obs_group_begin();
    piece(GET, 1, 4096);
    pld__obs_group_end();
    expect(PLD__TL_XFER, GET, 1, 4096, 0);
    rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  }
  for (int pieces = 2; pieces >= 1; pieces--) {
    pld__obs_group_begin();
    for (int i = 0; i < pieces; i++)
      piece(GET, 1, 4096);
    pld__obs_model(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1, NULL);
    pld__obs_group_end();
    expect(PLD__TL_XFER, GET, 1, 4096 * pieces, 0);
    expect(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
    for (int t = 0; t < 6; t++) /* (a loop of notifies, then a piece) */
      rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  }
  /* Work between pieces; a trace event between pieces. */
  pld__obs_group_begin();
  piece(GET, 1, 100);
  pld__obs_work(PLD__TC_VECTOR, 10);
  piece(GET, 1, 100);
  struct pld__tev e;
  pld__tev_init(&e, PLD__TEV_NOTIFY, PLD_NOTIFY_ADD, "sig");
  pld__obs_instant(&e);
  piece(GET, 1, 50);
  pld__obs_model(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1, NULL);
  piece(GET, 1, 7);
  pld__obs_group_end();
  expect(PLD__TL_XFER, GET, 1, 100, 0);
  expect(PLD__TL_COMPUTE, PLD__TC_VECTOR, 0, 10, 1);
  expect(PLD__TL_XFER, GET, 1, 150, 0);
  expect(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
  expect(PLD__TL_XFER, GET, 1, 7, 0);
  /* More peers than the group merges, twice each. */
  pld__obs_group_begin();
  for (int i = 0; i < 2; i++)
    for (int32_t q = 0; q <= PLD__GROUP_PEERS; q++)
      piece(PUT, q, 1 + q);
  pld__obs_group_end();
  for (int32_t q = 0; q < PLD__GROUP_PEERS; q++)
    expect(PLD__TL_XFER, PUT, q, 1 + q, 0);
  expect(PLD__TL_XFER, PUT, PLD__GROUP_PEERS, 1 + PLD__GROUP_PEERS, 0);
  for (int32_t q = 0; q < PLD__GROUP_PEERS - 1; q++)
    expect(PLD__TL_XFER, PUT, q, 1 + q, 0);
  expect(PLD__TL_XFER, PUT, PLD__GROUP_PEERS - 1, PLD__GROUP_PEERS, 0);
  expect(PLD__TL_XFER, PUT, PLD__GROUP_PEERS, 1 + PLD__GROUP_PEERS, 0);
  /* A group not ended, then another. */
  pld__obs_group_begin();
  piece(GET, 3, 64);
  pld__obs_group_begin();
  piece(GET, 3, 64);
  pld__obs_group_end();
  expect(PLD__TL_XFER, GET, 3, 64, 0);
  expect(PLD__TL_XFER, GET, 3, 64, 0);
  block_end();
  assert_same();
  assert_true(looped < 40);
}

/* One call of the words w: its records (a credit, the wait for the
 * round t, `steps` waits for steps 1, 2, ... of it, as a ring's, the
 * credit taken back; `twice`: all of it twice) unless
 * pld__obs_call_begin says they repeat the last call's, then only
 * expected.  Returns whether it skipped them. */
static int call_of(const int32_t *w, int t, int twice, int steps, int st) {
  const int skip = pld__obs_call_begin(w);
  for (int i = 0; i <= twice; i++) {
    void (*r)(int, int, int32_t, int64_t, int32_t) = skip ? expect : rec;
    r(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1);
    r(PLD__TL_WAIT, PLD_WAIT_GE, 0, 6, t + 1);
    for (int j = 0; j < steps; j++)
      r(PLD__TL_WAIT, PLD_WAIT_GE, 0, 7, j + 1);
    r(PLD__TL_TAKE, 0, 0, 6, 1);
  }
  assert_int_equal(pld__obs.model, !skip);
  pld__obs_call_end(skip, st);
  assert_int_equal(pld__obs.model, 1);
  return skip;
}

static int call(const int32_t *w, int t, int twice, int st) {
  return call_of(w, t, twice, 0, st);
}

/* A call that repeats the last one, whose records were one turn of the
 * loop being folded, records nothing and counts one more turn, its
 * values stepped: read back, the same records.  Not after a call of
 * other words, a record between calls, a call that failed, nor when a
 * call is two turns. */
static void test_repeated_calls(void **state) {
  (void)state;
  const int32_t w[PLD__CALL_WORDS] = {7, 8, 9}, v[PLD__CALL_WORDS] = {7, 8, 10};
  begin();
  int skipped = 0, t = 0;
  for (int i = 0; i < 20; i++)
    skipped += call(w, t++, 0, 0);
  assert_true(skipped >= 14);
  const size_t first = stored();
  assert_int_equal(call(v, t++, 0, 0), 0); /* other words */
  assert_int_equal(call(w, t++, 0, 0), 0);
  for (int i = 0; i < 8; i++)
    call(w, t++, 0, 0);
  assert_int_equal(call(w, t++, 0, 0), 1);
  rec(PLD__TL_FLUSH, 0, -1, 0, 0); /* a record between calls */
  assert_int_equal(call(w, t++, 0, 0), 0);
  for (int i = 0; i < 8; i++)
    call(w, t++, 0, 0);
  rec(PLD__TL_NOTIFY, PLD_NOTIFY_ADD, 1, 5, 1); /* the turn's first */
  assert_int_equal(call(w, t++, 0, 0), 0);
  for (int i = 0; i < 8; i++)
    call(w, t++, 0, 0);
  assert_int_equal(call(w, t++, 0, 1), 1); /* fails */
  assert_int_equal(call(w, t++, 0, 0), 0);
  block_end();
  assert_same();
  assert_true(first < 12);
  /* Work between calls: a call is then not a whole turn and never
   * repeats one, though the next call begins where the last began. */
  begin();
  skipped = 0;
  rec(PLD__TL_COMPUTE, 0, 0, 100, 1);
  for (int i = 0; i < 20; i++) {
    skipped += call(w, i, 0, 0);
    rec(PLD__TL_COMPUTE, 0, 0, 100, 1);
  }
  block_end();
  assert_same();
  assert_int_equal(skipped, 0);
  /* A loop whose repetition shows first inside a call (the records
   * before the first call are a call's last two) begins at a call's
   * end: its calls repeat. */
  begin();
  skipped = 0;
  rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 6, 1);
  rec(PLD__TL_TAKE, 0, 0, 6, 1);
  for (int i = 1; i < 20; i++) {
    skipped += call(w, i, 0, 0);
    assert_int_equal(pld__obs.fold.pos, 0);
  }
  block_end();
  assert_same();
  assert_true(skipped >= 12);
  /* Calls whose steps repeat within the call (a ring's waits): no loop
   * of those steps begins inside a call, so the loop of calls folds. */
  begin();
  skipped = 0;
  for (int i = 0; i < 20; i++)
    skipped += call_of(w, i, 0, 6, 0);
  block_end();
  assert_same();
  assert_true(skipped >= 14);
  /* Calls of two turns each (their records repeat within the call). */
  begin();
  skipped = 0;
  for (int i = 0; i < 20; i++)
    skipped += call(w, 0, 1, 0);
  block_end();
  assert_same();
  assert_int_equal(skipped, 0);
}

/* Random streams: loops of random turns, lengths and steps, between
 * random records, blocks' ends and records that do not fold. */
static void test_random_streams(void **state) {
  (void)state;
  unsigned seed = 12345;
  for (int trial = 0; trial < 300; trial++) {
    begin();
    for (int seg = 0; seg < 40; seg++) {
      const int what = rand_r(&seed) % 10;
      if (what < 6) { /* a loop */
        const int k = 1 + rand_r(&seed) % (PLD__FOLD_TURN + 2);
        const int turns = rand_r(&seed) % 12;
        struct pld__mrec body[PLD__FOLD_TURN + 2];
        int32_t step[PLD__FOLD_TURN + 2];
        for (int j = 0; j < k; j++) {
          const int kind = PLD__TL_COMPUTE + rand_r(&seed) % 7;
          body[j] = (struct pld__mrec){
              .kind = (uint8_t)(kind == PLD__TL_XFER ? PLD__TL_NOTIFY : kind),
              .sub = (uint8_t)(rand_r(&seed) % 3),
              .peer = rand_r(&seed) % 3,
              .a = rand_r(&seed) % 4,
              .b = rand_r(&seed) % 5};
          step[j] = rand_r(&seed) % 3 == 0 ? rand_r(&seed) % 3 : 0;
        }
        for (int t = 0; t < turns; t++)
          for (int j = 0; j < k; j++)
            rec(body[j].kind, body[j].sub, body[j].peer, body[j].a,
                body[j].b + t * step[j]);
      } else if (what < 8) {
        rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, rand_r(&seed) % 4, rand_r(&seed) % 5);
      } else if (what < 9) {
        /* (a flush right after it would fold into it: a wait instead) */
        rec(PLD__TL_XFER, PLD__TL_GET | PLD__TL_LATER, 1, 8, 0);
        rec(PLD__TL_WAIT, PLD_WAIT_GE, 0, 1, 1);
      } else
        block_end();
    }
    block_end();
    assert_same();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_barrier_loop),
      cmocka_unit_test(test_three_turns),
      cmocka_unit_test(test_stepping_values),
      cmocka_unit_test(test_step_past_int32),
      cmocka_unit_test(test_longest_turn),
      cmocka_unit_test(test_unfinished_turn),
      cmocka_unit_test(test_later_transfer_folded),
      cmocka_unit_test(test_plain_transfers),
      cmocka_unit_test(test_group_transfers),
      cmocka_unit_test(test_repeated_calls),
      cmocka_unit_test(test_prefetch_loop),
      cmocka_unit_test(test_random_streams),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
