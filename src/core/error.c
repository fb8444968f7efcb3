/* core/error.c: the calling thread's last-error message, and composing
 * messages safely (core/error.h). */
#include "core/error.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[PLD__MSG_MAX];
static _Thread_local const char *api_fn;

const char *pld_status_name(int status) {
  switch (status) {
#define PLD__STATUS_NAME(name, value, text)                                    \
  case value:                                                                  \
    return #name;
    PLD_STATUS_MAP(PLD__STATUS_NAME)
#undef PLD__STATUS_NAME
  default:
    return "PLD_ERR_UNKNOWN";
  }
}

const char *pld_strerror(int status) {
  switch (status) {
#define PLD__STATUS_TEXT(name, value, text)                                    \
  case value:                                                                  \
    return text;
    PLD_STATUS_MAP(PLD__STATUS_TEXT)
#undef PLD__STATUS_TEXT
  default:
    return "unknown status";
  }
}

const char *pld_last_error(void) { return last_msg; }

int pld__status_valid(int status) {
  switch (status) {
#define PLD__STATUS_VALID(name, value, text) case value:
    PLD_STATUS_MAP(PLD__STATUS_VALID)
#undef PLD__STATUS_VALID
    return 1;
  default:
    return 0;
  }
}

size_t pld__copy_printable(char *dst, size_t cap, const char *src,
                           size_t srccap, int newlines) {
  if (cap == 0)
    return 0;
  size_t n = 0;
  for (; n < srccap && n + 1 < cap && src[n]; n++) {
    unsigned char ch = (unsigned char)src[n];
    dst[n] =
        (ch >= 0x20 && ch < 0x7f) || (newlines && ch == '\n') ? (char)ch : '?';
  }
  dst[n] = '\0';
  return n;
}

size_t pld__json_char(char *out, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  if (c == '"' || c == '\\') {
    out[0] = '\\';
    out[1] = (char)c;
    return 2;
  }
  if (c < 0x20) {
    memcpy(out, "\\u00", 4);
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
  }
  out[0] = (char)c;
  return 1;
}

/* Composed apart, then copied: an argument may be the last message
 * itself ("...: %s", pld_last_error()). */
int pld__vfail(int status, const char *fmt, va_list ap) {
  char buf[PLD__MSG_MAX];
  vsnprintf(buf, sizeof buf, fmt, ap);
  memcpy(last_msg, buf, strlen(buf) + 1);
  return status;
}

int pld__fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pld__vfail(status, fmt, ap);
  va_end(ap);
  return status;
}

const char *pld__api_enter(const char *fn) {
  const char *saved = api_fn;
  api_fn = fn;
  return saved;
}

void pld__api_leave(const char *saved) { api_fn = saved; }

const char *pld__api_name(void) { return api_fn ? api_fn : "pld"; }

int pld__fail_api(int status, const char *fmt, ...) {
  char buf[PLD__MSG_MAX];
  size_t n = pld__catf(buf, sizeof buf, "%s: ", pld__api_name());
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - n, fmt, ap);
  va_end(ap);
  return pld__fail_msg(status, buf);
}

int pld__fail_msg(int status, const char *msg) {
  if (msg != last_msg)
    snprintf(last_msg, sizeof last_msg, "%s", msg);
  return status;
}

int pld__first_failure(int *status, char *msg, size_t cap, int st,
                       const char *prefix, const char *fmt, va_list ap) {
  if (*status)
    return *status;
  *status = st;
  size_t n = pld__catf(msg, cap, "%s", prefix);
  vsnprintf(msg + n, cap - n, fmt, ap);
  return st;
}

size_t pld__catf(char *buf, size_t cap, const char *fmt, ...) {
  if (cap == 0)
    return 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (n < 0)
    return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t pld__shape_str(char *buf, size_t cap, int ndim, const long long *dims) {
  size_t n = pld__catf(buf, cap, "[");
  for (int i = 0; i < ndim; i++)
    n += pld__catf(buf + n, cap - n, i ? ", %lld" : "%lld", dims[i]);
  n += pld__catf(buf + n, cap - n, "]");
  return n;
}
