/* core/alloc.c: the library's allocator (libc underneath) with the test
 * hook that makes the Nth allocation fail (core/alloc.h). */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Countdown to the failing allocation; 0 disables the hook. */
static _Atomic long fail_countdown;

static int should_fail(void) {
  long c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
  if (c == 0)
    return 0;
  if (c == 1)
    return 1; /* stays at 1: every later allocation fails too */
  atomic_fetch_sub_explicit(&fail_countdown, 1, memory_order_relaxed);
  return 0;
}

void pld__alloc_fail_after(long nth) {
  atomic_store_explicit(&fail_countdown, nth < 0 ? 0 : nth,
                        memory_order_relaxed);
}

void *pld__malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }

void *pld__calloc(size_t count, size_t size) {
  return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *pld__realloc(void *p, size_t n) {
  return should_fail() ? NULL : realloc(p, n ? n : 1);
}

void *pld__aligned_alloc(size_t n) {
  if (should_fail())
    return NULL;
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 1) != 0)
    return NULL;
  return p;
}

void pld__free(void *p) { free(p); }

char *pld__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = pld__malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}
