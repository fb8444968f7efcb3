/* host/backends.c: the table of the control-plane backends (see
 * host/backends.h), and what is asked of the MPI backend without MPI. */
#include "host/backends.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tunables.h"

#ifdef PLD_HAVE_MPI
extern const struct pld__ctl_backend pld__ctl_backend_mpi; /* host/ctl_mpi.c */
#endif

static const struct pld__ctl_backend backend_shm = {
    .version = PLD__CTL_BACKEND_VERSION,
    .name = "shm",
    .ops = &pld__ctl_shm,
};

static const struct pld__ctl_backend *const backends[] = {
    &backend_shm,
#ifdef PLD_HAVE_MPI
    &pld__ctl_backend_mpi,
#endif
};

#define NBACKENDS ((int)(sizeof backends / sizeof backends[0]))

const struct pld__ctl_backend *pld__ctl_backend(const char *name) {
  for (int i = 0; i < NBACKENDS; i++)
    if (!strcmp(backends[i]->name, name))
      return backends[i];
  return NULL;
}

int pld__ctl_backend_mpi_start(const char *fn,
                               const struct pld__ctl_backend **out) {
  const struct pld__ctl_backend *b = pld__ctl_backend("mpi");
  if (!b)
    return pld__fail(PLD_ERR_UNSUPPORTED,
                     "%s: the MPI fabric: this build of pld has no MPI (build "
                     "it where an MPI implementation is installed)",
                     fn);
  int st = b->init(fn);
  if (st)
    return st;
  *out = b;
  return PLD_OK;
}

int pld__mpi_built(void) { return pld__ctl_backend("mpi") != NULL; }

int pld__mpi_launched(void) {
  /* Open MPI, PMIx launchers, MPICH's hydra. */
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_SIZE");
}

int pld__fabric_is_mpi(void) {
  const char *f = pld__setting(PLD__SET_FABRIC);
  if (f)
    return !strcmp(f, "mpi");
  return pld__mpi_launched() && pld__mpi_built();
}

/* The MPI backend, started, where the fabric is mpi; else NULL.  Leaves
 * the thread's message alone: a program calls the queries below to decide
 * what to print about a failure. */
static const struct pld__ctl_backend *mpi_in_use(void) {
  const struct pld__ctl_backend *b =
      pld__fabric_is_mpi() ? pld__ctl_backend("mpi") : NULL;
  return b && !b->init(NULL) ? b : NULL;
}

int pld_process_count(void) {
  const struct pld__ctl_backend *b = mpi_in_use();
  return b ? b->size() : 1;
}

int pld_process_index(void) {
  const struct pld__ctl_backend *b = mpi_in_use();
  return b ? b->rank() : 0;
}
