/* pld/tensor.h: tensors at every level.
 *
 * Host tensors are created by the program (pld_tensor_create, or
 * pld_tensor_wrap around memory it owns) and passed to pld_compile and
 * pld_program_run.  Devices never see host memory: a dispatch copies each
 * tensor slice into the device's global memory, and copies Out and InOut
 * slices back when the device finishes.  Inside devices and kernels,
 * tensors are handles the runtime made; their data is reached only through
 * tile loads and stores and pld_read / pld_write, which check bounds.
 */
#ifndef PLD_TENSOR_H
#define PLD_TENSOR_H

#include "pld/types.h"

/* A host tensor of the given shape, zero-filled, in memory the library
 * owns (64-byte aligned), stored in *out (which must not be NULL).  Host
 * code (outside any pld function).  Returns PLD_OK, PLD_ERR_ARG (NULL out,
 * bad dtype, ndim or dimension, or a size beyond half the address space),
 * PLD_ERR_NOMEM. */
int pld_tensor_create(pld_dtype dtype, int ndim, const int64_t *shape,
                      pld_tensor *out);

/* A host tensor over `data`, which the caller owns and keeps alive and
 * unmoved while the tensor is used.  Same statuses as pld_tensor_create,
 * and PLD_ERR_ARG for NULL data. */
int pld_tensor_wrap(pld_dtype dtype, void *data, int ndim, const int64_t *shape,
                    pld_tensor *out);

/* Frees a tensor made by pld_tensor_create (with its data) or
 * pld_tensor_wrap (not the data).  A handle whose p is NULL is a no-op. */
void pld_tensor_destroy(pld_tensor t);

/* The element data of a host tensor; NULL inside devices and kernels
 * (device memory is reached through tiles and pld_read / pld_write). */
void *pld_tensor_data(pld_tensor t);

/* Shape and dtype, at any level. pld_tensor_dim returns 0 for i outside
 * [0, ndim). */
pld_dtype pld_tensor_dtype(pld_tensor t);
int pld_tensor_ndim(pld_tensor t);
int64_t pld_tensor_dim(pld_tensor t, int i);
int64_t pld_tensor_numel(pld_tensor t);

/* PLD_AT(i, j, ...): an element index, for pld_read and pld_write. */
#define PLD_AT(...)                                                            \
  PLD__NARG(__VA_ARGS__), (const int64_t[]) { __VA_ARGS__ }

/* Element access on a device tensor from a kernel.  The value passes as a
 * double (exact for every dtype but INT64 beyond 2^53); pld_write converts
 * it to the tensor's dtype as pld_cast does (BOOL: any non-zero value is 1,
 * 0 and NaN are 0).  An index of the wrong rank or out of bounds fails the
 * kernel with PLD_ERR_BOUNDS; a NULL index or a write to an In tensor with
 * PLD_ERR_ARG; pld_read then returns 0. */
double pld_read(pld_core k, pld_tensor t, int n, const int64_t *idx);
int pld_write(pld_core k, pld_tensor t, int n, const int64_t *idx, double v);

#endif /* PLD_TENSOR_H */
