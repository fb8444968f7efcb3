/* core/model.h: the machine description of the timing model, per platform.
 *
 * X(id, unit, a2a3, a5, min, max, source, help) lists every figure the
 * model uses: its name (the id; case does not matter in a model file), its
 * unit, its value on a2a3sim and on a5sim, the range a value given for it must
 * lie in, where the value comes from ("cited": a public figure,
 * docs/model.md names the source; "derived": computed from cited figures,
 * docs/model.md shows how; "assumed": no source gives it, docs/model.md
 * says why this number), and what it is.  Every value is an integer, so
 * that modeled times are the same on every machine and build.
 *
 * A user replaces values with a model file (PLD_MODEL_FILE or
 * pld_config.model_file) and then pld_config.model_values, both in one
 * syntax: one "name = value" per line (or per ';' in model_values), a
 * name optionally prefixed by a platform ("a5sim.hbm_gbps = 1700") to
 * apply to that platform only, '#' starting a comment. */
#ifndef PLD_CORE_MODEL_H
#define PLD_CORE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define PLD_MODEL_VALUES(X)                                                    \
  /* The cores. */                                                             \
  X(AIC_MHZ, "MHz", 1800, 1650, 1, 100000, "cited",                            \
    "Clock of a cube core (AIC).")                                             \
  X(AIV_MHZ, "MHz", 1800, 1650, 1, 100000, "assumed",                          \
    "Clock of a vector core (AIV).")                                           \
  X(CUBE_MACS_FP16, "MAC/cycle", 4096, 4096, 1, 1048576, "cited",              \
    "Multiply-adds per cycle of a cube core on FP16 operands.")                \
  X(CUBE_MACS_BF16, "MAC/cycle", 4096, 4096, 1, 1048576, "cited",              \
    "Multiply-adds per cycle of a cube core on BF16 operands.")                \
  X(CUBE_MACS_FP32, "MAC/cycle", 1024, 1024, 1, 1048576, "assumed",            \
    "Multiply-adds per cycle of a cube core on FP32 operands.")                \
  X(CUBE_MACS_INT8, "MAC/cycle", 8192, 8192, 1, 1048576, "cited",              \
    "Multiply-adds per cycle of a cube core on INT8 operands.")                \
  X(CUBE_OP_CYCLES, "cycles", 64, 64, 0, 1000000, "assumed",                   \
    "Cycles a matmul takes beyond its multiply-adds (filling the cube).")      \
  X(VEC_BYTES, "B/cycle", 256, 512, 1, 1048576, "cited",                       \
    "Bytes of operands a vector core's elementwise operation goes through "    \
    "per cycle.")                                                              \
  X(VEC_SPECIAL_BYTES, "B/cycle", 64, 128, 1, 1048576, "assumed",              \
    "The same for exp, log, sqrt, rsqrt and division.")                        \
  X(VEC_REDUCE_BYTES, "B/cycle", 128, 256, 1, 1048576, "assumed",              \
    "The same for reductions, comparisons, select, top-k and prefix sums.")    \
  X(VEC_OP_CYCLES, "cycles", 16, 16, 0, 1000000, "assumed",                    \
    "Cycles a vector operation takes beyond its bytes (issue and drain).")     \
  /* Local moves: global memory <-> tile memory. */                            \
  X(MOVE_BYTES, "B/cycle", 32, 32, 1, 1048576, "derived",                      \
    "Bytes per cycle one core moves between global memory and its tile "       \
    "memory.")                                                                 \
  X(HBM_GBPS, "GB/s", 1500, 1600, 1, 1000000, "cited",                         \
    "Global memory bandwidth of a device, shared by its cores.")               \
  X(MOVE_NS, "ns", 500, 500, 0, 1000000000, "assumed",                         \
    "Latency of a move between global memory and tile memory.")                \
  /* The AICPU. */                                                             \
  X(LAUNCH_NS, "ns", 500, 500, 0, 1000000000, "assumed",                       \
    "AICPU time to submit one kernel launch (its task).")                      \
  X(BLOCK_DISPATCH_NS, "ns", 140, 140, 0, 1000000000, "cited",                 \
    "AICPU time to hand one block to a core.")                                 \
  X(BLOCK_START_NS, "ns", 800, 800, 0, 1000000000, "cited",                    \
    "From a block handed to a core to its first instruction.")                 \
  X(BLOCK_END_NS, "ns", 600, 600, 0, 1000000000, "cited",                      \
    "From a block's last instruction to the AICPU knowing it finished.")       \
  /* Between devices. */                                                       \
  X(LINK_GBPS, "GB/s", 56, 140, 1, 1000000, "cited",                           \
    "Bandwidth of the link to one peer in the same server, each direction.")   \
  X(PORT_GBPS, "GB/s", 392, 1000, 1, 1000000, "cited",                         \
    "A device's total bandwidth to its peers in the same server, each "        \
    "direction.")                                                              \
  X(LINK_NS, "ns", 500, 500, 0, 1000000000, "assumed",                         \
    "Latency of a transfer or signal to a peer in the same server.")           \
  X(NET_GBPS, "GB/s", 25, 50, 1, 1000000, "cited",                             \
    "A device's bandwidth to peers in other servers, each direction.")         \
  X(NET_NS, "ns", 5000, 1000, 0, 1000000000, "cited",                          \
    "Latency of a transfer or signal to a peer in another server.")            \
  X(NOTIFY_NS, "ns", 100, 100, 0, 1000000000, "assumed",                       \
    "Core time to issue a notify.")                                            \
  X(WAIT_NS, "ns", 100, 100, 0, 1000000000, "assumed",                         \
    "From a wait's cell satisfied to the waiting core going on.")              \
  /* The host. */                                                              \
  X(HOST_DISPATCH_NS, "ns", 5000, 5000, 0, 1000000000, "assumed",              \
    "Host time to dispatch one call to a device.")                             \
  X(HOST_GBPS, "GB/s", 25, 25, 1, 1000000, "assumed",                          \
    "Bandwidth of copies between host memory and a device.")

enum pld__model_id {
#define PLD__MODEL_ID(id, unit, a2a3, a5, min, max, src, help) PLD__M_##id,
  PLD_MODEL_VALUES(PLD__MODEL_ID)
#undef PLD__MODEL_ID
      PLD__MODEL_VALUES
};

/* The figures of one platform, after the overrides. */
struct pld__machine {
  int64_t v[PLD__MODEL_VALUES];
  unsigned char given[PLD__MODEL_VALUES]; /* replaced by a file or config */
};

/* m = platform's figures ("a2a3sim", "a5sim", or the hardware names),
 * then the lines of the model file `file` (NULL or "": none), then those
 * of `values` (NULL: none).  PLD_OK, or PLD_ERR_CONFIG with msg holding
 * the refusal: "model file 'f' line 3: ..." or "model values '...': ...",
 * naming the line and what was expected and got; PLD_ERR_SYSTEM when the
 * file cannot be read. */
int pld__machine_init(struct pld__machine *m, const char *platform,
                      const char *file, const char *values, char *msg,
                      size_t cap);

/* pld__machine_init for a configuration (pld/program.h): its platform,
 * cfg->model_file (NULL: PLD_MODEL_FILE) and cfg->model_values.  PLD_OK,
 * or the status with the calling thread's message set through
 * pld__fail_api, naming the field or variable: "cfg.model_values: model
 * values '...' line 2: ...". */
struct pld_config;
int pld__machine_config(struct pld__machine *m, const struct pld_config *cfg);

/* One figure as pld-env shows it. */
struct pld__model_info {
  const char *name, *unit, *source, *help;
  int64_t a2a3, a5, min, max;
};
/* The figure of id. */
const struct pld__model_info *pld__model_info(enum pld__model_id id);

#endif
