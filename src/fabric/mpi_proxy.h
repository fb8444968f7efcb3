/* fabric/mpi_proxy.h: the MPI proxy thread (fabric/mpi_proxy.c).
 *
 * One proxy thread per process owns every MPI call: it initialises MPI
 * (MPI_THREAD_FUNNELED is enough), serves the requests of the core, AICPU
 * and host threads from a queue, and keeps calling into MPI while a run is
 * in progress, so that passive-target progress never depends on a kernel
 * entering MPI.  Its users are the MPI fabric (fabric/mpi.c,
 * fabric/mpi_win.c) and the MPI control plane's messages
 * (host/ctl_mpi_msg.c).  Built only where MPI is found. */
#ifndef PLD_FABRIC_MPI_PROXY_H
#define PLD_FABRIC_MPI_PROXY_H

#include <mpi.h>
#include <stddef.h>

#include "core/futex.h"

/* MPI counts are int: larger transfers go in pieces of this many bytes. */
#define PLD__MPI_PIECE ((size_t)1 << 30)

/* Starts MPI and the proxy thread, once per process (MPI_Finalize runs at
 * exit).  fn names the caller in a failure (NULL: the thread's message
 * is left as it is).  Returns PLD_OK or PLD_ERR_SYSTEM. */
int pld__mpi_init(const char *fn);

/* After pld__mpi_init: the processes, this one's index, and the device
 * process `proc` simulates by default (its node's index times the
 * platform's devices per server, plus its rank on the node). */
int pld__mpi_size(void);
int pld__mpi_rank(void);
int pld__mpi_default_device(int proc, int server_devices);

/* Every process's communicator (MPI_COMM_WORLD duplicated), for the calls
 * made on the proxy thread. */
MPI_Comm pld__mpi_world(void);

/* Runs fn(arg) on the proxy thread and waits for it, as spin says (NULL:
 * the host threads' spin); on the proxy thread itself, runs it at once. */
void pld__mpi_call(void (*fn)(void *), void *arg, const struct pld__spin *spin);

/* The failure of an MPI call made by the proxy, composed there: the
 * message "the MPI fabric: what: MPI's error string" set, PLD_ERR_SYSTEM
 * returned. */
int pld__mpi_failed(int rc, const char *what);

/* Work the proxy does in every round while it has any: poll(arg) returns
 * whether it did something.  Added and removed on the proxy thread only
 * (in a function given to pld__mpi_call). */
struct pld__mpi_poller {
  int (*poll)(void *arg);
  void *arg;
  struct pld__mpi_poller *next;
};
void pld__mpi_poller_add(struct pld__mpi_poller *pl);
void pld__mpi_poller_remove(struct pld__mpi_poller *pl);

/* A run begins (delta 1) or ends (delta -1) in this process, with peers
 * reached through RMA (rma) or not: while one is in progress the proxy
 * keeps calling into MPI, and with RMA peers it hardly naps. */
void pld__mpi_proxy_running(int delta, int rma);

#endif
