/* device/diag.h: a device's diagnostics files (PLD_DIAG, pld_config.diag;
 * docs/diagnostics-files.md).  While a dispatch runs, the scheduler's
 * hooks (pld__sched_diag_hooks) record its tasks, the order the scheduler
 * decided among them and why (deps), and what each task's blocks did, as
 * the observer counts it (core/trace.h: struct pld__counts; stats).  When
 * the dispatch ends, its AICPU writes them under <dir>/rank<r>/d<k>/:
 * deps.json and scope_stats/scope_stats.jsonl.  Each device writes its
 * own rank's files (under mpirun: on its process's machine). */
#ifndef PLD_DEVICE_DIAG_H
#define PLD_DEVICE_DIAG_H

#include <stddef.h>
#include <stdint.h>

/* What is recorded: bits of PLD_DIAG's words. */
enum { PLD__DIAG_DEPS = 1, PLD__DIAG_STATS = 2 };

struct pld__diag;

/* The diagnostics of rank's device (what: PLD__DIAG_*, dir: the dfx
 * folder, which the host made with a rank<r> folder in it).  Returns
 * PLD_OK or PLD_ERR_NOMEM (message set). */
int pld__diag_create(unsigned what, const char *dir, int rank, int device,
                     struct pld__diag **out);
void pld__diag_destroy(struct pld__diag *d);

/* The dispatch of call `call` (device function fn, run `run`) ran from t0
 * to t1 (ns) and returned status st: its files are written (only when it
 * succeeded) and its records dropped.  Returns PLD_OK, or PLD_ERR_SYSTEM
 * or PLD_ERR_NOMEM with the message in msg. */
int pld__diag_dispatch_end(struct pld__diag *d, int call, const char *fn,
                           uint32_t run, int64_t t0, int64_t t1, int st,
                           char *msg, size_t cap);

#endif
