/* mpi_workloads: the native side of bench_workloads - the same workloads
 * written with MPI and OpenBLAS, one process per rank, started by
 * bench_workloads under mpirun (bench_util.h's mpi_job).
 *
 *   mpi_workloads moe T H F E REPS CHECK   the MoE layer, top-2
 *   mpi_workloads ep T D K E REPS CHECK    EP dispatch + combine, top-K
 *   mpi_workloads tp T H F REPS CHECK      the TP-MLP
 *
 * Inputs and references: workloads.h (the same as bench_workloads').
 * Each rank makes its inputs and weights (not timed), runs the workload
 * once untimed (warm-up: first touches, MPI's connections), checks that
 * run's result against the plain C reference when CHECK is 1 (a sample
 * of rows: see check_rows), then REPS timed runs, each between an
 * MPI_Barrier and the end of the rank's last step, the figure being the
 * slowest rank's (MPI_Reduce MAX).  Process 0 prints the number of ranks
 * whose result was wrong, then the REPS times in seconds.
 *
 *   moe  logits = x Wg (cblas_sgemm); top-2 and softmax in plain C; rows
 *        copied into a send buffer grouped by expert (so by rank); the
 *        counts per expert by MPI_Alltoall, the rows (one per token and
 *        slot) by MPI_Alltoallv; the received rows packed per local
 *        expert (memcpy), h = x_e W1_e, relu, y_e = z W2_e (cblas_sgemm),
 *        unpacked into the order they came in, MPI_Alltoallv back, and
 *        out[t] = w0 y(t, 0) + w1 y(t, 1).
 *   ep   the routes given (wl_ep_route); each token sent once to each rank
 *        holding at least one of its experts (MPI_Alltoall of counts,
 *        MPI_Alltoallv of rows), the identity expert (the received rows
 *        are the outputs: nothing computed), MPI_Alltoallv back, and
 *        out[t] = sum_j w_j y(t, j), y(t, j) the row rank(e_j) sent back.
 *   tp   MPI_Allgather of the row blocks X_r, h = X W1_r, relu, part =
 *        z W2_r (cblas_sgemm), MPI_Reduce_scatter_block (sum) to the row
 *        blocks of Y.
 * OpenBLAS runs one thread per process (OPENBLAS_NUM_THREADS=1 is set by
 * bench_workloads): the ranks are the parallelism, as pld's devices are. */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "workloads.h"

static int rank, nranks;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "mpi_workloads: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

/* c [m, n] = a [m, k] @ b [k, n], row major. */
static void sgemm(int m, int n, int k, const float *a, const float *b,
                  float *c) {
  if (m > 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k,
                b, n, 0.0f, c, n);
}

/* Rows of this rank's T that a check looks at: every row up to 32, else
 * 32 spread over them (the plain C reference is a scalar loop). */
static int64_t check_step(int64_t t) { return t <= 32 ? 1 : t / 32; }

/* ---- moe ------------------------------------------------------------------
 */

struct moe {
  int64_t t, h, f, e, l;
  float *x, *wg, *w1, *w2; /* this rank's tokens, the gate, its L experts */
  float *logits, *tw, *send, *recv, *packed, *hbuf, *yb, *out;
  int32_t *ti, *slot_row;               /* top-2; per (t, j): its row of send */
  int *scount, *rcount, *sdisp, *rdisp; /* in floats, per rank */
  int *ecount, *recount;                /* per expert: sent, received [P][L] */
};

/* Local expert j's rows from every source rank: packed from recv into
 * m->packed (back 0), or from m->yb back where they came from in recv
 * (back 1).  Returns their number. */
static int64_t expert_rows(struct moe *m, int64_t j, int back) {
  const int64_t h = m->h, l = m->l;
  int64_t rows = 0;
  for (int s = 0; s < nranks; s++) {
    int64_t off = m->rdisp[s] / h;
    for (int64_t i = 0; i < j; i++)
      off += m->recount[s * l + i];
    const int64_t n = m->recount[s * l + j];
    const size_t bytes = sizeof(float) * (size_t)(n * h);
    if (back)
      memcpy(m->recv + off * h, m->yb + rows * h, bytes);
    else
      memcpy(m->packed + rows * h, m->recv + off * h, bytes);
    rows += n;
  }
  return rows;
}

static void moe_layer(struct moe *m) {
  const int64_t t = m->t, h = m->h, f = m->f, e = m->e, l = m->l;
  sgemm((int)t, (int)e, (int)h, m->x, m->wg, m->logits);
  for (int64_t i = 0; i < e; i++)
    m->ecount[i] = 0;
  for (int64_t i = 0; i < t; i++) {
    float v[2];
    wl_topk(m->logits + i * e, (int32_t)e, 2, m->ti + i * 2);
    v[0] = m->logits[i * e + m->ti[i * 2]];
    v[1] = m->logits[i * e + m->ti[i * 2 + 1]];
    wl_softmax(v, 2, m->tw + i * 2);
    m->ecount[m->ti[i * 2]]++;
    m->ecount[m->ti[i * 2 + 1]]++;
  }
  /* Rows grouped by expert: each (token, slot) its row. */
  int64_t base[256];
  for (int64_t i = 0, s = 0; i < e; i++) {
    base[i] = s;
    s += m->ecount[i];
  }
  for (int64_t i = 0; i < t; i++)
    for (int j = 0; j < 2; j++) {
      const int64_t row = base[m->ti[i * 2 + j]]++;
      m->slot_row[i * 2 + j] = (int32_t)row;
      memcpy(m->send + row * h, m->x + i * h, sizeof(float) * (size_t)h);
    }
  MPI_Alltoall(m->ecount, (int)l, MPI_INT, m->recount, (int)l, MPI_INT,
               MPI_COMM_WORLD);
  int sd = 0, rd = 0;
  for (int d = 0; d < nranks; d++) {
    int s = 0, r = 0;
    for (int64_t j = 0; j < l; j++) {
      s += m->ecount[d * l + j];
      r += m->recount[d * l + j];
    }
    m->scount[d] = s * (int)h;
    m->rcount[d] = r * (int)h;
    m->sdisp[d] = sd;
    m->rdisp[d] = rd;
    sd += m->scount[d];
    rd += m->rcount[d];
  }
  MPI_Alltoallv(m->send, m->scount, m->sdisp, MPI_FLOAT, m->recv, m->rcount,
                m->rdisp, MPI_FLOAT, MPI_COMM_WORLD);
  /* Per local expert: its rows from every source, packed, the FFN, and
   * the outputs back where the rows came from. */
  for (int64_t j = 0; j < l; j++) {
    const int64_t rows = expert_rows(m, j, 0);
    sgemm((int)rows, (int)f, (int)h, m->packed, m->w1 + j * h * f, m->hbuf);
    for (int64_t i = 0; i < rows * f; i++)
      m->hbuf[i] = m->hbuf[i] > 0.0f ? m->hbuf[i] : 0.0f;
    sgemm((int)rows, (int)h, (int)f, m->hbuf, m->w2 + j * f * h, m->yb);
    expert_rows(m, j, 1);
  }
  MPI_Alltoallv(m->recv, m->rcount, m->rdisp, MPI_FLOAT, m->send, m->scount,
                m->sdisp, MPI_FLOAT, MPI_COMM_WORLD);
  for (int64_t i = 0; i < t; i++) {
    const float *y0 = m->send + (int64_t)m->slot_row[i * 2] * h;
    const float *y1 = m->send + (int64_t)m->slot_row[i * 2 + 1] * h;
    const float w0 = m->tw[i * 2], w1 = m->tw[i * 2 + 1];
    for (int64_t c = 0; c < h; c++)
      m->out[i * h + c] = w0 * y0[c] + w1 * y1[c];
  }
}

/* Whether this rank's out matches the plain C layer (check_step's rows;
 * a token whose top-2 a rounding could flip is skipped). */
static int moe_check(const struct moe *m) {
  const int64_t t = m->t, h = m->h, e = m->e;
  const float *xs[32];
  int32_t idx[64];
  float w[64], lg[256], *wg = xmalloc(sizeof(float) * (size_t)(h * e));
  int64_t rows[32], n = 0;
  wl_fill(wg, h * e, WL_WG, 0, wl_scale(h));
  for (int64_t i = 0; i < t && n < 32; i += check_step(t)) {
    float v[2];
    xs[n] = m->x + i * h; /* n < 32: check_step gives at most 32 rows */
    wl_row_matmul(xs[n], wg, h, e, lg);
    if (wl_topk(lg, (int32_t)e, 2, idx + 2 * n) < 1e-4f)
      continue;
    v[0] = lg[idx[2 * n]], v[1] = lg[idx[2 * n + 1]];
    wl_softmax(v, 2, w + 2 * n);
    rows[n++] = i;
  }
  float *want = xmalloc(sizeof(float) * (size_t)(n * h));
  int bad = wl_moe_ref(n, xs, idx, w, h, m->f, (int32_t)e, want) != 0;
  for (int64_t q = 0; q < n && !bad; q++)
    for (int64_t c = 0; c < h && !bad; c++)
      if (!wl_close(m->out[rows[q] * h + c], want[q * h + c])) {
        fprintf(stderr,
                "mpi_workloads moe: rank %d, out[%lld][%lld] = %g, expected "
                "%g\n",
                rank, (long long)rows[q], (long long)c,
                (double)m->out[rows[q] * h + c], (double)want[q * h + c]);
        bad = 1;
      }
  free(wg), free(want);
  return bad;
}

static void *moe_init(int64_t t, int64_t h, int64_t f, int64_t e) {
  struct moe *m = xmalloc(sizeof *m);
  const int64_t l = e / nranks, cap = (int64_t)nranks * t * 2;
  *m = (struct moe){.t = t, .h = h, .f = f, .e = e, .l = l};
#define A(n) xmalloc(sizeof(float) * (size_t)(n))
  m->x = A(t * h), m->wg = A(h * e), m->w1 = A(l * h * f);
  m->w2 = A(l * f * h), m->logits = A(t * e), m->tw = A(t * 2);
  m->send = A(t * 2 * h), m->recv = A(cap * h), m->packed = A(cap * h);
  m->hbuf = A(cap * f), m->yb = A(cap * h), m->out = A(t * h);
#undef A
  m->ti = xmalloc(sizeof(int32_t) * (size_t)(t * 2));
  m->slot_row = xmalloc(sizeof(int32_t) * (size_t)(t * 2));
  m->scount = xmalloc(sizeof(int) * (size_t)nranks * 4);
  m->rcount = m->scount + nranks, m->sdisp = m->rcount + nranks;
  m->rdisp = m->sdisp + nranks;
  m->ecount = xmalloc(sizeof(int) * (size_t)e * 2);
  m->recount = m->ecount + e;
  wl_fill(m->x, t * h, WL_X, rank * t * h, 1.0f);
  wl_fill(m->wg, h * e, WL_WG, 0, wl_scale(h));
  wl_fill(m->w1, l * h * f, WL_W1, rank * l * h * f, wl_scale(h));
  wl_fill(m->w2, l * f * h, WL_W2, rank * l * f * h, wl_scale(f));
  return m;
}

/* ---- ep -------------------------------------------------------------------
 */

struct ep {
  int64_t t, d, k, e, l;
  float *x, *tw, *send, *recv, *out;
  int32_t *ti, *row; /* per (t, j): the row of send its rank's copy is in */
  int *scount, *rcount, *sdisp, *rdisp, *rows, *rrows;
};

static void ep_layer(struct ep *m) {
  const int64_t t = m->t, d = m->d, k = m->k, l = m->l;
  /* Per destination, the tokens that chose one of its experts, once. */
  for (int r = 0; r < nranks; r++)
    m->rows[r] = 0;
  for (int64_t i = 0; i < t; i++)
    for (int64_t j = 0; j < k; j++) {
      const int r = m->ti[i * k + j] / (int32_t)l;
      int64_t first = j;
      for (int64_t q = 0; q < j; q++)
        if (m->ti[i * k + q] / (int32_t)l == r && first == j)
          first = q;
      m->row[i * k + j] = first < j ? -1 - (int32_t)first : m->rows[r]++;
    }
  MPI_Alltoall(m->rows, 1, MPI_INT, m->rrows, 1, MPI_INT, MPI_COMM_WORLD);
  int sd = 0, rd = 0;
  for (int r = 0; r < nranks; r++) {
    m->scount[r] = m->rows[r] * (int)d;
    m->rcount[r] = m->rrows[r] * (int)d;
    m->sdisp[r] = sd;
    m->rdisp[r] = rd;
    sd += m->scount[r];
    rd += m->rcount[r];
  }
  for (int64_t i = 0; i < t; i++)
    for (int64_t j = 0; j < k; j++) {
      const int r = m->ti[i * k + j] / (int32_t)l;
      if (m->row[i * k + j] >= 0) {
        m->row[i * k + j] += m->sdisp[r] / (int)d;
        memcpy(m->send + (int64_t)m->row[i * k + j] * d, m->x + i * d,
               sizeof(float) * (size_t)d);
      }
    }
  MPI_Alltoallv(m->send, m->scount, m->sdisp, MPI_FLOAT, m->recv, m->rcount,
                m->rdisp, MPI_FLOAT, MPI_COMM_WORLD);
  /* The identity expert: the received rows go back as they are. */
  MPI_Alltoallv(m->recv, m->rcount, m->rdisp, MPI_FLOAT, m->send, m->scount,
                m->sdisp, MPI_FLOAT, MPI_COMM_WORLD);
  for (int64_t i = 0; i < t; i++) {
    float *o = m->out + i * d;
    for (int64_t c = 0; c < d; c++)
      o[c] = 0.0f;
    for (int64_t j = 0; j < k; j++) {
      int32_t q = m->row[i * k + j];
      if (q < 0)
        q = m->row[i * k + (-1 - q)];
      const float *y = m->send + (int64_t)q * d, w = m->tw[i * k + j];
      for (int64_t c = 0; c < d; c++)
        o[c] += w * y[c];
    }
  }
}

static int ep_check(const struct ep *m) {
  for (int64_t i = 0; i < m->t; i += check_step(m->t)) {
    float want_w = 0.0f;
    for (int64_t j = 0; j < m->k; j++)
      want_w += m->tw[i * m->k + j];
    for (int64_t c = 0; c < m->d; c++) {
      float want = 0.0f;
      for (int64_t j = 0; j < m->k; j++)
        want += m->tw[i * m->k + j] * m->x[i * m->d + c];
      if (!wl_close(m->out[i * m->d + c], want)) {
        fprintf(stderr,
                "mpi_workloads ep: rank %d, out[%lld][%lld] = %g, expected "
                "%g\n",
                rank, (long long)i, (long long)c, (double)m->out[i * m->d + c],
                (double)want);
        return 1;
      }
    }
  }
  return 0;
}

static void *ep_init(int64_t t, int64_t d, int64_t k, int64_t e) {
  struct ep *m = xmalloc(sizeof *m);
  *m = (struct ep){.t = t, .d = d, .k = k, .e = e, .l = e / nranks};
  m->x = xmalloc(sizeof(float) * (size_t)(t * d));
  m->tw = xmalloc(sizeof(float) * (size_t)(t * k));
  m->send = xmalloc(sizeof(float) * (size_t)(t * k * d));
  m->recv = xmalloc(sizeof(float) * (size_t)(nranks * t * k * d));
  m->out = xmalloc(sizeof(float) * (size_t)(t * d));
  m->ti = xmalloc(sizeof(int32_t) * (size_t)(t * k));
  m->row = xmalloc(sizeof(int32_t) * (size_t)(t * k));
  m->scount = xmalloc(sizeof(int) * (size_t)nranks * 6);
  m->rcount = m->scount + nranks, m->sdisp = m->rcount + nranks;
  m->rdisp = m->sdisp + nranks, m->rows = m->rdisp + nranks;
  m->rrows = m->rows + nranks;
  wl_fill(m->x, t * d, WL_X, rank * t * d, 1.0f);
  for (int64_t i = 0; i < t; i++)
    wl_ep_route(rank * t + i, (int32_t)e, (int32_t)k, m->ti + i * k,
                m->tw + i * k);
  return m;
}

/* ---- tp -------------------------------------------------------------------
 */

struct tp {
  int64_t t, h, f, mb, fl;
  float *x, *w1, *w2, *xall, *hbuf, *part, *y;
};

static void tp_layer(struct tp *m) {
  MPI_Allgather(m->x, (int)(m->mb * m->h), MPI_FLOAT, m->xall,
                (int)(m->mb * m->h), MPI_FLOAT, MPI_COMM_WORLD);
  sgemm((int)m->t, (int)m->fl, (int)m->h, m->xall, m->w1, m->hbuf);
  for (int64_t i = 0; i < m->t * m->fl; i++)
    m->hbuf[i] = m->hbuf[i] > 0.0f ? m->hbuf[i] : 0.0f;
  sgemm((int)m->t, (int)m->h, (int)m->fl, m->hbuf, m->w2, m->part);
  MPI_Reduce_scatter_block(m->part, m->y, (int)(m->mb * m->h), MPI_FLOAT,
                           MPI_SUM, MPI_COMM_WORLD);
}

/* Whether this rank's rows of Y match the plain C MLP (check_step's). */
static int tp_check(const struct tp *m) {
  const int64_t h = m->h, f = m->f;
  float *w1 = xmalloc(sizeof(float) * (size_t)(h * f));
  float *w2 = xmalloc(sizeof(float) * (size_t)(f * h));
  float *z = xmalloc(sizeof(float) * (size_t)f);
  float *y = xmalloc(sizeof(float) * (size_t)h);
  wl_fill(w1, h * f, WL_W1, 0, wl_scale(h));
  wl_fill(w2, f * h, WL_W2, 0, wl_scale(f));
  int bad = 0;
  for (int64_t i = 0; i < m->mb && !bad; i += check_step(m->mb)) {
    wl_ffn(m->x + i * h, w1, w2, h, f, z, y);
    for (int64_t c = 0; c < h && !bad; c++)
      if (!wl_close(m->y[i * h + c], y[c])) {
        fprintf(stderr,
                "mpi_workloads tp: rank %d, y[%lld][%lld] = %g, expected %g\n",
                rank, (long long)i, (long long)c, (double)m->y[i * h + c],
                (double)y[c]);
        bad = 1;
      }
  }
  free(w1), free(w2), free(z), free(y);
  return bad;
}

static void *tp_init(int64_t t, int64_t h, int64_t f) {
  struct tp *m = xmalloc(sizeof *m);
  *m = (struct tp){.t = t, .h = h, .f = f, .mb = t / nranks, .fl = f / nranks};
  const int64_t mb = m->mb, fl = m->fl;
  m->x = xmalloc(sizeof(float) * (size_t)(mb * h));
  m->w1 = xmalloc(sizeof(float) * (size_t)(h * fl));
  m->w2 = xmalloc(sizeof(float) * (size_t)(fl * h));
  m->xall = xmalloc(sizeof(float) * (size_t)(t * h));
  m->hbuf = xmalloc(sizeof(float) * (size_t)(t * fl));
  m->part = xmalloc(sizeof(float) * (size_t)(t * h));
  m->y = xmalloc(sizeof(float) * (size_t)(mb * h));
  wl_fill(m->x, mb * h, WL_X, rank * mb * h, 1.0f);
  for (int64_t i = 0; i < h; i++) /* W1's columns [r FL, (r+1) FL) */
    wl_fill(m->w1 + i * fl, fl, WL_W1, i * f + rank * fl, wl_scale(h));
  wl_fill(m->w2, fl * h, WL_W2, rank * fl * h, wl_scale(f));
  return m;
}

static void layer(int kind, void *m) {
  if (kind == 0)
    moe_layer(m);
  else if (kind == 1)
    ep_layer(m);
  else
    tp_layer(m);
}

static int checker(int kind, const void *m) {
  return kind == 0 ? moe_check(m) : kind == 1 ? ep_check(m) : tp_check(m);
}

/* ---- main -----------------------------------------------------------------
 */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int tp = argc == 7 && strcmp(argv[1], "tp") == 0;
  if (!tp && !(argc == 8 &&
               (strcmp(argv[1], "moe") == 0 || strcmp(argv[1], "ep") == 0))) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_workloads moe T H F E REPS CHECK | ep T D K "
                      "E REPS CHECK | tp T H F REPS CHECK\n");
    MPI_Finalize();
    return 2;
  }
  int64_t a[4];
  for (int i = 0; i < 4; i++)
    a[i] = atoll(argv[2 + i]);
  const int reps = atoi(argv[tp ? 5 : 6]), check = atoi(argv[tp ? 6 : 7]);
  const int kind = tp ? 2 : argv[1][0] == 'm' ? 0 : 1;
  void *m = kind == 0   ? moe_init(a[0], a[1], a[2], a[3])
            : kind == 1 ? ep_init(a[0], a[1], a[2], a[3])
                        : tp_init(a[0], a[1], a[2]);
  layer(kind, m); /* the warm-up */
  int bad = check ? checker(kind, m) : 0, nbad = 0;
  MPI_Reduce(&bad, &nbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%d\n", nbad);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    layer(kind, m);
    double t = now_s() - t0, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%.9f\n", tmax);
  }
  MPI_Finalize();
  return 0;
}
