/* Window memory: buffers allocated by bytes and by shape, zero at the start
 * of every run, views at offsets and several views of one buffer, rank and
 * domain size from comm contexts, domains over a subset of the ranks and
 * overlapping domains, and kernel tasks of one device that share a
 * window. */
#include "comm_test.h"

/* ---- buffers and views -------------------------------------------------- */

enum { WR = 8, WC = 16, SMALL = 3 };

/* Buffer A (allocated by bytes) holds two WR x WC halves: `lo` and `hi` are
 * views of each half, `all` of the whole.  Buffer B (allocated by shape) is
 * three INT32 cells.  Before writing anything the kernel copies both
 * buffers out (`before`, ids[4..6]): they must be zero on every run. */
#define VIEWS_PARAMS                                                           \
  PLD_IN(x, FP32, WR, WC), PLD_WINDOW(lo, FP32, WR, WC),                       \
      PLD_WINDOW(hi, FP32, WR, WC), PLD_WINDOW(all, FP32, 2 * WR, WC),         \
      PLD_WINDOW(cells, INT32, SMALL), PLD_WINDOW(sig, INT32, NR),             \
      PLD_OUT(before, FP32, 2 * WR, WC), PLD_OUT(after, FP32, 2 * WR, WC),     \
      PLD_OUT(next_hi, FP32, WR, WC), PLD_OUT(ids, INT32, 8)

PLD_KERNEL(k_views, k, VIEWS_PARAMS) {
  pld_store(k, pld_load(k, pld_local(all), 0, 0, 2 * WR, WC), before, 0, 0);
  for (int64_t i = 0; i < SMALL; i++)
    pld_write(k, ids, PLD_AT(4 + i), pld_read(k, pld_local(cells), PLD_AT(i)));

  pld_comm comm = pld_window_comm(lo);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_write(k, ids, PLD_AT(0), me);
  pld_write(k, ids, PLD_AT(1), n);
  pld_write(k, ids, PLD_AT(2), pld_rank(k, pld_window_comm(sig)));
  pld_write(k, ids, PLD_AT(3), pld_nranks(k, pld_window_comm(cells)));
  pld_write(k, ids, PLD_AT(7), 0);

  /* x into the low half, -2x into the high half, through their own views;
   * the whole-buffer view sees both. */
  pld_tile *t = pld_load(k, x, 0, 0, WR, WC);
  pld_store(k, t, pld_local(lo), 0, 0);
  pld_muls(k, t, t, -2.0);
  pld_store(k, t, pld_local(hi), 0, 0);
  for (int64_t i = 0; i < SMALL; i++)
    pld_write(k, pld_local(cells), PLD_AT(i), 100 * (me + 1) + (int32_t)i);
  pld_store(k, pld_load(k, pld_local(all), 0, 0, 2 * WR, WC), after, 0, 0);

  /* A peer reads the view at an offset. */
  pld_barrier(k, sig);
  pld_store(k, pld_remote_load(k, hi, (me + 1) % n, 0, 0, WR, WC), next_hi, 0,
            0);
}

PLD_DEVICE(d_views, a, VIEWS_PARAMS) {
  pld_launch(a, k_views, 1, x, lo, hi, all, cells, sig, before, after, next_hi,
             ids);
}

PLD_HOST(h_views, h, PLD_IN(x, FP32, NR, WR, WC),
         PLD_OUT(before, FP32, NR, 2 * WR, WC),
         PLD_OUT(after, FP32, NR, 2 * WR, WC),
         PLD_OUT(next_hi, FP32, NR, WR, WC), PLD_OUT(ids, INT32, NR, 8)) {
  int n = pld_world_size(h);
  const size_t half = WR * WC * sizeof(float);
  pld_window_buf a = pld_window_alloc(h, 2 * half);
  pld_window_buf b = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(SMALL));
  pld_window_buf s = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  for (int r = 0; r < n; r++)
    pld_dispatch(h, d_views, r, pld_slice(h, x, r),
                 pld_window_view(h, a, PLD_FP32, PLD_SHAPE(WR, WC)),
                 pld_window_view_at(h, a, half, PLD_FP32, PLD_SHAPE(WR, WC)),
                 pld_window_view(h, a, PLD_FP32, PLD_SHAPE(2 * WR, WC)),
                 pld_window_view(h, b, PLD_INT32, PLD_SHAPE(SMALL)),
                 pld_window_view(h, s, PLD_INT32, PLD_SHAPE(n)),
                 pld_slice(h, before, r), pld_slice(h, after, r),
                 pld_slice(h, next_hi, r), pld_slice(h, ids, r));
}

static void check_views(int n, pld_tensor x, pld_tensor before,
                        pld_tensor after, pld_tensor next_hi, pld_tensor ids) {
  const float *xs = pld_tensor_data(x);
  const int per = WR * WC;
  float *want = calloc((size_t)(n * 2 * per), sizeof *want);
  assert_non_null(want);
  comm_expect_f32("before (windows are zero when a run starts)",
                  pld_tensor_data(before), want, (int64_t)n * 2 * per);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < per; i++) {
      want[r * 2 * per + i] = xs[r * per + i];
      want[r * 2 * per + per + i] = -2.0f * xs[r * per + i];
    }
  comm_expect_f32("after (both halves through the whole view)",
                  pld_tensor_data(after), want, (int64_t)n * 2 * per);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < per; i++)
      want[r * per + i] = -2.0f * xs[comm_next(r, n) * per + i];
  comm_expect_f32("next_hi (the next rank's view at an offset)",
                  pld_tensor_data(next_hi), want, (int64_t)n * per);
  free(want);
  int32_t wids[4 * 8];
  for (int r = 0; r < n; r++) {
    const int32_t row[8] = {r, n, r, n, 0, 0, 0, 0};
    memcpy(&wids[r * 8], row, sizeof row);
  }
  comm_expect_i32("ids (rank, nranks, rank of sig, nranks of cells, cells "
                  "before the run)",
                  pld_tensor_data(ids), wids, (int64_t)n * 8);
}

/* Every view works across 2, 3 and 4 ranks, and each run starts from zero
 * windows although the previous run left data in them. */
static void run_views_and_zero_start(int n) {
  pld_config cfg = comm_config(n);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){n, WR, WC}, 0.5f, -7);
  pld_tensor before = pld_test_tensor(3, (int64_t[]){n, 2 * WR, WC}, 0, 1);
  pld_tensor after = pld_test_tensor(3, (int64_t[]){n, 2 * WR, WC}, 0, 0);
  pld_tensor next_hi = pld_test_tensor(3, (int64_t[]){n, WR, WC}, 0, 0);
  pld_tensor ids = comm_int_tensor(-1, 2, (int64_t[]){n, 8});
  pld_program *p;
  assert_ok(
      pld_compile(h_views, &cfg, PLD_ARGS(x, before, after, next_hi, ids), &p));
  for (int run = 0; run < 2; run++) {
    float *xs = pld_tensor_data(x);
    for (int64_t i = 0; i < pld_tensor_numel(x); i++)
      xs[i] = (float)(run * 1000 + i % 251) - 3.25f;
    assert_ok(pld_program_run(p, PLD_ARGS(x, before, after, next_hi, ids)));
    check_views(n, x, before, after, next_hi, ids);
  }
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(x);
  pld_tensor_destroy(before);
  pld_tensor_destroy(after);
  pld_tensor_destroy(next_hi);
  pld_tensor_destroy(ids);
}

static void test_views_and_zero_start(void **state) {
  (void)state;
  comm_over_rank_counts(run_views_and_zero_start);
}

/* ---- comm domains ------------------------------------------------------- */

enum { DW = 8, NDOM = 2, DOM_RANKS = 4 };

/* Each domain rank publishes (world rank, its rank and size in win's
 * domain, its rank in sig's domain) in its window, meets its domain at a
 * barrier, and copies the next domain rank's cells into row `slot` of ids:
 * which world rank that is shows how domain ranks map to devices. */
#define DOMAIN_PARAMS                                                          \
  PLD_WINDOW(win, INT32, DW), PLD_WINDOW(sig, INT32, NR),                      \
      PLD_INOUT(ids, INT32, NDOM, DW), PLD_SCALAR(slot, INT32),                \
      PLD_SCALAR(world, INT32)

PLD_KERNEL(k_domain, k, DOMAIN_PARAMS) {
  pld_comm comm = pld_window_comm(win);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_write(k, pld_local(win), PLD_AT(0), world);
  pld_write(k, pld_local(win), PLD_AT(1), me);
  pld_write(k, pld_local(win), PLD_AT(2), n);
  pld_write(k, pld_local(win), PLD_AT(3), pld_rank(k, pld_window_comm(sig)));
  pld_barrier(k, sig);
  pld_store(k, pld_remote_load(k, win, (me + 1) % n, 0, 0, 1, DW), ids, slot,
            0);
}

PLD_DEVICE(d_in_none, a, PLD_INOUT(ids, INT32, NDOM, DW)) {
  (void)a; /* in no domain: ids keeps what the host put there */
}

PLD_DEVICE(d_in_one, a, DOMAIN_PARAMS) {
  pld_launch(a, k_domain, 1, win, sig, ids, slot, world);
}

PLD_DEVICE(d_in_two, a, PLD_WINDOW(win0, INT32, DW),
           PLD_WINDOW(sig0, INT32, NR), PLD_WINDOW(win1, INT32, DW),
           PLD_WINDOW(sig1, INT32, NR), PLD_INOUT(ids, INT32, NDOM, DW),
           PLD_SCALAR(world, INT32)) {
  pld_launch(a, k_domain, 1, win0, sig0, ids, 0, world);
  pld_launch(a, k_domain, 1, win1, sig1, ids, 1, world);
}

/* domain_member[mode][d][r]: rank r receives views of domain d's buffers.
 * Mode 0: one domain of ranks 1 and 3; mode 1: domains {0, 1, 2} and
 * {1, 2, 3}, which overlap on ranks 1 and 2. */
static const unsigned char domain_member[2][NDOM][DOM_RANKS] = {
    {{0, 1, 0, 1}, {0, 0, 0, 0}},
    {{1, 1, 1, 0}, {0, 1, 1, 1}},
};

PLD_HOST(h_domain, h, PLD_INOUT(ids, INT32, NR, NDOM, DW),
         PLD_SCALAR(mode, INT32)) {
  int n = pld_world_size(h);
  pld_window_buf win[NDOM], sig[NDOM];
  for (int d = 0; d < NDOM; d++) {
    win[d] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(DW));
    sig[d] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n));
  }
  for (int r = 0; r < n; r++) {
    pld_window w[NDOM] = {{NULL}}, s[NDOM] = {{NULL}};
    int in[NDOM], dom = -1;
    for (int d = 0; d < NDOM; d++) {
      in[d] = domain_member[mode][d][r];
      if (!in[d])
        continue;
      dom = d;
      w[d] = pld_window_view(h, win[d], PLD_INT32, PLD_SHAPE(DW));
      s[d] = pld_window_view(h, sig[d], PLD_INT32, PLD_SHAPE(n));
    }
    if (in[0] && in[1])
      pld_dispatch(h, d_in_two, r, w[0], s[0], w[1], s[1], pld_slice(h, ids, r),
                   r);
    else if (dom >= 0)
      pld_dispatch(h, d_in_one, r, w[dom], s[dom], pld_slice(h, ids, r), dom,
                   r);
    else
      pld_dispatch(h, d_in_none, r, pld_slice(h, ids, r));
  }
}

/* Domain ranks number the members in world rank order; row d of a
 * member's ids describes the next member of domain d. */
static void check_domains(int mode, const int32_t *ids) {
  for (int d = 0; d < NDOM; d++) {
    int members[DOM_RANKS], size = 0;
    for (int r = 0; r < DOM_RANKS; r++)
      if (domain_member[mode][d][r])
        members[size++] = r;
    for (int r = 0; r < DOM_RANKS; r++) {
      int32_t want[DW];
      for (int i = 0; i < DW; i++)
        want[i] = -1;
      for (int i = 0; i < size; i++)
        if (members[i] == r) {
          int j = (i + 1) % size;
          const int32_t row[DW] = {members[j], j, size, j, 0, 0, 0, 0};
          memcpy(want, row, sizeof row);
        }
      char what[64];
      snprintf(what, sizeof what, "ids of rank %d, domain %d (mode %d)", r, d,
               mode);
      comm_expect_i32(what, &ids[(r * NDOM + d) * DW], want, DW);
    }
  }
}

static void run_domains(int mode) {
  pld_config cfg = comm_config(DOM_RANKS);
  pld_tensor ids = comm_int_tensor(-1, 3, (int64_t[]){DOM_RANKS, NDOM, DW});
  pld_program *p;
  assert_ok(pld_compile(h_domain, &cfg, PLD_ARGS(ids, mode), &p));
  for (int run = 0; run < 2; run++) {
    assert_ok(pld_program_run(p, PLD_ARGS(ids, mode)));
    check_domains(mode, pld_tensor_data(ids));
  }
  pld_program_destroy(p);
  assert_no_children();
  pld_tensor_destroy(ids);
}

/* A buffer only ranks 1 and 3 of 4 see: they are ranks 0 and 1 of a
 * domain of 2, and reach each other, not ranks 0 and 2. */
static void test_domain_subset(void **state) {
  (void)state;
  run_domains(0);
}

/* Ranks 1 and 2 are in two domains, with a different number in each. */
static void test_domains_overlap(void **state) {
  (void)state;
  run_domains(1);
}

/* ---- kernels of one device sharing a window ----------------------------- */

/* k_stage_late stores x into the window after a pause; k_read_window,
 * launched after it, copies the window out.  The window is an InOut
 * parameter of both, so the second task must wait for the first. */
PLD_KERNEL(k_stage_late, k, PLD_IN(x, FP32, WR, WC),
           PLD_WINDOW(win, FP32, WR, WC)) {
  struct timespec pause = {0, 30 * 1000 * 1000};
  nanosleep(&pause, NULL);
  pld_store(k, pld_load(k, x, 0, 0, WR, WC), pld_local(win), 0, 0);
}
PLD_KERNEL(k_read_window, k, PLD_WINDOW(win, FP32, WR, WC),
           PLD_OUT(y, FP32, WR, WC)) {
  pld_store(k, pld_load(k, pld_local(win), 0, 0, WR, WC), y, 0, 0);
}
PLD_DEVICE(d_stage_read, a, PLD_IN(x, FP32, WR, WC),
           PLD_WINDOW(win, FP32, WR, WC), PLD_OUT(y, FP32, WR, WC)) {
  pld_launch(a, k_stage_late, 1, x, win);
  pld_launch(a, k_read_window, 1, win, y);
}
PLD_HOST(h_stage_read, h, PLD_IN(x, FP32, NR, WR, WC),
         PLD_OUT(y, FP32, NR, WR, WC)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(WR, WC));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_stage_read, r, pld_slice(h, x, r),
                 pld_window_view(h, buf, PLD_FP32, PLD_SHAPE(WR, WC)),
                 pld_slice(h, y, r));
}

/* (A regression test: window arguments used to be no task regions, so
 * k_read_window ran alongside k_stage_late and read zeros; fixed in
 * a8575b8.) */
static void test_window_tasks_keep_order(void **state) {
  (void)state;
  pld_config cfg = comm_config(2);
  pld_tensor x = pld_test_tensor(3, (int64_t[]){2, WR, WC}, 1, 1);
  pld_tensor y = pld_test_tensor(3, (int64_t[]){2, WR, WC}, 0, 0);
  assert_ok(pld_run(h_stage_read, &cfg, PLD_ARGS(x, y)));
  comm_expect_f32("y (read after the staging task)", pld_tensor_data(y),
                  pld_tensor_data(x), pld_tensor_numel(x));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
}

/* ---- keep_windows ----------------------------------------------------- */

/* Cells of a window past 1 MiB, which the shared-memory fabric zeroes
 * otherwise than a small one. */
enum { BIG_CELLS = (1 << 18) + 1024 };
PLD_DYNAMIC(NB);

/* Each run, every rank records the count in its window, and in the last
 * cell of a large one, and adds 1 to each. */
PLD_KERNEL(k_count_runs, k, PLD_WINDOW(count, INT32, 1),
           PLD_WINDOW(big, INT32, NB), PLD_OUT(seen, INT32, 2)) {
  const int32_t me = pld_rank(k, pld_window_comm(count));
  const int64_t last = pld_tensor_dim(pld_local(big), 0) - 1;
  pld_write(k, seen, PLD_AT(0), pld_read(k, pld_local(count), PLD_AT(0)));
  pld_write(k, seen, PLD_AT(1), pld_read(k, pld_local(big), PLD_AT(last)));
  pld_notify(k, count, me, PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_notify(k, big, me, PLD_AT(last), 1, PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_count_runs, a, PLD_WINDOW(count, INT32, 1),
           PLD_WINDOW(big, INT32, NB), PLD_OUT(seen, INT32, 2)) {
  pld_launch(a, k_count_runs, 1, count, big, seen);
}
PLD_HOST(h_count_runs, h, PLD_OUT(seen, INT32, NR, 2)) {
  pld_window_buf buf = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  pld_window_buf big =
      pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(BIG_CELLS));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_count_runs, r,
                 pld_window_view(h, buf, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view(h, big, PLD_INT32, PLD_SHAPE(BIG_CELLS)),
                 pld_slice(h, seen, r));
}

/* Windows, small and past 1 MiB, start every run at zero, unless the
 * program keeps them: then a run sees what the one before left. */
static void test_keep_windows(void **state) {
  (void)state;
  for (int keep = 0; keep <= 1; keep++) {
    pld_config cfg = comm_config(3);
    cfg.keep_windows = keep;
    pld_tensor seen;
    assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){3, 2}, &seen));
    pld_program *p;
    assert_ok(pld_compile(h_count_runs, &cfg, PLD_ARGS(seen), &p));
    for (int run = 0; run < 4; run++) {
      assert_ok(pld_program_run(p, PLD_ARGS(seen)));
      const int32_t *got = pld_tensor_data(seen);
      for (int i = 0; i < 3 * 2; i++)
        assert_int_equal(got[i], keep ? run : 0);
    }
    pld_program_destroy(p);
    pld_tensor_destroy(seen);
  }
}

static void read_file(const char *dir, const char *name, char *buf,
                      size_t cap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* The artifact folder shows window buffers, their domains, and each view
 * with this rank's place in its domain. */
static void test_window_artifacts(void **state) {
  (void)state;
  pld_config cfg = comm_config(3);
  cfg.artifact_dir = "";
  pld_tensor seen;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){3, 2}, &seen));
  pld_program *p;
  assert_ok(pld_compile(h_count_runs, &cfg, PLD_ARGS(seen), &p));
  static char text[65536];
  read_file(pld_program_artifact_dir(p), "program.txt", text, sizeof text);
  assert_non_null(strstr(text, "window buffer #0: 4 bytes on each rank of "
                               "its domain (copies of 4096 bytes): ranks 0 "
                               "1 2"));
  read_file(pld_program_artifact_dir(p), "rank2.txt", text, sizeof text);
  assert_non_null(strstr(text, "count: INT32[1] window, view of buffer #0 at "
                               "byte 0; rank 2 of 3 in its domain"));
  assert_non_null(strstr(text, "count: INT32[1] window (buffer #0, rank 2 of "
                               "3)"));
  remove_dir(pld_program_artifact_dir(p));
  pld_program_destroy(p);
  pld_tensor_destroy(seen);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_views_and_zero_start),
    cmocka_unit_test(test_keep_windows),
    cmocka_unit_test(test_window_artifacts),
    cmocka_unit_test(test_domain_subset),
    cmocka_unit_test(test_domains_overlap),
    cmocka_unit_test(test_window_tasks_keep_order),
};

PLD_TEST_MAIN("comm_window", tests)
