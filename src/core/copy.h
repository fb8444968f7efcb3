/* core/copy.h: the bulk copies within one node: the data plane's (a put,
 * a get, a collective's transfer between a tensor and a window) and the
 * host's of tensors to and from device memory (a run's slices, resident
 * tensors).
 *
 * A copy of at least pld__copy_stream_bytes() bytes writes its
 * destination with non-temporal stores on x86-64: past the last-level
 * cache, a plain copy reads every destination line before writing it
 * (and evicts the source to make room), a streaming one does not.  On
 * this project's 2-CPU AMD EPYC (32 MiB L3) a 64 MiB copy ran at 16 to
 * 17 GB/s against memcpy's 8 to 9; a copy that fits the cache runs
 * faster through it, so below the threshold it is memcpy.  The threshold
 * is PLD_STREAM_COPY_KB (core/tunables.h). */
#ifndef PLD_CORE_COPY_H
#define PLD_CORE_COPY_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* The threshold in force (pld__copy_stream_bytes), 0 until the first
 * copy, which every copy takes to pld__copy_big, reads it. */
extern _Atomic size_t pld__stream_at;

/* pld__copy's out-of-line half: streams from the threshold on, and the
 * bytes it streamed are visible to every thread before it returns (a
 * signal after it orders them as it orders a memcpy's). */
void pld__copy_big(void *dst, const void *src, size_t n);

/* memcpy(dst, src, n), streaming from the threshold on. */
static inline void pld__copy(void *dst, const void *src, size_t n) {
  if (n < atomic_load_explicit(&pld__stream_at, memory_order_relaxed))
    memcpy(dst, src, n);
  else
    pld__copy_big(dst, src, n);
}

/* The bytes from which a copy streams: PLD_STREAM_COPY_KB KiB; with -1
 * (the default) a quarter of the last-level cache (8 MiB where the system
 * does not say); SIZE_MAX (never) with 0 or on a CPU without streaming
 * stores.  *why, if given, says where the figure comes from. */
size_t pld__copy_stream_bytes(const char **why);

#endif
