/* pld/types.h: data types, the handles of the three levels, and arguments.
 *
 * Handles are one-pointer structs passed by value.  Two handle types are
 * never interchangeable, so handing the host context to a kernel call (or a
 * kernel to pld_dispatch) is a compile error on every C compiler, not the
 * warning an ordinary pointer mismatch would give.
 */
#ifndef PLD_TYPES_H
#define PLD_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(name, value, bytes) - element types. */
#define PLD_DTYPE_MAP(X)                                                       \
  X(FP32, 0, 4)                                                                \
  X(FP16, 1, 2)                                                                \
  X(BF16, 2, 2)                                                                \
  X(INT32, 3, 4)                                                               \
  X(INT16, 4, 2)                                                               \
  X(INT8, 5, 1)                                                                \
  X(UINT8, 6, 1)                                                               \
  X(INT64, 7, 8)                                                               \
  X(BOOL, 8, 1)                                                                \
  X(FP64, 9, 8)

typedef enum pld_dtype {
#define PLD__DTYPE_ENUM(name, value, bytes) PLD_##name = value,
  PLD_DTYPE_MAP(PLD__DTYPE_ENUM)
#undef PLD__DTYPE_ENUM
      PLD_DTYPE_COUNT
} pld_dtype;

/* "FP32", ...; "?" for a value outside the enum.  Any level. */
const char *pld_dtype_name(pld_dtype dtype);
/* Bytes per element; 0 for a value outside the enum.  Any level. */
size_t pld_dtype_size(pld_dtype dtype);

/* How a store lands: PLD_ATOMIC_ADD adds element by element, atomically,
 * on the dtypes the hardware adds (FP32, FP16, BF16, INT32, INT16, INT8).
 * Taken by remote stores and puts (pld/rma.h) and by pld_store_rows
 * (pld/tile.h).  Values are the original ABI's. */
typedef enum pld_atomic { PLD_ATOMIC_NONE = 0, PLD_ATOMIC_ADD = 1 } pld_atomic;

/* The most dimensions a tensor may have. */
#define PLD_MAX_DIMS 8

/* A tensor: device global memory inside devices and kernels, a host buffer
 * at host level.  A handle to a descriptor owned by the library (host
 * tensors: by their creator, see pld/tensor.h). */
typedef struct pld_tensor {
  struct pld__tensor *p;
} pld_tensor;

/* A window tensor: a typed view of a symmetric window buffer (the model's
 * DistributedTensor), reachable by the peers of its comm domain.  Its own
 * handle type, so a remote operation given a plain tensor does not
 * compile.  pld_local(w) is the same memory as a plain tensor (this rank's
 * copy), for tile loads and stores. */
typedef struct pld_window {
  struct pld__tensor *p;
} pld_window;

static inline pld_tensor pld_local(pld_window w) {
  pld_tensor t = {w.p};
  return t;
}

/* The three levels' contexts.  Each function level receives its own; the
 * calls allowed at a level take that level's context as first argument. */
typedef struct pld_host {
  struct pld__host *p; /* host orchestrator, host CPU */
} pld_host;
typedef struct pld_aicpu {
  struct pld__aicpu *p; /* per-device orchestration, the device's AICPU */
} pld_aicpu;
typedef struct pld_core {
  struct pld__core *p; /* device kernel, one AI core running one block */
} pld_core;
typedef struct pld_task {
  struct pld__task *p; /* host task, a step of the host orchestration run
                          on the host CPU */
} pld_task;

/* One argument of a dispatch, launch or program run: a tensor or a scalar
 * carrying the dtype of its C type.  Built by PLD_ARG; rarely written by
 * hand. */
enum { PLD_ARG_TENSOR = 1, PLD_ARG_SCALAR = 2, PLD_ARG_WINDOW = 3 };
typedef struct pld_arg {
  int kind;
  pld_dtype dtype; /* scalars: the dtype of the C type passed */
  union {
    struct pld__tensor *t;
    int64_t i; /* integer and bool scalars */
    uint64_t u;
    double f; /* FP32 and FP64 scalars */
  } v;
} pld_arg;

/* The constructors PLD_ARG chooses from. */
static inline pld_arg pld__arg_make(int kind, pld_dtype dtype) {
  pld_arg a;
  a.kind = kind;
  a.dtype = dtype;
  a.v.u = 0;
  return a;
}
static inline pld_arg pld__arg_tensor(pld_tensor t) {
  pld_arg a = pld__arg_make(PLD_ARG_TENSOR, PLD_DTYPE_COUNT);
  a.v.t = t.p;
  return a;
}
static inline pld_arg pld__arg_window(pld_window w) {
  pld_arg a = pld__arg_make(PLD_ARG_WINDOW, PLD_DTYPE_COUNT);
  a.v.t = w.p;
  return a;
}
static inline pld_arg pld__arg_int(int64_t v, pld_dtype dt) {
  pld_arg a = pld__arg_make(PLD_ARG_SCALAR, dt);
  a.v.i = v;
  return a;
}
static inline pld_arg pld__arg_float(double v, pld_dtype dt) {
  pld_arg a = pld__arg_make(PLD_ARG_SCALAR, dt);
  a.v.f = v;
  return a;
}
static inline pld_arg pld__arg_u64(uint64_t v) {
  /* Above INT64_MAX it is no INT64: rejected when checked. */
  pld_arg a = pld__arg_make(
      PLD_ARG_SCALAR, v > (uint64_t)INT64_MAX ? PLD_DTYPE_COUNT : PLD_INT64);
  a.v.u = v;
  return a;
}
static inline pld_arg pld__arg_sc(signed char v) {
  return pld__arg_int(v, PLD_INT8);
}
static inline pld_arg pld__arg_uc(unsigned char v) {
  return pld__arg_int(v, PLD_UINT8);
}
static inline pld_arg pld__arg_s(short v) { return pld__arg_int(v, PLD_INT16); }
static inline pld_arg pld__arg_us(unsigned short v) {
  return pld__arg_int(v, PLD_INT32);
}
static inline pld_arg pld__arg_i(int v) { return pld__arg_int(v, PLD_INT32); }
static inline pld_arg pld__arg_ui(unsigned v) {
  return pld__arg_int(v, PLD_INT64);
}
static inline pld_arg pld__arg_l(long v) { return pld__arg_int(v, PLD_INT64); }
static inline pld_arg pld__arg_ll(long long v) {
  return pld__arg_int(v, PLD_INT64);
}
static inline pld_arg pld__arg_b(bool v) { return pld__arg_int(v, PLD_BOOL); }
static inline pld_arg pld__arg_f(float v) {
  return pld__arg_float(v, PLD_FP32);
}
static inline pld_arg pld__arg_d(double v) {
  return pld__arg_float(v, PLD_FP64);
}

/* PLD_ARG(x): the pld_arg of a tensor handle or a C scalar.  The dtype of a
 * scalar is that of its C type (int -> INT32, float -> FP32, double ->
 * FP64, ...).  Parameters check it: an integer parameter takes any integer
 * whose value fits; a float parameter takes float or double; there is no
 * implicit conversion between integers and floats. */
#define PLD_ARG(x)                                                             \
  _Generic((x), pld_tensor                                                     \
           : pld__arg_tensor, pld_window                                       \
           : pld__arg_window, char                                             \
           : pld__arg_sc, signed char                                          \
           : pld__arg_sc, unsigned char                                        \
           : pld__arg_uc, short                                                \
           : pld__arg_s, unsigned short                                        \
           : pld__arg_us, int                                                  \
           : pld__arg_i, unsigned                                              \
           : pld__arg_ui, long                                                 \
           : pld__arg_l, unsigned long                                         \
           : pld__arg_u64, long long                                           \
           : pld__arg_ll, unsigned long long                                   \
           : pld__arg_u64, bool                                                \
           : pld__arg_b, float                                                 \
           : pld__arg_f, double                                                \
           : pld__arg_d)(x)

#endif /* PLD_TYPES_H */
