/* host/process.c: this process among those mpirun started
 * (pld_process_count, pld_process_index): one under the shm fabric. */
#include <stdlib.h>
#include <string.h>

#include "fabric/mpi.h"
#include "host/process.h"
#include "pld/program.h"

int pld__fabric_is_mpi(void) {
  const char *f = getenv("PLD_FABRIC");
  if (f)
    return !strcmp(f, "mpi");
  return pld__mpi_launched() && pld__mpi_built();
}

/* Queries: they leave the thread's message alone (a program calls them to
 * decide what to print about a failure). */
int pld_process_count(void) {
  if (!pld__fabric_is_mpi() || pld__mpi_init(NULL))
    return 1;
  return pld__mpi_size();
}

int pld_process_index(void) {
  if (!pld__fabric_is_mpi() || pld__mpi_init(NULL))
    return 0;
  return pld__mpi_rank();
}
