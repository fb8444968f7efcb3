/* pld-env: prints the environment variables that tune pld, their defaults,
 * the values in force in this environment, and what they do. */
#include <stdio.h>

#include "core/tunables.h"

static void show(const char *name, long long def, long long value,
                 const char *help) {
  printf("%s (default %lld, now %lld)\n    %s\n", name, def, value, help);
}

int main(void) {
  pld__tunables_each(show);
  return 0;
}
