/* device/device.h: a simulated device is an OS process of its own, like a
 * separate card.  Its main thread is the AICPU: it waits for a run command
 * from the host, runs the device's dispatches (each a device function
 * launching kernels onto its AI cores) and reports back.  Host and device
 * share one region per device: a control block, then the device's data
 * area holding the dispatched tensor slices (its global memory as the
 * host's copy engine sees it).  A second region, shared by all, carries
 * the run's abort flag and the host's wake-up word. */
#ifndef PLD_DEVICE_DEVICE_H
#define PLD_DEVICE_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/watch.h"
#include "device/plan.h"

enum { PLD__CMD_RUN = 1, PLD__CMD_STOP = 2 };

/* A command of the host to a device.  The device takes its commands in
 * order from a ring holding the last PLD__RING posted (the one of cmd_seq
 * s at ring[s % PLD__RING]): the host posts a command only once the device
 * finished the one PLD__RING before it.  A run posted while the runs
 * before it still execute (a queued run, host/submit.c) passes a gate
 * first, gate n for the chain's run n (struct pld__worldctl: q_*): with
 * PLD__GATE_SYNC (a run that can reach beyond its device's data slot:
 * the program has windows, or the run device-resident tensors) it waits
 * until the n runs before it finished successfully on every rank, else
 * only until its own device's did; the host must let it start (q_open);
 * with PLD__GATE_ZERO the device then zeroes its windows and waits until
 * every rank did.  A chain's first run (gate 0) starts at once, the host
 * having zeroed the windows.  A run that did not start is cancelled: it
 * stays at its gate until the chain is stopped (the abort word). */
#define PLD__RING 64
enum { PLD__GATE_SYNC = 1, PLD__GATE_ZERO = 2 };
struct pld__cmd {
  uint32_t cmd;   /* PLD__CMD_RUN or PLD__CMD_STOP */
  uint32_t slot;  /* a run's data slot */
  uint32_t gate;  /* 0, or n: the queued run's number in its chain */
  uint32_t flags; /* PLD__GATE_* */
};

/* Written at both ends and in the middle of every control block by the
 * host, so that it can tell a block a device's code overwrote. */
#define PLD__CTL_MAGIC 0x31746374636c6470ull /* "pldctlc1" */

/* How a device process said it was dying. */
enum { PLD__CRASH_NONE = 0, PLD__CRASH_SIGNAL = 1, PLD__CRASH_EXIT = 2 };

/* Written by the device's crash handler (a fatal signal) or exit hook (its
 * code called exit()): what it was running.  kind is stored last. */
struct pld__crash {
  _Atomic int32_t claimed; /* the first of several dying threads writes */
  _Atomic int32_t kind;
  int32_t signal;
  int32_t core_type; /* -1: the AICPU */
  int32_t core, block, blocks;
  char fn[PLD__NAME_MAX]; /* kernel or device function */
  uint64_t addr;
};

/* What a device publishes of itself for its host: the results of its
 * runs, how it died, and its watch (every core's state and wait), between
 * magic words that tell a block a device's code overwrote.  Whatever the
 * control plane, the host reads a device through this (host/ctl.h:
 * pld__view): live in the control block of a device process it forked
 * (shm), or the latest snapshot of it that the device's process sent
 * (mpi). */
struct pld__devstate {
  uint64_t magic;              /* PLD__CTL_MAGIC: the block's first word */
  _Atomic uint32_t run_seq;    /* device: the cmd_seq it took up */
  _Atomic uint32_t done_seq;   /* device: the cmd_seq it finished */
  _Atomic uint32_t calls_done; /* device: calls of this run finished (the
                                  host resets it before each run) */
  int status;                  /* result of the last run */
  /* device: the cmd_seq of the last run it ran (not one cancelled at its
   * gate) in the high half, its status in the low half: a queued run's
   * status is read there, the run after it may have started since */
  _Atomic uint64_t result;
  uint32_t ticket; /* order of failure among the ranks */
  char msg[PLD__MSG_MAX];
  struct pld__crash crash;
  uint64_t magic_mid;      /* PLD__CTL_MAGIC */
  struct pld__watch watch; /* read by the host's watch */
  uint64_t magic_end;      /* PLD__CTL_MAGIC */
};

/* A device's control block: what it publishes, then its commands. */
struct pld__devctl {
  struct pld__devstate st;       /* first: its first word is the block's */
  _Atomic uint32_t cmd_seq;      /* host: bumped after posting a command */
  _Atomic uint32_t cmd_sleepers; /* device: asleep on cmd_seq */
  struct pld__cmd ring[PLD__RING];
  _Atomic uint32_t ready; /* device: started and waiting */
  _Atomic uint32_t awake; /* device: its share of the world's awake
                             threads (see struct pld__spin) */
  /* device: what its kernels used window cells for, over its programs'
   * life (comm/comm.h); its host reads the collectives' signal views
   * between runs, to clear them after a failed run.  Last: kept when a
   * device is started in place of one that was killed. */
  struct pld__sig_uses uses;
};

/* Clears a control block for a new device process; with keep_uses (a
 * device started in place of one that was killed) all but `uses`. */
void pld__devctl_reset(struct pld__devctl *c, int keep_uses);

/* Posts command k to the device of c; returns its cmd_seq. */
static inline uint32_t pld__devctl_post(struct pld__devctl *c,
                                        struct pld__cmd k) {
  uint32_t seq = atomic_load_explicit(&c->cmd_seq, memory_order_relaxed) + 1;
  c->ring[seq % PLD__RING] = k;
  pld__event_signal(&c->cmd_seq, &c->cmd_sleepers, 1);
  return seq;
}

struct pld__worldctl {
  _Atomic uint32_t event; /* bumped and woken by a device done or dying */
  _Atomic uint32_t event_sleepers; /* host: asleep on event */
  _Atomic uint32_t abort;      /* host: stop the current run (a rank failed) */
  _Atomic uint32_t tickets;    /* failure order */
  _Atomic uint32_t awake;      /* threads awake, in all processes */
  _Atomic uint32_t *awake_at;  /* the count to use instead (the MPI fabric:
                                  the node's, shared), or NULL */
  uint32_t awake_cpus;         /* with awake_at: the CPUs its threads share */
  _Atomic uint32_t tasks_done; /* host: host tasks of this run done (and
                                  bumped by a stop: devices then read the
                                  abort word) */
  _Atomic uint32_t tasks_sleepers; /* devices: asleep on tasks_done */
  /* The chain of queued runs (struct pld__cmd), reset by the host as a
   * chain begins (no run in flight).  q_ok: runs that finished
   * successfully, summed over the ranks; q_zeroed: ranks that zeroed
   * their windows for a queued run, summed over the runs; q_open: the
   * last run of the chain whose gate opened (the first rank there opens
   * it), PLD__Q_CLOSED set by the host to open no more.  A stop bumps
   * q_ok and q_zeroed as it wakes their sleepers (the abort word, raised
   * first, tells a bump from a count). */
  _Atomic uint32_t q_ok, q_zeroed, q_open;
  _Atomic uint32_t q_sleepers; /* devices: asleep on q_ok or q_zeroed */
};
#define PLD__Q_CLOSED 0x80000000u

/* The host's handle on one device process.  Its region is the control
 * block, one inaccessible guard page (a kernel writing just before its
 * first tensor faults instead of corrupting the block), then the data
 * area. */
struct pld__device {
  struct pld__devctl *ctl;
  unsigned char *data;
  size_t map_bytes;
  pid_t pid;
  int reaped;  /* waitpid collected it */
  int wstatus; /* its status then */
  void *trace; /* its trace area (the program's), mapped by the host */
  size_t trace_bytes;
};

/* How the threads of a program poll: PLD_SPIN_US, the world's count of
 * awake threads (and this process's share of it, or NULL on the host; under
 * the MPI fabric, the node's count, and this process's, its host thread
 * included), the CPUs they share and this process's. */
struct pld__spin pld__world_spin(struct pld__worldctl *world,
                                 _Atomic uint32_t *own);

/* Maps, in one mapping, the world's page, the shared region of each
 * device (sized for its plan) and, when windows_bytes > 0, the windows'
 * region (*windows).  Returns PLD_OK or PLD_ERR_SYSTEM (message set). */
int pld__devices_map(struct pld__device *devs, int n,
                     const struct pld__devplan *plans, size_t windows_bytes,
                     struct pld__worldctl **world, unsigned char **windows);
void pld__devices_unmap(struct pld__device *devs, int n, size_t windows_bytes,
                        struct pld__worldctl *world);

/* A shared mapping a new device process must not keep. */
struct pld__mapping {
  void *addr;
  size_t len;
};

/* A device as it runs: its plan, control block, world, data area and
 * data plane (fabric), and the spin of its threads (set as it starts). */
struct pld__devrun {
  const struct pld__devplan *plan;
  struct pld__devctl *ctl;
  struct pld__worldctl *world;
  unsigned char *data;
  struct pld__fabric *fabric;
  struct pld__spin spin;
  struct pld__trace_area *trace; /* its threads' events, or NULL */
  struct pld__race *race;        /* the race detector's region, or NULL */
  /* Zeroes this rank's copy of every window of the fabric, at a queued
   * run's gate (NULL where runs are not queued: under mpi). */
  void (*zero_windows)(struct pld__fabric *f, int rank);
  int exits; /* the loop's process ends with it (nothing need be freed) */
  /* Under the MPI fabric, for the line of a process stopped from outside
   * (async-signal-safe, pld__mpi_peer_gone and pld__mpi_ending of
   * fabric/mpi_proxy.h): whether world rank r's process is gone (on this
   * node, without saying why), and this process ending, before its line
   * (written 0) and after it (1).  NULL where a host outlives the device
   * and reports its end. */
  int (*peer_gone)(int r);
  void (*ending)(int written);
  /* The devices sharing the CPUs this one may use, and this one's number
   * among them: its threads run on its share (PLD_PIN_DEVICES); fewer
   * than 2 devices: anywhere. */
  int cpu_parts, cpu_part;
};

/* The AICPU's loop: reports ready, runs every run command, returns at a
 * stop command (its cores joined). */
void pld__device_loop(struct pld__devrun *d);

/* Runs device d (its plan, control block, world, data area and fabric) as
 * this process, a new one made for it (the shm control plane forks one per
 * device, host/ctl_shm.c): crash handlers that report to the control
 * block, an exit() reported as the device's failure, the AICPU's loop;
 * then the process ends.  Never returns. */
_Noreturn void pld__device_process(struct pld__devrun *d);

/* Under the MPI fabric: runs device d in this process, its AICPU on a new
 * thread (its fabric set).  A crash of any of its threads prints its
 * report on stderr before the process dies. */
int pld__device_thread(struct pld__devrun *d, pthread_t *thread);

/* Under the MPI fabric: the process ends for a cause outside its device
 * (why: its words, "ended: an MPI call failed: ..."): prints its line as
 * for a signal from outside, the peers gone and what the cores did.
 * Async-signal-safe; nothing where no device thread runs. */
void pld__device_say_end(const char *why);

#endif
