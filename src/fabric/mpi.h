/* fabric/mpi.h: the MPI-3 RMA fabric, for programs started by mpirun.
 *
 * MPI process r is rank r and runs rank r's device in itself (threads, no
 * fork).  MPI calls go through the process's proxy thread, or are made
 * by a device thread when no other thread is in MPI (fabric/mpi_proxy.h).
 *
 * Every window buffer is one MPI window on a communicator of its domain,
 * locked for the program's life (MPI_Win_lock_all, MPI_MODE_NOCHECK).
 * Peers on the same node reach each other's copies through shared memory
 * (MPI_Win_allocate_shared), as the shared-memory fabric does, unless
 * PLD_MPI_SAME_NODE=rma sends every peer through RMA.  Through RMA a write
 * is MPI_Put (flush_local) and a read MPI_Get, complete when its bytes
 * are here (the next signal has no read to flush); either first waits
 * for the acknowledgement of the bytes messages carried to the same
 * copy of the same buffer, which it could overtake.  Atomics never go
 * through MPI: a signal or an add to a peer reached through RMA is one
 * message (PLD__MPI_TAG_OWN) that the peer applies on its own copy with
 * the CPU's atomics, as a peer sharing the node's memory applies them
 * directly, and acknowledges; so every atomic on a copy is a CPU's,
 * atomic with the others (MPI's accumulates are atomic only among
 * themselves, and cost a round trip even to this rank's own copy).  A signal
 * flushes every peer written to since the last signal and waits until the
 * messages sent to other peers are acknowledged (it releases them too;
 * a signal of a collective's round, not those of the round's own writes,
 * which are for their peer alone: comm/comm.h, `set_round`); a write of up
 * to 16 KiB to its peer just before it travels in its message, and the
 * message rings the target's doorbell where it is applied.  Where MPI's
 * messages move bytes at least twice as fast as its RMA (measured once
 * per process when the first program's windows are made, or as
 * PLD_MPI_CARRY_KB says), a larger transfer goes as messages instead: a
 * write as one the peer applies and acknowledges like a signal's bytes
 * (at most 4 MiB of them in flight from this rank),
 * a read as a request the peer answers from its copy, this rank taking
 * the messages that arrive meanwhile; the bytes after a header travel in
 * a message of their own, received in place.
 *
 * fabric/mpi.c holds the fabric's table (comm/comm.h) and a program's
 * life; fabric/mpi_win.c a program's communicator, windows and doorbells,
 * and the messages on that communicator.  The host's control plane
 * (host/ctl_mpi.c) sends its messages on the same communicator
 * (host/ctl_mpi_msg.c): the fabric hands it, as its listener, every
 * message but its own.
 * Built only where MPI is found. */
#ifndef PLD_FABRIC_MPI_H
#define PLD_FABRIC_MPI_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

/* The tags of a program's communicator: the fabric's own messages, then
 * from PLD__MPI_TAG_FREE on, its listener's. */
enum {
  PLD__MPI_TAG_OWN = 1, /* signals, adds, acknowledgements */
  PLD__MPI_TAG_FREE = 2
};

struct pld__mpi_setup {
  int nranks, nbufs;
  const size_t *phys;          /* bytes of each buffer's copies */
  const unsigned char *member; /* [buf * nranks + rank] */
  int same_node_rma;           /* PLD_MPI_SAME_NODE=rma */
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

/* The CPUs the threads that count pld__mpi_awake share
 * (pld__node_cpus). */
uint32_t pld__mpi_node_cpus(struct pld__mpi_prog *m);

/* Zeroes this process's copies of every buffer; of bytes [off, off + n)
 * of buffer buf (if it has a copy). */
void pld__mpi_zero(struct pld__mpi_prog *m);
void pld__mpi_zero_bytes(struct pld__mpi_prog *m, int buf, size_t off,
                         size_t n);
/* A run of the program is in progress here (on) or over (off): while one
 * is, the proxy keeps calling into MPI. */
void pld__mpi_running(struct pld__mpi_prog *m, int on);

/* ---- for the messages of the program's control plane -------------------- */

/* What the control plane gives the program's fabric: poll(arg) runs in
 * every round of the proxy while the program lives, before the fabric
 * receives the messages that arrived (returns whether it did something);
 * message(arg, comm, s) receives a message of the program's communicator
 * the fabric does not take (s: its probe) and returns 1, or 0 if it is not
 * its own either (the fabric drops it).  Both run on the proxy thread. */
struct pld__mpi_listener {
  int (*poll)(void *arg);
  int (*message)(void *arg, MPI_Comm comm, const MPI_Status *s);
  void *arg;
};

/* The program's communicator, on which every process of the program is
 * its rank. */
MPI_Comm pld__mpi_comm(const struct pld__mpi_prog *m);
/* On the proxy thread: l becomes the program's listener (NULL: none). */
void pld__mpi_listen(struct pld__mpi_prog *m,
                     const struct pld__mpi_listener *l);
/* On the proxy thread: sends n bytes at buf with tag to process `to` (to
 * < 0: to every other process) without waiting for the receiver (whose
 * proxy may be in a collective that waits for this process); the
 * messages are freed once complete.  Messages of one tag to one process
 * arrive in the order sent.  Returns the MPI status. */
int pld__mpi_send(struct pld__mpi_prog *m, int to, int tag, const void *buf,
                  size_t n);
/* On the proxy thread: waits until every message sent is complete. */
void pld__mpi_sent_wait(struct pld__mpi_prog *m);
/* Wakes every thread of this rank waiting on the fabric (its doorbell
 * moves). */
void pld__mpi_wake(struct pld__mpi_prog *m);

#endif
