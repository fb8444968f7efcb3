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
    "it per program.")                                                       \
  X(PLD_TRACE_EVENTS, int64_t, 65536, 16, 16777216, "events",                  \
    "Events each thread (host, AICPU or AI core) keeps per run when a trace "  \
    "is written (PLD_TRACE): a thread's buffer takes about 96 bytes an "      \
    "event, committed only as it fills; events beyond it are dropped and "    \
    "counted in the trace.")                                                   \
  X(PLD_DEVICE_HEAP_MB, int64_t, 1024, 0, 1048576, "MiB",                      \
    "MiB of each device's memory that device-resident tensors "               \
    "(pld_device_tensor_create) may take, within the platform's device "      \
    "memory; reserved when a program is prepared, committed only as "         \
    "tensors are written.")

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

/* The CPUs this process may run on (at least 1). */
uint32_t pld__cpus(void);

#endif
