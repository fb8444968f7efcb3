/* core/sig.h: checking arguments against a function's signature, and the
 * program-wide binding of dynamic dimensions. */
#ifndef PLD_CORE_SIG_H
#define PLD_CORE_SIG_H

#include <stddef.h>

#include "pld/levels.h"

#define PLD__MAX_DYN_DIMS 32
/* The longest name (and its NUL) solved from a shape expression. */
#define PLD__MAX_SOLVED_NAME 48

/* Why sig cannot be the signature of a function of `level` with an entry
 * (entry != 0): its level, no descriptor, a parameter count outside [0,
 * PLD_MAX_PARAMS], a kernel's unknown core type; or NULL when it can.
 * Descriptors are made by the declaration macros, but they are public
 * structs: one made by hand must not overflow the argument arrays. */
const char *pld__sig_problem(const pld_signature *sig, pld_level level,
                             int entry);

/* Dynamic dimension bindings: name -> size, and who bound it.  A host
 * function's names are bound program-wide; a device function's or a
 * kernel's names are bound per call (one generic kernel can be launched
 * with different shapes), but for names the host function bound. */
struct pld__dims {
  int n;
  /* The declared string of a name bound where it stands alone; NULL for
   * a name solved from a shape expression, whose text is in solved[]
   * (pld__dim_name gives either). */
  const char *name[PLD__MAX_DYN_DIMS];
  int64_t size[PLD__MAX_DYN_DIMS];
  char by[PLD__MAX_DYN_DIMS][128]; /* "parameter 'x' of host_orch" */
  char solved[PLD__MAX_DYN_DIMS][PLD__MAX_SOLVED_NAME];
};

/* The name of binding b of d. */
static inline const char *pld__dim_name(const struct pld__dims *d, int b) {
  return d->name[b] ? d->name[b] : d->solved[b];
}

/* Checks argv[0..argc) against sig: count, kind, dtype, shape, dynamic
 * dimensions (a host function's bound in dims as first met; others
 * checked against dims and bound for the call), shape expressions
 * (dimensions written as an expression of dynamic dimensions and numbers,
 * checked once the call's names are bound), scalar ranges.  Writes into
 * norm[] (room for sig->nparams) the arguments as the function's entry
 * unpacks them: integer scalars in v.i, float scalars in v.f; a window
 * view whose shape differs from its parameter's only by leading unit
 * dimensions is given a descriptor of the parameter's rank, written in
 * reshaped[i] (room for sig->nparams; NULL: such views are refused).  On
 * failure returns PLD_ERR_ARG with "<what>: <callee>: parameter 'p' (2 of
 * 3): expected ..., got ..." in msg; `what` names the call ("pld_dispatch
 * to rank 1").  Tensors must not be NULL or PLD__T_INVALID. */
struct pld__tensor;
int pld__sig_check(const pld_signature *sig, const char *what,
                   struct pld__dims *dims, int argc, const pld_arg *argv,
                   pld_arg *norm, struct pld__tensor *reshaped, char *msg,
                   size_t cap);

/* a is an integer scalar whose value fits an int64_t (v.i holds it). */
int pld__arg_is_integer(const pld_arg *a);

/* "INT32 = 3" for a scalar argument of parameter p, into buf. */
size_t pld__scalar_str(char *buf, size_t cap, const pld_param *p,
                       const pld_arg *a);

/* "x: FP32[8, 8] In" for a parameter, into buf. */
size_t pld__param_str(char *buf, size_t cap, const pld_param *p);

const char *pld__dir_name(pld_dir d);
const char *pld__level_name(pld_level l);

#endif
