/* core/tunables.h: the environment variables that tune pld, declared once.
 * X(name, type, default, help) generates the values' struct, their parsing
 * (pld__tunables) and their documentation (the pld-env tool prints the
 * table with the values in force). */
#ifndef PLD_CORE_TUNABLES_H
#define PLD_CORE_TUNABLES_H

#include <stdint.h>

#define PLD_TUNABLES(X)                                                        \
  X(PLD_SPIN_US, int64_t, 50,                                                  \
    "Microseconds a waiting thread (host, AICPU or AI core) polls for its "    \
    "event before it sleeps in the kernel; while more threads poll than "     \
    "there are CPUs, polling yields the CPU. Higher cuts latency; 0 always " \
    "sleeps at once. Idle threads always end up asleep.")                     \
  X(PLD_WAIT_TIMEOUT_MS, int64_t, 60000,                                       \
    "Milliseconds a pld_wait may stay blocked before the run fails with "      \
    "PLD_ERR_TIMEOUT and a report of every blocked wait (a wait that can "     \
    "never return is reported as a deadlock within a second regardless). "    \
    "pld_config.wait_timeout_ms overrides it per program.")

struct pld__tunables {
#define PLD__TUNABLE_FIELD(name, type, def, help) type name;
  PLD_TUNABLES(PLD__TUNABLE_FIELD)
#undef PLD__TUNABLE_FIELD
};

/* The values, read from the environment once (defaults where unset or
 * unparsable). */
const struct pld__tunables *pld__tunables(void);

/* The CPUs this process may run on (at least 1). */
uint32_t pld__cpus(void);

/* Calls fn for each tunable: name, default and value in force as text,
 * help. */
void pld__tunables_each(void (*fn)(const char *name, long long def,
                                   long long value, const char *help));

#endif
