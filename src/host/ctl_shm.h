/* host/ctl_shm.h: what the shared-memory control plane (host/ctl_shm.c)
 * shows beyond its table, for tests. */
#ifndef PLD_HOST_CTL_SHM_H
#define PLD_HOST_CTL_SHM_H

#include "host/program.h"

/* The windows' shared region of a started program (tests). */
unsigned char *pld__shm_region(const struct pld_program *p);

#endif
