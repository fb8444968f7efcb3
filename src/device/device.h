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

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/error.h"
#include "device/plan.h"

enum { PLD__CMD_RUN = 1, PLD__CMD_STOP = 2 };

struct pld__devctl {
  _Atomic uint32_t cmd_seq;  /* host: bumped after setting cmd */
  _Atomic uint32_t cmd_sleepers; /* device: asleep on cmd_seq */
  _Atomic uint32_t cmd;
  _Atomic uint32_t done_seq; /* device: the cmd_seq it finished */
  _Atomic uint32_t ready;    /* device: started and waiting */
  int status;                /* result of the last run */
  uint32_t ticket;           /* order of failure among the ranks */
  char msg[PLD__MSG_MAX];
  /* Written by the crash handler of the device process. */
  _Atomic int crash_signal;
  int crash_core_type; /* -1: the AICPU thread */
  int crash_core, crash_block, crash_blocks;
  char crash_fn[64]; /* kernel or device function running */
  uintptr_t crash_addr;
  /* Read by the host's deadlock watch. */
  _Atomic int32_t running;    /* blocks running and not in a wait */
  _Atomic int32_t queued;     /* blocks ready but not started */
  _Atomic int32_t aicpu_busy; /* the AICPU runs device-function code */
  _Atomic uint32_t progress;  /* bumped by every signal this device sends */
  struct pld__waitslot waits[PLD__MAX_CORES];
};

struct pld__worldctl {
  _Atomic uint32_t event;   /* bumped and woken by a device done or dying */
  _Atomic uint32_t event_sleepers; /* host: asleep on event */
  _Atomic uint32_t abort;   /* host: stop the current run (a rank failed) */
  _Atomic uint32_t tickets; /* failure order */
  _Atomic uint32_t spinners; /* threads polling, in all processes */
};

/* The host's handle on one device process. */
struct pld__device {
  struct pld__devctl *ctl;
  unsigned char *data;
  size_t map_bytes;
  pid_t pid;
  int reaped;  /* waitpid collected it */
  int wstatus; /* its status then */
};

/* How the threads of a program poll: PLD_SPIN_US, the world's spinner
 * count, the CPUs. */
struct pld__spin pld__world_spin(struct pld__worldctl *world);

/* Maps the shared region of each device (sized for its plan) and of the
 * world.  Returns PLD_OK or PLD_ERR_SYSTEM (message set). */
int pld__devices_map(struct pld__device *devs, int n,
                     const struct pld__devplan *plans,
                     struct pld__worldctl **world);
void pld__devices_unmap(struct pld__device *devs, int n,
                        struct pld__worldctl *world);

/* A shared mapping a new device process must not keep. */
struct pld__mapping {
  void *addr;
  size_t len;
};

/* Starts the process of device `rank`; region is the windows' shared
 * region (plan->lay lays it out).  The child drops the other devices'
 * regions and the `nforeign` mappings of other programs, so it can reach
 * no memory but its own and the windows.  The child never returns. */
int pld__device_spawn(struct pld__device *devs, int n, int rank,
                      const struct pld__devplan *plan,
                      struct pld__worldctl *world, unsigned char *region,
                      const struct pld__mapping *foreign, int nforeign);

#endif
