/* tests/test_main.h: the main of every cmocka test executable.  With
 * arguments, runs only the cases of those names, in the order given (one
 * CTest entry per case, or a group of them under mpirun, where starting
 * the job costs more than most cases); a name that is no case fails
 * rather than running nothing. */
#ifndef PLD_TEST_MAIN_H
#define PLD_TEST_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static inline int pld_test_main(const char *group_name,
                                const struct CMUnitTest *tests, size_t n,
                                int argc, char **argv) {
  if (argc < 2)
    return _cmocka_run_group_tests(group_name, tests, n, NULL, NULL);
  struct CMUnitTest *chosen = calloc((size_t)argc, sizeof *chosen);
  if (!chosen) {
    fprintf(stderr, "%s: out of memory\n", argv[0]);
    return 1;
  }
  for (int a = 1; a < argc; a++) {
    size_t i = 0;
    while (i < n && strcmp(tests[i].name, argv[a]) != 0)
      i++;
    if (i == n) {
      fprintf(stderr, "%s: no test case named '%s'\n", argv[0], argv[a]);
      free(chosen);
      return 1;
    }
    chosen[a - 1] = tests[i];
  }
  int failed =
      _cmocka_run_group_tests(group_name, chosen, (size_t)argc - 1, NULL, NULL);
  free(chosen);
  return failed;
}

#define PLD_TEST_MAIN(group_name, tests)                                       \
  int main(int argc, char **argv) {                                            \
    return pld_test_main(group_name, tests,                                    \
                         sizeof(tests) / sizeof((tests)[0]), argc, argv);      \
  }

#endif
