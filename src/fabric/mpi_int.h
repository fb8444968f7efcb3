/* fabric/mpi_int.h: a program of the MPI fabric as its two files see it:
 * fabric/mpi.c (the fabric's table, the program's life) and
 * fabric/mpi_win.c (its communicator, windows, doorbells and messages). */
#ifndef PLD_FABRIC_MPI_INT_H
#define PLD_FABRIC_MPI_INT_H

#include "fabric/mpi.h"
#include "fabric/mpi_proxy.h"
#include "fabric/shm.h"

/* A transfer as messages goes in pieces of at most this many bytes, one
 * at a time: more in flight at once, 16 MiB or 64 MiB, crossed Open MPI's
 * btl tcp at 0.2 GB/s, pieces of 4 MiB at 2.4 to 3.7 (a read over ucx,
 * bench_comm, 2026-12-06; two pieces in flight did no better than one). */
#define PLD__MPI_MSG_PIECE ((size_t)4 << 20)

/* A write as messages waits, taking messages meanwhile, while the bytes
 * this rank sent and MPI has not completed would pass this many with its
 * own: a stream of pld_put's writes as messages, all in flight at once,
 * crossed btl tcp at 0.25 GB/s from 64 KiB to 64 MiB; so bounded, at
 * 0.8 GB/s at 64 KiB, 2.4 at 256 KiB, 3.5 to 5.2 from 1 MiB, against
 * 8 MiB: 0.2 to 0.8, 0.7 to 2.4, 2.7 to 5.0 (over ucx, bench_comm
 * bandwidth, 2026-12-06). */
#define PLD__MPI_MSG_FLIGHT PLD__MPI_MSG_PIECE

/* The length of the piece at `at` of n, pieces of at most `most`. */
static inline size_t pld__mpi_piece(size_t n, size_t at, size_t most) {
  return n - at < most ? n - at : most;
}

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

/* What this rank sent to a rank as messages the rank acknowledges: counts
 * (compared as they wrap), and what it owes that rank. */
struct pld__mpi_peer {
  uint32_t sent, acked;
  uint32_t last_add;   /* `sent` after the last add */
  uint32_t last_write; /* after the last add or signal with bytes */
  /* After the last add or signal with bytes that every later signal
   * releases: all but the bytes a round's signal carried for its peer
   * alone (comm.h, `set_round`). */
  uint32_t last_shared;
  int32_t owed; /* acknowledgements owed for its messages */
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
  /* The messages sent (pld__mpi_sig_send, pld__mpi_add_send) and
   * acknowledged, per world rank (struct pld__mpi_peer); of all ranks,
   * those not acknowledged yet, and acknowledgements owed. */
  struct pld__mpi_peer *peers;
  int nunacked, nowed;
  /* last_in[buf * n + rank]: `sent` to that world rank after the last add
   * or signal with bytes to its copy of buffer buf (RMA on that buffer
   * waits for its acknowledgement, RMA on another need not). */
  uint32_t *last_in;
  /* A transfer's pieces not issued yet (write_later, read_later): the
   * next piece continuing it on both sides joins it, so that a transfer in
   * chunks is one MPI_Put or MPI_Get. */
  struct {
    int active, get, buf, peer;
    int round; /* written in a round, for the signal to peer alone */
    size_t off, n;
    unsigned char *ptr;
  } pend;
  /* A copy of a small write made now (its source may change once the
   * call returns), held back for the next signal to the peer to carry:
   * the fabric's EAGER_MAX bytes. */
  unsigned char *held;
  /* The most bytes of a transfer that go as messages (pld__mpi_put_send,
   * pld__mpi_get_recv) rather than RMA: PLD_MPI_CARRY_KB, or where that is
   * -1, what pld__mpi_win_create measured (0 or SIZE_MAX). */
  size_t carry;
  /* Where the bytes of the read in flight as messages go, NULL once they
   * came (pld__mpi_get_recv; one at a time: its thread stays in MPI). */
  unsigned char *get_to;
  const struct pld__spin *spin;
  _Atomic int running;
  /* The listener and the proxy's poller of the program: touched by the
   * proxy thread only; the messages in flight: by the thread in MPI. */
  struct pld__mpi_listener listener;
  struct pld__mpi_poller poller;
  struct pld__mpi_outmsg *out;
  size_t out_bytes; /* theirs, in all */
};

/* fabric/mpi_win.c: the collective part of pld__mpi_prog_create and
 * pld__mpi_prog_destroy (m allocated; create returns PLD_OK or the
 * failure, message set, naming pld_program_prepare). */
int pld__mpi_win_create(struct pld__mpi_prog *m);
void pld__mpi_win_destroy(struct pld__mpi_prog *m, int abandon);

/* In MPI (on the proxy thread, or pld__mpi_try_enter).  A signal to
 * world rank peer, whose copies the fabric reaches only through RMA, as
 * one message that the peer applies on its own copy (rings its doorbell)
 * and acknowledges: the value lands one message after the call, without
 * a flush's round trip.  With n bytes at data, the message carries them
 * too, written at doff of the peer's copy of buffer dbuf before the
 * signal lands: for that peer alone with `alone` (a round's write,
 * which later signals to other peers need not wait for).  The message
 * carries the acknowledgements this rank owes the peer.  Returns the MPI
 * status. */
int pld__mpi_sig_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      int32_t value, pld_notify_op op, int dbuf, size_t doff,
                      const void *data, size_t n, int alone);
/* In MPI: a write of the n bytes at src into the peer's copy of buffer
 * buf from byte off, as messages the peer applies and acknowledges (for
 * the peer alone, as a signal's bytes, with `alone`): what a write costs
 * where MPI's messages move bytes faster than its RMA (m->carry). */
int pld__mpi_put_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      const void *src, size_t n, int alone);
/* In MPI: a read of n bytes at off of the peer's copy of buffer buf into
 * dst, as a message asking for them and the peer's answer, taking the
 * messages that arrive meanwhile (m->carry, as pld__mpi_put_send). */
int pld__mpi_get_recv(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      void *dst, size_t n);
/* In MPI: an add of count elements at src to the peer's copy of buffer
 * buf from byte off, the same way: applied by the peer, acknowledged. */
int pld__mpi_add_send(struct pld__mpi_prog *m, int peer, int buf, size_t off,
                      const void *src, size_t count, pld_dtype dtype);
/* In MPI: until messages sent are acknowledged, applying the messages
 * that arrive meanwhile: to ranks other than peer (-1: to any rank),
 * every one (PLD__ACKED_OTHERS), every add and signal with bytes
 * but those for their peer alone (PLD__ACKED_WRITES), every add
 * (PLD__ACKED_ADDS); or every add and
 * signal with bytes to peer (PLD__ACKED_WRITES_TO), to its copy of buffer
 * b only (PLD__ACKED_IN(b)).  A rank that has
 * ended fails this as any MPI call to it (pld__mpi_errors).  Returns the
 * MPI status. */
enum {
  PLD__ACKED_OTHERS,
  PLD__ACKED_WRITES,
  PLD__ACKED_ADDS,
  PLD__ACKED_WRITES_TO,
  PLD__ACKED_WRITES_IN
};
#define PLD__ACKED_IN(buf) (PLD__ACKED_WRITES_IN + (buf))
int pld__mpi_acked(struct pld__mpi_prog *m, int peer, int which);
/* In MPI: sends the acknowledgements owed, one message per rank.  A
 * message to the rank carries them where it goes first; else a
 * thread that took messages sends them once it has seen what it waited
 * for, the proxy in its round, and a thread that waits for
 * acknowledgements itself.  Returns the MPI status. */
int pld__mpi_acks_send(struct pld__mpi_prog *m);
/* In MPI (the proxy, or pld__mpi_try_enter): takes one of the fabric's
 * own messages if one arrived.  Returns the MPI status. */
int pld__mpi_take_own(struct pld__mpi_prog *m);

#endif
