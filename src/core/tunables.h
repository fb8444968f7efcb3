/* core/tunables.h: the environment variables that tune pld, declared once.
 *
 * X(name, type, default, min, max, unit, help) generates the values'
 * struct, their parsing (pld__tunables, pld__tunables_check) and their
 * documentation (the pld-env tool prints the table with the values in
 * force).  A value must be a decimal integer in [min, max], written as
 * digits with an optional leading '-' and nothing else: no sign '+', no
 * surrounding whitespace, nothing trailing.  A typo then never passes for
 * a number (strtoll would read "1x" as 1 and " 5" as 5), and a huge value
 * is refused as out of range rather than clamped.  An unset variable takes
 * the default; an empty one is refused. */
#ifndef PLD_CORE_TUNABLES_H
#define PLD_CORE_TUNABLES_H

#include <stddef.h>
#include <stdint.h>

#define PLD_TUNABLES(X)                                                        \
  X(PLD_SPIN_US, int64_t, 50, 0, 1000000, "microseconds",                      \
    "Microseconds a waiting thread (host, AICPU or AI core) polls for its "    \
    "event before it sleeps in the kernel; while more threads poll than "      \
    "there are CPUs, polling yields the CPU. Higher cuts latency; 0 always "   \
    "sleeps at once. Idle threads always end up asleep.")                      \
  X(PLD_WAIT_TIMEOUT_MS, int64_t, 60000, 0, 86400000, "milliseconds",          \
    "Milliseconds a pld_wait may stay blocked before the run fails with "      \
    "PLD_ERR_TIMEOUT and a report of every blocked wait (a wait that can "     \
    "never return is reported as a deadlock within a second regardless); "     \
    "0 means no limit. pld_config.wait_timeout_ms overrides it per "           \
    "program.")                                                                \
  X(PLD_KERNEL_TIMEOUT_MS, int64_t, 60000, 0, 86400000, "milliseconds",        \
    "Milliseconds a kernel block or a device function may run without "        \
    "finishing and without waiting (in pld_wait or for its tasks) before "     \
    "the run fails with PLD_ERR_TIMEOUT and a report naming rank, device, "    \
    "kernel or function, core and how long; the device is then stopped and "   \
    "restarted; 0 means no limit. pld_config.kernel_timeout_ms overrides "     \
    "it per program.")                                                         \
  X(PLD_TRACE_EVENTS, int64_t, 65536, 16, 16777216, "events",                  \
    "Events each thread (host, AICPU or AI core) keeps per run when a trace "  \
    "is written (PLD_TRACE): a thread's buffer takes about 128 bytes an "      \
    "event, committed only as it fills; events beyond it are dropped and "     \
    "counted in the trace.")                                                   \
  X(PLD_MODEL_RECORDS, int64_t, 1048576, 64, 268435456, "records",             \
    "Records of the timing model (PLD_MODEL) each thread (AICPU or AI core) "  \
    "keeps per run: one a notify, a wait, a launch, a transfer or a stretch "  \
    "of work, four to a trace event (32 bytes a record, committed only as "    \
    "they fill); a run that records more fails with PLD_ERR_CONFIG naming "    \
    "this variable, rather than model a part of the run.")                     \
  X(PLD_DEVICE_HEAP_MB, int64_t, 1024, 0, 1048576, "MiB",                      \
    "MiB of each device's memory that device-resident tensors "                \
    "(pld_device_tensor_create) may take, within the platform's device "       \
    "memory; reserved when a program is prepared, committed only as "          \
    "tensors are written.")                                                    \
  X(PLD_START_TIMEOUT_MS, int64_t, 30000, 1, 86400000, "milliseconds",         \
    "Milliseconds a new device (a process, or a thread under mpirun) may "     \
    "take to report ready before pld_program_prepare fails.")                  \
  X(PLD_DEADLOCK_QUIET_MS, int64_t, 50, 1, 60000, "milliseconds",              \
    "Milliseconds every rank must stay blocked, with no signal and no block "  \
    "progressing, before the run is reported as a deadlock.")                  \
  X(PLD_WATCH_US, int64_t, 1000, 1, 60000000, "microseconds",                  \
    "Microseconds between the host's looks at every core of every device "     \
    "while a run waits (deadlocks, wait and kernel time limits): a run "       \
    "shorter than this is not looked at.")                                     \
  X(PLD_LIVENESS_MS, int64_t, 100, 1, 60000, "milliseconds",                   \
    "Milliseconds between the host's checks that its device processes are "    \
    "alive while a run waits (a crash is reported within this).")              \
  X(PLD_STOP_GRACE_MS, int64_t, 500, 1, 3600000, "milliseconds",               \
    "Milliseconds the devices of a stopped run (a failure, a deadlock, a "     \
    "time limit) have to finish their dispatch, counted again whenever one "   \
    "comes closer to its end (a wait returns, a block ends), before the ones " \
    "still running are killed and restarted.")                                 \
  X(PLD_STOP_POLL_MS, int64_t, 20, 1, 60000, "milliseconds",                   \
    "Milliseconds between the host's looks while a stopped run winds "         \
    "down.")                                                                   \
  X(PLD_EXIT_GRACE_MS, int64_t, 1000, 1, 3600000, "milliseconds",              \
    "Milliseconds a device process that called exit() may take to be gone "    \
    "before its failure is reported.")                                         \
  X(PLD_SHUTDOWN_MS, int64_t, 2000, 1, 3600000, "milliseconds",                \
    "Milliseconds device processes have to exit when their program is "        \
    "destroyed before they are killed.")                                       \
  X(PLD_REAP_POLL_US, int64_t, 200, 1, 1000000, "microseconds",                \
    "Microseconds the host naps between looks while it waits for a device "    \
    "to start, stop or exit.")                                                 \
  X(PLD_ABORT_POLL_MS, int64_t, 50, 1, 60000, "milliseconds",                  \
    "Longest sleep, in milliseconds, of a device thread waiting for a "        \
    "signal, its tasks or its blocks before it looks whether its run was "     \
    "stopped.")                                                                \
  X(PLD_DRAIN_POLL_MS, int64_t, 10, 1, 60000, "milliseconds",                  \
    "Longest sleep, in milliseconds, of an AICPU waiting for its blocks to "   \
    "finish before it looks whether its run was stopped.")                     \
  X(PLD_DEFERRED_POLL_MS, int64_t, 1, 1, 60000, "milliseconds",                \
    "Milliseconds between an AICPU's looks at its deferred waits while "       \
    "blocks still run (a block's end wakes it sooner).")                       \
  X(PLD_SNAPSHOT_MS, int64_t, 20, 1, 60000, "milliseconds",                    \
    "Under mpirun: milliseconds between the snapshots a running device "       \
    "sends to the watching process (and at once when it finishes).")           \
  X(PLD_STREAM_COPY_KB, int64_t, -1, -1, 1073741824, "KiB",                    \
    "KiB from which a copy within one node (a put, a get, a collective's "     \
    "transfer, a tensor between host and device memory) writes with "          \
    "streaming stores that bypass the caches (x86-64): faster past the "       \
    "last-level cache, slower within it. -1: a quarter of the last-level "     \
    "cache (8192 where its size is unknown); 0: never.")                       \
  X(PLD_PIN_DEVICES, int64_t, 1, 0, 2, "mode",                                 \
    "Where the threads of a program's devices run (one process's devices: "    \
    "the shared-memory fabric; under mpirun each process keeps mpirun's "      \
    "binding). 1: rank r of P on the r-th of P equal parts of the CPUs the "   \
    "program may use, when each rank can have CPUs of its own, else where "    \
    "the OS places them; 2: also when ranks outnumber CPUs (rank r on CPU "    \
    "r mod the CPUs); 0: always where the OS places them.")                    \
  X(PLD_MPI_BUSY_US, int64_t, 2000, 0, 1000000, "microseconds",                \
    "Under mpirun: microseconds the RMA proxy keeps polling after its last "   \
    "work while a run with RMA peers is in progress (it also keeps polling "   \
    "while a device thread sleeps until a signal lands). Where the node's "    \
    "processes outnumber its CPUs it rests instead while a device thread "     \
    "polls MPI as it waits, and for PLD_SPIN_US after.")                       \
  X(PLD_MPI_CARRY_KB, int64_t, -1, -1, 1048576, "KiB",                         \
    "Under mpirun: KiB up to which a transfer of more than 16 KiB with a "     \
    "peer reached through RMA (a write or a read) goes as messages "           \
    "instead of MPI_Put or MPI_Get (a write of at most 16 KiB "                \
    "always rides with the next signal). -1: all sizes where, measured once "  \
    "per process at the first program's windows, a message of 1 MiB lands "    \
    "at least twice as fast as an MPI_Put and its flush, else none; 0: "       \
    "never.")                                                                  \
  X(PLD_MPI_NAP_RMA_US, int64_t, 5, 1, 1000000, "microseconds",                \
    "Under mpirun: microseconds the RMA proxy naps between looks after "       \
    "that, while the run has RMA peers.")                                      \
  X(PLD_MPI_NAP_RUN_US, int64_t, 1000, 1, 1000000, "microseconds",             \
    "Under mpirun: microseconds the RMA proxy naps between looks during a "    \
    "run with no RMA peer.")                                                   \
  X(PLD_MPI_NAP_IDLE_US, int64_t, 100000, 1, 10000000, "microseconds",         \
    "Under mpirun: microseconds the RMA proxy naps between looks when no "     \
    "run is in progress.")

struct pld__tunables {
#define PLD__TUNABLE_FIELD(name, type, def, min, max, unit, help) type name;
  PLD_TUNABLES(PLD__TUNABLE_FIELD)
#undef PLD__TUNABLE_FIELD
};

/* The values, read from the environment once.  A variable whose value is
 * refused holds its default here, so that code reading the values before
 * pld__tunables_check (or without it, in a device process) stays within
 * the accepted range. */
const struct pld__tunables *pld__tunables(void);

/* PLD_OK, or PLD_ERR_CONFIG with the calling thread's message set to the
 * refusal of the first variable (in table order) whose value is refused:
 * "<fn>: environment: NAME='value': expected ..., got ...". */
int pld__tunables_check(const char *fn);

/* One tunable as pld-env shows it. */
struct pld__tunable {
  const char *name, *unit, *help;
  long long def, min, max;
  long long value;     /* in force: the default when unset or refused */
  const char *given;   /* the value as given, quoted and escaped (bounded),
                        * or NULL when unset */
  const char *refusal; /* NULL when accepted, else the message without its
                        * function: "environment: NAME='value': ..." */
};

/* Calls fn for each tunable, in table order. */
void pld__tunables_each(void (*fn)(const struct pld__tunable *t));

/* ---- settings ---------------------------------------------------------- */

/* The environment variables that choose rather than tune: a word of a
 * list (WORD), a comma-separated list of such words (WORDS), or a path
 * (PATH).  X(name, id, kind, words, empty, help): words lists the accepted
 * words, '|'-separated, in the order whose index pld__setting_word gives
 * (NULL for a path); empty says whether an empty value is accepted (as
 * unset).  Unlike the tunables, a setting is read each time it is asked
 * for (a program may set it between two pld_compile calls), and checked
 * by the code that uses it (pld_compile), where a pld_config field may
 * take its place; pld-env lists them all with their accepted values. */
#define PLD_SETTINGS(X)                                                        \
  X(PLD_FABRIC, FABRIC, WORD, "shm|mpi", 0,                                    \
    "How devices reach each other and the host (pld_config.fabric); unset: "   \
    "mpi under mpirun (a build with MPI), else shm.")                          \
  X(PLD_MPI_SAME_NODE, MPI_SAME_NODE, WORD, "shm|rma", 0,                      \
    "The MPI fabric's peers on one node: through shared memory, or MPI's "     \
    "RMA like remote peers (pld_config.mpi_same_node); unset: shm.")           \
  X(PLD_TRACE, TRACE, PATH, NULL, 1,                                           \
    "A file: every run writes a trace there (Chrome trace-event JSON; "        \
    "pld-trace draws it; pld_config.trace). Unset or empty: no trace.")        \
  X(PLD_DEBUG, DEBUG, WORDS, "launch|signal|rma|coll|fabric|host|all", 1,      \
    "One line per event of those subsystems on stderr (comma-separated). "     \
    "Unset or empty: no log.")                                                 \
  X(PLD_DEBUG_FILE, DEBUG_FILE, PATH, NULL, 1,                                 \
    "A file the debug log is appended to instead of stderr.")                  \
  X(PLD_CHECK, CHECK, WORD, "races", 1,                                        \
    "races: every kernel access to window memory is checked against the "      \
    "order signals create (pld_config.check; the shm fabric). Unset or "       \
    "empty: no check.")                                                        \
  X(PLD_MODEL_FILE, MODEL_FILE, PATH, NULL, 1,                                 \
    "A file of the timing model's figures replacing the platform's, one "      \
    "'name = value' per line (pld_config.model_file; pld-env lists the "       \
    "figures). Unset or empty: the platform's.")                               \
  X(PLD_MODEL, MODEL, WORD, "on|off", 1,                                       \
    "on: every run is also replayed on the timing model, its report "          \
    "through pld_program_model (pld_config.model). Unset, empty or off: no "   \
    "model.")                                                                  \
  X(PLD_MODEL_OUT, MODEL_OUT, PATH, NULL, 1,                                   \
    "A file each run's modeled report replaces, as JSON (docs/model.md; "      \
    "pld_config.model_out); it turns the model on. Unset or empty: none.")     \
  X(PLD_TRACE_CLOCK, TRACE_CLOCK, WORD, "wall|model", 1,                       \
    "model: the trace (PLD_TRACE) shows the devices' events at their "         \
    "modeled times, as the chip would run the program (the timing model, "     \
    "turned on); host spans keep the host's clock. Unset, empty or wall: "     \
    "the host's clock.")                                                       \
  X(PLD_DIAG, DIAG, WORDS, "deps|stats|all", 1,                                \
    "Each rank writes, for each dispatch of the last run, its task graph "     \
    "(deps: tasks, their tensors, the order the scheduler decided and why) "   \
    "and its counts (stats: launches, blocks, bytes moved, waits) under "      \
    "<artifact folder>/dfx/rank<r>/d<k>/ (pld_config.diag; pld-trace --diag "  \
    "reads them). Unset or empty: none.")                                      \
  X(PLD_DIAG_DIR, DIAG_DIR, PATH, NULL, 1,                                     \
    "The folder PLD_DIAG writes its dfx/ folder in when the program has no "   \
    "artifact folder (pld_config.artifact_dir).")                              \
  X(PLD_ISA, ISA, WORD, "generic|avx2|avx512|auto", 1,                         \
    "The instructions the tile loops use at most (x86-64; generic: SSE2, "     \
    "avx2: x86-64-v3 with F16C and FMA, avx512: x86-64-v4); every level "      \
    "computes the same bits. A word that is none of them, or a level this "    \
    "CPU lacks, fails every tile operation with PLD_ERR_CONFIG. Unset, "       \
    "empty or auto: the best this CPU has.")

enum pld__setting_id {
#define PLD__SETTING_ID(name, id, kind, words, empty, help) PLD__SET_##id,
  PLD_SETTINGS(PLD__SETTING_ID)
#undef PLD__SETTING_ID
      PLD__SETTINGS
};

enum pld__setting_kind {
  PLD__SETTING_WORD,
  PLD__SETTING_WORDS,
  PLD__SETTING_PATH
};

/* The variable's value now, or NULL when unset. */
const char *pld__setting(enum pld__setting_id id);
/* The variable's name ("PLD_FABRIC"). */
const char *pld__setting_name(enum pld__setting_id id);
/* The index of word (len bytes) among the setting's words, or -1. */
int pld__setting_word(enum pld__setting_id id, const char *word, size_t len);
/* The setting's words for a message: "shm or mpi", each between quote
 * characters q (0: none): "\"shm\" or \"mpi\"".  Returns bytes written. */
size_t pld__setting_words(enum pld__setting_id id, char q, char *buf,
                          size_t cap);
/* Whether value is refused for the setting (a word that is none of its
 * words, an empty value where none is accepted); then buf holds "NAME='value':
 * expected ..., got ..." (bounded, the value escaped). */
int pld__setting_refused(enum pld__setting_id id, const char *value, char *buf,
                         size_t cap);

/* One setting as pld-env shows it. */
struct pld__setting_info {
  enum pld__setting_id id;
  const char *name, *words, *help; /* words: NULL for a path */
  enum pld__setting_kind kind;
  const char *value; /* NULL when unset */
};
void pld__settings_each(void (*fn)(const struct pld__setting_info *s));

/* The CPUs this process may run on (at least 1). */
uint32_t pld__cpus(void);

/* A tunable in nanoseconds: PLD__MS(PLD_STOP_GRACE_MS), PLD__US(...). */
#define PLD__MS(name) (pld__tunables()->name * (int64_t)1000000)
#define PLD__US(name) (pld__tunables()->name * (int64_t)1000)

#endif
