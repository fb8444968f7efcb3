/* tests/comm/ep_ref.h: what the suites of pld/ep.h's calls share (the
 * kernel forms' test_ep.c and the host forms' test_host_ep.c): a case of
 * random routes and data, and the serial C reference of what each rank
 * receives and combines, written from the header's contract (not from the
 * library's code); the test's experts and a copy loop, in kernels; host
 * tensors of its floats; exact comparisons. */
#ifndef PLD_TESTS_EP_REF_H
#define PLD_TESTS_EP_REF_H

#include "comm_test.h"

/* What the kernel calls: MODE_MIX has rank 1 call pld_all_to_all_packed
 * where the others call pld_ep_dispatch; MODE_CUBE launches a cube kernel
 * that calls pld_ep_combine.  MODE_IN_PLACE: the experts write their
 * outputs over the received rows and the combine reads them there
 * (expert_out the window recv_x, the same view on every rank); with
 * MODE_ASKEW, rank 1 writes them into a device allocation and rank 2 into
 * the window of the packed all-to-all-v's target instead. */
enum {
  MODE_PACKED = 1,
  MODE_EP = 2,
  MODE_MIX = 4,
  MODE_CUBE = 8,
  MODE_MISCOUNT = 16, /* rank 1 adds 1 to recv_counts[0] before combine */
  MODE_IN_PLACE = 32,
  MODE_ASKEW = 64
};

/* What targets hold before a call, so that rows past the total are seen to
 * be left alone. */
#define SENTINEL (-3.0)

/* ---- in kernels ---------------------------------------------------------- */

/* Element-wise over a tensor of 1 or 2 dimensions: dst = src, or (src
 * NULL) dst = v. */
static inline void copy_all(pld_core k, pld_tensor src, pld_tensor dst,
                            double v) {
  const int nd = pld_tensor_ndim(dst);
  const int64_t rows = nd == 1 ? 1 : pld_tensor_dim(dst, 0);
  const int64_t cols = pld_tensor_dim(dst, nd - 1);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t at[2] = {nd == 1 ? c : r, c};
      const double x = src.p ? pld_read(k, src, nd, at) : v;
      pld_write(k, dst, nd, at, x);
    }
}

/* The experts: row r of ebuf = row r of rx times (global expert + 1), for
 * the rows of this rank's local experts (counts rc). */
static inline void experts_compute(pld_core k, pld_tensor rx, pld_tensor rc,
                                   pld_tensor ebuf, int32_t me) {
  const int64_t l = pld_tensor_dim(rc, 0), h = pld_tensor_dim(rx, 1);
  int64_t r = 0;
  for (int64_t e = 0; e < l; e++) {
    const int64_t n = (int64_t)pld_read(k, rc, PLD_AT(e));
    for (int64_t i = 0; i < n; i++, r++)
      for (int64_t c = 0; c < h; c++)
        pld_write(k, ebuf, PLD_AT(r, c),
                  pld_read(k, rx, PLD_AT(r, c)) * (double)(me * l + e + 1));
  }
}

/* ---- the reference ------------------------------------------------------- */

/* BF16 from its definition: the upper half of a float's bits, rounded to
 * nearest even (finite values only here). */
static inline uint16_t bf16_enc(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  b += 0x7fffu + (b >> 16 & 1u);
  return (uint16_t)(b >> 16);
}

static inline float bf16_dec(uint16_t v) {
  uint32_t b = (uint32_t)v << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static uint64_t rng_state;
static inline uint64_t rng(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static inline int32_t below(int32_t n) {
  return (int32_t)(rng() % (uint64_t)n);
}

/* A case: P ranks, E experts, T tokens of H columns, top-K, capacity
 * CAP; the packed all-to-all-v's N rows; values as floats (data of either
 * dtype holds them exactly). */
struct ep_case {
  pld_dtype dt;
  int p, e, t, h, k, cap, n, blocks, mode, reps;
  float *x, *w, *pin;  /* [P][T][H], [P][T][K], [P][N][H] */
  int32_t *idx, *scnt; /* [P][T][K], [P][P] */
};

static inline void case_init(struct ep_case *c, pld_dtype dt, int p, int e,
                             int t, int h, int k) {
  memset(c, 0, sizeof *c);
  c->dt = dt, c->p = p, c->e = e, c->t = t, c->h = h, c->k = k;
  c->n = 8, c->blocks = 1, c->mode = MODE_EP, c->reps = 2;
  c->x = calloc((size_t)(p * t * h), sizeof(float));
  c->w = calloc((size_t)(p * t * k), sizeof(float));
  c->pin = calloc((size_t)(p * c->n * h), sizeof(float));
  c->idx = calloc((size_t)(p * t * k), sizeof(int32_t));
  c->scnt = calloc((size_t)(p * p), sizeof(int32_t));
  assert_true(c->x && c->w && c->pin && c->idx && c->scnt);
}

static inline void case_free(struct ep_case *c) {
  free(c->x), free(c->w), free(c->pin), free(c->idx), free(c->scnt);
}

/* A value of the data: FP32 any multiple of 1/256 in [-4, 4); BF16 halves
 * in [-7, 7] (times an expert number up to 32 they stay exact). */
static inline float data_value(pld_dtype dt) {
  return dt == PLD_FP32 ? (float)(below(2048) - 1024) / 256.0f
                        : (float)(below(29) - 14) / 2.0f;
}

/* Random data and weights (a few values only: ties), and routes: each
 * token's K distinct experts, one slot in five masked. */
static inline void case_random(struct ep_case *c) {
  static const float weights[] = {0.125f, 0.3f, 0.3f, 0.7f, 1.1f, 0.05f};
  const int p = c->p, t = c->t, k = c->k;
  for (int i = 0; i < p * t * c->h; i++)
    c->x[i] = data_value(c->dt);
  for (int i = 0; i < p * c->n * c->h; i++)
    c->pin[i] = data_value(c->dt);
  for (int i = 0; i < p * t * k; i++)
    c->w[i] = weights[below(6)];
  for (int q = 0; q < p; q++)
    for (int tok = 0; tok < t; tok++) {
      int32_t *r = c->idx + (q * t + tok) * k;
      for (int j = 0; j < k; j++) {
        int32_t v;
        int again;
        do {
          v = below(c->e);
          again = 0;
          for (int i = 0; i < j; i++)
            again |= r[i] == v;
        } while (again);
        r[j] = v;
      }
      for (int j = 0; j < k; j++)
        if (below(5) == 0)
          r[j] = -1;
    }
}

/* What each rank receives: rows (source, token, slot) of each local expert
 * in the header's order, straight from the definition. */
struct ep_ref {
  int32_t *meta;     /* [P][CAP][4] */
  float *rx, *rw;    /* [P][CAP][H], [P][CAP] */
  int32_t *rc, *tot; /* [P][L], [P] */
  float *out;        /* [P][T][H]: the combined tokens, as floats */
  int32_t *tgt_rows; /* packed: [P] totals */
  float *tgt;        /* [P][CAP][H] */
  int32_t *pc;       /* [P][P] */
};

/* Rows that rank d would receive (to size capacities). */
static inline int ref_total(const struct ep_case *c, int d) {
  const int l = c->e / c->p;
  int n = 0;
  for (int i = 0; i < c->p * c->t * c->k; i++)
    n += c->idx[i] >= 0 && c->idx[i] / l == d;
  return n;
}

static inline int ref_max_total(const struct ep_case *c) {
  int m = 0;
  for (int d = 0; d < c->p; d++)
    m = ref_total(c, d) > m ? ref_total(c, d) : m;
  return m;
}

/* y(t, j) as the test's experts make it, in the data's dtype. */
static inline float expert_value(const struct ep_case *c, float x, int32_t e) {
  const double v = (double)x * (double)(e + 1);
  return c->dt == PLD_FP32 ? (float)v : bf16_dec(bf16_enc((float)v));
}

static inline void ref_build(const struct ep_case *c, struct ep_ref *r) {
  const int p = c->p, l = c->e / p, t = c->t, h = c->h, k = c->k;
  const int cap = c->cap;
  r->meta = calloc((size_t)(p * cap * 4), sizeof(int32_t));
  r->rx = calloc((size_t)(p * cap * h), sizeof(float));
  r->rw = calloc((size_t)(p * cap), sizeof(float));
  r->rc = calloc((size_t)(p * l), sizeof(int32_t));
  r->tot = calloc((size_t)p, sizeof(int32_t));
  r->out = calloc((size_t)(p * t * h), sizeof(float));
  r->tgt = calloc((size_t)(p * cap * h), sizeof(float));
  r->tgt_rows = calloc((size_t)p, sizeof(int32_t));
  r->pc = calloc((size_t)(p * p), sizeof(int32_t));
  assert_true(r->meta && r->rx && r->rw && r->rc && r->tot && r->out &&
              r->tgt && r->tgt_rows && r->pc);
  for (int i = 0; i < p * cap * 4; i++)
    r->meta[i] = (int32_t)SENTINEL;
  for (int i = 0; i < p * cap * h; i++)
    r->rx[i] = r->tgt[i] = (float)SENTINEL;
  for (int i = 0; i < p * cap; i++)
    r->rw[i] = (float)SENTINEL;
  /* Dispatch: for each receiver d, expert, source, token, slot. */
  for (int d = 0; d < p && (c->mode & MODE_EP); d++) {
    int row = 0;
    for (int e = 0; e < l; e++) {
      for (int s = 0; s < p; s++)
        for (int tok = 0; tok < t; tok++)
          for (int j = 0; j < k; j++) {
            if (c->idx[(s * t + tok) * k + j] != d * l + e)
              continue;
            assert_true(row < cap);
            int32_t *m = r->meta + (d * cap + row) * 4;
            m[0] = s, m[1] = tok, m[2] = j, m[3] = row;
            for (int q = 0; q < row; q++) { /* its first row here */
              const int32_t *o = r->meta + (d * cap + q) * 4;
              if (o[0] == s && o[1] == tok) {
                m[3] = q;
                break;
              }
            }
            memcpy(r->rx + (d * cap + row) * h, c->x + (s * t + tok) * h,
                   (size_t)h * sizeof(float));
            r->rw[d * cap + row] = c->w[(s * t + tok) * k + j];
            r->rc[d * l + e]++;
            row++;
          }
    }
    r->tot[d] = row;
  }
  /* Combine: acc = 0, then acc + w * y over the slots in order. */
  for (int s = 0; s < p; s++)
    for (int tok = 0; tok < t; tok++)
      for (int col = 0; col < h; col++) {
        float acc = 0.0f;
        for (int j = 0; j < k; j++) {
          const int32_t e = c->idx[(s * t + tok) * k + j];
          if (e < 0)
            continue;
          const float y = expert_value(c, c->x[(s * t + tok) * h + col], e);
          const float prod = c->w[(s * t + tok) * k + j] * y;
          acc = acc + prod;
        }
        r->out[(s * t + tok) * h + col] =
            c->dt == PLD_FP32 ? acc : bf16_dec(bf16_enc(acc));
      }
  /* Packed: receiver d's rows from source 0, then 1, ... */
  for (int d = 0; d < p; d++) {
    int row = 0;
    for (int s = 0; s < p; s++) {
      int first = 0;
      for (int q = 0; q < d; q++)
        first += c->scnt[s * p + q];
      const int cnt = c->scnt[s * p + d];
      r->pc[d * p + s] = cnt;
      for (int i = 0; i < cnt; i++, row++)
        if (row < cap)
          memcpy(r->tgt + (d * cap + row) * h,
                 c->pin + (s * c->n + first + i) * h,
                 (size_t)h * sizeof(float));
    }
    r->tgt_rows[d] = row;
  }
}

static inline void ref_free(struct ep_ref *r) {
  free(r->meta), free(r->rx), free(r->rw), free(r->rc), free(r->tot);
  free(r->out), free(r->tgt), free(r->tgt_rows), free(r->pc);
}

/* Host tensors of the data (floats into FP32 or BF16). */
static inline void put_floats(pld_tensor t, const float *v, int64_t n) {
  if (pld_tensor_dtype(t) == PLD_FP32) {
    memcpy(pld_tensor_data(t), v, (size_t)n * sizeof(float));
    return;
  }
  uint16_t *b = pld_tensor_data(t);
  for (int64_t i = 0; i < n; i++)
    b[i] = bf16_enc(v[i]);
}

static inline float get_float(pld_tensor t, int64_t i) {
  if (pld_tensor_dtype(t) == PLD_FP32)
    return ((const float *)pld_tensor_data(t))[i];
  return bf16_dec(((const uint16_t *)pld_tensor_data(t))[i]);
}

/* Float a and b have the same bits (the outputs are checked bit for
 * bit). */
static inline int same_bits(float a, float b) { return !memcmp(&a, &b, 4); }

static inline void expect_float(const char *what, int q, int64_t i, float got,
                                float want) {
  if (!same_bits(got, want)) {
    print_error("%s of rank %d, element %lld: got %.9g, expected %.9g\n", what,
                q, (long long)i, (double)got, (double)want);
    fail();
  }
}

static inline void expect_int(const char *what, int q, int64_t i, int32_t got,
                              int32_t want) {
  if (got != want) {
    print_error("%s of rank %d, element %lld: got %d, expected %d\n", what, q,
                (long long)i, (int)got, (int)want);
    fail();
  }
}

/* A token choosing two experts of the next rank (where the rank holds
 * two), and a token choosing one expert in two slots. */
static inline void add_doubles(struct ep_case *c) {
  const int l = c->e / c->p, t = c->t, k = c->k;
  for (int q = 0; q < c->p && l >= 2 && k >= 2 && t >= 2; q++) {
    int32_t *r = c->idx + (q * t + 0) * k;
    const int d = (q + 1) % c->p;
    r[0] = d * l + l - 1;
    r[1] = d * l;
    for (int j = 2; j < k; j++)
      r[j] = -1;
    int32_t *s = c->idx + (q * t + 1) * k;
    s[0] = s[k - 1] = q * l;
  }
}

/* The random case of both calls over p ranks (rng_state set before):
 * routes with add_doubles' tokens, a capacity two rows above the largest
 * receiver's, and packed counts of which some are zero. */
static inline void case_random_both(struct ep_case *c, pld_dtype dt, int p) {
  case_init(c, dt, p, p == 3 ? 3 * p : 2 * p, 9, 24, 3);
  case_random(c);
  add_doubles(c);
  c->cap = ref_max_total(c) + 2;
  c->mode = MODE_EP | MODE_PACKED;
  for (int q = 0; q < p; q++)
    for (int d = 0; d < p; d++)
      c->scnt[q * p + d] = (q + d) % 3 == 0 ? 0 : below(c->n / p + 1);
}

/* Rank 0 sends nothing (every slot masked) and rank P-1 receives nothing
 * (no token chooses its experts). */
static inline void case_route_around(struct ep_case *c) {
  const int l = c->e / c->p;
  for (int i = 0; i < c->p * c->t * c->k; i++)
    if (i < c->t * c->k || c->idx[i] / l == c->p - 1)
      c->idx[i] = -1;
}

/* Every token of every rank chooses expert 1 alone. */
static inline void case_all_to_expert_1(struct ep_case *c) {
  for (int i = 0; i < c->p * c->t * c->k; i++)
    c->idx[i] = i % c->k == 0 ? 1 : -1;
}

/* The rows the busiest receiver gets from dispatch, and (in *at) which
 * rank it is. */
static inline int ref_busiest(const struct ep_case *c, int *at) {
  int most = 0;
  *at = 0;
  for (int d = 0; d < c->p; d++)
    if (ref_total(c, d) > most)
      most = ref_total(c, d), *at = d;
  return most;
}

/* Random packed counts, one in five zero, and none from rank 0 to rank 1
 * nor back. */
static inline void case_packed_counts(struct ep_case *c) {
  const int p = c->p;
  for (int q = 0; q < p; q++)
    for (int d = 0; d < p; d++)
      c->scnt[q * p + d] = below(5) == 0 ? 0 : below(c->n / p + 1);
  c->scnt[0 * p + 1] = 0, c->scnt[1 * p + 0] = 0;
}

/* The rows the busiest receiver of the packed all-to-all-v gets (the sum
 * of its column of counts), and (in *at) which rank it is. */
static inline int packed_busiest(const struct ep_case *c, int *at) {
  int most = 0;
  *at = 0;
  for (int d = 0; d < c->p; d++) {
    int tot = 0;
    for (int s = 0; s < c->p; s++)
      tot += c->scnt[s * c->p + d];
    if (tot > most)
      most = tot, *at = d;
  }
  return most;
}

#endif
