/* host/backends.h: the control-plane backends of this build, registered
 * in one table (host/backends.c): shm always; mpi only in a build that
 * found MPI, whose files (fabric/mpi*.c, host/ctl_mpi*.c) are compiled
 * only then.  Generic code reaches the MPI backend through this table,
 * and the questions that need no MPI (does this build have it? did a
 * launcher start this process?) are answered without it. */
#ifndef PLD_HOST_BACKENDS_H
#define PLD_HOST_BACKENDS_H

#include "host/ctl.h"

#define PLD__CTL_BACKEND_VERSION 1

struct pld__ctl_backend {
  int version;      /* PLD__CTL_BACKEND_VERSION of the table's layout */
  const char *name; /* as cfg.fabric and PLD_FABRIC name it */
  const struct pld__ctl_ops *ops;
  /* A backend whose processes a launcher started, one rank each (mpi);
   * NULL where one process runs every rank (shm).  init starts its
   * transport, once per process (fn names the caller in a failure; NULL:
   * the thread's message is left as it is; returns PLD_OK or
   * PLD_ERR_SYSTEM); then the processes, this one's index, and the device
   * process proc simulates by default. */
  int (*init)(const char *fn);
  int (*size)(void);
  int (*rank)(void);
  int (*default_device)(int proc, int server_devices);
};

/* The backend of this build named name, or NULL. */
const struct pld__ctl_backend *pld__ctl_backend(const char *name);

/* The MPI backend with its transport started: *out and PLD_OK, or
 * PLD_ERR_UNSUPPORTED (a build without MPI) or PLD_ERR_SYSTEM, the
 * message naming fn. */
int pld__ctl_backend_mpi_start(const char *fn,
                               const struct pld__ctl_backend **out);

/* Whether this build has the MPI backend, and whether a launcher (mpirun)
 * started this process. */
int pld__mpi_built(void);
int pld__mpi_launched(void);

/* The one rule for the fabric a program gets when its configuration
 * names none: PLD_FABRIC if set ("mpi": the MPI fabric), else the MPI
 * fabric when a launcher started this process and the build has MPI.  1
 * for the MPI fabric, 0 for shm. */
int pld__fabric_is_mpi(void);

#endif
