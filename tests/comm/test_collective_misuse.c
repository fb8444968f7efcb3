/* Collectives used wrongly: each mistake (signal window, overlapping
 * buffers, root, shapes, dtype, op, mode, counts, cube core, tile memory)
 * is refused with its status and a message naming the call, the rank, the
 * window and what was expected (src/comm/coll_lane.c and coll_check.c compose
 * them); ranks that reach one point of a signal window with different calls all
 * fail with PLD_ERR_MISMATCH and a message naming each rank's call, instead of
 * hanging or corrupting data; a rank that never makes a call is a deadlock,
 * reported within a second (two under mpirun) with the collective, call
 * number and round of every blocked rank; a notify, wait or remote store
 * on a cell of a signal window a collective of the program used is
 * refused, before or after it.
 * After each, the same program runs correctly again. */
#include "comm_test.h"

PLD_DYNAMIC(NS);  /* cells of sig: PLD_SIGNAL_CELLS(P, C) */
PLD_DYNAMIC(NSS); /* cells of sigs, the short signal window */
PLD_DYNAMIC(NR2); /* rows of tall and mtall: twice the ranks */

/* Elements of a row: RL, and RL2 for windows of another length. */
enum { RL = 4, RL2 = 5 };

/* What a rank calls.  Every rank but flag[FL_BAD] makes good call, the
 * rank at fault the bad one; flag[FL_CALLS] calls each, the bad rank's
 * last one being the bad call. */
enum {
  C_NONE,            /* returns without calling */
  C_ALLREDUCE,       /* pld_allreduce(data, sig, SUM, MESH) */
  C_ALLREDUCE_MAX,   /* ... MAX ... */
  C_ALLREDUCE_RING,  /* ... SUM, RING */
  C_ALLREDUCE_COUNT, /* of data2: RL2 elements */
  C_ALLREDUCE_INT32, /* of datai: INT32 */
  C_BROADCAST_0,     /* pld_broadcast(data, sig, 0) */
  C_BROADCAST_1,
  C_BROADCAST_NEG, /* root -1 */
  C_BROADCAST_P,   /* root P */
  C_BARRIER,
  C_ALLGATHER,         /* pld_allgather(stage, tgt, sig) */
  C_REDUCE_SCATTER,    /* pld_reduce_scatter(mat, sig, SUM) */
  C_ALL_TO_ALL,        /* pld_all_to_all(x, tgt, sig) */
  C_ALL_TO_ALL_V,      /* pld_all_to_all_v(x, sc, tgt, rc, sig) */
  C_ALL_TO_ALL_V_TALL, /* ... of mtall into tall: the same bytes as x and
                          tgt in rows half as long */
  /* mistakes */
  C_SIG_SHORT, /* allreduce on sigs */
  C_ALLGATHER_SIG_SHORT,
  C_SIG_2D,            /* allreduce on sig2, INT32[P, NS] */
  C_SIG_FP32,          /* allreduce on sigf, FP32[NS] */
  C_STAGE_OVERLAPS,    /* allgather whose stage is row 0 of tgt */
  C_DATA_OVERLAPS_SIG, /* allreduce of over, a view of sig's buffer */
  C_REDUCE_SCATTER_OVERLAPS_SIG,
  C_TARGET_OVERLAPS_SIG, /* allgather into over */
  C_REDUCE_SCATTER_1D,   /* reduce-scatter of data: FP32[RL] */
  C_ALL_TO_ALL_DTYPE,    /* input FP32, target tgti INT32 */
  C_ALL_TO_ALL_SHAPE,    /* target wide, FP32[P, RL2] */
  C_ALLGATHER_SIZE,      /* stage FP32[RL], target wide */
  C_ALLGATHER_DTYPE,     /* target tgti */
  C_ALLREDUCE_UINT8,
  C_REDUCE_SCATTER_INT64,
  C_ALLREDUCE_OP_4,
  C_ALLREDUCE_OP_NEG,
  C_REDUCE_SCATTER_OP_4,
  C_ALLREDUCE_MODE_4,
  C_ALL_TO_ALL_V_SEND_SHAPE, /* send_counts INT32[P, 2] */
  C_ALL_TO_ALL_V_RECV_SHAPE,
  C_TILES_TAKEN,  /* allreduce with all but flag[FL_ARG] bytes of tile memory
                     taken */
  C_STRAY_NOTIFY, /* pld_notify(sig, next rank, cell flag[FL_ARG]) */
  C_STRAY_WAIT,   /* pld_wait(sig, cell flag[FL_ARG]) for >= 0 */
  C_STRAY_STORE,  /* pld_remote_store of a zero cell into the next rank's
                     sig, cell flag[FL_ARG] */
  C_STRAY_PUT     /* pld_put_notify of tgt to the next rank, notifying its
                     cell flag[FL_ARG] of sig */
};

/* flag[FL_BAD_FIRST]: the rank at fault makes its bad call first, not
 * last. */
enum { FL_BAD, FL_BAD_CALL, FL_GOOD_CALL, FL_CALLS, FL_ARG, FL_BAD_FIRST, NFL };

/* Window buffers in the order h_misuse allocates them: message say
 * "buffer #k". */
enum {
  B_DATA,
  B_DATA2,
  B_DATAI,
  B_DU8,
  B_D64,
  B_MAT,
  B_TGT,
  B_STAGE,
  B_WIDE,
  B_TGTI,
  B_SIG,
  B_SIGS,
  B_SIG2,
  B_SIGF
};

#define MISUSE_PARAMS                                                          \
  PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, NR, RL), PLD_IN(sc, INT32, NR),    \
      PLD_INOUT(cnt2, INT32, NR, 2), PLD_OUT(rc, INT32, NR),                   \
      PLD_WINDOW(data, FP32, RL), PLD_WINDOW(data2, FP32, RL2),                \
      PLD_WINDOW(datai, INT32, RL), PLD_WINDOW(du8, UINT8, RL),                \
      PLD_WINDOW(d64, INT64, RL), PLD_WINDOW(mat, FP32, NR, RL),               \
      PLD_WINDOW(tgt, FP32, NR, RL), PLD_WINDOW(stage, FP32, RL),              \
      PLD_WINDOW(tgtrow, FP32, RL), PLD_WINDOW(wide, FP32, NR, RL2),           \
      PLD_WINDOW(tgti, INT32, NR, RL), PLD_WINDOW(sig, INT32, NS),             \
      PLD_WINDOW(sigs, INT32, NSS), PLD_WINDOW(sig2, INT32, NR, NS),           \
      PLD_WINDOW(sigf, FP32, NS), PLD_WINDOW(over, FP32, NR, RL),              \
      PLD_WINDOW(tall, FP32, NR2, RL / 2),                                     \
      PLD_WINDOW(mtall, FP32, NR2, RL / 2)

struct mis {
  pld_tensor x, sc, cnt2, rc;
  pld_window data, data2, datai, du8, d64, mat, tgt, stage, tgtrow, wide, tgti,
      sig, sigs, sig2, sigf, over, tall, mtall;
};

static void do_call(pld_core k, const struct mis *g, int what, int32_t arg) {
  const int32_t n = pld_nranks(k, pld_window_comm(g->sig));
  switch (what) {
  case C_ALLREDUCE:
    pld_allreduce(k, g->data, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_ALLREDUCE_MAX:
    pld_allreduce(k, g->data, g->sig, PLD_REDUCE_MAX, PLD_ALLREDUCE_MESH);
    break;
  case C_ALLREDUCE_RING:
    pld_allreduce(k, g->data, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_RING);
    break;
  case C_ALLREDUCE_COUNT:
    pld_allreduce(k, g->data2, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_ALLREDUCE_INT32:
    pld_allreduce(k, g->datai, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_BROADCAST_0:
  case C_BROADCAST_1:
  case C_BROADCAST_NEG:
  case C_BROADCAST_P: {
    const int32_t roots[] = {0, 1, -1, n};
    pld_broadcast(k, g->data, g->sig, roots[what - C_BROADCAST_0]);
    break;
  }
  case C_BARRIER:
    pld_barrier(k, g->sig);
    break;
  case C_ALLGATHER:
    pld_allgather(k, pld_local(g->stage), g->tgt, g->sig);
    break;
  case C_REDUCE_SCATTER:
    pld_reduce_scatter(k, g->mat, g->sig, PLD_REDUCE_SUM);
    break;
  case C_ALL_TO_ALL:
    pld_all_to_all(k, g->x, g->tgt, g->sig);
    break;
  case C_ALL_TO_ALL_V:
    pld_all_to_all_v(k, g->x, g->sc, g->tgt, g->rc, g->sig);
    break;
  case C_ALL_TO_ALL_V_TALL:
    pld_all_to_all_v(k, pld_local(g->mtall), g->sc, g->tall, g->rc, g->sig);
    break;
  case C_SIG_SHORT:
    pld_allreduce(k, g->data, g->sigs, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_ALLGATHER_SIG_SHORT:
    pld_allgather(k, pld_local(g->stage), g->tgt, g->sigs);
    break;
  case C_SIG_2D:
    pld_allreduce(k, g->data, g->sig2, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_SIG_FP32:
    pld_allreduce(k, g->data, g->sigf, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_STAGE_OVERLAPS:
    pld_allgather(k, pld_local(g->tgtrow), g->tgt, g->sig);
    break;
  case C_DATA_OVERLAPS_SIG:
    pld_allreduce(k, g->over, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_REDUCE_SCATTER_OVERLAPS_SIG:
    pld_reduce_scatter(k, g->over, g->sig, PLD_REDUCE_SUM);
    break;
  case C_TARGET_OVERLAPS_SIG:
    pld_allgather(k, pld_local(g->stage), g->over, g->sig);
    break;
  case C_REDUCE_SCATTER_1D:
    pld_reduce_scatter(k, g->data, g->sig, PLD_REDUCE_SUM);
    break;
  case C_ALL_TO_ALL_DTYPE:
    pld_all_to_all(k, g->x, g->tgti, g->sig);
    break;
  case C_ALL_TO_ALL_SHAPE:
    pld_all_to_all(k, g->x, g->wide, g->sig);
    break;
  case C_ALLGATHER_SIZE:
    pld_allgather(k, pld_local(g->stage), g->wide, g->sig);
    break;
  case C_ALLGATHER_DTYPE:
    pld_allgather(k, pld_local(g->stage), g->tgti, g->sig);
    break;
  case C_ALLREDUCE_UINT8:
    pld_allreduce(k, g->du8, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    break;
  case C_REDUCE_SCATTER_INT64:
    pld_reduce_scatter(k, g->d64, g->sig, PLD_REDUCE_MAX);
    break;
  case C_ALLREDUCE_OP_4:
    pld_allreduce(k, g->data, g->sig, (pld_reduce_op)4, PLD_ALLREDUCE_MESH);
    break;
  case C_ALLREDUCE_OP_NEG:
    pld_allreduce(k, g->data, g->sig, (pld_reduce_op)-1, PLD_ALLREDUCE_MESH);
    break;
  case C_REDUCE_SCATTER_OP_4:
    pld_reduce_scatter(k, g->mat, g->sig, (pld_reduce_op)4);
    break;
  case C_ALLREDUCE_MODE_4:
    pld_allreduce(k, g->data, g->sig, PLD_REDUCE_SUM, (pld_allreduce_mode)4);
    break;
  case C_ALL_TO_ALL_V_SEND_SHAPE:
    pld_all_to_all_v(k, g->x, g->cnt2, g->tgt, g->rc, g->sig);
    break;
  case C_ALL_TO_ALL_V_RECV_SHAPE:
    pld_all_to_all_v(k, g->x, g->sc, g->tgt, g->cnt2, g->sig);
    break;
  case C_STRAY_NOTIFY:
    pld_notify(k, g->sig, (pld_rank(k, pld_window_comm(g->sig)) + 1) % n,
               PLD_AT(arg), 1, PLD_NOTIFY_ADD);
    break;
  case C_STRAY_WAIT:
    pld_wait(k, g->sig, PLD_AT(arg), 0, PLD_WAIT_GE);
    break;
  case C_STRAY_STORE: {
    pld_tile *t = pld_full(k, PLD_INT32, 1, 1, 0);
    pld_remote_store(k, t, g->sig,
                     (pld_rank(k, pld_window_comm(g->sig)) + 1) % n, 0, arg,
                     PLD_ATOMIC_NONE);
    pld_tile_free(k, t);
    break;
  }
  case C_STRAY_PUT:
    pld_put_notify(k, g->tgt, (pld_rank(k, pld_window_comm(g->sig)) + 1) % n,
                   pld_local(g->tgt), NULL, g->sig, PLD_AT(arg), 1,
                   PLD_NOTIFY_ADD);
    break;
  case C_TILES_TAKEN: {
    pld_tile *taken = pld_tile_new(k, PLD_UINT8, 1, arg);
    pld_allreduce(k, g->data, g->sig, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
    pld_tile_free(k, taken);
    break;
  }
  default:
    break;
  }
}

/* flag[FL_CALLS] calls on one signal window; the rank at fault makes the
 * bad call last. */
static void misuse_body(pld_core k, pld_tensor flag, const struct mis *g) {
  const int32_t me = pld_rank(k, pld_window_comm(g->sig));
  const int32_t bad = (int32_t)pld_read(k, flag, PLD_AT(FL_BAD));
  const int calls = (int)pld_read(k, flag, PLD_AT(FL_CALLS));
  const int32_t arg = (int32_t)pld_read(k, flag, PLD_AT(FL_ARG));
  const int at = pld_read(k, flag, PLD_AT(FL_BAD_FIRST)) ? 0 : calls - 1;
  for (int i = 0; i < calls; i++)
    do_call(
        k, g,
        (int)pld_read(
            k, flag, PLD_AT(me == bad && i == at ? FL_BAD_CALL : FL_GOOD_CALL)),
        arg);
}

#define MIS_STRUCT                                                             \
  {                                                                            \
    x, sc, cnt2, rc, data, data2, datai, du8, d64, mat, tgt, stage, tgtrow,    \
        wide, tgti, sig, sigs, sig2, sigf, over, tall, mtall                   \
  }

PLD_KERNEL(k_misuse, k, MISUSE_PARAMS) {
  const struct mis g = MIS_STRUCT;
  misuse_body(k, flag, &g);
}

/* The same on a cube core: reductions are refused there, data movement
 * works. */
PLD_CUBE_KERNEL(k_cube, k, MISUSE_PARAMS) {
  const struct mis g = MIS_STRUCT;
  misuse_body(k, flag, &g);
}

/* data and stage = row 0 of x, mat = x; afterwards y = data. */
PLD_KERNEL(k_in, k, PLD_IN(x, FP32, NR, RL), PLD_WINDOW(data, FP32, RL),
           PLD_WINDOW(mat, FP32, NR, RL), PLD_WINDOW(stage, FP32, RL)) {
  pld_tile *t = pld_load(k, x, 0, 0, 1, RL);
  pld_store(k, t, pld_local(data), 0, 0);
  pld_store(k, t, pld_local(stage), 0, 0);
  pld_tile_free(k, t);
  for (int64_t r = 0; r < pld_tensor_dim(x, 0); r++) {
    t = pld_load(k, x, r, 0, 1, RL);
    pld_store(k, t, pld_local(mat), r, 0);
    pld_tile_free(k, t);
  }
}

PLD_KERNEL(k_out, k, PLD_WINDOW(data, FP32, RL), PLD_OUT(y, FP32, RL)) {
  pld_tile *t = pld_load(k, pld_local(data), 0, 0, 1, RL);
  pld_store(k, t, y, 0, 0);
  pld_tile_free(k, t);
}

PLD_DEVICE(d_misuse, cpu, MISUSE_PARAMS, PLD_OUT(y, FP32, RL),
           PLD_SCALAR(blocks, INT32), PLD_SCALAR(cube, INT32)) {
  pld_launch(cpu, k_in, 1, x, data, mat, stage);
  pld_launch(cpu, cube ? k_cube : k_misuse, blocks, flag, x, sc, cnt2, rc, data,
             data2, datai, du8, d64, mat, tgt, stage, tgtrow, wide, tgti, sig,
             sigs, sig2, sigf, over, tall, mtall);
  pld_launch(cpu, k_out, 1, data, y);
}

/* Rank `odd` (if >= 0) launches on blocks + 1 blocks; sig has the cells
 * of the most blocks, sigs short_cells. */
PLD_HOST(h_misuse, h, PLD_IN(flag, INT32, NFL), PLD_IN(x, FP32, NR, NR, RL),
         PLD_IN(sc, INT32, NR, NR), PLD_INOUT(cnt2, INT32, NR, NR, 2),
         PLD_OUT(rc, INT32, NR, NR), PLD_OUT(y, FP32, NR, RL),
         PLD_SCALAR(blocks, INT32), PLD_SCALAR(odd, INT32),
         PLD_SCALAR(short_cells, INT32), PLD_SCALAR(cube, INT32)) {
  const int n = pld_world_size(h);
  const int64_t ns = PLD_SIGNAL_CELLS(n, blocks + (odd >= 0));
  pld_window_buf b[B_SIGF + 1];
  b[B_DATA] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(RL));
  b[B_DATA2] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(RL2));
  b[B_DATAI] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(RL));
  b[B_DU8] = pld_window_alloc_shape(h, PLD_UINT8, PLD_SHAPE(RL));
  b[B_D64] = pld_window_alloc_shape(h, PLD_INT64, PLD_SHAPE(RL));
  b[B_MAT] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, RL));
  b[B_TGT] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, RL));
  b[B_STAGE] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(RL));
  b[B_WIDE] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(n, RL2));
  b[B_TGTI] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, RL));
  /* Room for the view `over` too. */
  b[B_SIG] = pld_window_alloc(h, (size_t)(ns > n * RL ? ns : n * RL) * 4);
  b[B_SIGS] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(short_cells));
  b[B_SIG2] = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(n, ns));
  b[B_SIGF] = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(ns));
  for (int q = 0; q < n; q++)
    pld_dispatch(
        h, d_misuse, q, flag, pld_slice(h, x, q), pld_slice(h, sc, q),
        pld_slice(h, cnt2, q), pld_slice(h, rc, q),
        pld_window_view(h, b[B_DATA], PLD_FP32, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_DATA2], PLD_FP32, PLD_SHAPE(RL2)),
        pld_window_view(h, b[B_DATAI], PLD_INT32, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_DU8], PLD_UINT8, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_D64], PLD_INT64, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_MAT], PLD_FP32, PLD_SHAPE(n, RL)),
        pld_window_view(h, b[B_TGT], PLD_FP32, PLD_SHAPE(n, RL)),
        pld_window_view(h, b[B_STAGE], PLD_FP32, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_TGT], PLD_FP32, PLD_SHAPE(RL)),
        pld_window_view(h, b[B_WIDE], PLD_FP32, PLD_SHAPE(n, RL2)),
        pld_window_view(h, b[B_TGTI], PLD_INT32, PLD_SHAPE(n, RL)),
        pld_window_view(h, b[B_SIG], PLD_INT32, PLD_SHAPE(ns)),
        pld_window_view(h, b[B_SIGS], PLD_INT32, PLD_SHAPE(short_cells)),
        pld_window_view(h, b[B_SIG2], PLD_INT32, PLD_SHAPE(n, ns)),
        pld_window_view(h, b[B_SIGF], PLD_FP32, PLD_SHAPE(ns)),
        pld_window_view(h, b[B_SIG], PLD_FP32, PLD_SHAPE(n, RL)),
        pld_window_view(h, b[B_TGT], PLD_FP32, PLD_SHAPE(2 * n, RL / 2)),
        pld_window_view(h, b[B_MAT], PLD_FP32, PLD_SHAPE(2 * n, RL / 2)),
        pld_slice(h, y, q), q == odd ? blocks + 1 : blocks, cube);
}

/* ---- running it ---------------------------------------------------------- */

/* A compiled h_misuse over p ranks and its tensors. */
struct prog {
  int p, c, cube;
  pld_tensor flag, x, sc, cnt2, rc, y;
  int32_t blocks, odd, short_cells;
  int32_t arg;       /* flag[FL_ARG] of the runs */
  int32_t bad_first; /* flag[FL_BAD_FIRST] of the runs */
  pld_program *prog;
};

/* x[q][r][i] = 10 q + r + i: sums exact, ranks and rows apart; send
 * counts all MAX (1): every rank sends its row. */
static void prog_init(struct prog *g, int p, int c, int odd, int short_cells,
                      int cube) {
  memset(g, 0, sizeof *g);
  g->p = p, g->c = c, g->cube = cube;
  g->blocks = c, g->odd = odd, g->short_cells = short_cells;
  g->flag = comm_int_tensor(0, 1, (int64_t[]){NFL});
  g->x = comm_tensor(PLD_FP32, 3, (int64_t[]){p, p, RL});
  float *xs = pld_tensor_data(g->x);
  for (int64_t i = 0; i < pld_tensor_numel(g->x); i++)
    xs[i] = (float)(10 * (i / (p * RL)) + i % (p * RL) / RL + i % RL);
  g->sc = comm_int_tensor(1, 2, (int64_t[]){p, p});
  g->cnt2 = comm_int_tensor(0, 3, (int64_t[]){p, p, 2});
  g->rc = comm_int_tensor(0, 2, (int64_t[]){p, p});
  g->y = comm_tensor(PLD_FP32, 2, (int64_t[]){p, RL});
  pld_config cfg = comm_config(p);
  assert_ok(pld_compile(h_misuse, &cfg,
                        PLD_ARGS(g->flag, g->x, g->sc, g->cnt2, g->rc, g->y,
                                 g->blocks, g->odd, g->short_cells, cube),
                        &g->prog));
}

static void prog_free(struct prog *g) {
  pld_program_destroy(g->prog);
  assert_no_children();
  pld_tensor t[] = {g->flag, g->x, g->sc, g->cnt2, g->rc, g->y};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    pld_tensor_destroy(t[i]);
}

/* Runs with rank `bad` making call `bad_call` where the others make
 * `good_call`, `calls` calls each; *seconds is how long it took. */
static int prog_run(struct prog *g, int bad, int bad_call, int good_call,
                    int calls, double *seconds) {
  int32_t *f = pld_tensor_data(g->flag);
  f[FL_BAD] = bad, f[FL_BAD_CALL] = bad_call, f[FL_GOOD_CALL] = good_call;
  f[FL_CALLS] = calls, f[FL_ARG] = g->arg, f[FL_BAD_FIRST] = g->bad_first;
  return comm_timed_run(g->prog,
                        PLD_ARGS(g->flag, g->x, g->sc, g->cnt2, g->rc, g->y,
                                 g->blocks, g->odd, g->short_cells, g->cube),
                        seconds);
}

/* Every rank calls `what` correctly: y is every rank's row 0 summed
 * (allreduce) or rank 0's (broadcast), bitwise. */
static void prog_runs_correctly(struct prog *g, int what) {
  double seconds;
  assert_ok(prog_run(g, 0, what, what, 1, &seconds));
  const float *xs = pld_tensor_data(g->x), *ys = pld_tensor_data(g->y);
  for (int q = 0; q < g->p; q++)
    for (int i = 0; i < RL; i++) {
      float want = 0;
      for (int s = 0; s < g->p; s++)
        if (what == C_ALLREDUCE || s == 0)
          want += xs[s * g->p * RL + i];
      if (ys[q * RL + i] != want) {
        print_error("rank %d element %d: got %g, expected %g\n", q, i,
                    (double)ys[q * RL + i], (double)want);
        fail();
      }
    }
}

/* One mistake: rank `bad` calls `bad_call` where the others call
 * `good_call`; the run fails with `status` and a message that contains the
 * kernel's identity and each of says[]. */
struct mistake {
  int bad, bad_call, good_call, status;
  const char *fn;
  const char *says[3];
};

#define NCASES(cases) (sizeof(cases) / sizeof((cases)[0]))

/* "window 'name' (buffer #b)" */
static const char *win(const char *name, int b) {
  static char buf[8][64];
  static int next;
  char *s = buf[next++ % 8];
  snprintf(s, 64, "window '%s' (buffer #%d)", name, b);
  return s;
}

/* Compiles h_misuse over p ranks on c blocks, runs each mistake, then a
 * correct allreduce. */
static void expect_mistakes(int p, int c, int short_cells, int cube,
                            const struct mistake *cases, size_t ncases) {
  if (!comm_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, c, -1, short_cells, cube);
  for (size_t i = 0; i < ncases; i++) {
    const struct mistake *m = &cases[i];
    double seconds;
    int st = prog_run(&g, m->bad, m->bad_call, m->good_call, 1, &seconds);
    char who[160];
    snprintf(who, sizeof who, "%s: kernel %s (rank %d, device %d, %s core ",
             m->fn, cube ? "k_cube" : "k_misuse", m->bad, comm_ids[m->bad],
             cube ? "AIC" : "AIV");
    const char *subs[] = {who, m->says[0], m->says[1], m->says[2], NULL};
    pld_test_assert_fails(st, m->status, __FILE__, __LINE__, subs);
  }
  prog_runs_correctly(&g, cube ? C_BROADCAST_0 : C_ALLREDUCE);
  prog_free(&g);
}

/* ---- the signal window --------------------------------------------------- */

/* A signal window of `cells` cells, fewer than PLD_SIGNAL_CELLS(p, c),
 * over p ranks on c blocks; the window of exactly PLD_SIGNAL_CELLS(p, c)
 * works (the correct run). */
static void signal_too_small(int p, int c, int cells) {
  const int need = PLD_SIGNAL_CELLS(p, c);
  char shape[96], expect[96];
  snprintf(shape, sizeof shape, "%s is INT32[%d]: ", win("sigs", B_SIGS),
           cells);
  snprintf(expect, sizeof expect,
           "expected INT32[n] with n >= %d (PLD_SIGNAL_CELLS(%d, %d))", need, p,
           c);
  /* clang-format off */
  const struct mistake cases[] = {
      {p - 1, C_SIG_SHORT, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce",
       {shape, expect}},
      {0, C_ALLGATHER_SIG_SHORT, C_ALLGATHER, PLD_ERR_ARG, "pld_allgather",
       {shape, expect}},
  };
  /* clang-format on */
  expect_mistakes(p, c, cells, 0, cases, NCASES(cases));
}

/* One cell short, for the rank count (1 block) and the block count (2);
 * and a window sized for one block on two. */
static void test_signal_too_small(void **state) {
  (void)state;
  for (int p = 1; p <= 5; p += 2)
    for (int c = 1; c <= 2; c++)
      signal_too_small(p, c, PLD_SIGNAL_CELLS(p, c) - 1);
  signal_too_small(4, 2, PLD_SIGNAL_CELLS(4, 1));
  comm_ran_or_skip();
}

/* The signal is a 1-D INT32 window. */
static void test_signal_2d_or_fp32(void **state) {
  (void)state;
  const int need = PLD_SIGNAL_CELLS(3, 1);
  char s2[96], sf[96], expect[96];
  snprintf(s2, sizeof s2, "%s is INT32[3, %d]: ", win("sig2", B_SIG2), need);
  snprintf(sf, sizeof sf, "%s is FP32[%d]: ", win("sigf", B_SIGF), need);
  snprintf(expect, sizeof expect,
           "expected INT32[n] with n >= %d (PLD_SIGNAL_CELLS(3, 1))", need);
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_SIG_2D, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce", {s2, expect}},
      {2, C_SIG_FP32, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce", {sf, expect}},
  };
  /* clang-format on */
  expect_mistakes(3, 1, need, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* ---- buffers that overlap ------------------------------------------------ */

static void test_overlapping_buffers(void **state) {
  (void)state;
  char stage[160], data[160], target[160];
  snprintf(stage, sizeof stage, "stage 'tgtrow' and %s share memory",
           win("tgt", B_TGT));
  snprintf(data, sizeof data, "%s and %s share memory", win("over", B_SIG),
           win("sig", B_SIG));
  snprintf(target, sizeof target, "%s and %s share memory", win("over", B_SIG),
           win("sig", B_SIG));
  const char *why = "the collective would read what it writes; use separate "
                    "buffers";
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_STAGE_OVERLAPS, C_ALLGATHER, PLD_ERR_ARG, "pld_allgather",
       {stage, why}},
      {0, C_DATA_OVERLAPS_SIG, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce",
       {data, why}},
      {2, C_REDUCE_SCATTER_OVERLAPS_SIG, C_REDUCE_SCATTER, PLD_ERR_ARG,
       "pld_reduce_scatter", {data, why}},
      {1, C_TARGET_OVERLAPS_SIG, C_ALLGATHER, PLD_ERR_ARG, "pld_allgather",
       {target, why}},
  };
  /* clang-format on */
  expect_mistakes(3, 1, 1, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* ---- arguments ------------------------------------------------------------
 */

/* The root is a rank of the domain: -1 and P are not. */
static void test_root_outside_domain(void **state) {
  (void)state;
  char neg[128], p[128];
  snprintf(neg, sizeof neg,
           "root: expected a rank of the domain of %s, [0, 4), got -1",
           win("data", B_DATA));
  snprintf(p, sizeof p,
           "root: expected a rank of the domain of %s, [0, 4), got 4",
           win("data", B_DATA));
  /* clang-format off */
  const struct mistake cases[] = {
      {3, C_BROADCAST_NEG, C_BROADCAST_0, PLD_ERR_BOUNDS, "pld_broadcast",
       {neg}},
      {0, C_BROADCAST_P, C_BROADCAST_0, PLD_ERR_BOUNDS, "pld_broadcast", {p}},
  };
  /* clang-format on */
  expect_mistakes(4, 1, 1, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* Shapes: a leading dimension that is not P; all-to-all's input and
 * target of another dtype or shape; an allgather stage of another size or
 * dtype than a row of the target. */
static void test_shapes_that_do_not_match(void **state) {
  (void)state;
  char lead[128], a2a_dt[160], a2a_shape[160], ag_size[200], ag_dt[200];
  snprintf(lead, sizeof lead,
           "%s is FP32[4]: its leading dimension must be 3, the ranks of its "
           "domain",
           win("data", B_DATA));
  snprintf(a2a_dt, sizeof a2a_dt,
           "input 'x' is FP32[3, 4], %s is INT32[3, 4]: expected the same "
           "dtype and shape",
           win("tgti", B_TGTI));
  snprintf(a2a_shape, sizeof a2a_shape,
           "input 'x' is FP32[3, 4], %s is FP32[3, 5]: expected the same "
           "dtype and shape",
           win("wide", B_WIDE));
  snprintf(ag_size, sizeof ag_size,
           "stage 'stage' is FP32[4], %s is FP32[3, 5]: the target holds one "
           "stage per rank (3 rows of 5 FP32 elements)",
           win("wide", B_WIDE));
  snprintf(ag_dt, sizeof ag_dt,
           "stage 'stage' is FP32[4], %s is INT32[3, 4]: the target holds "
           "one stage per rank (3 rows of 4 INT32 elements)",
           win("tgti", B_TGTI));
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_REDUCE_SCATTER_1D, C_REDUCE_SCATTER, PLD_ERR_ARG,
       "pld_reduce_scatter", {lead}},
      {2, C_ALL_TO_ALL_DTYPE, C_ALL_TO_ALL, PLD_ERR_ARG, "pld_all_to_all",
       {a2a_dt}},
      {0, C_ALL_TO_ALL_SHAPE, C_ALL_TO_ALL, PLD_ERR_ARG, "pld_all_to_all",
       {a2a_shape}},
      {1, C_ALLGATHER_SIZE, C_ALLGATHER, PLD_ERR_ARG, "pld_allgather",
       {ag_size}},
      {2, C_ALLGATHER_DTYPE, C_ALLGATHER, PLD_ERR_ARG, "pld_allgather",
       {ag_dt}},
  };
  /* clang-format on */
  expect_mistakes(3, 1, 1, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* Reductions take FP32, FP16, BF16, INT32, INT16 and INT8; ops and modes
 * are the enums' values. */
static void test_dtype_op_mode(void **state) {
  (void)state;
  char u8[160], i64[160];
  const char *takes = "reductions take FP32, FP16, BF16, INT32, INT16 or INT8";
  snprintf(u8, sizeof u8, "SUM %s is UINT8: ", win("du8", B_DU8));
  snprintf(i64, sizeof i64, "MAX %s is INT64: ", win("d64", B_D64));
  const char *op4 = "op: expected PLD_REDUCE_SUM, _MAX, _MIN or _PROD, got 4";
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_ALLREDUCE_UINT8, C_ALLREDUCE, PLD_ERR_UNSUPPORTED, "pld_allreduce",
       {u8, takes}},
      {0, C_REDUCE_SCATTER_INT64, C_REDUCE_SCATTER, PLD_ERR_UNSUPPORTED,
       "pld_reduce_scatter", {i64, takes}},
      {2, C_ALLREDUCE_OP_4, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce", {op4}},
      {1, C_ALLREDUCE_OP_NEG, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce",
       {"op: expected PLD_REDUCE_SUM, _MAX, _MIN or _PROD, got -1"}},
      {0, C_REDUCE_SCATTER_OP_4, C_REDUCE_SCATTER, PLD_ERR_ARG,
       "pld_reduce_scatter", {op4}},
      {2, C_ALLREDUCE_MODE_4, C_ALLREDUCE, PLD_ERR_ARG, "pld_allreduce",
       {"mode: expected PLD_ALLREDUCE_AUTO, _MESH, _TWO_PHASE or _RING, "
        "got 4"}},
  };
  /* clang-format on */
  expect_mistakes(3, 1, 1, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* A reducing collective on a cube core; broadcast (data movement) works
 * there (the correct run). */
static void test_reduction_on_cube_core(void **state) {
  (void)state;
  const char *why = "runs on vector cores (PLD_KERNEL); a cube core "
                    "(PLD_CUBE_KERNEL) does matmul and data movement only";
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_ALLREDUCE, C_BROADCAST_0, PLD_ERR_LEVEL, "pld_allreduce", {why}},
      {0, C_REDUCE_SCATTER, C_BROADCAST_0, PLD_ERR_LEVEL, "pld_reduce_scatter",
       {why}},
  };
  /* clang-format on */
  expect_mistakes(2, 1, 1, 1, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* Reductions stage data through tiles: an allreduce of RL FP32 elements
 * takes a staging tile and an accumulator of 16 bytes each, 32 with the
 * 32-byte alignment of tile starts.  With all but 64 bytes of the Unified
 * Buffer taken by the kernel it runs; with one byte more taken it fails
 * with PLD_ERR_TILE_MEMORY (a2a3sim: 192 KiB). */
static void test_tile_memory_taken(void **state) {
  (void)state;
  struct prog g;
  prog_init(&g, 2, 1, -1, 1, 0);
  const pld_platform_info *pf = pld_platform_find("a2a3sim");
  assert_non_null(pf);
  double seconds;
  g.arg = (int32_t)pf->ub_bytes - 64;
  assert_ok(prog_run(&g, 1, C_TILES_TAKEN, C_ALLREDUCE, 1, &seconds));
  g.arg++;
  char in_use[96];
  snprintf(in_use, sizeof in_use, "of %zu bytes of the AIV core", pf->ub_bytes);
  assert_fails_with(prog_run(&g, 1, C_TILES_TAKEN, C_ALLREDUCE, 1, &seconds),
                    PLD_ERR_TILE_MEMORY,
                    "pld_allreduce: kernel k_misuse (rank 1, device 1, AIV "
                    "core ",
                    "tile memory over capacity", in_use);
  prog_runs_correctly(&g, C_ALLREDUCE);
  prog_free(&g);
}

/* ---- all-to-all-v counts ---------------------------------------------------
 */

/* Runs all-to-all-v over p ranks with rank `bad` sending `count` rows to
 * rank `to` (every other count MAX = 1); returns the status, after
 * checking the rows and counts when it worked. */
static int all_to_all_v_counts(struct prog *g, int bad, int to, int count) {
  int32_t *sc = pld_tensor_data(g->sc);
  for (int i = 0; i < g->p * g->p; i++)
    sc[i] = 1;
  sc[bad * g->p + to] = count;
  double seconds;
  int st = prog_run(g, bad, C_ALL_TO_ALL_V, C_ALL_TO_ALL_V, 1, &seconds);
  if (st == PLD_OK) {
    const int32_t *rc = pld_tensor_data(g->rc);
    for (int q = 0; q < g->p; q++)
      for (int s = 0; s < g->p; s++)
        assert_int_equal(rc[q * g->p + s], sc[s * g->p + q]);
  }
  return st;
}

/* A count of MAX + 1 or -1 fails before anything moves, naming the count;
 * MAX and 0 work. */
static void test_all_to_all_v_counts(void **state) {
  (void)state;
  struct prog g;
  prog_init(&g, 3, 1, -1, 1, 0);
  const char *target = "the rows of a block of target FP32[3, ...] over 3 "
                       "ranks";
  assert_fails_with(all_to_all_v_counts(&g, 1, 2, 2), PLD_ERR_BOUNDS,
                    "pld_all_to_all_v: kernel k_misuse (rank 1, device ",
                    "send_counts[2] is 2: expected 0 to 1", target);
  assert_fails_with(all_to_all_v_counts(&g, 2, 0, -1), PLD_ERR_BOUNDS,
                    "pld_all_to_all_v: kernel k_misuse (rank 2, device ",
                    "send_counts[0] is -1: expected 0 to 1", target);
  assert_ok(all_to_all_v_counts(&g, 1, 2, 1));
  assert_ok(all_to_all_v_counts(&g, 0, 0, 0));
  prog_runs_correctly(&g, C_ALLREDUCE);
  prog_free(&g);
}

/* Count tensors are INT32[P]. */
static void test_all_to_all_v_count_shapes(void **state) {
  (void)state;
  /* clang-format off */
  const struct mistake cases[] = {
      {1, C_ALL_TO_ALL_V_SEND_SHAPE, C_ALL_TO_ALL_V, PLD_ERR_ARG,
       "pld_all_to_all_v",
       {"send_counts 'cnt2' is INT32[3, 2]: expected INT32[3], a count per "
        "rank"}},
      {2, C_ALL_TO_ALL_V_RECV_SHAPE, C_ALL_TO_ALL_V, PLD_ERR_ARG,
       "pld_all_to_all_v",
       {"recv_counts 'cnt2' is INT32[3, 2]: expected INT32[3], a count per "
        "rank"}},
  };
  /* clang-format on */
  expect_mistakes(3, 1, 1, 0, cases, NCASES(cases));
  comm_ran_or_skip();
}

/* ---- mismatched calls ---------------------------------------------------- */

/* What the mismatch message says of each call. */
static void describe(char *buf, size_t cap, int what, int c) {
  const char *blocks = c == 1 ? "1 block" : "2 blocks";
  switch (what) {
  case C_ALLREDUCE:
  case C_ALLREDUCE_MAX:
  case C_ALLREDUCE_RING:
    snprintf(buf, cap, "pld_allreduce(%s, FP32, 4 elements, %s, %s)",
             what == C_ALLREDUCE_MAX ? "MAX" : "SUM",
             what == C_ALLREDUCE_RING ? "ring" : "mesh", blocks);
    break;
  case C_ALLREDUCE_COUNT:
    snprintf(buf, cap, "pld_allreduce(SUM, FP32, 5 elements, mesh, %s)",
             blocks);
    break;
  case C_ALLREDUCE_INT32:
    snprintf(buf, cap, "pld_allreduce(SUM, INT32, 4 elements, mesh, %s)",
             blocks);
    break;
  case C_BROADCAST_0:
  case C_BROADCAST_1:
    snprintf(buf, cap, "pld_broadcast(FP32, 4 elements, root %d, %s)",
             what - C_BROADCAST_0, blocks);
    break;
  case C_REDUCE_SCATTER:
    snprintf(buf, cap, "pld_reduce_scatter(SUM, FP32, 12 elements, %s)",
             blocks);
    break;
  case C_ALLGATHER:
    snprintf(buf, cap, "pld_allgather(FP32, 4 elements, %s)", blocks);
    break;
  case C_ALL_TO_ALL_V: /* 3 ranks */
  case C_ALL_TO_ALL_V_TALL:
    snprintf(buf, cap, "pld_all_to_all_v(FP32, 12 elements in %d rows, %s)",
             what == C_ALL_TO_ALL_V ? 3 : 6, blocks);
    break;
  default: /* a barrier */
    snprintf(buf, cap,
             "no collective call 1 on this window (a pld_barrier, or another "
             "window's collective; its last call here is 0)");
    break;
  }
}

/* Over 3 ranks on c blocks (the rank at fault on c_bad), rank `bad` makes
 * call `bad_call` where the others make `good_call`: the run fails with
 * PLD_ERR_MISMATCH (not a hang) naming each rank's call; the program then
 * runs correctly. */
static void expect_mismatch(int c, int c_bad, int bad, int bad_call,
                            int good_call) {
  struct prog g;
  prog_init(&g, 3, c, c_bad != c ? bad : -1, 1, 0);
  double seconds;
  int st = prog_run(&g, bad, bad_call, good_call, 1, &seconds);
  char head[160], parts[3][200];
  snprintf(head, sizeof head,
           "ranks reached call 1 of signal %s (lane 0) with different calls: ",
           win("sig", B_SIG));
  for (int q = 0; q < 3; q++) {
    char d[160];
    describe(d, sizeof d, q == bad ? bad_call : good_call,
             q == bad ? c_bad : c);
    snprintf(parts[q], sizeof parts[q], "rank %d: %s", q, d);
  }
  assert_fails_with(st, PLD_ERR_MISMATCH, head, parts[0], parts[1], parts[2]);
  if (c_bad == c) {
    prog_runs_correctly(&g, C_ALLREDUCE);
  } else { /* every call mismatches here: a run without calls works */
    assert_ok(prog_run(&g, bad, C_NONE, C_NONE, 1, &seconds));
  }
  prog_free(&g);
}

/* Ranks that differ in the collective, the op, the dtype (two windows of
 * different dtypes on one signal), the element count, the root, the mode,
 * the block count, a barrier where the others call a collective, or an
 * all-to-all-v into the same bytes in rows half as long. */
static void test_mismatched_calls(void **state) {
  (void)state;
  static const struct {
    int c_bad, bad, bad_call, good_call;
  } cases[] = {
      {1, 1, C_BROADCAST_0, C_ALLREDUCE},
      {1, 0, C_REDUCE_SCATTER, C_ALLGATHER},
      {1, 2, C_ALLREDUCE_MAX, C_ALLREDUCE},
      {1, 0, C_ALLREDUCE_INT32, C_ALLREDUCE},
      {1, 1, C_ALLREDUCE_COUNT, C_ALLREDUCE},
      {1, 2, C_BROADCAST_1, C_BROADCAST_0},
      {1, 1, C_ALLREDUCE_RING, C_ALLREDUCE},
      {2, 2, C_ALLREDUCE, C_ALLREDUCE},
      {1, 1, C_BARRIER, C_ALLREDUCE},
      {1, 2, C_ALL_TO_ALL_V_TALL, C_ALL_TO_ALL_V},
  };
  for (size_t i = 0; i < NCASES(cases); i++)
    expect_mismatch(1, cases[i].c_bad, cases[i].bad, cases[i].bad_call,
                    cases[i].good_call);
}

/* ---- a notify of a collectives' signal ----------------------------------- */

/* Rank `bad` of p, on c blocks, makes a collective call (`good`), then
 * notifies cell `cell` of its signal window (the first, the last of the
 * view): refused, naming the collective; the others fail with it. */
static void stray_notify(int p, int c, int bad, int good, int cell,
                         const char *coll) {
  if (!comm_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, c, -1, PLD_SIGNAL_CELLS(p, c), 0);
  g.arg = cell;
  double seconds;
  int st = prog_run(&g, bad, C_STRAY_NOTIFY, good, 2, &seconds);
  char who[128], what[256];
  snprintf(who, sizeof who,
           "pld_notify: kernel k_misuse (rank %d, device %d, AIV core ", bad,
           comm_ids[bad]);
  snprintf(what, sizeof what,
           "cell [%d] of %s is a cell of the signal window %s used on rank "
           "%d in this program: the collectives count its cells, and "
           "nothing else may write or wait on them",
           cell, win("sig", B_SIG), coll, bad);
  const char *subs[] = {who, what, NULL};
  pld_test_assert_fails(st, PLD_ERR_ARG, __FILE__, __LINE__, subs);
  prog_runs_correctly(&g, C_ALLREDUCE);
  prog_free(&g);
}

static void test_stray_notify(void **state) {
  (void)state;
  const int p3 = (int)PLD_SIGNAL_CELLS(3, 1), p4 = (int)PLD_SIGNAL_CELLS(4, 2);
  stray_notify(2, 1, 1, C_ALLREDUCE, 0, "pld_allreduce");
  stray_notify(3, 1, 0, C_BARRIER, p3 - 1, "pld_barrier");
  stray_notify(4, 2, 2, C_BROADCAST_0, p4 - 1, "pld_broadcast");
  comm_ran_or_skip();
}

/* What a stray call of rank `bad` says when a collective used the signal
 * window (fn refuses cell `cell`): the remote store names bytes. */
static void stray_says(char *buf, size_t cap, int call, int bad, int cell,
                       const char *coll) {
  char at[64];
  if (call == C_STRAY_STORE)
    snprintf(at, sizeof at, "bytes [%d, %d) of %s hold cells of", cell * 4,
             cell * 4 + 4, win("sig", B_SIG));
  else
    snprintf(at, sizeof at, "cell [%d] of %s is a cell of", cell,
             win("sig", B_SIG));
  snprintf(buf, cap,
           "%s the signal window %s used on rank %d in this program: the "
           "collectives count its cells, and nothing else may write or wait "
           "on them",
           at, coll, bad);
}

static const char *const stray_fns[] = {"pld_notify", "pld_wait",
                                        "pld_remote_store", "pld_put_notify"};

/* After a collective call of every rank on sig, rank `bad` of p makes
 * stray call `call` (C_STRAY_*) on cell `cell`: refused, naming the
 * collective; then, in a later run of the program, the same call with no
 * collective before it in that run: refused too (the cells stay the
 * collectives' for the program's life). */
static void stray_after(int p, int bad, int call, int cell) {
  if (!comm_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, 1, -1, PLD_SIGNAL_CELLS(p, 1), 0);
  g.arg = cell;
  char who[128], what[320];
  snprintf(who, sizeof who,
           "%s: kernel k_misuse (rank %d, device %d, AIV core ",
           stray_fns[call - C_STRAY_NOTIFY], bad, comm_ids[bad]);
  stray_says(what, sizeof what, call, bad, cell, "pld_broadcast");
  double seconds;
  for (int run = 0; run < 2; run++) {
    int st = prog_run(&g, bad, call, run ? C_NONE : C_BROADCAST_0, 2, &seconds);
    const char *subs[] = {who, what, NULL};
    pld_test_assert_fails(st, PLD_ERR_ARG, __FILE__, __LINE__, subs);
  }
  prog_runs_correctly(&g, C_ALLREDUCE);
  prog_free(&g);
}

static void test_stray_use_after_a_collective(void **state) {
  (void)state;
  const int last2 = (int)PLD_SIGNAL_CELLS(2, 1) - 1,
            last4 = (int)PLD_SIGNAL_CELLS(4, 1) - 1;
  stray_after(2, 1, C_STRAY_WAIT, 0);
  stray_after(3, 2, C_STRAY_STORE, 1);
  stray_after(4, 0, C_STRAY_PUT, last4);
  stray_after(2, 0, C_STRAY_STORE, last2);
  stray_after(3, 0, C_STRAY_NOTIFY, 2);
  comm_ran_or_skip();
}

/* Rank `bad` of p makes stray call `call` on cell `cell` (the view's last,
 * which the first call leaves alone), then the collective call with the
 * others: the collective is refused, naming the stray call and the cell;
 * a later run's collective is refused too; a new program whose kernels
 * make the stray call on another window runs. */
static void stray_before(int p, int bad, int call, int cell) {
  if (!comm_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, 1, -1, PLD_SIGNAL_CELLS(p, 1), 0);
  g.arg = cell;
  g.bad_first = 1;
  char who[128], what[320];
  snprintf(who, sizeof who,
           "pld_allreduce: kernel k_misuse (rank %d, device %d, AIV core ", bad,
           comm_ids[bad]);
  snprintf(what, sizeof what,
           "signal %s: %s of rank %d used its cells in this program (the "
           "first: cell [%d]): the collectives count every cell of their "
           "signal window, and nothing else may write or wait on them",
           win("sig", B_SIG),
           call == C_STRAY_NOTIFY ? "pld_notify"
           : call == C_STRAY_WAIT ? "pld_wait"
           : call == C_STRAY_PUT  ? "pld_notify"
                                  : "a remote store",
           bad, cell);
  double seconds;
  for (int run = 0; run < 2; run++) {
    int st =
        prog_run(&g, bad, run ? C_ALLREDUCE : call, C_ALLREDUCE, 2, &seconds);
    const char *subs[] = {who, what, NULL};
    pld_test_assert_fails(st, PLD_ERR_ARG, __FILE__, __LINE__, subs);
  }
  prog_free(&g);
}

static void test_stray_use_before_a_collective(void **state) {
  (void)state;
  const int last2 = (int)PLD_SIGNAL_CELLS(2, 1) - 1,
            last3 = (int)PLD_SIGNAL_CELLS(3, 1) - 1,
            last4 = (int)PLD_SIGNAL_CELLS(4, 1) - 1;
  stray_before(2, 1, C_STRAY_NOTIFY, last2);
  stray_before(3, 0, C_STRAY_WAIT, last3);
  stray_before(4, 3, C_STRAY_STORE, last4);
  stray_before(3, 2, C_STRAY_PUT, last3);
  comm_ran_or_skip();
}

/* Only the signal view is the collectives': one buffer holds a cell
 * before it (`pre`) and a cell after it (`post`), each notified by the
 * next rank between two barriers and waited for; every rank's cells count
 * one notify each.  (The check's bounds: the view's first byte is its,
 * the byte after its last is not.) */
PLD_DYNAMIC(NSV); /* cells of the signal view */
PLD_KERNEL(k_beside, k, PLD_WINDOW(pre, INT32, 1), PLD_WINDOW(sv, INT32, NSV),
           PLD_WINDOW(post, INT32, 1), PLD_OUT(got, INT32, 2)) {
  const int32_t me = pld_rank(k, pld_window_comm(sv)),
                n = pld_nranks(k, pld_window_comm(sv));
  pld_barrier(k, sv);
  pld_notify(k, pre, comm_next(me, n), PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_notify(k, post, comm_next(me, n), PLD_AT(0), 1, PLD_NOTIFY_ADD);
  pld_wait(k, pre, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_wait(k, post, PLD_AT(0), 1, PLD_WAIT_GE);
  pld_barrier(k, sv);
  pld_write(k, got, PLD_AT(0), pld_read(k, pld_local(pre), PLD_AT(0)));
  pld_write(k, got, PLD_AT(1), pld_read(k, pld_local(post), PLD_AT(0)));
}
PLD_DEVICE(d_beside, a, PLD_WINDOW(pre, INT32, 1), PLD_WINDOW(sv, INT32, NSV),
           PLD_WINDOW(post, INT32, 1), PLD_OUT(got, INT32, 2)) {
  pld_launch(a, k_beside, 1, pre, sv, post, got);
}
PLD_HOST(h_beside, h, PLD_OUT(got, INT32, NR, 2)) {
  const int n = pld_world_size(h);
  const int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf b = pld_window_alloc(h, (size_t)(ns + 2) * 4);
  for (int q = 0; q < n; q++)
    pld_dispatch(
        h, d_beside, q, pld_window_view_at(h, b, 0, PLD_INT32, PLD_SHAPE(1)),
        pld_window_view_at(h, b, 4, PLD_INT32, PLD_SHAPE(ns)),
        pld_window_view_at(h, b, (size_t)(ns + 1) * 4, PLD_INT32, PLD_SHAPE(1)),
        pld_slice(h, got, q));
}

static void beside(int p) {
  if (!comm_world_fits(p))
    return;
  pld_config cfg = comm_config(p);
  pld_tensor got = comm_tensor(PLD_INT32, 2, (int64_t[]){p, 2});
  assert_ok(pld_run(h_beside, &cfg, PLD_ARGS(got)));
  const int32_t want[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  comm_expect_i32("pre and post, every rank", pld_tensor_data(got), want,
                  2 * p);
  pld_tensor_destroy(got);
}

static void test_notify_beside_signal(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++)
    beside(p);
}

/* Two signal windows alike but for their buffer (each a view of all of
 * its own buffer): a collective on each, then rank 0 notifies a cell of
 * the second, which is refused as a cell of that collectives' window (the
 * first's use does not stand for it). */
PLD_KERNEL(k_two_sigs, k, PLD_WINDOW(data, FP32, RL),
           PLD_WINDOW(sa, INT32, NSV), PLD_WINDOW(sb, INT32, NSV)) {
  const int32_t me = pld_rank(k, pld_window_comm(sa)),
                n = pld_nranks(k, pld_window_comm(sa));
  pld_allreduce(k, data, sa, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
  pld_allreduce(k, data, sb, PLD_REDUCE_SUM, PLD_ALLREDUCE_MESH);
  if (me == 0)
    pld_notify(k, sb, comm_next(me, n), PLD_AT(0), 1, PLD_NOTIFY_ADD);
}
PLD_DEVICE(d_two_sigs, a, PLD_WINDOW(data, FP32, RL),
           PLD_WINDOW(sa, INT32, NSV), PLD_WINDOW(sb, INT32, NSV)) {
  pld_launch(a, k_two_sigs, 1, data, sa, sb);
}
PLD_HOST(h_two_sigs, h) {
  const int n = pld_world_size(h);
  const int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf data = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(RL));
  pld_window_buf sa = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  pld_window_buf sb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(ns));
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_two_sigs, q,
                 pld_window_view(h, data, PLD_FP32, PLD_SHAPE(RL)),
                 pld_window_view(h, sa, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view(h, sb, PLD_INT32, PLD_SHAPE(ns)));
}

static void test_notify_second_signal(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    pld_config cfg = comm_config(p);
    assert_fails_with(pld_run(h_two_sigs, &cfg, 0, NULL), PLD_ERR_ARG,
                      "pld_notify: kernel k_two_sigs (rank 0,",
                      "cell [0] of window 'sb' (buffer #2) is a cell of the "
                      "signal window pld_allreduce used on rank 0");
  }
}

/* A stray notify is recorded though cells were used before it: the same
 * cell of another buffer laid out alike (`other`), and in the same buffer
 * the cell below the signal view (`pre`); then rank 0's notify of the
 * view's last cell, which neither of those uses holds, makes the
 * collective refused. */
PLD_KERNEL(k_after_uses, k, PLD_WINDOW(other, INT32, NSV),
           PLD_WINDOW(pre, INT32, 1), PLD_WINDOW(sv, INT32, NSV)) {
  const int32_t me = pld_rank(k, pld_window_comm(sv));
  const int64_t last = pld_tensor_dim(pld_local(sv), 0) - 1;
  if (me == 0) {
    pld_notify(k, other, 0, PLD_AT(last), 1, PLD_NOTIFY_ADD);
    pld_notify(k, pre, 0, PLD_AT(0), 1, PLD_NOTIFY_ADD);
    pld_notify(k, sv, 0, PLD_AT(last), 1, PLD_NOTIFY_ADD);
  }
  pld_barrier(k, sv);
}
PLD_DEVICE(d_after_uses, a, PLD_WINDOW(other, INT32, NSV),
           PLD_WINDOW(pre, INT32, 1), PLD_WINDOW(sv, INT32, NSV)) {
  pld_launch(a, k_after_uses, 1, other, pre, sv);
}
PLD_HOST(h_after_uses, h) {
  const int n = pld_world_size(h);
  const int64_t ns = PLD_SIGNAL_CELLS(n, 1);
  pld_window_buf o = pld_window_alloc(h, (size_t)(ns + 1) * 4);
  pld_window_buf b = pld_window_alloc(h, (size_t)(ns + 1) * 4);
  for (int q = 0; q < n; q++)
    pld_dispatch(h, d_after_uses, q,
                 pld_window_view_at(h, o, 4, PLD_INT32, PLD_SHAPE(ns)),
                 pld_window_view_at(h, b, 0, PLD_INT32, PLD_SHAPE(1)),
                 pld_window_view_at(h, b, 4, PLD_INT32, PLD_SHAPE(ns)));
}

static void test_stray_use_after_other_uses(void **state) {
  (void)state;
  for (int p = 2; p <= 4; p++) {
    if (!comm_world_fits(p))
      continue;
    pld_config cfg = comm_config(p);
    char what[160];
    snprintf(what, sizeof what,
             "pld_notify of rank 0 used its cells in this program (the "
             "first: cell [%d])",
             (int)PLD_SIGNAL_CELLS(p, 1) - 1);
    assert_fails_with(pld_run(h_after_uses, &cfg, 0, NULL), PLD_ERR_ARG,
                      "pld_barrier: kernel k_after_uses (rank 0,", what);
  }
}

/* ---- deadlock ------------------------------------------------------------ */

/* The line of the report about rank r that contains `what`, or NULL. */
static const char *report_line(const char *msg, int r, const char *what,
                               char *line, size_t cap) {
  char head[64];
  snprintf(head, sizeof head, "\n  rank %d (device %d): ", r, comm_ids[r]);
  for (const char *at = strstr(msg, head); at; at = strstr(at + 1, head)) {
    const char *end = strchr(at + 1, '\n');
    size_t n = end ? (size_t)(end - at - 1) : strlen(at + 1);
    snprintf(line, cap, "%.*s", (int)(n < cap ? n : cap - 1), at + 1);
    if (strstr(line, what))
      return line;
  }
  return NULL;
}

/* Every rank makes 3 allreduce calls on c blocks but rank `bad`, which
 * returns after 2: the others wait in call 3, reported within a second
 * (2 under mpirun) as a deadlock whose lines name, for each of their blocks,
 * pld_allreduce, call 3, round 1 and the rank it waits for; then the program
 * runs correctly. */
static void expect_deadlock(int p, int c, int bad) {
  if (!comm_fits(p))
    return;
  struct prog g;
  prog_init(&g, p, c, -1, 1, 0);
  for (int round = 0; round < 2; round++) {
    double seconds;
    int st = prog_run(&g, bad, C_NONE, C_ALLREDUCE, 3, &seconds);
    char finished[64];
    snprintf(finished, sizeof finished, "ranks already finished: %d", bad);
    assert_fails_with(st, PLD_ERR_DEADLOCK,
                      "pld_program_run: deadlock: these waits can never be "
                      "satisfied",
                      finished);
    /* Under mpirun the ranks' processes confirm it first: 2 s (as
     * mpi_faults.sh allows). */
    comm_assert_within("the deadlock's report", seconds, 0.05,
                       pld_process_count() > 1 ? 1.95 : 0.95);
    const char *msg = pld_last_error();
    for (int r = 0; r < p; r++)
      for (int b = 0; b < c && r != bad; b++) {
        char what[64], line[512];
        snprintf(what, sizeof what, "(block %d of %d) waits on %s", b, c,
                 win("sig", B_SIG));
        /* The entry barrier of call 3 is its first round; the credit
         * missing is the rank that returned. */
        char waits[128];
        snprintf(waits, sizeof waits,
                 "in pld_allreduce call 3, round 1; it waits for rank %d, "
                 "which has finished",
                 bad);
        const char *l = report_line(msg, r, what, line, sizeof line);
        if (!l || !strstr(l, waits)) {
          print_error("no wait of rank %d block %d saying \"%s\" in: %s\n", r,
                      b, waits, msg);
          fail();
        }
      }
    prog_runs_correctly(&g, C_ALLREDUCE);
  }
  prog_free(&g);
}

static void test_deadlock_rank_returns_early(void **state) {
  (void)state;
  expect_deadlock(3, 1, 1);
  expect_deadlock(4, 2, 0);
  comm_ran_or_skip();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_signal_too_small),
    cmocka_unit_test(test_signal_2d_or_fp32),
    cmocka_unit_test(test_overlapping_buffers),
    cmocka_unit_test(test_root_outside_domain),
    cmocka_unit_test(test_shapes_that_do_not_match),
    cmocka_unit_test(test_dtype_op_mode),
    cmocka_unit_test(test_reduction_on_cube_core),
    cmocka_unit_test(test_tile_memory_taken),
    cmocka_unit_test(test_all_to_all_v_counts),
    cmocka_unit_test(test_all_to_all_v_count_shapes),
    cmocka_unit_test(test_mismatched_calls),
    cmocka_unit_test(test_deadlock_rank_returns_early),
    cmocka_unit_test(test_stray_notify),
    cmocka_unit_test(test_stray_use_after_a_collective),
    cmocka_unit_test(test_stray_use_before_a_collective),
    cmocka_unit_test(test_notify_beside_signal),
    cmocka_unit_test(test_notify_second_signal),
    cmocka_unit_test(test_stray_use_after_other_uses),
};

PLD_TEST_MAIN("comm_collective_misuse", tests)
