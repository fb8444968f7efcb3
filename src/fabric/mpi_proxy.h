/* fabric/mpi_proxy.h: the MPI proxy thread (fabric/mpi_proxy.c).
 *
 * One proxy thread per process initialises MPI (MPI_THREAD_SERIALIZED),
 * serves the requests of the core, AICPU and host threads from a queue,
 * and keeps calling into MPI while a run is in progress, so that
 * passive-target progress never depends on a kernel entering MPI.  One
 * thread at a time is in MPI: a device thread whose request finds no
 * other there makes the call itself, and a waiting one takes the
 * fabric's messages itself while it polls (pld__mpi_try_enter).  Its users are
 * the MPI fabric (fabric/mpi.c, fabric/mpi_win.c) and the MPI control plane's
 * messages (host/ctl_mpi_msg.c).  Built only where MPI is found. */
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
/* For the line of a process stopped from outside (mpirun ending the job)
 * or ended by a failed MPI call, which names the processes that are the
 * cause; both async-signal-safe.  pld__mpi_peer_gone: 1 if process
 * `proc` runs on this node and has ended without saying why, else 0
 * (processes on other nodes cannot be told).  pld__mpi_ending: this
 * process ends and says why: before its line (written 0), and once its
 * line is out (written 1), when it waits (300 ms at most) until every
 * other process of the node has written its own or is gone: the first
 * process to end makes mpirun kill the others at once, which may be
 * writing theirs. */
int pld__mpi_peer_gone(int proc);
void pld__mpi_ending(int written);

/* A failed MPI call on the world's communicators (and those made from
 * them) or on a window given to pld__mpi_errors returns its error outside
 * a run (pld__mpi_proxy_running).  In a run it ends the process: say(why)
 * prints its line (why: "ended: an MPI call failed: MPI's words"; NULL:
 * a plain line naming the process; pld__mpi_ending either way), and the
 * process ends when mpirun, seeing the peer's end, stops it (or with
 * status 1 two seconds on).  Without this MPI would abort the job in its
 * own words, naming no rank or kernel.  pld__mpi_errors: on the proxy
 * thread. */
void pld__mpi_errors(MPI_Win win);
void pld__mpi_on_failure(void (*say)(const char *why));

/* Every process's communicator (MPI_COMM_WORLD duplicated), for the calls
 * made on the proxy thread. */
MPI_Comm pld__mpi_world(void);

/* Runs fn(arg) on the proxy thread and waits for it, as spin says (NULL:
 * the host threads' spin); on the proxy thread itself, runs it at once.
 * A device thread (spin given) runs it itself if no other thread is in
 * MPI (where the node's processes outnumber its CPUs, once the thread in
 * it has left), large transfers too (over TCP a transfer handed off to the
 * proxy ran at 0.72x to 0.79x of MPI_Put's rate from 64 KiB to 16 MiB, made by
 * the device thread at 0.92x to 1.07x from 1 MiB: bench_comm bandwidth
 * --fabric mpi-tcp, 2026-12-05): never a host thread, whose calls may
 * wait long for other processes while this one's fabric messages must
 * still be taken. */
void pld__mpi_call(void (*fn)(void *), void *arg, const struct pld__spin *spin);
/* Whether the calling thread may call MPI now (1: it does, as the proxy
 * would, until pld__mpi_leave), or another thread is in MPI (0). */
int pld__mpi_try_enter(void);
void pld__mpi_leave(void);
/* Bracket a device thread's polling of MPI as it waits (taking the
 * fabric's messages itself: pld__mpi_try_enter), which ends with the wait
 * or, `sleeping`, as the thread goes to sleep: where the node's processes
 * outnumber its CPUs, the proxy rests meanwhile (fabric/mpi_proxy.c,
 * rest_while_polled). */
void pld__mpi_polling_begin(void);
void pld__mpi_polling_end(int sleeping);

/* The failure of an MPI call made by the proxy, composed there: the
 * message "the MPI fabric: what: MPI's error string" set, PLD_ERR_SYSTEM
 * returned. */
int pld__mpi_failed(int rc, const char *what);

/* Work the proxy does in every round while it has any: poll(arg) returns
 * whether it did something; waits(arg), whether a thread waits for what
 * only the proxy's calls into MPI bring (RMA landing here needs them),
 * which keeps the proxy calling without naps.  Added and removed on the
 * proxy thread only (in a function given to pld__mpi_call). */
struct pld__mpi_poller {
  int (*poll)(void *arg);
  int (*waits)(void *arg);
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
