/* core/platform.c: the simulated platforms (a2a3sim, a5sim) and their
 * limits: devices, cores and tile memory (pld/program.h). */
#include <string.h>

#include "pld/program.h"

#define KIB ((size_t)1024)
#define GIB ((uint64_t)1 << 30)

/* The simulated hardware (reference section 6).  Device ids range over
 * a cluster of 8 servers of 16 cards each: ids 16 s to 16 s + 15 are the
 * cards of server s, so 64 ranks and more run on one machine.  Global
 * memory is the HBM of one card: 64 GiB on the 910B class, 128 GiB on the
 * 950 class. */
#define CLUSTER (8 * 16)
static const pld_platform_info platforms[] = {
    {"a2a3sim", 1, CLUSTER, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB, 64 * GIB, 16},
    {"a5sim", 1, CLUSTER, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     256 * KIB, 128 * GIB, 16},
    {"a2a3", 0, CLUSTER, 24, 48, 192 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     128 * KIB, 64 * GIB, 16},
    {"a5", 0, CLUSTER, 36, 72, 256 * KIB, 512 * KIB, 64 * KIB, 64 * KIB,
     256 * KIB, 128 * GIB, 16},
};

const pld_platform_info *pld_platform_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < sizeof platforms / sizeof platforms[0]; i++)
    if (strcmp(platforms[i].name, name) == 0)
      return &platforms[i];
  return NULL;
}
