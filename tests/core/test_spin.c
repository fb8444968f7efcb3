/* When a polling thread yields its CPU (core/futex.h): more threads awake
 * than the CPUs they share, counted over the program (or an MPI node) and
 * over this process; and the CPUs a node's processes share. */
#include <stdatomic.h>
#include <stdint.h>

#include "pld_test.h"

#include "core/futex.h"

/* Whether a spin with these counts is crowded (own_count < 0: no own). */
static int crowded(uint32_t awake, uint32_t cpus, int64_t own_count,
                   uint32_t own_cpus) {
  _Atomic uint32_t a = awake, o = (uint32_t)(own_count < 0 ? 0 : own_count);
  const struct pld__spin s = {1000, &a, own_count < 0 ? NULL : &o,
                              cpus, 0,  own_cpus};
  return pld__spin_crowded(&s);
}

/* The program's count: crowded from one past its CPUs, not at them. */
static void test_crowded_program(void **state) {
  (void)state;
  assert_false(crowded(2, 2, -1, 0));
  assert_true(crowded(3, 2, -1, 0));
  assert_false(crowded(8, 8, -1, 0));
  assert_true(crowded(9, 8, -1, 0));
  assert_false(crowded(0, 1, -1, 0));
}

/* This process's count, where mpirun binds it to fewer CPUs than the
 * node's: two of its threads on its one CPU are crowded though the node
 * has room; one is not. */
static void test_crowded_process(void **state) {
  (void)state;
  assert_false(crowded(2, 2, 1, 1));
  assert_true(crowded(2, 2, 2, 1));
  assert_true(crowded(3, 2, 1, 1));
  assert_false(crowded(2, 4, 2, 2));
  assert_true(crowded(3, 4, 3, 2));
}

/* The node's CPUs: all of them where the processes' sets are disjoint or
 * all the same, this process's where they partly overlap. */
static void test_node_cpus(void **state) {
  (void)state;
  /* mpirun -n 2 on 2 CPUs: {0} and {1} */
  assert_int_equal(pld__node_cpus(1, 2, 2, 1), 2);
  /* oversubscribed, unbound: {0,1} four times */
  assert_int_equal(pld__node_cpus(2, 2, 8, 2), 2);
  /* one process alone on the node */
  assert_int_equal(pld__node_cpus(4, 4, 4, 4), 4);
  /* {0} {1} {0} {1}: two processes share each CPU */
  assert_int_equal(pld__node_cpus(1, 2, 4, 1), 1);
  /* {0} and {0,1}: as seen by each */
  assert_int_equal(pld__node_cpus(1, 2, 3, 1), 1);
  assert_int_equal(pld__node_cpus(2, 2, 3, 1), 2);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crowded_program),
    cmocka_unit_test(test_crowded_process),
    cmocka_unit_test(test_node_cpus),
};

PLD_TEST_MAIN("core_spin", tests)
