/* core/alloc.h: every allocation of the library goes through here, so a
 * test can make the Nth one fail and check that the failure is clean. */
#ifndef PLD_CORE_ALLOC_H
#define PLD_CORE_ALLOC_H

#include <stddef.h>

void *pld__malloc(size_t n);
void *pld__calloc(size_t count, size_t size);
void *pld__realloc(void *p, size_t n);
/* 64-byte aligned; release with pld__free. */
void *pld__aligned_alloc(size_t n);
void pld__free(void *p);
char *pld__strdup(const char *s);

/* n rounded up to a multiple of a (a > 0). */
static inline size_t pld__round_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

/* Test hook: the nth allocation from now on (1 = the next) and every one
 * after it fail, until reset with 0. */
void pld__alloc_fail_after(long nth);

#endif
