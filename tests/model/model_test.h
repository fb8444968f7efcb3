/* tests/model/model_test.h: what the timing model's suites on real runs
 * share - the machine figures a program uses, modeled spans of its report,
 * and the 2% check of a closed form. */
#ifndef PLD_MODEL_TEST_H
#define PLD_MODEL_TEST_H

#include <math.h>

#include "comm/comm_test.h"
#include "core/model.h"

/* The figures of cfg's platform after its overrides, as pld_compile reads
 * them (cfg.model_file, PLD_MODEL_FILE, cfg.model_values). */
static inline struct pld__machine model_figures(const pld_config *cfg) {
  struct pld__machine m;
  assert_ok(pld__machine_config(&m, cfg));
  return m;
}

#define FIG(m, id) ((double)(m).v[PLD__M_##id])

/* Nanoseconds of cycles at mhz, and of bytes at gbps. */
static inline double model_cycles_ns(double cycles, double mhz) {
  return cycles * 1000.0 / mhz;
}
static inline double model_bytes_ns(double bytes, double gbps) {
  return bytes / gbps;
}

/* The report of p's last run. */
static inline pld_model_report model_report(const pld_program *p) {
  pld_model_report r;
  assert_ok(pld_program_model(p, &r));
  return r;
}

/* Rank r's task t of call c: its modeled span (first block's start to
 * last block's end). */
static inline double model_task_span(const pld_model_report *r, int rank,
                                     int call, int task) {
  assert_true(rank < r->nranks);
  const pld_model_rank *k = &r->ranks[rank];
  for (int32_t i = 0; i < k->ntasks; i++)
    if (k->tasks[i].call == call && k->tasks[i].task == task)
      return k->tasks[i].end_ns - k->tasks[i].start_ns;
  print_error("rank %d has no task %d of call %d\n", rank, task, call);
  fail();
  return 0;
}

/* The largest span of task 0 of call 0 over the ranks. */
static inline double model_max_span(const pld_model_report *r) {
  double most = 0;
  for (int q = 0; q < r->nranks; q++) {
    double s = model_task_span(r, q, 0, 0);
    most = s > most ? s : most;
  }
  return most;
}

/* Asserts got is within 2% of want; what names the quantity. */
#define assert_within_2pct(what, got, want)                                    \
  model_assert_within(what, got, want, __FILE__, __LINE__)

static inline void model_assert_within(const char *what, double got,
                                       double want, const char *file,
                                       int line) {
  if (!(fabs(got - want) <= 0.02 * fabs(want))) {
    print_error("%s:%d: %s: modeled %.3f ns, the closed form gives %.3f ns "
                "(%+.2f%%)\n",
                file, line, what, got, want, 100.0 * (got - want) / want);
    _fail(file, line);
  }
}

/* A core's busy time of class cls, on rank r: the core of type `type`
 * with index idx. */
static inline double model_busy(const pld_model_report *r, int rank,
                                pld_core_type type, int idx,
                                pld_model_class cls) {
  const pld_model_rank *k = &r->ranks[rank];
  for (int32_t i = 0; i < k->ncores; i++)
    if (k->cores[i].type == type && k->cores[i].index == idx)
      return k->cores[i].busy_ns[cls];
  print_error("rank %d has no core %d of type %d\n", rank, idx, (int)type);
  fail();
  return 0;
}

#endif
