/* core/error.h: composing failure messages where failures are detected. */
#ifndef PLD_CORE_ERROR_H
#define PLD_CORE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "pld/status.h"

#if defined(__GNUC__)
#define PLD__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PLD__PRINTF(f, a)
#endif

/* Longest message kept, terminator included. */
#define PLD__MSG_MAX 8192

/* Sets the calling thread's last-error message (printf format) and returns
 * status.  The message should start with the public function's name. */
int pld__fail(int status, const char *fmt, ...) PLD__PRINTF(2, 3);
int pld__vfail(int status, const char *fmt, va_list ap) PLD__PRINTF(2, 0);

/* Sets the last-error message to a message composed elsewhere (a device's
 * report) and returns status. */
int pld__fail_msg(int status, const char *msg);

/* snprintf that never overflows and returns the bytes written, so calls can
 * be chained: n += pld__catf(buf + n, cap - n, ...). */
size_t pld__catf(char *buf, size_t cap, const char *fmt, ...) PLD__PRINTF(3, 4);

/* "[8, 8]" or "[NR=2, 8]" formatting of a shape into buf. */
size_t pld__shape_str(char *buf, size_t cap, int ndim, const long long *dims);

#endif
