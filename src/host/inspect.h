/* host/inspect.h: what a device wrote in its control block, read and
 * checked (host/inspect.c), and the report of a device that died.  The
 * watch (host/watch.c), the run loop (host/run.c) and the control planes
 * read devices through these. */
#ifndef PLD_HOST_INSPECT_H
#define PLD_HOST_INSPECT_H

#include "host/program.h"

/* A copy of rank r's core slot i, validated: returns its state, or -1
 * (with *what saying why) when the slot cannot be what a device wrote.  A
 * slot that changed while it was copied (its core is passing from one
 * state to another) is idle for this look. */
int pld__slot_read(const struct pld_program *p, int r, int i,
                   struct pld__coreslot *s, char *what, size_t cap);

/* "kernel k on AIV core 3 (block 0 of 2)", or for a deferred wait
 * "kernel k (block 0 of 2, ended with its wait deferred)". */
size_t pld__slot_where(char *buf, size_t cap, const struct pld__coreslot *s);

/* What rank r runs, from its watch ("nothing" if nothing); -1 with the
 * reason in buf if the watch is corrupt. */
int pld__running_str(const struct pld_program *p, int r, int64_t now, char *buf,
                     size_t cap);

/* Returns the rank of a device that died or whose control block is
 * overwritten (*corrupt then says what), or -1; and the report of such a
 * death as the run's failure (PLD_ERR_CRASH; the devices are stopped and
 * the program is dead). */
int pld__find_dead(struct pld_program *p, int check_pids, char *corrupt,
                   size_t cap);
int pld__died(struct pld_program *p, int r, const char *corrupt);

#endif
