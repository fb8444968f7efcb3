#include <string.h>

#include "pld/program.h"

#define KIB ((size_t)1024)
#define GIB ((uint64_t)1 << 30)

/* The simulated hardware (reference section 6).  Device ids range over
 * [0, 16): a server's worth of cards, enough for the 16-rank examples.
 * Global memory is the HBM of one card: 64 GiB on the 910B class, 128 GiB
 * on the 950 class. */
static const pld_platform_info platforms[] = {
    {"a2a3sim", 1, 16, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB, 64 * GIB},
    {"a5sim", 1, 16, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     256 * KIB, 128 * GIB},
    {"a2a3", 0, 16, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB, 64 * GIB},
    {"a5", 0, 16, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB, 256 * KIB,
     128 * GIB},
};

const pld_platform_info *pld_platform_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < sizeof platforms / sizeof platforms[0]; i++)
    if (strcmp(platforms[i].name, name) == 0)
      return &platforms[i];
  return NULL;
}
