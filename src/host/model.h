/* host/model.h: the timing model of a program's runs (PLD_MODEL,
 * pld_config.model; pld/model.h).  The devices record a run's model
 * events in their trace areas (core/trace.h, PLD__TEV_MODEL); after the
 * run, with the trace's events gathered (host/trace.c), the host turns
 * them into a timeline (core/timeline.h), replays it on the program's
 * machine description and keeps the report, which pld_program_model
 * returns and PLD_MODEL_OUT writes. */
#ifndef PLD_HOST_MODEL_H
#define PLD_HOST_MODEL_H

#include "core/timeline.h"
#include "core/trace.h"
#include "host/program.h"
#include "pld/model.h"

/* A program's model: its settings and its last run's report. */
struct pld__model {
  char *out; /* PLD_MODEL_OUT, or NULL */
  int clock; /* the trace is stamped with modeled times (PLD_TRACE_CLOCK) */
  int have;  /* a report of the last run */
  struct pld__tl_report rep;
  pld_model_rank *ranks;
  pld_model_core *cores;
  pld_model_task *tasks;
  char (*names)[PLD__TEV_NAME]; /* the tasks' kernels */
  pld_model_report pub;
};

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
int pld__model_run_end(struct pld_program *p, const pld_arg *argv,
                       struct pld__tbuf *const *const *bufs, const int *nbufs);

/* host/model_report.c: m's public report (m->pub and the arrays it
 * points to) from m->rep, the replay of tl; and the report as JSON into
 * path (replacing its file).  PLD_OK, or the status with the message
 * set. */
int pld__model_publish(const struct pld_program *p, struct pld__model *m,
                       const struct pld__timeline *tl);
int pld__model_write_json(const pld_model_report *r, const char *path);

/* At destroy. */
void pld__model_release(struct pld_program *p);

#endif
