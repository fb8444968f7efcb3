/* The data plane's copies (core/copy.h): exact at every size and
 * alignment on both sides of the streaming threshold, and the threshold
 * PLD_STREAM_COPY_KB leaves in force.  The environment is read once per
 * process: one CTest entry per case runs each in a process of its own. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pld_test.h"

#include "core/copy.h"

enum { GUARD = 64, MAX_COPY = 3 * 65536 + 200 };

static unsigned char src_buf[MAX_COPY + 2 * GUARD];
static unsigned char dst_buf[MAX_COPY + 2 * GUARD];

/* pld__copy of n bytes from src_buf + so to dst_buf + GUARD + doff: the
 * n bytes arrive, and not one byte around them changes. */
static void copy_once(size_t n, size_t so, size_t doff) {
  for (size_t i = 0; i < sizeof src_buf; i++)
    src_buf[i] = (unsigned char)(i * 131u + n);
  memset(dst_buf, 0xA5, sizeof dst_buf);
  unsigned char *d = dst_buf + GUARD + doff;
  pld__copy(d, src_buf + so, n);
  for (size_t i = 0; i < n; i++)
    if (d[i] != src_buf[so + i])
      fail_msg("copy of %zu bytes (source +%zu, destination +%zu): byte %zu "
               "is %u, expected %u",
               n, so, doff, i, d[i], src_buf[so + i]);
  for (size_t i = 0; i < sizeof dst_buf; i++)
    if ((dst_buf + i < d || dst_buf + i >= d + n) && dst_buf[i] != 0xA5)
      fail_msg("copy of %zu bytes (source +%zu, destination +%zu): byte %td "
               "outside it changed",
               n, so, doff, (ptrdiff_t)(dst_buf + i - d));
}

/* Every size around the threshold at and 64-byte lines, at alignments
 * that leave a head, a tail, both or neither. */
static void copy_every_way(size_t at) {
  const size_t sizes[] = {0,
                          1,
                          63,
                          64,
                          65,
                          at - 1,
                          at,
                          at + 1,
                          at + 63,
                          at + 64,
                          at + 65,
                          2 * at + 17,
                          MAX_COPY - 64 - GUARD,
                          MAX_COPY - GUARD};
  const size_t offsets[] = {0, 1, 15, 16, 33, 63};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t a = 0; a < 6; a++)
      for (size_t b = 0; b < 6; b++)
        copy_once(sizes[s], offsets[a], offsets[b]);
}

static size_t in_force(const char *value, const char **why) {
  if (value)
    assert_int_equal(setenv("PLD_STREAM_COPY_KB", value, 1), 0);
  else
    assert_int_equal(unsetenv("PLD_STREAM_COPY_KB"), 0);
  return pld__copy_stream_bytes(why);
}

/* PLD_STREAM_COPY_KB=1: copies from 1 KiB stream, and are exact. */
static void test_stream_exact(void **state) {
  (void)state;
  const char *why;
  const size_t at = in_force("1", &why);
#if defined(__x86_64__)
  assert_int_equal(at, 1024);
  assert_string_equal(why, "PLD_STREAM_COPY_KB");
#else
  assert_true(at == SIZE_MAX);
#endif
  copy_every_way(1024);
  copy_every_way(4096);
}

/* 0: never; the copies are memcpy's. */
static void test_never(void **state) {
  (void)state;
  const char *why;
  assert_true(in_force("0", &why) == SIZE_MAX);
#if defined(__x86_64__)
  assert_string_equal(why, "never: PLD_STREAM_COPY_KB is 0");
#endif
  copy_every_way(1024);
}

/* Unset: a quarter of the last-level cache: the size of the highest
 * level CPU 0's caches list (8 MiB where none is listed). */
static void test_auto(void **state) {
  (void)state;
  size_t llc = 0;
  int top = 0;
  for (int i = 0;; i++) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d",
             i);
    char lp[160], sp[160];
    snprintf(lp, sizeof lp, "%s/level", path);
    snprintf(sp, sizeof sp, "%s/size", path);
    FILE *l = fopen(lp, "r"), *s = fopen(sp, "r");
    int level = 0;
    unsigned long kib = 0;
    const int ok =
        l && s && fscanf(l, "%d", &level) == 1 && fscanf(s, "%luK", &kib) == 1;
    if (l)
      fclose(l);
    if (s)
      fclose(s);
    if (!l)
      break;
    if (ok && level > top) {
      top = level;
      llc = kib * 1024;
    }
  }
  const char *why;
  const size_t at = in_force(NULL, &why);
#if defined(__x86_64__)
  assert_int_equal(at, llc ? llc / 4 : (size_t)8 << 20);
  assert_string_equal(why, llc ? "a quarter of the last-level cache"
                               : "the last-level cache's size unknown");
#else
  assert_true(at == SIZE_MAX);
#endif
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stream_exact),
    cmocka_unit_test(test_never),
    cmocka_unit_test(test_auto),
};

PLD_TEST_MAIN("core_copy", tests)
