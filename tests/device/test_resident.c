/* Device-resident tensors (pld_device_tensor_create): a per-rank state
 * updated in place over many runs and never copied, against plain C over
 * 2, 3 and 4 ranks and both simulators; write and read round trips for
 * several dtypes, per rank and on one rank; a tensor given to a rank
 * where it does not lie; misuse (arguments, shapes, another program's
 * tensor, freed tensors, destroyed programs); the heap's memory given
 * back; submitted runs and new scalar values with a resident state. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../host/programs.h"
#include "core/tunables.h"
#include "pld_test.h"

static int ids[16];

/* ---- h += x * s; y = h ------------------------------------------------- */

enum { SR = 2 * TR }; /* a rank's part: SR x TC, two tiles of TR rows */

/* Milliseconds each kernel block spins first: set before the devices are
 * started (they inherit it), so that submitted runs are still in flight
 * when the host reads the state. */
static int32_t spin_ms;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

PLD_KERNEL(k_state, k, PLD_IN(x, FP32, SR, TC), PLD_INOUT(h, FP32, SR, TC),
           PLD_OUT(y, FP32, SR, TC), PLD_SCALAR(s, FP32)) {
  if (spin_ms > 0) {
    double until = now_ms() + spin_ms;
    volatile uint64_t count = 0;
    while (now_ms() < until)
      count++;
  }
  for (int64_t row = 0; row < SR; row += TR) {
    pld_tile *a = pld_load(k, x, row, 0, TR, TC);
    pld_tile *b = pld_load(k, h, row, 0, TR, TC);
    pld_muls(k, a, a, s);
    pld_add(k, b, b, a);
    pld_store(k, b, h, row, 0);
    pld_store(k, b, y, row, 0);
    pld_tile_free(k, b);
    pld_tile_free(k, a);
  }
}
PLD_DEVICE(d_state, a, PLD_IN(x, FP32, SR, TC), PLD_INOUT(h, FP32, SR, TC),
           PLD_OUT(y, FP32, SR, TC), PLD_SCALAR(s, FP32)) {
  pld_launch(a, k_state, 1, x, h, y, s);
}
PLD_HOST(h_state, hh, PLD_IN(x, FP32, NR, SR, TC),
         PLD_INOUT(h, FP32, NR, SR, TC), PLD_OUT(y, FP32, NR, SR, TC),
         PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(hh); r++)
    pld_dispatch(hh, d_state, r, pld_slice(hh, x, r), pld_slice(hh, h, r),
                 pld_slice(hh, y, r), s);
}

/* The C loop: want += x * s, in FP32 (one rounding each). */
static void step_ref(float *want, pld_tensor x, float s) {
  const float *xs = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++) {
    volatile float m = xs[i] * s;
    want[i] = want[i] + m;
  }
}

static void expect_floats(const float *got, const float *want, int64_t n,
                          const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&got[i], &want[i], sizeof got[i]) != 0) {
      print_error("%s: element %lld = %.9g, expected %.9g\n", what,
                  (long long)i, (double)got[i], (double)want[i]);
      fail();
    }
}

/* Garbage: NaN everywhere but a few huge values, so that any use of it
 * shows. */
static void garbage(pld_tensor t) {
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = i % 3 ? NAN : 1e30f;
}

static void fill_x(pld_tensor x, int run) {
  float *d = pld_tensor_data(x);
  for (int64_t i = 0; i < pld_tensor_numel(x); i++)
    d[i] = (float)((i * 7 + run * 13) % 29) * 0.25f - 3.0f + (float)run;
}

static pld_program *compile_state(int n, int first, int step,
                                  const char *platform, int depth,
                                  pld_tensor *h_host) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  cfg.max_in_flight = depth;
  const int64_t shape[] = {n, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 0.5f, 1.0f);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  *h_host = pld_test_tensor(3, shape, 0.25f, -2.0f);
  pld_program *p = NULL;
  float s = 1.0f;
  assert_ok(pld_compile(h_state, &cfg, PLD_ARGS(x, *h_host, y, s), &p));
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return p;
}

static pld_tensor each_rank_state(pld_program *p) {
  pld_tensor h;
  assert_ok(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32, 2,
                                     (const int64_t[]){SR, TC}, &h));
  return h;
}

enum { K = 6 };

/* K runs, each with its own x tensor and new contents; the compile's host
 * tensor in h's place holds garbage throughout. */
static void state_in_place(int n, int first, int step, const char *platform) {
  pld_tensor h_host;
  pld_program *p = compile_state(n, first, step, platform, 0, &h_host);
  const int64_t shape[] = {n, SR, TC};
  int64_t numel = (int64_t)n * SR * TC;
  pld_tensor h = each_rank_state(p);
  assert_int_equal(pld_tensor_dtype(h), PLD_FP32);
  assert_int_equal(pld_tensor_ndim(h), 3);
  assert_int_equal(pld_tensor_dim(h, 0), n);
  assert_int_equal(pld_tensor_dim(h, 1), SR);
  assert_int_equal(pld_tensor_dim(h, 2), TC);
  /* A start other than zero, through write. */
  pld_tensor start = pld_test_tensor(3, shape, -0.125f, 5.0f);
  assert_ok(pld_device_tensor_write(h, start));
  float *want = malloc((size_t)numel * sizeof *want);
  assert_non_null(want);
  memcpy(want, pld_tensor_data(start), (size_t)numel * sizeof *want);
  garbage(h_host);
  float *junk = malloc((size_t)numel * sizeof *junk);
  assert_non_null(junk);
  memcpy(junk, pld_tensor_data(h_host), (size_t)numel * sizeof *junk);
  pld_tensor back = pld_test_tensor(3, shape, 0, 0);
  const float s = 0.75f;
  char what[96];
  for (int k = 0; k < K; k++) {
    pld_tensor x = pld_test_tensor(3, shape, 0, 0);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    fill_x(x, k);
    garbage(y);
    assert_ok(pld_program_run(p, PLD_ARGS(x, h, y, s)));
    step_ref(want, x, s);
    snprintf(what, sizeof what, "%s, %d ranks, run %d: y (a host Out)",
             platform, n, k + 1);
    expect_floats(pld_tensor_data(y), want, numel, what);
    garbage(back);
    assert_ok(pld_device_tensor_read(h, back));
    snprintf(what, sizeof what, "%s, %d ranks, run %d: h read back", platform,
             n, k + 1);
    expect_floats(pld_tensor_data(back), want, numel, what);
    /* Nothing came back into the compile's tensor either. */
    if (memcmp(pld_tensor_data(h_host), junk, (size_t)numel * sizeof *junk)) {
      print_error("%s, %d ranks, run %d: the compile's host tensor in h's "
                  "place was written\n",
                  platform, n, k + 1);
      fail();
    }
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
  }
  /* The same program still runs with a host tensor in h's place, which
   * then is copied in and out as usual, and leaves the resident one be. */
  pld_tensor hx = pld_test_tensor(3, shape, 0.5f, 0.5f);
  pld_tensor x = pld_test_tensor(3, shape, 0, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  fill_x(x, 99);
  float *want_hx = malloc((size_t)numel * sizeof *want_hx);
  assert_non_null(want_hx);
  memcpy(want_hx, pld_tensor_data(hx), (size_t)numel * sizeof *want_hx);
  assert_ok(pld_program_run(p, PLD_ARGS(x, hx, y, s)));
  step_ref(want_hx, x, s);
  expect_floats(pld_tensor_data(hx), want_hx, numel, "a host h after them");
  expect_floats(pld_tensor_data(y), want_hx, numel, "y of the host h run");
  assert_ok(pld_device_tensor_read(h, back));
  expect_floats(pld_tensor_data(back), want, numel,
                "the resident h after a run with a host h");
  assert_ok(pld_device_tensor_free(h));
  pld_tensor_destroy(h);
  pld_program_destroy(p);
  assert_no_children();
  free(want);
  free(want_hx);
  free(junk);
  pld_tensor_destroy(hx);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(back);
  pld_tensor_destroy(start);
  pld_tensor_destroy(h_host);
}

static void test_state_in_place(void **state) {
  (void)state;
  state_in_place(2, 0, 1, "a2a3sim");
  state_in_place(3, 1, 4, "a5sim");
  state_in_place(4, 15, -5, "a2a3sim");
}

/* ---- write, read -----------------------------------------------------------
 */

static uint32_t lcg = 12345;
static unsigned char next_byte(void) {
  lcg = lcg * 1103515245u + 12345u;
  return (unsigned char)(lcg >> 16);
}

static void fill_bytes(pld_tensor t) {
  unsigned char *d = pld_tensor_data(t);
  size_t n = (size_t)pld_tensor_numel(t) * pld_dtype_size(pld_tensor_dtype(t));
  for (size_t i = 0; i < n; i++)
    d[i] = next_byte();
}

static size_t tensor_bytes(pld_tensor t) {
  return (size_t)pld_tensor_numel(t) * pld_dtype_size(pld_tensor_dtype(t));
}

static void expect_same_bytes(pld_tensor got, pld_tensor want,
                              const char *what) {
  const unsigned char *g = pld_tensor_data(got), *w = pld_tensor_data(want);
  size_t n = tensor_bytes(want);
  assert_int_equal(tensor_bytes(got), n);
  for (size_t i = 0; i < n; i++)
    if (g[i] != w[i]) {
      print_error("%s: byte %zu of %zu = 0x%02x, expected 0x%02x\n", what, i, n,
                  g[i], w[i]);
      fail();
    }
}

static void expect_zero_bytes(pld_tensor t, const char *what) {
  const unsigned char *d = pld_tensor_data(t);
  for (size_t i = 0; i < tensor_bytes(t); i++)
    if (d[i]) {
      print_error("%s: byte %zu = 0x%02x, expected a fresh tensor's 0\n", what,
                  i, d[i]);
      fail();
    }
}

struct kind {
  pld_dtype dtype;
  int ndim;
  int64_t shape[3];
};

/* Sizes not a multiple of 64 bytes (60, 42, 65, 12), and some that are. */
static const struct kind kinds[] = {
    {PLD_FP32, 2, {3, 5, 0}},  {PLD_INT32, 2, {16, 4, 0}},
    {PLD_FP16, 2, {7, 3, 0}},  {PLD_INT8, 2, {5, 13, 0}},
    {PLD_INT8, 1, {12, 0, 0}}, {PLD_FP16, 3, {2, 4, 8}},
    {PLD_INT32, 1, {1, 0, 0}}, {PLD_FP32, 3, {3, 3, 17}},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

/* Each kind per rank, then on `one` alone: a fresh tensor reads zeros;
 * written, it reads back what was written; all kinds live at once, so
 * that one's bytes cannot spill into another's. */
static void round_trips(int n, int first, int step, const char *platform,
                        int one) {
  pld_tensor h_host;
  pld_program *p = compile_state(n, first, step, platform, 0, &h_host);
  pld_tensor dev[2][NKINDS], in[2][NKINDS], out[2][NKINDS];
  char what[128];
  for (int each = 0; each < 2; each++)
    for (int i = 0; i < NKINDS; i++) {
      const struct kind *kd = &kinds[i];
      int64_t full[4] = {n};
      memcpy(full + each, kd->shape, (size_t)kd->ndim * sizeof full[0]);
      assert_ok(pld_device_tensor_create(p, each ? PLD_EACH_RANK : one,
                                         kd->dtype, kd->ndim, kd->shape,
                                         &dev[each][i]));
      assert_int_equal(pld_tensor_ndim(dev[each][i]), kd->ndim + each);
      assert_ok(
          pld_tensor_create(kd->dtype, kd->ndim + each, full, &in[each][i]));
      assert_ok(
          pld_tensor_create(kd->dtype, kd->ndim + each, full, &out[each][i]));
      fill_bytes(out[each][i]);
      assert_ok(pld_device_tensor_read(dev[each][i], out[each][i]));
      snprintf(what, sizeof what, "%s, %d ranks, %s, kind %d: fresh", platform,
               n, each ? "each rank" : "one rank", i);
      expect_zero_bytes(out[each][i], what);
      fill_bytes(in[each][i]);
      assert_ok(pld_device_tensor_write(dev[each][i], in[each][i]));
    }
  for (int round = 0; round < 2; round++)
    for (int each = 0; each < 2; each++)
      for (int i = 0; i < NKINDS; i++) {
        if (round == 1) { /* written again: the new bytes replace the old */
          fill_bytes(in[each][i]);
          assert_ok(pld_device_tensor_write(dev[each][i], in[each][i]));
        }
        fill_bytes(out[each][i]);
        assert_ok(pld_device_tensor_read(dev[each][i], out[each][i]));
        snprintf(what, sizeof what, "%s, %d ranks, %s, kind %d (%s), round %d",
                 platform, n, each ? "each rank" : "one rank", i,
                 pld_dtype_name(kinds[i].dtype), round + 1);
        expect_same_bytes(out[each][i], in[each][i], what);
      }
  for (int each = 0; each < 2; each++)
    for (int i = 0; i < NKINDS; i++) {
      assert_ok(pld_device_tensor_free(dev[each][i]));
      pld_tensor_destroy(dev[each][i]);
      pld_tensor_destroy(in[each][i]);
      pld_tensor_destroy(out[each][i]);
    }
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

static void test_write_read(void **state) {
  (void)state;
  round_trips(2, 0, 1, "a2a3sim", 0);
  round_trips(3, 2, 3, "a5sim", 1);
  round_trips(4, 7, -2, "a5sim", 3);
}

/* Memory freed and made again reads zeros, not the last tensor's bytes. */
static void test_reuse_reads_zeros(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(3, 0, 1, "a2a3sim", 0, &h_host);
  const int64_t part[] = {SR, TC};
  pld_tensor d, full;
  assert_ok(
      pld_tensor_create(PLD_FP32, 3, (const int64_t[]){3, SR, TC}, &full));
  for (int i = 0; i < 3; i++) {
    assert_ok(
        pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32, 2, part, &d));
    assert_ok(pld_device_tensor_read(d, full));
    expect_zero_bytes(full, "made again");
    fill_bytes(full);
    assert_ok(pld_device_tensor_write(d, full));
    assert_ok(pld_device_tensor_free(d));
    pld_tensor_destroy(d);
  }
  pld_tensor_destroy(full);
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

/* ---- where a tensor lies ------------------------------------------------- */

/* h = h * s + 1, in place: rank `target` with the slice `which` of h
 * (both read when the host function is traced), every other rank r with
 * slice r of z (every rank must be dispatched). */
PLD_KERNEL(k_axpb, k, PLD_INOUT(y, FP32, TR, TC), PLD_SCALAR(s, FP32)) {
  pld_tile *t = pld_load(k, y, 0, 0, TR, TC);
  pld_muls(k, t, t, s);
  pld_adds(k, t, t, 1.0);
  pld_store(k, t, y, 0, 0);
}
PLD_DEVICE(d_axpb, a, PLD_INOUT(y, FP32, TR, TC), PLD_SCALAR(s, FP32)) {
  pld_launch(a, k_axpb, 1, y, s);
}

static int target, which;
PLD_HOST(h_one, hh, PLD_INOUT(h, FP32, NR, TR, TC),
         PLD_INOUT(z, FP32, NR, TR, TC), PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(hh); r++)
    if (r == target)
      pld_dispatch(hh, d_axpb, r, pld_slice(hh, h, which), s);
    else
      pld_dispatch(hh, d_axpb, r, pld_slice(hh, z, r), s);
}

/* Rank r is given the slice r + shift (mod the world size). */
static int shift;
PLD_HOST(h_rot, hh, PLD_INOUT(h, FP32, NR, TR, TC), PLD_SCALAR(s, FP32)) {
  int n = pld_world_size(hh);
  for (int r = 0; r < n; r++)
    pld_dispatch(hh, d_axpb, r, pld_slice(hh, h, (r + shift) % n), s);
}

static void axpb_ref(float *v, int64_t n, float s) {
  for (int64_t i = 0; i < n; i++) {
    volatile float m = v[i] * s;
    v[i] = m + 1.0f;
  }
}

static pld_program *compile_one(pld_config *cfg, int n, int t, int w) {
  target = t;
  which = w;
  pld_tensor h = pld_test_tensor(3, (const int64_t[]){n, TR, TC}, 1, 0);
  pld_tensor z = pld_test_tensor(3, (const int64_t[]){n, TR, TC}, 1, 0);
  float s = 2.0f;
  pld_program *p = NULL;
  assert_ok(pld_compile(h_one, cfg, PLD_ARGS(h, z, s), &p));
  pld_tensor_destroy(h);
  pld_tensor_destroy(z);
  return p;
}

/* What h_one does, in plain C, to h and z. */
static void one_ref(float *h, float *z, int n, int t, int w, float s) {
  const int64_t per = TR * TC;
  for (int r = 0; r < n; r++)
    if (r == t)
      axpb_ref(h + (int64_t)w * per, per, s);
    else
      axpb_ref(z + (int64_t)r * per, per, s);
}

static float *copy_floats(pld_tensor t) {
  size_t n = (size_t)pld_tensor_numel(t);
  float *c = malloc(n * sizeof *c);
  assert_non_null(c);
  memcpy(c, pld_tensor_data(t), n * sizeof *c);
  return c;
}

/* A tensor on rank `owner` of a world of n, of the host function's whole
 * shape: the owner's dispatch uses its slice `w`; another rank's dispatch
 * of it fails the run.  (The host function is traced again for new values
 * of s: target and which are set to the program's before each run.) */
static void single_rank(int n, int first, int step, const char *platform,
                        int owner, int w, int other) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  const int64_t shape[] = {n, TR, TC};
  int64_t numel = (int64_t)n * TR * TC, per = TR * TC;
  pld_program *ok = compile_one(&cfg, n, owner, w);
  pld_tensor d;
  assert_ok(pld_device_tensor_create(ok, owner, PLD_FP32, 3, shape, &d));
  pld_tensor v = pld_test_tensor(3, shape, 0.5f, -4.0f);
  pld_tensor z = pld_test_tensor(3, shape, -0.25f, 2.0f);
  float *want = copy_floats(v), *want_z = copy_floats(z);
  assert_ok(pld_device_tensor_write(d, v));
  const float s[3] = {1.5f, -0.5f, 3.0f};
  char what[96];
  for (int k = 0; k < 3; k++) {
    assert_ok(pld_program_run(ok, PLD_ARGS(d, z, s[k])));
    one_ref(want, want_z, n, owner, w, s[k]);
    snprintf(what, sizeof what, "%s, %d ranks, run %d: z", platform, n, k + 1);
    expect_floats(pld_tensor_data(z), want_z, numel, what);
  }
  memset(pld_tensor_data(v), 0xff, (size_t)numel * sizeof *want);
  assert_ok(pld_device_tensor_read(d, v));
  snprintf(what, sizeof what, "%s, %d ranks: on rank %d, slice %d", platform, n,
           owner, w);
  expect_floats(pld_tensor_data(v), want, numel, what);

  /* Another rank given a slice of it. */
  pld_program *bad = compile_one(&cfg, n, other, w);
  pld_tensor e;
  assert_ok(pld_device_tensor_create(bad, owner, PLD_FP32, 3, shape, &e));
  char rank_msg[96], lies[96], bytes[64];
  snprintf(rank_msg, sizeof rank_msg, "rank %d (device %d) is dispatched",
           other, ids[other]);
  snprintf(bytes, sizeof bytes, "bytes [%lld, %lld) of it",
           (long long)(w * per * 4), (long long)((w + 1) * per * 4));
  snprintf(lies, sizeof lies, "the device tensor lies on rank %d (device %d)",
           owner, ids[owner]);
  float s1 = 2.0f; /* the compile's: no new trace */
  assert_fails_with(pld_program_run(bad, PLD_ARGS(e, z, s1)), PLD_ERR_ARG,
                    "pld_program_run: h_one: parameter 'h' (1 of 3)", rank_msg,
                    bytes, lies);
  /* Submitted, the job says the same. */
  pld_job *j = NULL;
  assert_ok(pld_program_submit(bad, PLD_ARGS(e, z, s1), 0, &j));
  assert_ok(pld_job_wait(j, -1));
  assert_int_equal(pld_job_status(j), PLD_ERR_ARG);
  if (!strstr(pld_job_message(j), lies) || !strstr(pld_job_message(j), bytes)) {
    print_error("job message: %s\n", pld_job_message(j));
    fail();
  }
  assert_ok(pld_job_free(j));
  /* New values: refused the same way. */
  float s2 = -1.0f;
  assert_fails_with(pld_program_run(bad, PLD_ARGS(e, z, s2)), PLD_ERR_ARG,
                    rank_msg, lies);
  /* The refusals changed nothing: z, nor the tensor; both programs still
   * run. */
  expect_floats(pld_tensor_data(z), want_z, numel, "z after the refusals");
  assert_ok(pld_device_tensor_read(e, v));
  expect_zero_bytes(v, "the refused runs' tensor");
  pld_tensor hv = pld_test_tensor(3, shape, 0.25f, 1.0f);
  float *want_hv = copy_floats(hv);
  assert_ok(pld_program_run(bad, PLD_ARGS(hv, z, s1)));
  one_ref(want_hv, want_z, n, other, w, s1);
  expect_floats(pld_tensor_data(hv), want_hv, numel, "host h after refusal");
  expect_floats(pld_tensor_data(z), want_z, numel, "z after refusal");
  target = owner;
  assert_ok(pld_program_run(ok, PLD_ARGS(d, z, s1)));
  one_ref(want, want_z, n, owner, w, s1);
  assert_ok(pld_device_tensor_read(d, v));
  expect_floats(pld_tensor_data(v), want, numel, "the owner after refusal");
  expect_floats(pld_tensor_data(z), want_z, numel, "z of the owner's run");
  pld_tensor_destroy(d);
  pld_tensor_destroy(e);
  pld_program_destroy(ok);
  pld_program_destroy(bad);
  pld_tensor_destroy(v);
  pld_tensor_destroy(z);
  pld_tensor_destroy(hv);
  free(want);
  free(want_z);
  free(want_hv);
}

static void test_single_rank_owner(void **state) {
  (void)state;
  single_rank(2, 0, 1, "a2a3sim", 1, 0, 0);
  single_rank(3, 4, 1, "a5sim", 1, 2, 2);
  single_rank(4, 12, -3, "a2a3sim", 3, 1, 0);
}

/* A part per rank, rank r given part r + 1: refused, naming rank 0's own
 * bytes; with no shift it runs. */
static void rotated(int n, int first, int step, const char *platform) {
  pld_config cfg = test_config(ids, n, first, step);
  cfg.platform = platform;
  const int64_t shape[] = {n, TR, TC};
  int64_t numel = (int64_t)n * TR * TC, part = TR * TC * 4;
  pld_tensor h = pld_test_tensor(3, shape, 1, 0);
  float s = 2.0f;
  pld_program *p = NULL, *q = NULL;
  shift = 1;
  assert_ok(pld_compile(h_rot, &cfg, PLD_ARGS(h, s), &p));
  shift = 0;
  assert_ok(pld_compile(h_rot, &cfg, PLD_ARGS(h, s), &q));
  pld_tensor d;
  assert_ok(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32, 2,
                                     (const int64_t[]){TR, TC}, &d));
  char rank_msg[128], part_msg[128];
  snprintf(rank_msg, sizeof rank_msg,
           "rank 0 (device %d) is dispatched bytes [%lld, %lld) of it", ids[0],
           (long long)part, (long long)2 * part);
  snprintf(part_msg, sizeof part_msg, "only its part, bytes [0, %lld)",
           (long long)part);
  assert_fails_with(pld_program_run(p, PLD_ARGS(d, s)), PLD_ERR_ARG,
                    "pld_program_run: h_rot: parameter 'h' (1 of 2)", rank_msg,
                    part_msg, "lies on that device");
  /* Unshifted: each rank its own part. */
  pld_tensor e;
  assert_ok(pld_device_tensor_create(q, PLD_EACH_RANK, PLD_FP32, 2,
                                     (const int64_t[]){TR, TC}, &e));
  assert_ok(pld_device_tensor_write(e, h));
  float *want = malloc((size_t)numel * sizeof *want);
  assert_non_null(want);
  memcpy(want, pld_tensor_data(h), (size_t)numel * sizeof *want);
  assert_ok(pld_program_run(q, PLD_ARGS(e, s)));
  axpb_ref(want, numel, s);
  memset(pld_tensor_data(h), 0, (size_t)numel * sizeof *want);
  assert_ok(pld_device_tensor_read(e, h));
  expect_floats(pld_tensor_data(h), want, numel, platform);
  free(want);
  pld_tensor_destroy(d);
  pld_tensor_destroy(e);
  pld_program_destroy(p);
  pld_program_destroy(q);
  pld_tensor_destroy(h);
}

static void test_each_rank_rotated(void **state) {
  (void)state;
  rotated(2, 0, 1, "a5sim");
  rotated(3, 3, 2, "a2a3sim");
  rotated(4, 0, 1, "a5sim");
}

/* ---- misuse -------------------------------------------------------------- */

static void test_create_errors(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(3, 2, 1, "a2a3sim", 0, &h_host);
  const int64_t part[] = {SR, TC};
  pld_tensor t = {NULL};
  assert_fails_with(
      pld_device_tensor_create(NULL, 0, PLD_FP32, 2, part, &t), PLD_ERR_ARG,
      "pld_device_tensor_create: p: expected a program, got NULL");
  assert_null(t.p);
  assert_fails_with(pld_device_tensor_create(p, 0, PLD_FP32, 2, part, NULL),
                    PLD_ERR_ARG, "pld_device_tensor_create: out: expected");
  assert_fails_with(
      pld_device_tensor_create(p, 3, PLD_FP32, 2, part, &t), PLD_ERR_ARG,
      "pld_device_tensor_create: rank:", "(0 to 2) or PLD_EACH_RANK, got 3");
  assert_fails_with(pld_device_tensor_create(p, -2, PLD_FP32, 2, part, &t),
                    PLD_ERR_ARG, "(0 to 2) or PLD_EACH_RANK, got -2");
  int64_t many[PLD_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
  assert_fails_with(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32,
                                             PLD_MAX_DIMS, many, &t),
                    PLD_ERR_ARG, "pld_device_tensor_create: ndim:",
                    "expected 1 to 7 (a tensor of a part per rank has the "
                    "rank dimension too), got 8");
  /* PLD_MAX_DIMS are fine on one rank, and MAX_DIMS - 1 per rank. */
  assert_ok(pld_device_tensor_create(p, 1, PLD_FP32, PLD_MAX_DIMS, many, &t));
  assert_int_equal(pld_tensor_ndim(t), PLD_MAX_DIMS);
  pld_tensor_destroy(t);
  assert_ok(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8,
                                     PLD_MAX_DIMS - 1, many, &t));
  assert_int_equal(pld_tensor_ndim(t), PLD_MAX_DIMS);
  assert_int_equal(pld_tensor_dim(t, 0), 3);
  pld_tensor_destroy(t);
  assert_fails_with(pld_device_tensor_create(p, 0, PLD_FP32, 2, NULL, &t),
                    PLD_ERR_ARG, "pld_device_tensor_create: shape:");
  assert_fails_with(
      pld_device_tensor_create(p, 0, PLD_FP32, 2, (int64_t[]){4, 0}, &t),
      PLD_ERR_ARG, "pld_device_tensor_create: shape[1]: expected a size > 0");
  assert_fails_with(pld_device_tensor_create(p, 0, (pld_dtype)77, 2, part, &t),
                    PLD_ERR_ARG, "pld_device_tensor_create: dtype:");
  assert_fails_with(pld_device_tensor_create(p, 0, PLD_FP32, 0, part, &t),
                    PLD_ERR_ARG, "pld_device_tensor_create: ndim:");
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

/* More dimensions than a tensor has, on one rank: refused like the rest
 * (the shape must not be copied before ndim was checked). */
static void test_create_ndim_too_large(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(2, 0, 1, "a5sim", 0, &h_host);
  int64_t many[2 * PLD_MAX_DIMS];
  for (int i = 0; i < 2 * PLD_MAX_DIMS; i++)
    many[i] = 1;
  pld_tensor t = {NULL};
  assert_fails_with(
      pld_device_tensor_create(p, 0, PLD_FP32, PLD_MAX_DIMS + 1, many, &t),
      PLD_ERR_ARG, "pld_device_tensor_create: ndim:", "got 9");
  assert_fails_with(
      pld_device_tensor_create(p, 0, PLD_FP32, 2 * PLD_MAX_DIMS, many, &t),
      PLD_ERR_ARG, "pld_device_tensor_create: ndim:", "got 16");
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

/* A negative ndim per rank: the message says what was given (and the
 * range a part per rank may have). */
static void test_create_ndim_negative(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(2, 0, 1, "a5sim", 0, &h_host);
  int64_t dims[PLD_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
  pld_tensor t = {NULL};
  int st = pld_device_tensor_create(p, PLD_EACH_RANK, PLD_FP32, -1, dims, &t);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", pld_last_error());
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
  assert_int_equal(st, PLD_ERR_ARG);
  if (!strstr(msg, "pld_device_tensor_create: ndim:") ||
      !strstr(msg, "got -1")) {
    print_error("message: %s\n", msg);
    fail();
  }
}

/* A refusal leaves the caller's handle as it was (output parameters are
 * written only on success). */
static void test_create_failure_keeps_out(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(2, 0, 1, "a2a3sim", 0, &h_host);
  pld_tensor keep = pld_test_tensor(1, (const int64_t[]){4}, 1, 0);
  pld_tensor t = keep, u = keep;
  assert_fails_with(
      pld_device_tensor_create(p, 5, PLD_FP32, 1, (const int64_t[]){4}, &t),
      PLD_ERR_ARG, "rank:");
  assert_fails_with(
      pld_device_tensor_create(NULL, 0, PLD_FP32, 1, (const int64_t[]){4}, &u),
      PLD_ERR_ARG, "p:");
  pld_program_destroy(p);
  pld_tensor_destroy(keep);
  pld_tensor_destroy(h_host);
  assert_ptr_equal(t.p, keep.p);
  assert_ptr_equal(u.p, keep.p);
}

/* PLD_DEVICE_HEAP_MB=1 for programs compiled from now on.  The variables
 * are read once per process: a process that read them before (all cases
 * in one process) skips the case, as CTest runs each case alone. */
static char *heap_was;
static int heap_was_set;

static void heap_restore(void);

static void small_heap(void) {
  const char *was = getenv("PLD_DEVICE_HEAP_MB");
  heap_was_set = was != NULL;
  heap_was = was ? strdup(was) : NULL;
  assert_int_equal(setenv("PLD_DEVICE_HEAP_MB", "1", 1), 0);
  if (pld__tunables()->PLD_DEVICE_HEAP_MB != 1) {
    heap_restore();
    print_message("PLD_DEVICE_HEAP_MB was read before this case: run it "
                  "alone (ctest does)\n");
    skip();
  }
}

static void heap_restore(void) {
  if (heap_was_set)
    assert_int_equal(setenv("PLD_DEVICE_HEAP_MB", heap_was, 1), 0);
  else
    assert_int_equal(unsetenv("PLD_DEVICE_HEAP_MB"), 0);
  free(heap_was);
  heap_was = NULL;
}

static void test_heap_too_small(void **state) {
  (void)state;
  small_heap();
  pld_tensor h_host;
  pld_program *p = compile_state(3, 4, 2, "a5sim", 0, &h_host);
  heap_restore();
  const int64_t two_mib[] = {2 << 20};
  pld_tensor t = {NULL};
  char rank0[64], rank2[64];
  snprintf(rank0, sizeof rank0, "rank 0 (device %d)", ids[0]);
  snprintf(rank2, sizeof rank2, "rank 2 (device %d)", ids[2]);
  assert_fails_with(
      pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1, two_mib, &t),
      PLD_ERR_NOMEM, "pld_device_tensor_create: ", rank0,
      "2097152 bytes do not fit in the 1048576", "PLD_DEVICE_HEAP_MB");
  assert_fails_with(pld_device_tensor_create(p, 2, PLD_INT8, 1, two_mib, &t),
                    PLD_ERR_NOMEM, rank2, "2097152 bytes");
  /* The whole heap fits; a byte more does not. */
  assert_ok(pld_device_tensor_create(p, 2, PLD_INT8, 1,
                                     (const int64_t[]){1 << 20}, &t));
  pld_tensor_destroy(t);
  assert_fails_with(pld_device_tensor_create(p, 1, PLD_INT8, 1,
                                             (const int64_t[]){(1 << 20) + 1},
                                             &t),
                    PLD_ERR_NOMEM, "rank 1");
  /* A part per rank that fits on rank 0 and not on rank 1 takes nothing
   * from rank 0. */
  pld_tensor big;
  assert_ok(pld_device_tensor_create(p, 1, PLD_INT8, 1,
                                     (const int64_t[]){3 << 18}, &big));
  assert_fails_with(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1,
                                             (const int64_t[]){1 << 19}, &t),
                    PLD_ERR_NOMEM, "rank 1 (device");
  assert_ok(pld_device_tensor_create(p, 0, PLD_INT8, 1,
                                     (const int64_t[]){1 << 20}, &t));
  pld_tensor_destroy(t);
  pld_tensor_destroy(big);
  /* The program still runs. */
  pld_tensor x = pld_test_tensor(3, (const int64_t[]){3, SR, TC}, 1, 0);
  pld_tensor y = pld_test_tensor(3, (const int64_t[]){3, SR, TC}, 0, 0);
  pld_tensor h = each_rank_state(p);
  float s = 2.0f;
  assert_ok(pld_program_run(p, PLD_ARGS(x, h, y, s)));
  float *want = calloc(3 * SR * TC, sizeof *want);
  assert_non_null(want);
  step_ref(want, x, s);
  expect_floats(pld_tensor_data(y), want, 3 * SR * TC, "after NOMEM");
  free(want);
  pld_tensor_destroy(h);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

static void test_shape_mismatch(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(2, 0, 1, "a2a3sim", 0, &h_host);
  pld_tensor d = each_rank_state(p), o;
  assert_ok(pld_device_tensor_create(p, 1, PLD_INT32, 2,
                                     (const int64_t[]){SR, TC}, &o));
  pld_tensor wide = pld_test_tensor(3, (const int64_t[]){2, SR, 2 * TC}, 1, 0);
  pld_tensor flat = pld_test_tensor(2, (const int64_t[]){2, SR * TC}, 1, 0);
  pld_tensor ints;
  assert_ok(
      pld_tensor_create(PLD_INT32, 3, (const int64_t[]){2, SR, TC}, &ints));
  pld_tensor part = pld_test_tensor(2, (const int64_t[]){SR, TC}, 1, 0);
  assert_fails_with(pld_device_tensor_write(d, wide), PLD_ERR_ARG,
                    "pld_device_tensor_write: src: expected a host tensor "
                    "FP32[2, 8, 8] (the device tensor's shape), got FP32[2, "
                    "8, 16]");
  assert_fails_with(pld_device_tensor_read(d, wide), PLD_ERR_ARG,
                    "pld_device_tensor_read: dst: expected a host tensor "
                    "FP32[2, 8, 8] (the device tensor's shape), got FP32[2, "
                    "8, 16]");
  assert_fails_with(pld_device_tensor_read(d, flat), PLD_ERR_ARG,
                    "FP32[2, 8, 8]", "got FP32[2, 64]");
  assert_fails_with(pld_device_tensor_write(d, ints), PLD_ERR_ARG,
                    "FP32[2, 8, 8]", "got INT32[2, 8, 8]");
  assert_fails_with(pld_device_tensor_read(d, ints), PLD_ERR_ARG,
                    "FP32[2, 8, 8]", "got INT32[2, 8, 8]");
  /* A single-rank tensor has no rank dimension. */
  assert_fails_with(pld_device_tensor_read(o, ints), PLD_ERR_ARG,
                    "expected a host tensor INT32[8, 8]", "got INT32[2, 8, 8]");
  assert_fails_with(pld_device_tensor_write(o, part), PLD_ERR_ARG,
                    "INT32[8, 8]", "got FP32[8, 8]");
  /* Neither end may be another device tensor, nor a host tensor be the
   * device end. */
  assert_fails_with(pld_device_tensor_read(d, d), PLD_ERR_ARG,
                    "got not a host tensor");
  assert_fails_with(pld_device_tensor_write(d, (pld_tensor){NULL}), PLD_ERR_ARG,
                    "pld_device_tensor_write: src:");
  assert_fails_with(pld_device_tensor_read(wide, wide), PLD_ERR_ARG,
                    "pld_device_tensor_read: src: expected a tensor of "
                    "pld_device_tensor_create");
  assert_fails_with(pld_device_tensor_write((pld_tensor){NULL}, wide),
                    PLD_ERR_ARG, "pld_device_tensor_write: dst:");
  assert_fails_with(pld_device_tensor_free(wide), PLD_ERR_ARG,
                    "pld_device_tensor_free: t: expected a tensor of "
                    "pld_device_tensor_create");
  /* A device tensor of another shape, given to a run. */
  pld_tensor x = pld_test_tensor(3, (const int64_t[]){2, SR, TC}, 1, 0);
  pld_tensor y = pld_test_tensor(3, (const int64_t[]){2, SR, TC}, 0, 0);
  float s = 1.0f;
  assert_fails_with(pld_program_run(p, PLD_ARGS(x, o, y, s)), PLD_ERR_ARG,
                    "parameter 'h' (2 of 4)",
                    "expected a host tensor FP32[2, 8, 8] as compiled, got "
                    "INT32[8, 8]");
  /* Nothing was written by the refusals. */
  assert_ok(pld_device_tensor_read(d, x));
  expect_zero_bytes(x, "after the refused writes");
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_tensor_destroy(d);
  pld_tensor_destroy(o);
  pld_tensor_destroy(wide);
  pld_tensor_destroy(flat);
  pld_tensor_destroy(ints);
  pld_tensor_destroy(part);
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

static void test_other_program(void **state) {
  (void)state;
  pld_tensor ha, hb;
  pld_program *a = compile_state(2, 0, 1, "a2a3sim", 0, &ha);
  pld_program *b = compile_state(2, 0, 1, "a2a3sim", 0, &hb);
  pld_tensor da = each_rank_state(a);
  const int64_t shape[] = {2, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  float s = 1.0f;
  assert_fails_with(pld_program_run(b, PLD_ARGS(x, da, y, s)), PLD_ERR_ARG,
                    "pld_program_run: h_state: parameter 'h' (2 of 4)",
                    "the device tensor lies on another program's devices");
  pld_job *j = NULL;
  assert_ok(pld_program_submit(b, PLD_ARGS(x, da, y, s), 0, &j));
  assert_ok(pld_job_wait(j, -1));
  assert_int_equal(pld_job_status(j), PLD_ERR_ARG);
  assert_non_null(strstr(pld_job_message(j), "another program's devices"));
  assert_ok(pld_job_free(j));
  /* Its own program takes it. */
  assert_ok(pld_program_run(a, PLD_ARGS(x, da, y, s)));
  float *want = calloc(2 * SR * TC, sizeof *want);
  assert_non_null(want);
  step_ref(want, x, s);
  expect_floats(pld_tensor_data(y), want, 2 * SR * TC, "program A");
  free(want);
  pld_tensor_destroy(da);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_program_destroy(a);
  pld_program_destroy(b);
  pld_tensor_destroy(ha);
  pld_tensor_destroy(hb);
}

static void test_use_after_free(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(3, 0, 1, "a5sim", 0, &h_host);
  pld_tensor d = each_rank_state(p);
  const int64_t shape[] = {3, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  float s = 1.0f;
  assert_ok(pld_program_run(p, PLD_ARGS(x, d, y, s)));
  assert_ok(pld_device_tensor_free(d));
  assert_fails_with(pld_program_run(p, PLD_ARGS(x, d, y, s)), PLD_ERR_STATE,
                    "pld_program_run: h_state: parameter 'h' (2 of 4)",
                    "the device tensor was freed");
  pld_job *j = NULL;
  assert_ok(pld_program_submit(p, PLD_ARGS(x, d, y, s), 0, &j));
  assert_ok(pld_job_wait(j, -1));
  assert_int_equal(pld_job_status(j), PLD_ERR_STATE);
  assert_non_null(strstr(pld_job_message(j), "was freed"));
  assert_ok(pld_job_free(j));
  assert_fails_with(pld_device_tensor_read(d, x), PLD_ERR_STATE,
                    "pld_device_tensor_read: src: the device tensor was freed");
  assert_fails_with(pld_device_tensor_write(d, x), PLD_ERR_STATE,
                    "pld_device_tensor_write: dst: the device tensor was "
                    "freed");
  assert_fails_with(pld_device_tensor_free(d), PLD_ERR_STATE,
                    "pld_device_tensor_free: t: the device tensor was freed");
  /* The handle itself is still to be destroyed; the program runs on. */
  pld_tensor_destroy(d);
  pld_tensor e = each_rank_state(p);
  assert_ok(pld_program_run(p, PLD_ARGS(x, e, y, s)));
  float *want = calloc(3 * SR * TC, sizeof *want);
  assert_non_null(want);
  step_ref(want, x, s);
  expect_floats(pld_tensor_data(y), want, 3 * SR * TC, "a new tensor");
  free(want);
  pld_tensor_destroy(e);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

static void test_program_destroyed(void **state) {
  (void)state;
  pld_tensor h_host;
  pld_program *p = compile_state(2, 3, 1, "a2a3sim", 0, &h_host);
  pld_tensor d = each_rank_state(p), f = each_rank_state(p), o;
  assert_ok(pld_device_tensor_create(p, 1, PLD_FP32, 3,
                                     (const int64_t[]){2, SR, TC}, &o));
  assert_ok(pld_device_tensor_free(f));
  pld_program_destroy(p);
  assert_no_children();
  const int64_t shape[] = {2, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  assert_fails_with(pld_device_tensor_read(d, x), PLD_ERR_STATE,
                    "pld_device_tensor_read: src: the device tensor's "
                    "program was destroyed");
  assert_fails_with(pld_device_tensor_write(d, x), PLD_ERR_STATE,
                    "pld_device_tensor_write: dst:", "program was destroyed");
  assert_fails_with(pld_device_tensor_free(o), PLD_ERR_STATE,
                    "pld_device_tensor_free: t:", "program was destroyed");
  /* Freed, then its program destroyed: still refused. */
  assert_fails_with(pld_device_tensor_read(f, x), PLD_ERR_STATE,
                    "pld_device_tensor_read: src:");
  /* Handles outlive their program: destroying them is safe. */
  pld_tensor_destroy(d);
  pld_tensor_destroy(f);
  pld_tensor_destroy(o);
  pld_tensor_destroy(x);
  pld_tensor_destroy(h_host);
}

/* Another program given a tensor whose program was destroyed: refused,
 * as the tensor's state, like a freed one (PLD_ERR_STATE). */
static void test_program_destroyed_run(void **state) {
  (void)state;
  pld_tensor ha, hb;
  pld_program *a = compile_state(2, 0, 1, "a5sim", 0, &ha);
  pld_program *b = compile_state(2, 0, 1, "a5sim", 0, &hb);
  pld_tensor d = each_rank_state(a);
  pld_program_destroy(a);
  const int64_t shape[] = {2, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 1, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  float s = 1.0f;
  int st = pld_program_run(b, PLD_ARGS(x, d, y, s));
  char msg[512];
  snprintf(msg, sizeof msg, "%s", pld_last_error());
  pld_tensor_destroy(d);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  pld_program_destroy(b);
  pld_tensor_destroy(ha);
  pld_tensor_destroy(hb);
  if (st != PLD_ERR_STATE) {
    print_error("expected PLD_ERR_STATE, got %s: %s\n", pld_status_name(st),
                msg);
    fail();
  }
  assert_non_null(strstr(msg, "parameter 'h' (2 of 4)"));
  assert_non_null(strstr(msg, "the device tensor's program was destroyed"));
}

/* ---- the heap's memory goes back ------------------------------------------
 */

static void test_memory_given_back(void **state) {
  (void)state;
  small_heap();
  pld_tensor h_host;
  pld_program *p = compile_state(2, 0, 1, "a5sim", 0, &h_host);
  heap_restore();
  const int64_t quarter[] = {1 << 18}; /* INT8: a quarter of 1 MiB */
  /* 100 made and freed, by pld_device_tensor_free or pld_tensor_destroy,
   * per rank and on one rank. */
  for (int i = 0; i < 100; i++) {
    pld_tensor t;
    assert_ok(pld_device_tensor_create(p, i % 3 ? PLD_EACH_RANK : i % 2,
                                       PLD_INT8, 1, quarter, &t));
    if (i % 2)
      assert_ok(pld_device_tensor_free(t));
    pld_tensor_destroy(t);
  }
  /* Four fit, the fifth does not, on each rank. */
  pld_tensor t[5];
  for (int i = 0; i < 4; i++)
    assert_ok(pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1, quarter,
                                       &t[i]));
  assert_fails_with(
      pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1, quarter, &t[4]),
      PLD_ERR_NOMEM, "rank 0 (device 0)");
  assert_fails_with(pld_device_tensor_create(p, 1, PLD_INT8, 1, quarter, &t[4]),
                    PLD_ERR_NOMEM, "rank 1 (device 1)");
  /* A hole in the middle takes the next one; what is around it keeps its
   * bytes. */
  pld_tensor full[4];
  for (int i = 0; i < 4; i++) {
    assert_ok(pld_tensor_create(PLD_INT8, 2, (const int64_t[]){2, 1 << 18},
                                &full[i]));
    fill_bytes(full[i]);
    assert_ok(pld_device_tensor_write(t[i], full[i]));
  }
  assert_ok(pld_device_tensor_free(t[1]));
  pld_tensor_destroy(t[1]);
  assert_ok(
      pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1, quarter, &t[1]));
  pld_tensor back;
  assert_ok(
      pld_tensor_create(PLD_INT8, 2, (const int64_t[]){2, 1 << 18}, &back));
  assert_ok(pld_device_tensor_read(t[1], back));
  expect_zero_bytes(back, "the hole, made again");
  static const int around[] = {0, 2, 3};
  for (int i = 0; i < 3; i++) {
    assert_ok(pld_device_tensor_read(t[around[i]], back));
    expect_same_bytes(back, full[around[i]], "a neighbour of the hole");
  }
  /* pld_tensor_destroy gives the memory back too. */
  pld_tensor_destroy(t[3]);
  assert_ok(
      pld_device_tensor_create(p, PLD_EACH_RANK, PLD_INT8, 1, quarter, &t[3]));
  for (int i = 0; i < 4; i++) {
    pld_tensor_destroy(t[i]);
    pld_tensor_destroy(full[i]);
  }
  pld_tensor_destroy(back);
  pld_program_destroy(p);
  pld_tensor_destroy(h_host);
}

/* ---- submitted runs and new scalar values ----------------------------------
 */

enum { RUNS = 8 };

/* RUNS runs submitted back to back; the state read right after the
 * submissions is the state after all of them.  Then half of them, a
 * write, the other half: the write lands between. */
static void submitted(int n, int first, int step, const char *platform,
                      int depth, int new_values) {
  spin_ms = 15;
  pld_tensor h_host;
  pld_program *p = compile_state(n, first, step, platform, depth, &h_host);
  assert_ok(pld_program_prepare(p));
  spin_ms = 0;
  const int64_t shape[] = {n, SR, TC};
  int64_t numel = (int64_t)n * SR * TC;
  pld_tensor h = each_rank_state(p);
  pld_tensor x[RUNS], y[RUNS];
  float s[RUNS];
  float *want = calloc((size_t)numel, sizeof *want);
  float *wy[RUNS];
  assert_non_null(want);
  for (int k = 0; k < RUNS; k++) {
    x[k] = pld_test_tensor(3, shape, 0, 0);
    y[k] = pld_test_tensor(3, shape, 0, 0);
    fill_x(x[k], k);
    garbage(y[k]);
    /* Equal values let the next run's inputs be copied in while one
     * runs; new values trace the host function again for each run. */
    s[k] = new_values ? 0.5f * (float)(k + 1) - 1.25f : 1.5f;
    step_ref(want, x[k], s[k]);
    wy[k] = malloc((size_t)numel * sizeof *wy[k]);
    assert_non_null(wy[k]);
    memcpy(wy[k], want, (size_t)numel * sizeof *want);
  }
  garbage(h_host);
  pld_job *jobs[RUNS];
  for (int k = 0; k < RUNS; k++)
    assert_ok(
        pld_program_submit(p, PLD_ARGS(x[k], h, y[k], s[k]), 0, &jobs[k]));
  int in_flight = !pld_job_test(jobs[RUNS - 1]);
  pld_tensor back = pld_test_tensor(3, shape, 0, 0);
  garbage(back);
  assert_ok(pld_device_tensor_read(h, back));
  char what[128];
  snprintf(what, sizeof what,
           "%s, %d ranks, depth %d: h read after %d "
           "submits%s",
           platform, n, depth, RUNS, in_flight ? " in flight" : "");
  expect_floats(pld_tensor_data(back), want, numel, what);
  for (int k = 0; k < RUNS; k++)
    assert_int_equal(pld_job_test(jobs[k]), 1);
  for (int k = 0; k < RUNS; k++) {
    assert_ok(pld_job_wait(jobs[k], -1));
    if (pld_job_status(jobs[k]) != PLD_OK) {
      print_error("run %d: %s\n", k + 1, pld_job_message(jobs[k]));
      fail();
    }
    snprintf(what, sizeof what, "%s, %d ranks: y of submitted run %d (s = %g)",
             platform, n, k + 1, (double)s[k]);
    expect_floats(pld_tensor_data(y[k]), wy[k], numel, what);
    assert_ok(pld_job_free(jobs[k]));
  }

  /* Half, a write, the other half. */
  pld_tensor w = pld_test_tensor(3, shape, 0.5f, -7.0f);
  memcpy(want, pld_tensor_data(w), (size_t)numel * sizeof *want);
  for (int k = 0; k < RUNS; k++) {
    garbage(y[k]);
    if (k == RUNS / 2)
      assert_ok(pld_device_tensor_write(h, w));
    assert_ok(
        pld_program_submit(p, PLD_ARGS(x[k], h, y[k], s[k]), 0, &jobs[k]));
  }
  for (int k = RUNS / 2; k < RUNS; k++)
    step_ref(want, x[k], s[k]);
  garbage(back);
  assert_ok(pld_device_tensor_read(h, back));
  snprintf(what, sizeof what, "%s, %d ranks: written between the runs",
           platform, n);
  expect_floats(pld_tensor_data(back), want, numel, what);
  for (int k = 0; k < RUNS; k++) {
    assert_ok(pld_job_wait(jobs[k], -1));
    assert_int_equal(pld_job_status(jobs[k]), PLD_OK);
    assert_ok(pld_job_free(jobs[k]));
  }
  /* The compile's tensor was never read nor written. */
  const float *junk = pld_tensor_data(h_host);
  for (int64_t i = 0; i < numel; i++)
    assert_true(i % 3 ? isnan(junk[i]) : junk[i] == 1e30f);
  pld_tensor_destroy(h);
  pld_program_destroy(p);
  for (int k = 0; k < RUNS; k++) {
    pld_tensor_destroy(x[k]);
    pld_tensor_destroy(y[k]);
    free(wy[k]);
  }
  free(want);
  pld_tensor_destroy(w);
  pld_tensor_destroy(back);
  pld_tensor_destroy(h_host);
}

static void test_submitted_runs(void **state) {
  (void)state;
  submitted(2, 0, 1, "a2a3sim", RUNS, 0);
  submitted(3, 5, 1, "a5sim", 0, 0);
  submitted(4, 0, 3, "a5sim", 3, 0);
}

/* Each run brings its own s: run by run, and submitted. */
static void test_new_values_per_run(void **state) {
  (void)state;
  for (int n = 2; n <= 4; n++) {
    const char *platform = n == 3 ? "a5sim" : "a2a3sim";
    pld_tensor h_host;
    pld_program *p = compile_state(n, 2 * n, -1, platform, 0, &h_host);
    garbage(h_host);
    const int64_t shape[] = {n, SR, TC};
    int64_t numel = (int64_t)n * SR * TC;
    pld_tensor h = each_rank_state(p);
    pld_tensor x = pld_test_tensor(3, shape, 0, 0);
    pld_tensor y = pld_test_tensor(3, shape, 0, 0);
    pld_tensor back = pld_test_tensor(3, shape, 0, 0);
    float *want = calloc((size_t)numel, sizeof *want);
    assert_non_null(want);
    char what[96];
    for (int k = 0; k < K; k++) {
      float s = (float)(k % 3) * -0.75f + (float)k * 0.5f + 0.125f;
      fill_x(x, k + 3 * n);
      garbage(y);
      assert_ok(pld_program_run(p, PLD_ARGS(x, h, y, s)));
      step_ref(want, x, s);
      snprintf(what, sizeof what, "%s, %d ranks, run %d, s = %g", platform, n,
               k + 1, (double)s);
      expect_floats(pld_tensor_data(y), want, numel, what);
      assert_ok(pld_device_tensor_read(h, back));
      expect_floats(pld_tensor_data(back), want, numel, what);
    }
    pld_tensor_destroy(h);
    pld_tensor_destroy(x);
    pld_tensor_destroy(y);
    pld_tensor_destroy(back);
    free(want);
    pld_program_destroy(p);
    pld_tensor_destroy(h_host);
  }
  submitted(3, 1, 2, "a2a3sim", 4, 1);
  submitted(2, 6, 1, "a5sim", 0, 1);
}

/* ---- a host task given the resident tensor --------------------------------
 */

/* The sum of h over ranks, by a host task after the dispatches: a host
 * task has no device memory to read, so a run that gives one a resident
 * tensor either reads its bytes or is refused, never reads through a
 * NULL host buffer. */
PLD_HOST_TASK(t_sum, t, PLD_IN(h, FP32, NR, SR, TC),
              PLD_OUT(sum, FP32, SR, TC)) {
  (void)t;
  const float *hs = pld_tensor_data(h);
  float *ss = pld_tensor_data(sum);
  for (int64_t i = 0; i < SR * TC; i++) {
    float v = 0;
    for (int64_t r = 0; r < pld_tensor_dim(h, 0); r++)
      v += hs[r * SR * TC + i];
    ss[i] = v;
  }
}
PLD_HOST(h_sum, hh, PLD_IN(x, FP32, NR, SR, TC), PLD_INOUT(h, FP32, NR, SR, TC),
         PLD_OUT(y, FP32, NR, SR, TC), PLD_OUT(sum, FP32, SR, TC),
         PLD_SCALAR(s, FP32)) {
  for (int r = 0; r < pld_world_size(hh); r++)
    pld_dispatch(hh, d_state, r, pld_slice(hh, x, r), pld_slice(hh, h, r),
                 pld_slice(hh, y, r), s);
  pld_host_task(hh, t_sum, h, sum);
}

static void test_host_task_of_resident(void **state) {
  (void)state;
  pld_config cfg = test_config(ids, 2, 0, 1);
  const int64_t shape[] = {2, SR, TC};
  pld_tensor x = pld_test_tensor(3, shape, 0.5f, 1.0f);
  pld_tensor hx = pld_test_tensor(3, shape, 0, 0);
  pld_tensor y = pld_test_tensor(3, shape, 0, 0);
  pld_tensor sum = pld_test_tensor(2, (const int64_t[]){SR, TC}, 0, 0);
  float s = 2.0f;
  pld_program *p = NULL;
  assert_ok(pld_compile(h_sum, &cfg, PLD_ARGS(x, hx, y, sum, s), &p));
  pld_tensor h = each_rank_state(p);
  int st = pld_program_run(p, PLD_ARGS(x, h, y, sum, s));
  if (st == PLD_OK) {
    /* It read the device's bytes. */
    const float *ys = pld_tensor_data(y), *ss = pld_tensor_data(sum);
    for (int64_t i = 0; i < SR * TC; i++) {
      volatile float v = ys[i] + ys[SR * TC + i];
      assert_true(ss[i] == v);
    }
  } else {
    assert_fails_with(st, PLD_ERR_ARG, "parameter 'h'");
  }
  pld_tensor_destroy(h);
  pld_program_destroy(p);
  pld_tensor_destroy(x);
  pld_tensor_destroy(hx);
  pld_tensor_destroy(y);
  pld_tensor_destroy(sum);
}

/* The heap cases come first: in a run of every case in one process, the
 * first read of the environment then sees PLD_DEVICE_HEAP_MB=1. */
static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_heap_too_small),
    cmocka_unit_test(test_memory_given_back),
    cmocka_unit_test(test_state_in_place),
    cmocka_unit_test(test_write_read),
    cmocka_unit_test(test_reuse_reads_zeros),
    cmocka_unit_test(test_single_rank_owner),
    cmocka_unit_test(test_each_rank_rotated),
    cmocka_unit_test(test_create_errors),
    cmocka_unit_test(test_create_ndim_too_large),
    cmocka_unit_test(test_create_ndim_negative),
    cmocka_unit_test(test_create_failure_keeps_out),
    cmocka_unit_test(test_shape_mismatch),
    cmocka_unit_test(test_other_program),
    cmocka_unit_test(test_use_after_free),
    cmocka_unit_test(test_program_destroyed),
    cmocka_unit_test(test_program_destroyed_run),
    cmocka_unit_test(test_submitted_runs),
    cmocka_unit_test(test_new_values_per_run),
    cmocka_unit_test(test_host_task_of_resident),
};

PLD_TEST_MAIN("resident", tests)
