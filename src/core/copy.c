/* core/copy.c: memcpy, or streaming stores for copies larger than the
 * cache (core/copy.h). */
#include "core/copy.h"

#include <stdint.h>
#include <stdio.h>

#include "core/tunables.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#else
#define HAVE_STREAM 0
#endif

_Atomic size_t pld__stream_at;

/* Where the last-level cache's size is unknown. */
#define UNKNOWN_CACHE_STREAM ((size_t)8 << 20)

/* The size of CPU 0's last-level cache as the kernel describes it (the
 * highest level of /sys/devices/system/cpu/cpu0/cache/index*), or 0.
 * Not sysconf(_SC_LEVEL3_CACHE_SIZE): glibc derives it from the CPU's
 * own words, which in a virtual machine can describe the host (320 MiB
 * where the guest's L3 is 32 MiB, on this project's machine). */
static size_t last_level_cache(void) {
  size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[96], text[32];
    int level = 0;
    snprintf(path, sizeof path,
             "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f)
      break;
    const int got = fscanf(f, "%d", &level);
    fclose(f);
    snprintf(path, sizeof path,
             "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (got != 1 || level <= best_level || !(f = fopen(path, "r")))
      continue;
    unsigned long long n = 0;
    char unit = 0;
    if (fgets(text, sizeof text, f) && sscanf(text, "%llu%c", &n, &unit) >= 1) {
      best = (size_t)n * (unit == 'K'   ? 1024u
                          : unit == 'M' ? 1024u * 1024u
                                        : 1u);
      best_level = level;
    }
    fclose(f);
  }
  return best;
}

size_t pld__copy_stream_bytes(const char **why) {
  const int64_t kb = pld__tunables()->PLD_STREAM_COPY_KB;
  const char *w;
  size_t at;
  if (!HAVE_STREAM) {
    w = "never: this CPU has no streaming stores pld uses";
    at = SIZE_MAX;
  } else if (kb == 0) {
    w = "never: PLD_STREAM_COPY_KB is 0";
    at = SIZE_MAX;
  } else if (kb > 0) {
    w = "PLD_STREAM_COPY_KB";
    at = (size_t)kb * 1024;
  } else {
    const size_t llc = last_level_cache();
    if (llc) {
      w = "a quarter of the last-level cache";
      at = llc / 4;
    } else {
      w = "the last-level cache's size unknown";
      at = UNKNOWN_CACHE_STREAM;
    }
  }
  if (why)
    *why = w;
  return at;
}

#if HAVE_STREAM
/* 64-byte lines of the destination, each written whole by four streaming
 * stores (the line never read); the unaligned head and the tail by
 * memcpy; then a store fence, for the streaming stores are ordered by
 * nothing else. */
static void stream(unsigned char *d, const unsigned char *s, size_t n) {
  size_t head = (size_t)(-(uintptr_t)d & 63);
  if (head > n)
    head = n;
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  const size_t body = n & ~(size_t)63;
  for (size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    const __m128i b =
        _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
    const __m128i c =
        _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
    const __m128i e =
        _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
    _mm_stream_si128((__m128i *)(void *)(d + i), a);
    _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
    _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
    _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
  }
  _mm_sfence();
  memcpy(d + body, s + body, n - body);
}
#endif

void pld__copy_big(void *dst, const void *src, size_t n) {
  size_t at = atomic_load_explicit(&pld__stream_at, memory_order_relaxed);
  if (!at) { /* the first copy: the threshold, the same for every thread */
    at = pld__copy_stream_bytes(NULL);
    atomic_store_explicit(&pld__stream_at, at, memory_order_relaxed);
  }
#if HAVE_STREAM
  if (n >= at) {
    stream(dst, src, n);
    return;
  }
#endif
  memcpy(dst, src, n);
}
