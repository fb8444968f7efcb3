/* pld/status.h: status codes and error messages.
 *
 * Every pld call that can fail returns an int status: PLD_OK (0) on success,
 * one of the codes below otherwise.  The code says what kind of failure it
 * was; the message says exactly what happened, composed where the failure
 * was detected: the function, the parameter, the rank and device, what was
 * expected and what was got.  Output parameters are written only on success.
 */
#ifndef PLD_STATUS_H
#define PLD_STATUS_H

/* X(name, value, text) - the single table of status codes. */
#define PLD_STATUS_MAP(X)                                                      \
  X(PLD_OK, 0, "success")                                                      \
  X(PLD_ERR_ARG, 1, "invalid argument")                                        \
  X(PLD_ERR_CONFIG, 2, "invalid configuration")                                \
  X(PLD_ERR_BOUNDS, 3, "access out of bounds")                                 \
  X(PLD_ERR_TILE_MEMORY, 4, "tile memory over capacity")                       \
  X(PLD_ERR_NOMEM, 5, "out of memory")                                         \
  X(PLD_ERR_SYSTEM, 6, "operating system call failed")                         \
  X(PLD_ERR_CRASH, 7, "device process crashed")                                \
  X(PLD_ERR_DEADLOCK, 8, "deadlock: waits that can never be satisfied")        \
  X(PLD_ERR_TIMEOUT, 9, "wait exceeded its time limit")                        \
  X(PLD_ERR_ABORTED, 10, "stopped because another rank failed")                \
  X(PLD_ERR_STATE, 11, "call not valid in this state")                         \
  X(PLD_ERR_UNSUPPORTED, 12, "not supported")                                  \
  X(PLD_ERR_LEVEL, 13, "call made from the wrong level")                       \
  X(PLD_ERR_MISMATCH, 14, "ranks made different collective calls")             \
  X(PLD_ERR_RACE, 15, "data race between ranks")                               \
  X(PLD_ERR_BUSY, 16, "too many runs in flight")                               \
  X(PLD_ERR_CANCELLED, 17, "cancelled: an earlier run failed")

enum pld_status {
#define PLD__STATUS_ENUM(name, value, text) name = value,
  PLD_STATUS_MAP(PLD__STATUS_ENUM)
#undef PLD__STATUS_ENUM
};

/* The name of a status code ("PLD_ERR_ARG"); "PLD_ERR_UNKNOWN" for others.
 * Any level; never fails; the string is static. */
const char *pld_status_name(int status);

/* The generic text of a status code ("invalid argument").  Any level. */
const char *pld_strerror(int status);

/* The message of the last failure reported to the calling thread, with all
 * its context; "" if none.  The string belongs to the library and stays
 * valid until the next failing pld call on this thread.  Host level (and
 * any thread that called a failing pld function). */
const char *pld_last_error(void);

#endif /* PLD_STATUS_H */
