/* tests/test_main.h: the main of every cmocka test executable.  With an
 * argument, runs only the case of that name (one CTest entry per case). */
#ifndef PLD_TEST_MAIN_H
#define PLD_TEST_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define PLD_TEST_MAIN(group_name, tests)                                       \
  int main(int argc, char **argv) {                                            \
    if (argc > 1)                                                              \
      cmocka_set_test_filter(argv[1]);                                         \
    return cmocka_run_group_tests_name(group_name, tests, NULL, NULL);         \
  }

#endif
