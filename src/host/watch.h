/* host/watch.h: the watch of a run (host/watch.c): deadlocks, time limits,
 * and the devices that do not stop once the run is stopped. */
#ifndef PLD_HOST_WATCH_H
#define PLD_HOST_WATCH_H

#include "core/tunables.h"
#include "host/program.h"

/* How long every device must stay quiet for a deadlock, and how often
 * the watch looks (PLD_DEADLOCK_QUIET_MS, PLD_WATCH_US: the tunables
 * table, core/tunables.h). */
#define PLD__QUIET_NS PLD__MS(PLD_DEADLOCK_QUIET_MS)
#define PLD__WATCH_NS PLD__US(PLD_WATCH_US)

/* What the watch keeps of a run. */
struct pld__runwatch {
  const uint32_t *posted; /* the command each rank runs */
  int quiet;              /* the last look found every device quiet */
  int64_t quiet_since;
  uint32_t progress;    /* signals sent and blocks finished then */
  uint32_t asked;       /* the quiet's confirmation (host/ctl.h), 0: none */
  uint32_t limit_asked; /* a limit's confirmation, 0: none */
  int done;             /* devices done then */
  /* Once the run is stopped: when, how far the ranks were from its end at
   * their closest (left_to_stop), since when, and the confirmation that
   * they still are (host/ctl.h), 0: none. */
  int64_t stopped, stop_left, stop_since;
  uint32_t stop_asked;
  char corrupt[160]; /* set when a device's watch failed a check */
  int corrupt_rank;
};

/* Rank r finished this run (a queued run: it may have gone on to the
 * next). */
int pld__watch_finished(const struct pld_program *p,
                        const struct pld__runwatch *wt, int r);

/* The status of this run on rank r, once it finished. */
int pld__watch_rank_status(const struct pld_program *p,
                           const struct pld__runwatch *wt, int r);

/* Looks once; returns PLD_OK, or the status of a deadlock or time limit
 * with its report as the thread's message (the run is then to be
 * stopped).  A watch found corrupt is left in wt->corrupt. */
int pld__watch_look(struct pld_program *p, struct pld__runwatch *wt);

/* The grace of a stopped run is over (its ranks came no closer to its
 * end for PLD_STOP_GRACE_MS, on a confirmed look). */
int pld__watch_stop_overdue(struct pld_program *p, struct pld__runwatch *wt,
                            int64_t now);

/* The grace after a stop is over: every rank still running is killed and
 * restarted; what each was running is appended to msg.  Returns PLD_OK, or
 * the failure of a restart (the program is then dead). */
int pld__watch_stragglers(struct pld_program *p, struct pld__runwatch *wt,
                          char *msg, size_t cap);

#endif
