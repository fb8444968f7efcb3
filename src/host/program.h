/* host/program.h: a compiled program and the host orchestrator's context. */
#ifndef PLD_HOST_PROGRAM_H
#define PLD_HOST_PROGRAM_H

#include "core/error.h"
#include "core/sig.h"
#include "core/tensor.h"
#include "device/device.h"
#include "device/plan.h"
#include "pld/program.h"

/* One pld_dispatch as the host trace recorded it. */
struct pld__dispatch {
  int rank;
  pld_device_fn fn;
  int argc;
  pld_arg argv[32];                 /* normalized; tensors point into t */
  struct pld__tensor t[32];         /* copies of the tensor arguments */
};

struct pld__host {
  struct pld_program *prog;
  struct pld__tensor *args; /* the host arguments, host_arg = index */
  struct pld__tensor **slices;
  int nslices, capslices;
  struct pld__dispatch *disps;
  int ndisps, capdisps;
  int status; /* first failure: sticky */
  char msg[PLD__MSG_MAX];
};

struct pld_program {
  pld_host_fn host;
  const pld_platform_info *plat;
  int nranks;
  int *device_ids;
  int nargs;
  pld_arg *args;            /* as compiled; tensors point into arg_meta */
  struct pld__tensor *arg_meta;
  struct pld__dims dims;
  struct pld__devplan *plans; /* per rank */
  char *artifact_dir;

  /* Device processes, from the first run (or prepare) to destroy. */
  struct pld__device *devs;
  struct pld__worldctl *world;
  int started;
  int dead; /* a device crashed: the program cannot run again */
  char dead_msg[PLD__MSG_MAX];
};

/* Writes the artifact folder of a compiled program.  Returns PLD_OK or
 * PLD_ERR_SYSTEM (message set). */
int pld__artifacts_write(struct pld_program *p, const char *dir);

/* Frees the plans (device processes must be stopped). */
void pld__plans_free(struct pld_program *p);

#endif
