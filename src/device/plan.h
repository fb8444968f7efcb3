/* device/plan.h: what one device runs in one program run, as the host's
 * compile step laid it out.  A device process inherits its plan when it is
 * started and reads it in every run; only tensor data changes between
 * runs. */
#ifndef PLD_DEVICE_PLAN_H
#define PLD_DEVICE_PLAN_H

#include <stddef.h>

#include "comm/comm.h"
#include "core/alloc.h"
#include "core/sig.h"
#include "pld/levels.h"
#include "pld/program.h"

/* A region of device global memory holding one host tensor slice. */
struct pld__devbuf {
  size_t offset; /* in the device's data area, 64-byte aligned */
  size_t nbytes;
  int host_arg;       /* the host argument it is a slice of */
  size_t host_offset; /* byte offset of the slice in that argument */
  unsigned dirs;      /* union of the directions it is passed with */
};

/* One argument of a dispatch: a scalar value, a tensor over a buffer, or a
 * window view. */
struct pld__call_arg {
  pld_arg scalar; /* scalars (buf < 0, win_buf < 0): as the entry unpacks it */
  int scalar_at;  /* scalars: its index in the device's scalar table */
  int buf;        /* tensors: index into the plan's bufs, else -1 */
  int win_buf;    /* windows: the window buffer, else -1 */
  size_t win_offset;
  pld_dtype dtype;
  int ndim;
  int64_t shape[PLD_MAX_DIMS];
};

/* One dispatch of a device function, in host program order. */
struct pld__call {
  pld_device_fn fn;
  int after_tasks; /* host tasks that must have run before it starts */
  int argc;
  struct pld__call_arg *args;
  char *launches; /* compile-time trace of its kernel launches (artifacts) */
};

struct pld__devplan {
  int rank, device_id, nranks;
  const pld_platform_info *plat;
  const struct pld__dims *dims; /* bindings made while compiling */
  int ncalls;
  struct pld__call *calls;
  int report_calls; /* wake the host after each call: host tasks wait */
  int nbufs;
  struct pld__devbuf *bufs;
  /* What changes from run to run, written by the host into the run's
   * data slot before it: where each buffer lies (nbufs offsets from the
   * slot's start: bufs[b].offset, or beyond the slots where a run passes
   * a device-resident tensor) at table_offset, then the run's scalar
   * values (nscalars pld_args) at scalars_offset. */
  size_t table_offset;
  /* Bytes after the data slots for device-resident tensors. */
  size_t heap_bytes;
  int nslots; /* data slots (below) */
  int nscalars;
  size_t scalars_offset;
  size_t data_bytes;
  /* Device global memory its tensor slices and window copies take (device
   * allocations must fit the rest). */
  uint64_t mem_bytes;
  /* Window buffers: each rank's comm context in each of the nwinbufs
   * (comms[win_buf * nranks + rank]); where their copies are is the
   * fabric's. */
  int nwinbufs;
  const struct pld__comm *comms;
  /* The program's collective signal window (win_buf -1: none), which
   * kernels' PLD_COLL_SIG parameters receive. */
  struct pld__call_arg coll_sig;
  /* The diagnostics files (device/diag.h): PLD__DIAG_* (0: none) and the
   * dfx folder they go under (the host's, shared by every rank). */
  unsigned diag;
  const char *diag_dir;
};

/* The parameter a PLD_COLL_SIG declares, as the device names its view. */
extern const pld_param pld__coll_sig_param;

/* A device's data area holds nslots runs' slices (PLD__DATA_SLOTS, or
 * one per run in flight where the program queues more: pld_compile), one
 * slot each, so that the host can copy the next runs' inputs in while a
 * run executes; a run command names its slot.  Slot k starts k strides into
 * the area, each stride the slot's pages and one inaccessible guard page
 * after them (so every slot has a guard page before it: the first the
 * one after the control block). */
#define PLD__DATA_SLOTS 2
static inline size_t pld__plan_slot_stride(const struct pld__devplan *pl) {
  return pld__round_up(pl->data_bytes, 4096) + 4096;
}

/* Adding n bytes to `used` bytes of a device's global memory would exceed
 * the platform's (computed without overflow for any n). */
static inline int pld__mem_exceeded(const pld_platform_info *plat,
                                    uint64_t used, uint64_t n) {
  return used > plat->global_bytes || n > plat->global_bytes - used;
}

/* The host writes a run's table into its data slot (data): the buffers'
 * offsets from the slot (at: nbufs of them; NULL: where the plan lays
 * them out) and the plan's scalar values. */
void pld__plan_table_write(const struct pld__devplan *pl, unsigned char *data,
                           const size_t *at);

/* The argument a device function receives for ca: the scalar, or a tensor
 * descriptor built in *t (named and directed as parameter pm; window views
 * with this rank's comm context).  With data and f NULL (a compile-time
 * trace) tensors have shapes and no memory; otherwise tensors live in the
 * device's data area and windows in the fabric's copy of this rank. */
pld_arg pld__call_arg_tensor(const struct pld__call_arg *ca,
                             const pld_param *pm, const struct pld__devplan *pl,
                             unsigned char *data, struct pld__fabric *f,
                             struct pld__tensor *t);

#endif
