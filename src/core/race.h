/* core/race.h: the race detector (PLD_CHECK=races, pld_config.check).
 *
 * Every access a kernel makes to window memory is checked against the
 * happens-before order of the run, kept as vector clocks:
 *   - each thread that can touch windows has a slot: per rank its AICPU
 *     (slot 0) and each core (1 + its watch slot); a slot's vector clock
 *     is what it knows of every slot, its clock counts its own epochs;
 *   - a block starts from its task's clock (the AICPU's at the launch,
 *     joined with the tasks it waited for); a task ends with the join of
 *     its blocks'; a dispatch's AICPU joins its tasks' after the drain;
 *   - a notify releases: the cell's clock joins the notifier's; a wait
 *     that returns acquires: the waiter joins the cell's;
 *   - host tasks order the calls after them after everything before them;
 *     a run starts from nothing (the host waited for the last one).
 * Window memory has a shadow of 4-byte granules, each holding its last
 * write (or atomic add) and up to RACE_READS reads, with the byte mask
 * they touched; an access that is not ordered after a conflicting one
 * (write or atomic vs read, write vs write, atomic vs plain) fails the
 * kernel with PLD_ERR_RACE and a report naming both: every access leaves
 * a record (rank, kernel, core, block, operation, window, bytes) in a
 * ring per slot.  Notifies of one cell keep their last Set and Add, and
 * an unordered pair of them is reported too.
 *
 * All of it lives in one region the host maps before the device
 * processes start (the shm fabric): every process sees every shadow.
 * Blocks run one after another on a core are taken as ordered (they
 * share its slot): a race between two such blocks can go unreported,
 * never a false one. */
#ifndef PLD_CORE_RACE_H
#define PLD_CORE_RACE_H

#include <stddef.h>
#include <stdint.h>

struct pld__race;

/* What the region is sized for. */
struct pld__race_shape {
  int nranks;
  int slots_per_rank; /* 1 + the platform's cores */
  int nbufs;
  const size_t *copy_bytes; /* [buf]: bytes of each rank's copy */
};

/* Access kinds. */
enum { PLD__RACE_READ = 1, PLD__RACE_WRITE = 2, PLD__RACE_ATOMIC = 3 };

/* ---- the host ------------------------------------------------------------ */

size_t pld__race_bytes(const struct pld__race_shape *s);
void pld__race_init(struct pld__race *r, const struct pld__race_shape *s);
/* Before each run: no access and no signal is known. */
void pld__race_run_begin(struct pld__race *r);
/* Before a host task: what every slot did so far is ordered before the
 * calls that wait for it. */
void pld__race_host_task(struct pld__race *r);

/* ---- device threads ------------------------------------------------------ */

/* This thread is slot `local` of rank's slots (0: its AICPU; 1 + s: the
 * core in watch slot s); r NULL: checking is off. */
void pld__race_attach(struct pld__race *r, int rank, int local);

struct pld__race_thread {
  struct pld__race *r;
  int slot;             /* global: rank * slots_per_rank + local */
  uint32_t block_start; /* this block's first epoch */
};
extern _Thread_local struct pld__race_thread pld__race_me;

static inline int pld__race_on(void) { return pld__race_me.r != NULL; }

/* Vector clocks private to a device (tasks, the scheduler's join of
 * finished tasks): NULL when checking is off or memory is short. */
uint32_t *pld__race_vc_new(void);
void pld__race_vc_free(uint32_t *vc);
void pld__race_vc_join(uint32_t *dst, const uint32_t *src);
void pld__race_vc_clear(uint32_t *vc);

/* The AICPU launches a task: its start clock is the AICPU's now. */
void pld__race_launch(uint32_t *task_start);
/* A core starts a block of a task (start: the task's clock; core: the
 * block, for reports) and ends it (its task's end clock joins the
 * block's). */
struct pld__core;
void pld__race_block_begin(const uint32_t *start, struct pld__core *core);
void pld__race_block_end(uint32_t *task_end);
/* This thread's block releases what it did so far into vc (a tile handed
 * to another part of a mixed block; pld__race_absorb acquires it). */
void pld__race_release_into(uint32_t *vc);
/* This thread learns vc (the AICPU after its drain; after host tasks). */
void pld__race_absorb(const uint32_t *vc);
void pld__race_absorb_host(void);

/* An access of this thread's block to rank copy's copy of buffer buf:
 * rows of row_bytes bytes, stride apart, from byte off.  fn and window
 * name it in reports.  Returns PLD_OK, or PLD_ERR_RACE with the report as
 * the thread's message (the caller fails its kernel with it). */
int pld__race_access(int kind, const char *fn, const char *window, int buf,
                     int copy, size_t off, size_t row_bytes, size_t rows,
                     size_t stride);
/* Signal cells.  A release and the signal it goes with land together,
 * and a wait reads its cell and learns what was released to it together,
 * with the cell locked: a wait then learns the notifies whose signals it
 * saw, no later one.  Lock and unlock: cell at byte off of copy's copy of
 * buf. */
void pld__race_cell_lock(int buf, int copy, size_t off);
void pld__race_cell_unlock(int buf, int copy, size_t off);
/* With the cell locked: a notify of this thread to it (cell: its index,
 * for reports; set: a Set, else an Add).  Returns PLD_OK, or
 * PLD_ERR_RACE (an unordered Set and Add on the cell) or
 * PLD_ERR_UNSUPPORTED (too many cells) with the message set. */
int pld__race_release_locked(const char *fn, const char *window, int buf,
                             int copy, size_t off, int64_t cell, int set);
/* With the cell locked: a wait on it is satisfied; into (NULL: this
 * thread) learns what was released to the cell. */
void pld__race_acquire_locked(int buf, int copy, size_t off, uint32_t *into);

#endif
