/* host/host_coll.h: the steps of a collective called by the host
 * orchestrator (host/host_collective.c), which the host forms of the EP
 * calls (host/host_ep.c) take too: the checks while the host is traced,
 * then one builtin dispatch per rank. */
#ifndef PLD_HOST_HOST_COLL_H
#define PLD_HOST_HOST_COLL_H

#include "comm/comm.h"
#include "host/program.h"

/* w is a window view; else fails h: "FN (in HOST): ROLE: expected a window
 * view (pld_window_view), got ..." (PLD_ERR_ARG). */
int pld__host_view_check(struct pld__host *h, const char *fn, const char *role,
                         pld_window w);

/* The checks of a host-level call of fn with arguments a (over the world,
 * on `blocks` blocks, in [1, the vector cores]): *sig a window view, or
 * (NULL) the program's own signal window, made at the first such call for
 * its blocks (or by pld_coll_signal) and stored in *sig; then
 * pld__coll_check.  A failure is h's, "FN (in HOST): ...". */
int pld__host_coll_check(struct pld__host *h, const char *fn,
                         struct pld__coll_args *a, pld_window *sig,
                         int32_t blocks);

/* Records rank's dispatch of the builtin device function dev with the
 * normalised arguments norm (dev's parameters), for fn. */
int pld__host_coll_record(struct pld__host *h, const char *fn, int rank,
                          pld_device_fn dev, const pld_arg *norm);

#endif
