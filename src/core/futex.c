/* core/futex.c: the state futex.h keeps per thread. */
#include "core/futex.h"

_Thread_local int64_t pld__spin_extra_ns;
