/* core/error.h: composing failure messages where failures are detected. */
#ifndef PLD_CORE_ERROR_H
#define PLD_CORE_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "pld/status.h"

#if defined(__GNUC__)
#define PLD__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PLD__PRINTF(f, a)
#endif

/* Longest message kept, terminator included. */
#define PLD__MSG_MAX 8192

/* Sets the calling thread's last-error message (printf format) and returns
 * status.  The message should start with the public function's name:
 * the function itself names itself; code below it, which serves several
 * public functions, uses pld__fail_api. */
int pld__fail(int status, const char *fmt, ...) PLD__PRINTF(2, 3);

/* The call context: the public function the calling thread is in.  Each
 * public entry point whose work reaches shared lower layers (compiling,
 * preparing, running, submitting, destroying a program) enters it on the
 * way in and leaves it on every way out, restoring the one it found (a
 * public function calling another, as pld_program_run preparing its
 * program, names the inner one while it runs).  A thread the library
 * starts (a runner, a device's threads) has none until it enters one:
 * pld__api_name then says "pld". */
const char *pld__api_enter(const char *fn);
void pld__api_leave(const char *saved);
const char *pld__api_name(void);

/* pld__fail with the message "<the call context's function>: fmt...". */
int pld__fail_api(int status, const char *fmt, ...) PLD__PRINTF(2, 3);
int pld__vfail(int status, const char *fmt, va_list ap) PLD__PRINTF(2, 0);

/* Sets the last-error message to a message composed elsewhere (a device's
 * report) and returns status. */
int pld__fail_msg(int status, const char *msg);

/* First failure wins: records st in *status and prefix then fmt in msg,
 * unless *status holds a failure already, which stays.  Returns *status.
 * Every context that collects a failure to report later (a traced host
 * function, a device call, a kernel block, a host task) records it here. */
int pld__first_failure(int *status, char *msg, size_t cap, int st,
                       const char *prefix, const char *fmt, va_list ap)
    PLD__PRINTF(6, 0);

/* snprintf that never overflows and returns the bytes written, so calls can
 * be chained: n += pld__catf(buf + n, cap - n, ...). */
size_t pld__catf(char *buf, size_t cap, const char *fmt, ...) PLD__PRINTF(3, 4);

/* Copies text another process wrote (and may have scribbled over) into
 * dst: at most srccap bytes of src up to its first NUL, cut to fit cap,
 * every byte that is not printable ASCII (or a newline, if newlines) made
 * '?'.  Returns the bytes written. */
size_t pld__copy_printable(char *dst, size_t cap, const char *src,
                           size_t srccap, int newlines);

/* Byte c as it is written inside a JSON string: itself, or its escape
 * (\" or \u001f).  out holds at least 6 bytes; returns the bytes written
 * (not terminated). */
size_t pld__json_char(char *out, unsigned char c);

/* status is one of the codes of pld/status.h. */
int pld__status_valid(int status);

/* The status of a failure the user reports (pld_task_fail,
 * pld_kernel_fail): theirs if it is an error status of pld/status.h, else
 * PLD_ERR_ARG. */
static inline int pld__user_status(int status) {
  return status != PLD_OK && pld__status_valid(status) ? status : PLD_ERR_ARG;
}

/* Region ends for messages, start + len saturated at INT64_MAX: a message
 * about a bad region must not overflow computing it. */
static inline long long pld__region_end(int64_t start, int64_t len) {
  int64_t end;
  return __builtin_add_overflow(start, len, &end)
             ? (len > 0 ? INT64_MAX : INT64_MIN)
             : end;
}

/* "[8, 8]" or "[NR=2, 8]" formatting of a shape into buf. */
size_t pld__shape_str(char *buf, size_t cap, int ndim, const long long *dims);

#endif
