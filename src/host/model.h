/* host/model.h: the timing model of a program's runs (PLD_MODEL,
 * pld_config.model; pld/model.h).  The devices record a run's model
 * events in their trace areas (core/trace.h, PLD__TEV_MODEL); after the
 * run, with the trace's events gathered (host/trace.c), the host turns
 * them into a timeline (core/timeline.h), replays it on the program's
 * machine description and keeps the report, which pld_program_model
 * returns and PLD_MODEL_OUT writes. */
#ifndef PLD_HOST_MODEL_H
#define PLD_HOST_MODEL_H

#include "core/trace.h"
#include "host/program.h"

/* At compile: whether p is modeled (cfg->model, PLD_MODEL, a report file
 * turn it on).  PLD_OK or PLD_ERR_CONFIG /
 * PLD_ERR_NOMEM, message set. */
int pld__model_config(struct pld_program *p, const pld_config *cfg);

/* After a run, on every process: rank r's event buffers are
 * bufs[r][0..nbufs[r]) (its AICPU's first).  Replays the run and keeps
 * its report (writing PLD_MODEL_OUT on process 0); with the trace's
 * modeled clock (PLD_TRACE_CLOCK=model), stamps the device events of the
 * buffers with their modeled times.  PLD_OK, or the
 * status with the message set: PLD_ERR_CONFIG when buffers were too
 * small for the run's events (PLD_TRACE_EVENTS), PLD_ERR_UNSUPPORTED for
 * what the model does not cover, PLD_ERR_DEADLOCK / _NOMEM / _SYSTEM. */
int pld__model_run_end(struct pld_program *p,
                       struct pld__tbuf *const *const *bufs, const int *nbufs);

/* At destroy. */
void pld__model_release(struct pld_program *p);

#endif
