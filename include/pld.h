/* pld.h: the pld distributed tile programming model in C.
 *
 * A pld program is three functions at three levels: a host orchestrator
 * that dispatches one call per rank (pld/levels.h, pld/program.h), a
 * per-device orchestration that launches kernels, and device kernels that
 * compute on tiles (pld/tile.h).  Everything here is API; nothing else is.
 */
#ifndef PLD_H
#define PLD_H

#include "pld/status.h"
#include "pld/types.h"
#include "pld/levels.h"
#include "pld/tensor.h"
#include "pld/tile.h"
#include "pld/window.h"
#include "pld/signal.h"
#include "pld/rma.h"
#include "pld/collective.h"
#include "pld/fused.h"
#include "pld/mix.h"
#include "pld/ep.h"
#include "pld/program.h"
#include "pld/model.h"

#endif /* PLD_H */
