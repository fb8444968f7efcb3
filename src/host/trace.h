/* host/trace.h: the trace file of a host process (PLD_TRACE,
 * pld_config.trace) and the debug log's configuration (PLD_DEBUG,
 * PLD_DEBUG_FILE).  Recording is core/trace.h's. */
#ifndef PLD_HOST_TRACE_H
#define PLD_HOST_TRACE_H

#include "core/trace.h"
#include "host/program.h"

/* At compile: sets up the debug log, and decides whether p is traced
 * (opening the file at the first traced program).  Returns PLD_OK or
 * PLD_ERR_CONFIG / PLD_ERR_SYSTEM (message set). */
int pld__trace_config(struct pld_program *p, const pld_config *cfg);

/* The events each thread's buffer holds: PLD_TRACE_EVENTS for a trace,
 * at least PLD_MODEL_RECORDS' worth of packs for the timing model. */
uint32_t pld__trace_cap(const struct pld_program *p);

/* Before the devices start: the trace areas of the ranks this process
 * runs. */
int pld__trace_prepare(struct pld_program *p);
/* Rank r's trace area (and its size), or NULL: read by the control
 * planes as they start the devices. */
static inline struct pld__trace_area *
pld__trace_area_of(const struct pld_program *p, int r, size_t *bytes) {
  if (!p->rs.trace.area || !p->rs.trace.area[r])
    return NULL;
  if (bytes)
    *bytes = p->rs.trace.bytes[r];
  return p->rs.trace.area[r];
}

/* A host span (sub: PLD__TH_*): begin returns 0 when nothing observes it
 * (then end must not be called). */
int pld__htrace_begin(struct pld_program *p, struct pld__tev *e, int sub,
                      const char *name);
void pld__htrace_end(struct pld_program *p, struct pld__tev *e, int64_t bytes);

/* After each run (of arguments argv), on every process: the run's events
 * to the timing model (host/model.h) and into the file.  Returns the
 * model's status (its message set). */
int pld__trace_run_end(struct pld_program *p, const pld_arg *argv);
/* At destroy: closes the file after the last traced program (and
 * releases the timing model's report). */
void pld__trace_release(struct pld_program *p);

#endif
