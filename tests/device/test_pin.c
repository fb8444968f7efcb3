/* Where a program's devices run (PLD_PIN_DEVICES, read once a process:
 * this file runs as three tests, with the variable unset, 0 and 2).  A
 * kernel on each rank writes the CPUs its thread may run on; checked
 * against the CPUs the test process may use, by the properties each mode
 * promises:
 *   0, or 1 where ranks outnumber the CPUs: every rank may use them all;
 *   1 and 2 where they do not: the ranks' sets are disjoint, cover them
 *     all, differ in size by one at most and follow the rank order;
 *   2 where ranks outnumber the CPUs: rank r on the (r mod n)-th CPU. */
#include <sched.h>
#include <stdlib.h>

#include "pld_test.h"
#include "../host/programs.h"

/* The CPUs of the calling thread, one bit each (CPUs 0 to 63). */
enum { WORDS = 2 };

PLD_KERNEL(k_where, k, PLD_OUT(y, INT32, WORDS)) {
  cpu_set_t set;
  uint64_t bits = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (size_t c = 0; c < 64; c++)
      if (CPU_ISSET(c, &set))
        bits |= (uint64_t)1 << c;
  pld_write(k, y, PLD_AT(0), (int32_t)(uint32_t)bits);
  pld_write(k, y, PLD_AT(1), (int32_t)(uint32_t)(bits >> 32));
}

PLD_DEVICE(d_where, a, PLD_OUT(y, INT32, WORDS)) {
  pld_launch(a, k_where, 1, y);
}

PLD_HOST(h_where, h, PLD_OUT(y, INT32, NR, WORDS)) {
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, d_where, r, pld_slice(h, y, r));
}

static int mode(void) {
  const char *v = getenv("PLD_PIN_DEVICES");
  return v && *v ? atoi(v) : 1;
}

/* The CPUs each of n ranks' kernels may use, as bits. */
static void where(int n, uint64_t *bits) {
  int ids[8];
  pld_config cfg = test_config(ids, n, 0, 1);
  pld_tensor y;
  assert_ok(pld_tensor_create(PLD_INT32, 2, (int64_t[]){n, WORDS}, &y));
  assert_ok(pld_run(h_where, &cfg, PLD_ARGS(y)));
  const uint32_t *w = pld_tensor_data(y);
  for (int r = 0; r < n; r++)
    bits[r] = w[r * WORDS] | (uint64_t)w[r * WORDS + 1] << 32;
  pld_tensor_destroy(y);
}

static int popcount(uint64_t x) { return __builtin_popcountll(x); }

/* Checks n ranks against the CPUs `may` the process may use. */
static void check(int n, uint64_t may) {
  uint64_t bits[8];
  where(n, bits);
  const int cpus = popcount(may), m = mode();
  if (m == 0 || cpus < 2 || (n > cpus && m < 2)) {
    for (int r = 0; r < n; r++)
      assert_int_equal(bits[r], may);
    return;
  }
  if (n > cpus) { /* mode 2: the (r mod cpus)-th CPU */
    for (int r = 0; r < n; r++) {
      uint64_t c = may;
      for (int i = 0; i < r % cpus; i++)
        c &= c - 1; /* drop the lowest */
      assert_int_equal(bits[r], c & -c);
    }
    return;
  }
  uint64_t all = 0;
  for (int r = 0; r < n; r++) {
    assert_true(bits[r] != 0);
    assert_int_equal(bits[r] & all, 0); /* disjoint */
    assert_true(popcount(bits[r]) == cpus / n ||
                popcount(bits[r]) == cpus / n + 1);
    if (r > 0) /* after the rank before */
      assert_true(__builtin_ctzll(bits[r]) > 63 - __builtin_clzll(bits[r - 1]));
    all |= bits[r];
  }
  assert_int_equal(all, may);
}

static uint64_t own_cpus(void) {
  cpu_set_t set;
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  uint64_t bits = 0;
  for (size_t c = 0; c < 64; c++)
    if (CPU_ISSET(c, &set))
      bits |= (uint64_t)1 << c;
  return bits;
}

static void test_ranks(void **state) {
  (void)state;
  const uint64_t may = own_cpus();
  for (int n = 2; n <= 4; n++)
    check(n, may);
  /* As many ranks as CPUs, and one more. */
  const int cpus = popcount(may);
  if (cpus <= 7) {
    check(cpus, may);
    check(cpus + 1, may);
  }
}

/* The CPUs of the process that runs the program count, not the
 * machine's: one CPU allowed pins nothing; two CPUs are shared by two
 * ranks, one each (modes 1 and 2). */
static void test_process_cpus(void **state) {
  (void)state;
  const uint64_t may = own_cpus();
  cpu_set_t saved, set;
  assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
  for (int keep = 1; keep <= 2 && keep <= popcount(may); keep++) {
    uint64_t sub = 0, left = may;
    CPU_ZERO(&set);
    for (int i = 0; i < keep; i++) {
      const size_t c = (size_t)__builtin_ctzll(left);
      CPU_SET(c, &set);
      sub |= (uint64_t)1 << c;
      left &= left - 1;
    }
    assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);
    check(2, sub);
  }
  assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ranks),
      cmocka_unit_test(test_process_cpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
