/* The diagnostics files (PLD_DIAG, pld_config.diag; device/diag.c),
 * checked against a program whose graph and counts are known:
 *   - every rank writes rank<r>/d<k>/deps.json and
 *     scope_stats/scope_stats.jsonl per dispatch (rank 0 has two
 *     dispatches, d0 and d1; the others one), on 2, 3 and 4 ranks;
 *   - a producer and its consumer overlapping on a device tensor make
 *     exactly one edge, with its reason (the producer's y written, the
 *     consumer's x read, bytes [0, 128)); a third launch that only reads
 *     what the first reads makes none;
 *   - the counts are the shapes': launches, blocks, and the bytes each
 *     block's tiles moved from and to global memory;
 *   - results are the same bits with the diagnostics on and off;
 *   - no folder, or a word PLD_DIAG does not know, fails pld_compile. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pld_test.h"

enum { DR = 4, DC = 8, TILE_BYTES = DR * DC * 4 };
PLD_DYNAMIC(DNR);

/* y = x + 1, each block its share of the rows (one load, one store). */
PLD_KERNEL(k_inc, k, PLD_IN(x, FP32, DR, DC), PLD_OUT(y, FP32, DR, DC)) {
  const int32_t rows = DR / pld_block_num(k), r0 = pld_block_idx(k) * rows;
  pld_tile *t = pld_load(k, x, r0, 0, rows, DC);
  pld_adds(k, t, t, 1.0f);
  pld_store(k, t, y, r0, 0);
}

/* tmp = x + 1 (task 0), y = tmp + 1 (task 1, after 0), z = x + 1 (task 2,
 * after none). */
PLD_DEVICE(d_chain, a, PLD_IN(x, FP32, DR, DC), PLD_OUT(y, FP32, DR, DC),
           PLD_OUT(z, FP32, DR, DC)) {
  pld_tensor tmp = pld_device_alloc(a, PLD_FP32, 2, (int64_t[]){DR, DC});
  pld_launch(a, k_inc, 2, x, tmp);
  pld_launch(a, k_inc, 2, tmp, y);
  pld_launch(a, k_inc, 2, x, z);
}

PLD_DEVICE(d_once, a, PLD_IN(x, FP32, DR, DC), PLD_OUT(w, FP32, DR, DC)) {
  pld_launch(a, k_inc, 1, x, w);
}

PLD_HOST(h_diag, h, PLD_IN(x, FP32, DNR, DR, DC), PLD_OUT(y, FP32, DNR, DR, DC),
         PLD_OUT(z, FP32, DNR, DR, DC), PLD_OUT(w, FP32, DR, DC)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_chain, r, pld_slice(h, x, r), pld_slice(h, y, r),
                 pld_slice(h, z, r));
  pld_dispatch(h, d_once, 0, pld_slice(h, x, 0), w);
}

static int ids[8];

/* The file's text (NULL if missing), NUL-terminated. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *b = malloc(1 << 20);
  assert_non_null(b);
  size_t n = fread(b, 1, (1 << 20) - 1, f);
  b[n] = '\0';
  fclose(f);
  return b;
}

static int count_of(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

/* Runs h_diag on n ranks with diag ("" for none) into folder dir; the
 * outputs in y, z, w. */
static void run_diag(int n, const char *diag, const char *dir, pld_tensor x,
                     pld_tensor y, pld_tensor z, pld_tensor w) {
  for (int i = 0; i < n; i++)
    ids[i] = i;
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.device_ids = ids;
  cfg.ndevices = n;
  cfg.diag = diag;
  cfg.artifact_dir = dir;
  assert_ok(
      pld_run(h_diag, &cfg, 4,
              (pld_arg[]){PLD_ARG(x), PLD_ARG(y), PLD_ARG(z), PLD_ARG(w)}));
}

static void check_deps_d0(const char *s, int r) {
  char head[96];
  snprintf(head, sizeof head, "\"rank\":%d,\"device\":%d,", r, r);
  assert_non_null(strstr(s, head));
  assert_non_null(strstr(s, "\"dispatch\":0,\"function\":\"d_chain\""));
  assert_int_equal(count_of(s, "\"kernel\":\"k_inc\""), 3);
  /* Exactly one edge, 0 -> 1, for the device tensor task 0 writes as y
   * and task 1 reads as x. */
  const char *edges = strstr(s, "\"edges\":[");
  assert_non_null(edges);
  assert_int_equal(count_of(edges, "\"from\":"), 1);
  assert_non_null(strstr(
      edges, "{\"from\":0,\"to\":1,\"why\":\"overlap\","
             "\"from_side\":{\"param\":\"y\",\"writes\":true,\"counts\":"
             "false,\"bytes\":[0,128]},"
             "\"to_side\":{\"param\":\"x\",\"writes\":false,\"counts\":false,"
             "\"bytes\":[0,128]}}"));
}

/* The line of scope_stats.jsonl starting with prefix has these counts. */
static void check_stats_line(const char *s, const char *prefix, int launches,
                             int blocks, int tiles) {
  const char *l = strstr(s, prefix);
  assert_non_null(l);
  char want[256];
  snprintf(want, sizeof want, "\"launches\":%d,\"blocks\":%d,", launches,
           blocks);
  const char *eol = strchr(l, '\n');
  assert_non_null(eol);
  const char *at = strstr(l, want);
  assert_true(at && at < eol);
  snprintf(want, sizeof want,
           "\"gm_load_bytes\":%d,\"gm_store_bytes\":%d,\"put_bytes\":0,"
           "\"get_bytes\":0,\"remote_load_bytes\":0,\"remote_store_bytes\":0,"
           "\"colls\":0,\"coll_bytes\":0,\"notifies\":0,\"waits\":0,"
           "\"wait_us\":0.000}",
           tiles * TILE_BYTES, tiles * TILE_BYTES);
  at = strstr(l, want);
  assert_true(at && at < eol);
}

static void diag_ranks(int n) {
  char dir[] = "/tmp/pld-test-diag-XXXXXX";
  assert_non_null(mkdtemp(dir));
  int64_t shape[] = {n, DR, DC}, one[] = {DR, DC};
  pld_tensor x = pld_test_tensor(3, shape, 0.25f, -3.0f);
  pld_tensor y[2], z[2], w[2];
  for (int i = 0; i < 2; i++) {
    y[i] = pld_test_tensor(3, shape, 0, 0);
    z[i] = pld_test_tensor(3, shape, 0, 0);
    w[i] = pld_test_tensor(2, one, 0, 0);
  }
  run_diag(n, "", dir, x, y[0], z[0], w[0]);
  char path[512];
  snprintf(path, sizeof path, "%s/dfx", dir);
  struct stat st;
  assert_int_not_equal(stat(path, &st), 0); /* off: nothing written */
  run_diag(n, "deps,stats", dir, x, y[1], z[1], w[1]);
  /* The same bits, diagnostics on or off. */
  size_t bytes = (size_t)n * TILE_BYTES;
  assert_memory_equal(pld_tensor_data(y[0]), pld_tensor_data(y[1]), bytes);
  assert_memory_equal(pld_tensor_data(z[0]), pld_tensor_data(z[1]), bytes);
  assert_memory_equal(pld_tensor_data(w[0]), pld_tensor_data(w[1]), TILE_BYTES);
  const float *xs = pld_tensor_data(x), *ys = pld_tensor_data(y[1]);
  for (int64_t i = 0; i < n * DR * DC; i++)
    assert_true(ys[i] == xs[i] + 2.0f);

  for (int r = 0; r < n; r++) {
    snprintf(path, sizeof path, "%s/dfx/rank%d/d0/deps.json", dir, r);
    char *deps = slurp(path);
    assert_non_null(deps);
    check_deps_d0(deps, r);
    free(deps);
    snprintf(path, sizeof path,
             "%s/dfx/rank%d/d0/scope_stats/scope_stats.jsonl", dir, r);
    char *stats = slurp(path);
    assert_non_null(stats);
    assert_int_equal(count_of(stats, "\n"), 4); /* the dispatch, 3 tasks */
    check_stats_line(stats, "{\"scope\":\"dispatch\"", 3, 6, 3);
    check_stats_line(stats, "{\"scope\":\"task\",\"task\":0,", 1, 2, 1);
    check_stats_line(stats, "{\"scope\":\"task\",\"task\":1,", 1, 2, 1);
    check_stats_line(stats, "{\"scope\":\"task\",\"task\":2,", 1, 2, 1);
    free(stats);
    /* Rank 0's second dispatch has a folder of its own. */
    snprintf(path, sizeof path, "%s/dfx/rank%d/d1/deps.json", dir, r);
    deps = slurp(path);
    if (r > 0) {
      assert_null(deps);
      continue;
    }
    assert_non_null(deps);
    assert_non_null(strstr(deps, "\"dispatch\":1,\"function\":\"d_once\""));
    assert_non_null(strstr(deps, "\"edges\":[]"));
    free(deps);
    snprintf(path, sizeof path,
             "%s/dfx/rank%d/d1/scope_stats/scope_stats.jsonl", dir, r);
    stats = slurp(path);
    assert_non_null(stats);
    check_stats_line(stats, "{\"scope\":\"dispatch\"", 1, 1, 1);
    free(stats);
  }
  pld_tensor_destroy(x);
  for (int i = 0; i < 2; i++) {
    pld_tensor_destroy(y[i]);
    pld_tensor_destroy(z[i]);
    pld_tensor_destroy(w[i]);
  }
  remove_dir(dir);
}

static void test_diag_2(void **state) {
  (void)state;
  diag_ranks(2);
}

static void test_diag_3(void **state) {
  (void)state;
  diag_ranks(3);
}

static void test_diag_4(void **state) {
  (void)state;
  diag_ranks(4);
}

/* No folder to write in, or a word it does not know: pld_compile says. */
static void test_diag_refused(void **state) {
  (void)state;
  int64_t shape[] = {2, DR, DC}, one[] = {DR, DC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0),
             y = pld_test_tensor(3, shape, 0, 0),
             z = pld_test_tensor(3, shape, 0, 0),
             w = pld_test_tensor(2, one, 0, 0);
  pld_config cfg = PLD_CONFIG_INIT;
  ids[0] = 0;
  ids[1] = 1;
  cfg.device_ids = ids;
  cfg.ndevices = 2;
  cfg.diag = "deps";
  unsetenv("PLD_DIAG_DIR");
  pld_arg args[] = {PLD_ARG(x), PLD_ARG(y), PLD_ARG(z), PLD_ARG(w)};
  pld_program *p = NULL;
  assert_fails_with(pld_compile(h_diag, &cfg, 4, args, &p), PLD_ERR_CONFIG,
                    "pld_compile: diagnostics (pld_config.diag 'deps'): "
                    "expected a folder to write them in, an artifact folder "
                    "(pld_config.artifact_dir) or PLD_DIAG_DIR, got neither");
  cfg.diag = "deps,swimlane";
  assert_fails_with(pld_compile(h_diag, &cfg, 4, args, &p), PLD_ERR_CONFIG,
                    "pld_compile: diagnostics: pld_config.diag, read as "
                    "PLD_DIAG='deps,swimlane': expected a comma-separated "
                    "list of deps, stats or all, got 'swimlane'");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(z);
  pld_tensor_destroy(w);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_diag_2),
    cmocka_unit_test(test_diag_3),
    cmocka_unit_test(test_diag_4),
    cmocka_unit_test(test_diag_refused),
};

PLD_TEST_MAIN("diag", tests)
