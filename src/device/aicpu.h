/* device/aicpu.h: the context of a per-device orchestration function.  It
 * runs in two modes: traced on the host while compiling (launches are
 * checked and described, nothing runs) and for real on the device's AICPU
 * (launches become tasks of the device's scheduler). */
#ifndef PLD_DEVICE_AICPU_H
#define PLD_DEVICE_AICPU_H

#include "core/error.h"
#include "core/sig.h"
#include "core/tensor.h"
#include "core/watch.h"
#include "device/plan.h"
#include "device/sched.h"

#include <stdatomic.h>

struct pld__aicpu {
  int trace; /* 1: compile-time trace */
  int rank, device;
  const pld_platform_info *plat;
  const char *fn; /* the device function's name */
  struct pld__dims *dims;
  struct pld__sched *sched; /* real mode */
  /* This rank's view of the program's collective signal window, or NULL
   * (PLD_COLL_SIG parameters receive it). */
  const struct pld__tensor *coll_sig;
  struct pld__watch *watch; /* real mode: busy except while draining */

  /* Tensors from pld_device_alloc, freed at the end of the call, and the
   * device global memory they take beside the plan's (mem_bytes).  Their
   * blocks of memory outlive the call (spare): the next call's
   * allocations take them again, as a device's global memory stays from
   * one run to the next, where memory fresh from the host's allocator
   * costs a page fault per page touched, on every run.  Only the last
   * call's blocks are kept. */
  struct pld__dblock {
    struct pld__tensor *t; /* in allocs; NULL in spare */
    void *data;
    size_t bytes; /* the block's size: t's nbytes or more */
  } * allocs, *spare;
  int32_t nallocs, capallocs, nspare, capspare;
  uint64_t mem_bytes, alloc_bytes;
  /* Views made by pld_segment (each a tensor and its struct pld__segment
   * in one allocation), freed at the end of the call. */
  void **views;
  int32_t nviews, capviews;

  /* Task ids (pld_task_id): this call's stamp (unique in the process),
   * the launches so far, and the manual scope open (its number, 0 for
   * none; scopes counts them) and the launch it began before.  Trace
   * mode: each launch's kernel name, for the edges' description. */
  uint32_t call;
  int32_t nlaunched;
  int32_t scope, scopes, scope_from;
  const char **launched;
  int32_t caplaunched;

  /* Trace mode: a readable line per launch. */
  char *log;
  size_t loglen, logcap;

  int status;             /* first failure: sticky */
  char msg[PLD__MSG_MAX]; /* last: a device zeroes only what precedes */
};

/* Runs (or traces) one call of a device function: entry(args), then waits
 * for its tasks and frees its allocations.  Returns the first failure,
 * whose message is in a->msg.  In real mode the watch shows the function
 * running from the call on, except while it waits for its tasks. */
int pld__aicpu_call(struct pld__aicpu *a, pld_device_fn fn,
                    const pld_arg *argv);

/* The end of pld_launch, after its checks: describes the launch (trace)
 * or submits it.  The runtime's builtin device functions launch their
 * builtin kernels through it directly: their arguments were checked when
 * the host called them, and their kernels take any dtype. */
int pld__launch_checked(pld_aicpu a, pld_kernel_fn kernel, int32_t blocks,
                        const pld_arg *norm);

/* Publishes whether the AICPU runs device-function code (busy) or waits
 * (for a command, or for its tasks); busy time counts against the kernel
 * time limit from now. */
void pld__aicpu_busy(struct pld__aicpu *a, int busy);

/* Frees what the context owns, its spare blocks included (not the log,
 * which the caller takes). */
void pld__aicpu_release(struct pld__aicpu *a);

#endif
