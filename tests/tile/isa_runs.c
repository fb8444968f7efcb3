/* tile_isa_runs LEVEL: whether the library runs the tile loops' level LEVEL
 * (generic, avx2, avx512) with this build on this CPU, by the library's
 * own rule (pld__isa_runs, the one PLD_ISA follows).  Exits 0 when it
 * does, 77 (CTest's skip) when it does not, and 2 for a word that is no
 * level, so a typo in tests/tile/CMakeLists.txt fails rather than skips. */
#include <stdio.h>

#include "tile/isa.h"

int main(int argc, char **argv) {
  int level = argc == 2 ? pld__isa_parse(argv[1]) : -1;
  if (level < 0) {
    fprintf(stderr, "usage: %s generic|avx2|avx512\n", argv[0]);
    return 2;
  }
  if (pld__isa_runs(level))
    return 0;
  printf("skipped: this build on this CPU does not run %s; it runs", argv[1]);
  for (int l = 0; l < PLD__ISA_LEVELS; l++)
    if (pld__isa_runs(l))
      printf(" %s", pld__isa_name(l));
  printf("\n");
  return 77;
}
