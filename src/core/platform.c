#include <string.h>

#include "pld/program.h"

#define KIB ((size_t)1024)

/* The simulated hardware (reference section 6).  Device ids range over
 * [0, 16): a server's worth of cards, enough for the 16-rank examples. */
static const pld_platform_info platforms[] = {
    {"a2a3sim", 1, 16, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB},
    {"a5sim", 1, 16, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     256 * KIB},
    {"a2a3", 0, 16, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB},
    {"a5", 0, 16, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB, 256 * KIB},
};

const pld_platform_info *pld_platform_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < sizeof platforms / sizeof platforms[0]; i++)
    if (strcmp(platforms[i].name, name) == 0)
      return &platforms[i];
  return NULL;
}
