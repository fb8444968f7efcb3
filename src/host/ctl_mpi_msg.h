/* host/ctl_mpi_msg.h: the messages of the MPI control plane
 * (host/ctl_mpi.c), carried on a program's communicator of the MPI fabric
 * (fabric/mpi.h) by the proxy thread, as the fabric's listener.
 *
 * Snapshots of each device's watch go to process 0, which watches for
 * deadlocks and limits; its abort, its verdict, its host tasks and its
 * asks for fresh snapshots go back; the collectives of the host threads
 * (a barrier, a broadcast) copy the Out slices after a run and a host
 * task's bytes.  Built only where MPI is found. */
#ifndef PLD_HOST_CTL_MPI_MSG_H
#define PLD_HOST_CTL_MPI_MSG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/mpi.h"

/* Words the messages set and wake when they arrive. */
struct pld__mpi_msg_hooks {
  _Atomic uint32_t *abort; /* an abort from process 0 sets it */
  _Atomic uint32_t *event; /* bumped (and woken) on every control message */
  _Atomic uint32_t *event_sleepers;
  _Atomic uint32_t *tasks; /* bumped and woken on an abort (devices may
                              sleep on it) */
};

struct pld__mpi_msg_setup {
  int nranks;
  size_t snap_bytes; /* size of a snapshot (and of a verdict) */
  struct pld__mpi_msg_hooks hooks;
};

struct pld__mpi_msg;

/* Collective over every process: the messages of program m (which must
 * outlive them).  Returns PLD_OK or PLD_ERR_NOMEM (message set, naming
 * pld_program_prepare). */
int pld__mpi_msg_create(struct pld__mpi_prog *m,
                        const struct pld__mpi_msg_setup *s,
                        struct pld__mpi_msg **out);
/* Collective, before the program's pld__mpi_prog_destroy.  abandon: as
 * there (nothing is freed). */
void pld__mpi_msg_destroy(struct pld__mpi_msg *c, int abandon);

/* A run of the program is in progress here (on: no host task said yet)
 * or over (off); see pld__mpi_running. */
void pld__mpi_msg_running(struct pld__mpi_msg *c, int on);

/* Collective calls on the program's communicator, made by the host
 * thread of every process alike. */
int pld__mpi_msg_barrier(struct pld__mpi_msg *c);
int pld__mpi_msg_bcast(struct pld__mpi_msg *c, void *buf, size_t n, int root);

/* A snapshot goes to process 0, which keeps the latest of each process:
 * pld__mpi_msg_snapshot copies it into buf if it is newer than *gen
 * (returns 1) or returns 0.  The abort (applied here too: the abort word
 * set, the device's waiters woken) and the verdict go from process 0 to
 * every other; pld__mpi_msg_verdict takes the verdict that arrived
 * (returns 1) or returns 0. */
int pld__mpi_msg_send_snapshot(struct pld__mpi_msg *c, const void *buf,
                               size_t n);
int pld__mpi_msg_snapshot(struct pld__mpi_msg *c, int from, void *buf, size_t n,
                          uint32_t *gen);
int pld__mpi_msg_abort(struct pld__mpi_msg *c, uint32_t why);
int pld__mpi_msg_send_verdict(struct pld__mpi_msg *c, const void *v, size_t n);
int pld__mpi_msg_verdict(struct pld__mpi_msg *c, void *v, size_t n);
/* Counts process 0 tells every other process: the host tasks it runs
 * (PLD__MPI_TASKS: the first k of this run; every process runs each, see
 * host/ctl_mpi.c; back to 0 at each run) and its asks for a fresh
 * snapshot (PLD__MPI_ASKS: numbered 1, 2, ... over the program's life).
 * pld__mpi_msg_said: the newest count of what that arrived. */
enum { PLD__MPI_TASKS, PLD__MPI_ASKS, PLD__MPI_COUNTS };
int pld__mpi_msg_say(struct pld__mpi_msg *c, int what, uint32_t k);
uint32_t pld__mpi_msg_said(struct pld__mpi_msg *c, int what);

#endif
