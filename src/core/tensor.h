/* core/tensor.h: the tensor descriptor behind pld_tensor. */
#ifndef PLD_CORE_TENSOR_H
#define PLD_CORE_TENSOR_H

#include "pld/levels.h"
#include "pld/tensor.h"

enum {
  PLD__T_HOST = 1u << 0,     /* a host tensor (data in the host process) */
  PLD__T_OWNED = 1u << 1,    /* the descriptor owns data (pld__free it) */
  PLD__T_DEVICE = 1u << 2,   /* device global memory */
  PLD__T_TRACE = 1u << 3,    /* a traced tensor: shape only, no data */
  PLD__T_INVALID = 1u << 4,  /* the result of a failed call: always rejected */
  PLD__T_WINDOW = 1u << 5,   /* a view of a window buffer */
  PLD__T_RESIDENT = 1u << 7, /* in device memory (pld_device_tensor_create):
                                res says where */
  PLD__T_INTER = 1u << 6     /* an intermediate of a host orchestration (or
                                a slice of one): no data outside a run */
};

struct pld__comm;
struct pld__tensor;

/* pld_dtype_size, inline for the paths every tile operation takes. */
static inline size_t pld__dtype_size(pld_dtype dtype) {
  switch (dtype) {
#define PLD__DTYPE_SIZE(name, value, bytes)                                    \
  case PLD_##name:                                                             \
    return bytes;
    PLD_DTYPE_MAP(PLD__DTYPE_SIZE)
#undef PLD__DTYPE_SIZE
  default:
    return 0;
  }
}

/* What a failed call returns where a tensor (or window view) goes: every
 * later use rejects it (PLD__T_INVALID). */
extern struct pld__tensor pld__invalid_tensor;

struct pld__tensor {
  void *data;
  pld_dtype dtype;
  int ndim;
  int64_t shape[PLD_MAX_DIMS];
  size_t nbytes;
  unsigned flags;
  pld_dir dir;      /* in kernels: the parameter's direction */
  const char *name; /* in kernels: the parameter's name, for messages */
  /* Host tensors and their slices: the host argument they come from and
   * their byte offset in it (set while tracing; -1 when not an argument). */
  int host_arg;
  size_t host_offset;
  /* Window views: the buffer, the view's byte offset in it, and on devices
   * the comm context of the rank holding it. */
  int win_buf;
  size_t win_offset;
  const struct pld__comm *comm;
  /* A device-resident tensor's place (host/resident.c), else NULL. */
  struct pld__resident *res;
  /* A view made by pld_segment, whose rows a task decides when it starts
   * (device/sched_task.c), else NULL. */
  const struct pld__segment *seg;
};

/* Where a size decided on the device is read (pld_segment,
 * pld_launch_by): element `index` of a 1-D INT32 tensor (`bytes` long;
 * `name` for messages, NULL for none), checked within it when made. */
struct pld__countref {
  const int32_t *counts;
  size_t bytes;
  const char *name;
  int32_t index;
};

/* What pld_segment's view keeps: where its rows are read (at.counts at
 * at.index, after the sum of the counts before it) and what they are cut
 * from (the tensor's data and, for a window view, its offset in the
 * buffer).  The view as made has max_rows rows in dimension 0 of its
 * ndim. */
struct pld__segment {
  struct pld__countref at;
  int ndim;
  int64_t max_rows, rows_of; /* rows_of: the rows of the tensor cut */
  size_t row_bytes;
  unsigned char *base;
  size_t base_win_offset;
};

/* What pld_tensor_destroy does first for a device-resident tensor (set by
 * the host layer, which makes them). */
extern void (*pld__tensor_release_hook)(struct pld__tensor *t);

/* While a host function is traced on this thread (host/compile.c): a
 * tensor call it makes that fails (pld_tensor_data of an intermediate)
 * fails the trace too, through sink(ctx, status, message). */
struct pld__tensor_sink {
  int (*sink)(void *ctx, int status, const char *msg);
  void *ctx;
};
extern _Thread_local struct pld__tensor_sink pld__tensor_sink;

/* Fills t with a dense row-major layout of the shape (no allocation).
 * Returns PLD_OK or PLD_ERR_ARG with the message prefixed by `fn`. */
int pld__tensor_init(struct pld__tensor *t, const char *fn, pld_dtype dtype,
                     int ndim, const int64_t *shape);

/* The tensor seen as a matrix: rows = product of all dims but the last. */
int64_t pld__tensor_rows(const struct pld__tensor *t);
int64_t pld__tensor_cols(const struct pld__tensor *t);

/* "FP32[8, 8]" into buf. */
size_t pld__tensor_str(char *buf, size_t cap, const struct pld__tensor *t);

/* Byte ranges [a, a+na) and [b, b+nb) overlap. */
static inline int pld__ranges_overlap(const void *a, size_t na, const void *b,
                                      size_t nb) {
  const char *pa = a, *pb = b;
  return na && nb && pa < pb + nb && pb < pa + na;
}

#endif
