/* fabric/mpi.h: the MPI-3 RMA fabric, for programs started by mpirun.
 *
 * MPI process r is rank r and runs rank r's device in itself (threads, no
 * fork).  One proxy thread per process owns every MPI call: it initialises
 * MPI (MPI_THREAD_FUNNELED is enough), serves the requests of the core,
 * AICPU and host threads from a queue, and keeps calling into MPI while a
 * run is in progress, so that passive-target progress never depends on a
 * kernel entering MPI.
 *
 * Every window buffer is one MPI window on a communicator of its domain,
 * locked for the program's life (MPI_Win_lock_all, MPI_MODE_NOCHECK).
 * Peers on the same node reach each other's copies through shared memory
 * (MPI_Win_allocate_shared), as the shared-memory fabric does, unless
 * PLD_MPI_SAME_NODE=rma sends every peer through RMA.  Through RMA a write
 * is MPI_Put (flush_local), a read MPI_Get, an add MPI_Accumulate (FP16
 * and BF16: compare-and-swap on the enclosing word), and a signal flushes
 * every peer written to since the last signal, then MPI_Accumulate
 * (MPI_SUM or MPI_REPLACE) on the cell, a flush, and a doorbell message to
 * the target's proxy, which wakes the cores waiting there.
 *
 * The host's control plane (host/ctl_mpi.c) uses the same proxy for its
 * messages: snapshots of each device's watch to process 0, which watches
 * for deadlocks and limits; its abort, its verdict, its host tasks and
 * its asks for fresh snapshots back; the Out slices gathered after a
 * run. */
#ifndef PLD_FABRIC_MPI_H
#define PLD_FABRIC_MPI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

/* Whether this build has the MPI fabric, and whether a launcher (mpirun)
 * started this process. */
int pld__mpi_built(void);
int pld__mpi_launched(void);

/* Starts MPI and the proxy thread, once per process (MPI_Finalize runs at
 * exit).  fn names the caller in a failure (NULL: the thread's message
 * is left as it is).  Returns PLD_OK,
 * PLD_ERR_UNSUPPORTED (a build without MPI) or PLD_ERR_SYSTEM. */
int pld__mpi_init(const char *fn);

/* After pld__mpi_init: the processes, this one's index, and the device
 * process `proc` simulates by default (its node's index times the
 * platform's devices per server, plus its rank on the node). */
int pld__mpi_size(void);
int pld__mpi_rank(void);
int pld__mpi_default_device(int proc, int server_devices);

/* What a program's control plane gives the fabric: words the proxy sets
 * and wakes when a message of the program arrives. */
struct pld__mpi_hooks {
  _Atomic uint32_t *abort; /* an abort from process 0 sets it */
  _Atomic uint32_t *event; /* bumped (and woken) on every control message */
  _Atomic uint32_t *event_sleepers;
  _Atomic uint32_t *tasks; /* bumped and woken on an abort (devices may
                              sleep on it) */
};

struct pld__mpi_setup {
  int nranks, nbufs;
  const size_t *phys;          /* bytes of each buffer's copies */
  const unsigned char *member; /* [buf * nranks + rank] */
  int same_node_rma;           /* PLD_MPI_SAME_NODE=rma */
  size_t snap_bytes;           /* size of a snapshot message */
  struct pld__mpi_hooks hooks;
};

struct pld__mpi_prog;

/* Collective over every process: the program's communicator, windows and
 * doorbells.  Returns PLD_OK or PLD_ERR_SYSTEM / PLD_ERR_NOMEM (message
 * set, naming pld_program_prepare). */
int pld__mpi_prog_create(const struct pld__mpi_setup *s,
                         struct pld__mpi_prog **out);
/* Collective.  abandon: a device thread may still run, so the windows are
 * left allocated (every process abandons alike). */
void pld__mpi_prog_destroy(struct pld__mpi_prog *m, int abandon);

/* This rank's data plane (world rank = process index). */
struct pld__fabric *pld__mpi_fabric(struct pld__mpi_prog *m);
/* The spin the threads waiting for the proxy use (the device's). */
void pld__mpi_set_spin(struct pld__mpi_prog *m, const struct pld__spin *spin);

/* The count of awake threads of every process of this node, in memory
 * they share (the spin of struct pld__spin), or NULL where peers do not
 * share memory (PLD_MPI_SAME_NODE=rma). */
_Atomic uint32_t *pld__mpi_awake(struct pld__mpi_prog *m);

/* Zeroes this process's copies of every buffer; of bytes [off, off + n)
 * of buffer buf (if it has a copy). */
void pld__mpi_zero(struct pld__mpi_prog *m);
void pld__mpi_zero_bytes(struct pld__mpi_prog *m, int buf, size_t off,
                         size_t n);
/* A run of the program is in progress here (on) or over (off): while one
 * is, the proxy keeps calling into MPI. */
void pld__mpi_running(struct pld__mpi_prog *m, int on);

/* Collective calls on the program's communicator, made by the host
 * thread of every process alike. */
int pld__mpi_barrier(struct pld__mpi_prog *m);
int pld__mpi_bcast(struct pld__mpi_prog *m, void *buf, size_t n, int root);

/* Control messages.  A snapshot goes to process 0, which keeps the latest
 * of each process: pld__mpi_snapshot copies it into buf if it is newer
 * than *gen (returns 1) or returns 0.  The abort (applied here too: the
 * abort word set, the device's waiters woken) and the verdict go from
 * process 0 to every other; pld__mpi_verdict takes the verdict that
 * arrived (returns 1) or returns 0. */
int pld__mpi_send_snapshot(struct pld__mpi_prog *m, const void *buf, size_t n);
int pld__mpi_snapshot(struct pld__mpi_prog *m, int from, void *buf, size_t n,
                      uint32_t *gen);
int pld__mpi_abort(struct pld__mpi_prog *m, uint32_t why);
int pld__mpi_send_verdict(struct pld__mpi_prog *m, const void *v, size_t n);
int pld__mpi_verdict(struct pld__mpi_prog *m, void *v, size_t n);
/* Counts process 0 tells every other process: the host tasks it runs
 * (PLD__MPI_TASKS: the first k of this run; every process runs each, see
 * host/ctl_mpi.c; back to 0 at each run) and its asks for a fresh
 * snapshot (PLD__MPI_ASKS: numbered 1, 2, ... over the program's life).
 * pld__mpi_said: the newest count of what that arrived. */
enum { PLD__MPI_TASKS, PLD__MPI_ASKS, PLD__MPI_COUNTS };
int pld__mpi_say(struct pld__mpi_prog *m, int what, uint32_t k);
uint32_t pld__mpi_said(struct pld__mpi_prog *m, int what);

#endif
