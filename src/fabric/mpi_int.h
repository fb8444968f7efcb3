/* fabric/mpi_int.h: a program of the MPI fabric as its two files see it:
 * fabric/mpi.c (the fabric's table, the program's life) and
 * fabric/mpi_win.c (its communicator, windows, doorbells and messages). */
#ifndef PLD_FABRIC_MPI_INT_H
#define PLD_FABRIC_MPI_INT_H

#include "fabric/mpi.h"
#include "fabric/mpi_proxy.h"
#include "fabric/shm.h"

/* A window buffer. */
struct pld__mpi_buf {
  int member;
  size_t bytes;
  MPI_Comm comm;        /* the domain, or MPI_COMM_NULL */
  MPI_Win win;          /* RMA over the domain, or MPI_WIN_NULL */
  MPI_Win shwin;        /* shared by the domain's node, or MPI_WIN_NULL */
  unsigned char *local; /* this rank's copy */
  int *drank;           /* [world rank]: its rank in comm, -1 if none */
  unsigned char **shm;  /* [world rank]: its copy in shared memory, or NULL */
};

struct pld__mpi_fab {
  struct pld__fabric base;
  struct pld__mpi_prog *m;
};

/* A message sent and not complete yet (pld__mpi_send). */
struct pld__mpi_outmsg;

struct pld__mpi_prog {
  struct pld__mpi_fab fab;
  struct pld__mpi_setup set;
  int me, n;
  MPI_Comm comm, node;
  struct pld__mpi_buf *bufs;
  struct pld__bell *bell;   /* this rank's doorbell */
  _Atomic uint32_t *awake;  /* the node's count of awake threads, or NULL */
  uint32_t node_cpus;       /* the CPUs they share (pld__node_cpus) */
  struct pld__bell **bells; /* [world rank]: in shared memory, or NULL */
  MPI_Win bellwin;
  unsigned char *private_bell;
  int rma; /* some peer is reached through RMA */
  /* From here to `spin`: touched only by the thread in MPI (the proxy, or
   * a device thread: pld__mpi_try_enter), but any_dirty, which a device
   * thread reads first. */
  /* Buffers and domain ranks written through RMA since the last signal:
   * dirty[buf * n + rank], and the list of them. */
  unsigned char *dirty;
  int *dirty_list, ndirty;
  _Atomic int any_dirty;
  /* Signals sent later whose doorbells wait for the next flush: (world
   * rank, buffer) pairs, at most one per rank. */
  int *late, nlate;
  /* Signals sent as messages (PLD__MPI_TAG_SIG) not acknowledged yet:
   * per world rank, and in all. */
  int *unacked, nunacked;
  /* Acknowledgements owed for signals applied here: per world rank, and
   * in all (pld__mpi_acks_send). */
  int *owed, nowed;
  /* A transfer's pieces not issued yet (write_later, read_later): the
   * next piece continuing it on both sides joins it, so that a transfer in
   * chunks is one MPI_Put or MPI_Get. */
  struct {
    int active, get, buf, peer;
    size_t off, n;
    unsigned char *ptr;
  } pend;
  const struct pld__spin *spin;
  _Atomic int running;
  /* The listener and the proxy's poller of the program: touched by the
   * proxy thread only; the messages in flight: by the thread in MPI. */
  struct pld__mpi_listener listener;
  struct pld__mpi_poller poller;
  struct pld__mpi_outmsg *out;
};

/* fabric/mpi_win.c: the collective part of pld__mpi_prog_create and
 * pld__mpi_prog_destroy (m allocated; create returns PLD_OK or the
 * failure, message set, naming pld_program_prepare). */
int pld__mpi_win_create(struct pld__mpi_prog *m);
void pld__mpi_win_destroy(struct pld__mpi_prog *m, int abandon);

/* In MPI (on the proxy thread, or pld__mpi_try_enter).  A signal to
 * world rank peer, whose copies the fabric reaches only through RMA, as
 * one message that the peer applies (MPI_Accumulate on its own window,
 * then a ring of its doorbell) and acknowledges: the value lands one
 * message after the call, without a flush's round trip.  The message
 * carries the acknowledgements this rank owes the peer.  Returns the MPI
 * status. */
int pld__mpi_sig_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      int32_t value, pld_notify_op op);
/* In MPI: until every signal message sent to a rank other than `except`
 * (-1: to any rank) is acknowledged, applying the signals that arrive
 * meanwhile.  A rank that has ended fails this as any MPI call to it
 * (pld__mpi_errors).  Returns the MPI status. */
int pld__mpi_sig_acked(struct pld__mpi_prog *m, int except);
/* In MPI: sends the acknowledgements owed, one message per rank with
 * their count.  A signal to the rank carries them where it goes first;
 * else a thread that took signals sends them once it has seen what it
 * waited for, the proxy in its round, and a thread that waits for
 * acknowledgements itself.  Returns the MPI status. */
int pld__mpi_acks_send(struct pld__mpi_prog *m);
/* In MPI (the proxy, or pld__mpi_try_enter): takes the fabric's own
 * messages that arrived (signals, acknowledgements, doorbells).  Returns
 * the MPI status. */
int pld__mpi_take_own(struct pld__mpi_prog *m);

#endif
