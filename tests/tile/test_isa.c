/* The instruction level the tile loops run with (src/tile/isa.h), as each
 * test_tile.CASE.isa_LEVEL entry forces it with PLD_ISA. */
#include <stdlib.h>
#include <string.h>

#include "test_main.h"
#include "tile/isa.h"
#include "tile_tests.h"

#include "pld/status.h"

/* The level in force is the one PLD_ISA names (each entry per level sets
 * it, and runs only where the library runs that level), or the best this
 * CPU has when it is unset: a cap, accepted from the level the build's own
 * flags use up to the best, refused above.  pld__isa_set takes the same
 * levels. */
void test_isa_level_in_force(void **state) {
  (void)state;
  const char *v = getenv("PLD_ISA");
  int want = v && *v && strcmp(v, "auto") ? pld__isa_parse(v) : pld__isa_best();
  assert_in_range(want, PLD__ISA_GENERIC, PLD__ISA_LEVELS - 1);
  assert_true(pld__isa_runs(want));
  assert_null(pld__isa_refusal());
  assert_int_equal(pld__isa(), want);
  int best = pld__isa_best(), in_force = want;
  for (int level = 0; level < PLD__ISA_LEVELS; level++) {
    int runs = level >= PLD__ISA_BASE && level <= best;
    assert_int_equal(pld__isa_runs(level), runs);
    assert_int_equal(pld__isa_set(level) == PLD_OK, runs);
    if (runs)
      in_force = level;
    assert_int_equal(pld__isa(), in_force);
    assert_int_equal(pld__isa_parse(pld__isa_name(level)), level);
  }
  assert_int_equal(pld__isa_parse("avx9"), -1);
  assert_int_equal(pld__isa_set(want), PLD_OK);
}
