/* tests/test_main.h: the main of every cmocka test executable.  With an
 * argument, runs only the case of that name (one CTest entry per case); a
 * name that is no case fails rather than running nothing. */
#ifndef PLD_TEST_MAIN_H
#define PLD_TEST_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define PLD_TEST_MAIN(group_name, tests)                                       \
  int main(int argc, char **argv) {                                            \
    if (argc > 1) {                                                            \
      size_t i = 0, n = sizeof(tests) / sizeof((tests)[0]);                    \
      while (i < n && strcmp((tests)[i].name, argv[1]) != 0)                   \
        i++;                                                                   \
      if (i == n) {                                                            \
        fprintf(stderr, "%s: no test case named '%s'\n", argv[0], argv[1]);    \
        return 1;                                                              \
      }                                                                        \
      cmocka_set_test_filter(argv[1]);                                         \
    }                                                                          \
    return cmocka_run_group_tests_name(group_name, tests, NULL, NULL);         \
  }

#endif
