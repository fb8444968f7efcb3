/* example.h: what every distributed example shares - the command line
 * (-p/--platform, -d/--device, --compile-only, -h/--help, and the options
 * an example adds), inputs, the golden checks and how a pld failure is
 * reported; and, for the collectives' steps (08 to 16), the few kernel
 * pieces several of them build on: a barrier by hand, a reduction of one
 * tile over every rank, the tiles of a ragged row.  The pld program itself
 * is in each example's own file. */
#ifndef PLD_EXAMPLE_H
#define PLD_EXAMPLE_H

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pld.h"

/* The most ranks an example runs: the platforms' device ids. */
#define EXAMPLE_MAX_DEVICES 128

struct example {
  const char *name; /* the program's file name, for messages */
  pld_config cfg;
  int device_ids[EXAMPLE_MAX_DEVICES];
  const char *default_devices; /* -d when not given */
  int compile_only;
  char artifact_dir[256]; /* --compile-only: "pld-<name>" */
  const char *mode;       /* --mode, for the examples that have one */
  int use_builtin;
  unsigned long long seed;
  int failed; /* golden checks that failed (example_expect*) */
};

/* --model: the timing model's summary of the last run (pld/model.h),
 * printed as the example exits. */
static char example_model_line[512];

static inline void example_model_print(void) {
  if (example_model_line[0] && pld_process_index() == 0)
    printf("%s\n", example_model_line);
}

/* After a run of prog that succeeded: keeps its modeled summary if the
 * model is on. */
static inline void example_model_take(pld_program *prog) {
  pld_model_report r;
  example_model_line[0] = '\0';
  if (pld_program_model(prog, &r) == PLD_OK)
    pld_model_summary(&r, example_model_line, sizeof example_model_line);
}

/* pld_program_run, keeping the run's modeled summary (--model). */
static inline int example_program_run(pld_program *prog, int argc,
                                      const pld_arg *argv) {
  int st = pld_program_run(prog, argc, argv);
  if (st == PLD_OK)
    example_model_take(prog);
  return st;
}

/* The usage: a line per option, the example's own (`extra`, see
 * example_init) after the common ones. */
static inline void example_usage(FILE *to, const struct example *ex,
                                 const char *extra) {
  fprintf(to,
          "usage: %s [options]\n"
          "  -p, --platform NAME  a2a3sim (the default) or a5sim\n"
          "  -d, --device ID,...  the device of each rank, comma-separated: "
          "distinct\n"
          "                       ids below the platform's device count "
          "(a2a3sim: %d,\n"
          "                       a5sim: %d)\n"
          "                       (default %s)\n"
          "  --compile-only       write the program's description to the "
          "folder\n"
          "                       pld-%s in the current directory (replaced\n"
          "                       each time), print its path and exit "
          "without running\n"
          "  --model              print the timing model's one-line summary "
          "of the\n"
          "                       last run (docs/model.md); random inputs "
          "then\n"
          "                       come from a fixed seed\n"
          "  --seed N             the random inputs' seed (default: a new "
          "one\n"
          "                       each run)\n"
          "%s"
          "  -h, --help           print this and exit\n",
          ex->name, pld_platform_find("a2a3sim")->max_devices,
          pld_platform_find("a5sim")->max_devices, ex->default_devices,
          ex->name, extra ? extra : "");
}

/* A usage mistake: one line on stderr (from process 0 only, under
 * mpirun), then exit status 2. */
#define example_usage_error(ex, ...)                                           \
  do {                                                                         \
    if (pld_process_index() == 0) {                                            \
      fprintf(stderr, "%s: ", (ex)->name);                                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
    exit(2);                                                                   \
  } while (0)

/* Whether the example's own usage lines document option `opt` (a line
 * "  opt ..."): they are the one place an example declares its options, so
 * --help and the parsing cannot disagree. */
static inline bool example_has_option(const char *extra, const char *opt) {
  size_t n = strlen(opt);
  const char *line = extra;
  while (line && *line) {
    if (!strncmp(line, "  ", 2) && !strncmp(line + 2, opt, n) &&
        (line[2 + n] == ' ' || line[2 + n] == '\n' || !line[2 + n]))
      return true;
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return false;
}

/* The value of the option at argv[*i], which must follow it. */
static inline const char *example_value(const struct example *ex, int argc,
                                        char **argv, int *i, const char *what) {
  if (*i + 1 == argc)
    example_usage_error(ex, "%s: expected %s, got nothing after it", argv[*i],
                        what);
  return argv[++*i];
}

/* Parses -d's list into ex->device_ids (its first EXAMPLE_MAX_DEVICES
 * ids) and returns how many ids it has.  Each item is digits only, at most
 * INT_MAX: no sign, no space, none empty, so that a typo is never read as
 * another id (strtol would take "1x" for 1, and a long id truncated to an
 * int names a device nobody meant). */
static inline int example_devices(struct example *ex, const char *list) {
  int n = 0;
  const char *item = list;
  for (;;) {
    size_t len = strcspn(item, ",");
    long long id = 0;
    size_t k = 0;
    while (k < len && item[k] >= '0' && item[k] <= '9' && id <= INT_MAX)
      id = id * 10 + (item[k++] - '0');
    if (len == 0 || k < len || id > INT_MAX) {
      if (len == 0)
        example_usage_error(ex,
                            "-d: item %d of '%s': expected a device id in "
                            "[0, %d], got an empty item",
                            n + 1, list, INT_MAX);
      example_usage_error(ex,
                          "-d: item %d of '%s': expected a device id in "
                          "[0, %d], got '%.*s'",
                          n + 1, list, INT_MAX, (int)len, item);
    }
    if (n < EXAMPLE_MAX_DEVICES)
      ex->device_ids[n] = (int)id;
    n++;
    if (!item[len])
      return n;
    item += len + 1;
  }
}

/* Parses the command line.  min_devices..max_devices (at most
 * EXAMPLE_MAX_DEVICES) is how many -d ids the example takes, and
 * default_devices the -d it runs without one.  `extra` is the usage of the
 * example's own options, a line "  --option ARG  what" each, or NULL;
 * --mode and --use-builtin are accepted only where it lists them.  --help
 * prints the usage and exits 0; a mistake exits with status 2 after one
 * line naming it. */
static inline void example_init_devices(struct example *ex, int argc,
                                        char **argv, int min_devices,
                                        int max_devices, const char *extra,
                                        const char *default_devices) {
  assert(max_devices <= EXAMPLE_MAX_DEVICES);
  memset(ex, 0, sizeof *ex);
  const char *slash = strrchr(argv[0], '/');
  ex->name = slash ? slash + 1 : argv[0];
  ex->cfg = (pld_config)PLD_CONFIG_INIT;
  ex->default_devices = default_devices;
  const char *devices = default_devices;
  unsigned long long seed = 0;
  int seeded = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      example_usage(stdout, ex, extra);
      exit(0);
    } else if (!strcmp(a, "-p") || !strcmp(a, "--platform")) {
      ex->cfg.platform = example_value(ex, argc, argv, &i, "a2a3sim or a5sim");
    } else if (!strcmp(a, "-d") || !strcmp(a, "--device")) {
      devices = example_value(ex, argc, argv, &i,
                              "a comma-separated list of device ids");
    } else if (!strcmp(a, "--compile-only")) {
      ex->compile_only = 1;
    } else if (!strcmp(a, "--model")) {
      ex->cfg.model = "on";
    } else if (!strcmp(a, "--seed")) {
      const char *v = example_value(ex, argc, argv, &i, "a number");
      char *end;
      seed = strtoull(v, &end, 0);
      if (!*v || *end)
        example_usage_error(ex, "--seed: expected a number, got '%s'", v);
      seeded = 1;
    } else if (!strcmp(a, "--mode") && example_has_option(extra, a)) {
      ex->mode =
          example_value(ex, argc, argv, &i, "a mode (--help lists them)");
    } else if (!strcmp(a, "--use-builtin") && example_has_option(extra, a)) {
      ex->use_builtin = 1;
    } else {
      example_usage_error(ex, "unknown option '%s' (--help lists them)", a);
    }
  }
  /* Under mpirun every process runs this main, one rank each: -d may be
   * left out (each process simulates its node's device), and only
   * process 0 prints what the example prints. */
  int procs = pld_process_count(), n;
  if (procs > 1 && devices == default_devices) {
    n = procs;
    ex->cfg.device_ids = NULL;
  } else {
    n = example_devices(ex, devices);
    ex->cfg.device_ids = ex->device_ids;
  }
  if (pld_process_index() != 0 && !freopen("/dev/null", "w", stdout))
    exit(2);
  if (devices == default_devices && procs > 1 &&
      (n < min_devices || n > max_devices))
    example_usage_error(ex,
                        "mpirun started %d processes, one rank each; this "
                        "example runs %d to %d ranks",
                        n, min_devices, max_devices);
  if (n < min_devices || n > max_devices) {
    if (max_devices == EXAMPLE_MAX_DEVICES && n < min_devices)
      example_usage_error(ex,
                          "-d: this example needs at least %d devices, one "
                          "per rank, got %d ('%s')",
                          min_devices, n, devices);
    if (min_devices == max_devices)
      example_usage_error(ex,
                          "-d: this example needs exactly %d devices, got %d "
                          "('%s')",
                          min_devices, n, devices);
    example_usage_error(ex,
                        "-d: this example needs %d to %d devices, got %d "
                        "('%s')",
                        min_devices, max_devices, n, devices);
  }
  ex->cfg.ndevices = n;
  /* One folder per example, written over by each --compile-only, so that
   * calls leave nothing else behind (under mpirun process 0 writes it). */
  if (ex->compile_only && pld_process_index() == 0) {
    snprintf(ex->artifact_dir, sizeof ex->artifact_dir, "pld-%s", ex->name);
    ex->cfg.artifact_dir = ex->artifact_dir;
  }
  /* Random inputs differ from run to run (unless --seed, or --model,
   * which wants the same inputs each time), but not between the
   * processes of one mpirun job: each gives its rank's inputs, and checks
   * every rank's results against its own. */
  ex->seed = seeded ? seed
             : procs > 1 || ex->cfg.model
                 ? 0x9e3779b97f4a7c15ULL
                 : (unsigned long long)time(NULL) ^
                       ((unsigned long long)getpid() << 20);
  if (ex->cfg.model)
    atexit(example_model_print);
}

/* Steps 01 to 07: -d 0,1 by default. */
static inline void example_init(struct example *ex, int argc, char **argv,
                                int min_devices, int max_devices,
                                const char *extra) {
  example_init_devices(ex, argc, argv, min_devices, max_devices, extra, "0,1");
}

/* The collectives' steps: any rank count P >= 2 (up to the platforms'
 * device ids), -d 0,1,2,3 by default. */
static inline void example_init_world(struct example *ex, int argc, char **argv,
                                      const char *extra) {
  example_init_devices(ex, argc, argv, 2, EXAMPLE_MAX_DEVICES, extra,
                       "0,1,2,3");
}

/* A pld call failed: its message and the status name (from process 0
 * only, under mpirun: every process has the same), then exit 1. */
static inline void example_check(int status, const char *what) {
  if (status == PLD_OK)
    return;
  if (pld_process_index() == 0)
    fprintf(stderr, "%s failed (%s): %s\n", what, pld_status_name(status),
            pld_last_error());
  exit(1);
}

/* One value uniform in [-1, 1), from the example's generator. */
static inline float example_random(struct example *ex) {
  ex->seed = ex->seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(ex->seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A host tensor of FP32 values, uniform in [-1, 1) when `random`. */
static inline pld_tensor example_tensor(struct example *ex, int ndim,
                                        const int64_t *shape, int random) {
  pld_tensor t;
  example_check(pld_tensor_create(PLD_FP32, ndim, shape, &t),
                "pld_tensor_create");
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; random && i < pld_tensor_numel(t); i++)
    d[i] = example_random(ex);
  return t;
}

/* Compiles `host` for the arguments and returns the program; with
 * --compile-only prints the artifact folder's path and exits 0. */
static inline pld_program *example_compile_args(struct example *ex,
                                                pld_host_fn host, int argc,
                                                const pld_arg *argv) {
  pld_program *prog;
  example_check(pld_compile(host, &ex->cfg, argc, argv, &prog), "pld_compile");
  if (ex->compile_only) {
    if (pld_program_artifact_dir(prog))
      printf("%s\n", pld_program_artifact_dir(prog));
    pld_program_destroy(prog);
    exit(0);
  }
  return prog;
}
#define example_compile(ex, host, ...)                                         \
  example_compile_args((ex), (host), PLD_ARGS(__VA_ARGS__))

/* Runs a compiled program with the arguments (new data, the compiled
 * shapes); exits 1 if it fails. */
#define example_run_program(prog, ...)                                         \
  example_check(example_program_run((prog), PLD_ARGS(__VA_ARGS__)),            \
                "pld_program_run")

/* Compiles `host` for the arguments (see example_compile), runs it once. */
#define example_run(ex, host, ...)                                             \
  do {                                                                         \
    pld_program *prog_ = example_compile(ex, host, __VA_ARGS__);               \
    int st_ = example_program_run(prog_, PLD_ARGS(__VA_ARGS__));               \
    pld_program_destroy(prog_);                                                \
    example_check(st_, "pld_program_run");                                     \
  } while (0)

/* The golden check, rtol = atol = 1e-5: prints OK and returns 0, or the
 * largest difference and returns 1. */
static inline int example_golden(const struct example *ex, pld_tensor got,
                                 const float *want) {
  const float *g = pld_tensor_data(got);
  double worst = 0;
  int64_t at = -1, bad = 0;
  for (int64_t i = 0; i < pld_tensor_numel(got); i++) {
    double diff = fabs((double)g[i] - (double)want[i]);
    if (!(diff <= 1e-5 + 1e-5 * fabs((double)want[i]))) {
      bad++;
      if (!(diff <= worst)) {
        worst = diff;
        at = i;
      }
    }
  }
  if (bad == 0) {
    printf("OK\n");
    return 0;
  }
  printf("FAILED: %lld of %lld elements differ; max difference %g at element "
         "%lld (got %g, expected %g; seed %llu)\n",
         (long long)bad, (long long)pld_tensor_numel(got), worst, (long long)at,
         (double)g[at], (double)want[at], ex->seed);
  return 1;
}

/* --mode: the index in modes[0, count) of the mode given, 0 (the
 * default) without --mode.  Exits with status 2 after a message listing
 * them for anything else. */
static inline int example_mode_index(const struct example *ex,
                                     const char *const *modes, int count) {
  const char *mode = ex->mode ? ex->mode : modes[0];
  for (int i = 0; i < count; i++)
    if (!strcmp(mode, modes[i]))
      return i;
  fprintf(stderr, "%s: --mode: expected ", ex->name);
  for (int i = 0; i < count; i++)
    fprintf(stderr, "%s%s", modes[i],
            i + 2 < count    ? ", "
            : i + 2 == count ? " or "
                             : "");
  fprintf(stderr, ", got '%s'\n", mode);
  exit(2);
}
/* example_mode_of(ex, "a", "b", ...): example_mode_index over the list. */
#define example_mode_of(ex, ...)                                               \
  example_mode_index((ex), (const char *const[]){__VA_ARGS__},                 \
                     (int)(sizeof((const char *const[]){__VA_ARGS__}) /        \
                           sizeof(const char *)))

/* --mode: `first` (the default) or `second`; true for `second`. */
static inline bool example_mode(const struct example *ex, const char *first,
                                const char *second) {
  return example_mode_of(ex, first, second) == 1;
}

/* The golden check of a ring shift over the leading dimension:
 * y[r] == x[(r + shift) mod n] for every rank r. */
static inline int example_golden_shift(const struct example *ex, pld_tensor x,
                                       pld_tensor y, int shift) {
  int64_t n = pld_tensor_dim(x, 0), per = pld_tensor_numel(x) / n;
  float *want = malloc(sizeof(float) * (size_t)(n * per));
  if (!want)
    example_check(PLD_ERR_NOMEM, "example_golden_shift");
  const float *xs = pld_tensor_data(x);
  for (int64_t r = 0; r < n; r++)
    memcpy(want + r * per, xs + ((r + shift + n) % n) * per,
           sizeof(float) * (size_t)per);
  int bad = example_golden(ex, y, want);
  free(want);
  return bad;
}

/* ---- the collectives' steps (08 to 16) ----------------------------------
 *
 * Each runs its program twice and checks both results: first with
 * integer-valued inputs, whose every partial sum is an integer well below
 * 2^24 and so exact in FP32: every algorithm, every reduction order, must
 * give exactly the bits of the mathematical result (the exactness contract
 * of pld/collective.h); then with random inputs, within rtol = atol = 1e-5
 * of a reference computed in double in plain C. */

enum example_input {
  EXAMPLE_INTEGERS, /* x[r][i] = (7 i + 31 r) % 1001 - 500 */
  EXAMPLE_RANDOM    /* uniform in [-1, 1) */
};
#define example_for_each_input(in)                                             \
  for (enum example_input in = EXAMPLE_INTEGERS; in <= EXAMPLE_RANDOM;         \
       in = (enum example_input)(in + 1))

/* Fills t (FP32, its leading dimension the rank r) with the input `in`.
 * The integer values differ between ranks at every index (31 and 1001 are
 * coprime), so data landing in the wrong rank's place shows; their sums
 * over up to 128 ranks stay below 2^16. */
static inline void example_fill(struct example *ex, pld_tensor t,
                                enum example_input in) {
  float *d = pld_tensor_data(t);
  int64_t per = pld_tensor_numel(t) / pld_tensor_dim(t, 0);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = in == EXAMPLE_RANDOM
               ? example_random(ex)
               : (float)((7 * (i % per) + 31 * (i / per)) % 1001 - 500);
}

/* A reference the size of t's elements, in double; exits 1 without
 * memory.  The caller frees it. */
static inline double *example_reference(pld_tensor t) {
  double *want = calloc((size_t)pld_tensor_numel(t), sizeof(double));
  if (!want)
    example_check(PLD_ERR_NOMEM, "example_reference");
  return want;
}

/* The references of the collectives, from x [P, ...] (the leading
 * dimension the rank), in double:
 *   allreduce  want [P, ...]: want[r] = sum over k of x[k]
 *   broadcast  want [P, ...]: want[r] = x[root]
 *   allgather  want [P, P, ...]: want[r][k] = x[k]
 * (each takes an int32_t, the root or unused, to fit example_runs). */
static inline void example_reference_allreduce(pld_tensor x, int32_t unused,
                                               double *want) {
  (void)unused;
  const float *xs = pld_tensor_data(x);
  int64_t n = pld_tensor_dim(x, 0), per = pld_tensor_numel(x) / n;
  for (int64_t i = 0; i < per; i++) {
    double sum = 0;
    for (int64_t k = 0; k < n; k++)
      sum += (double)xs[k * per + i];
    for (int64_t r = 0; r < n; r++)
      want[r * per + i] = sum;
  }
}

static inline void example_reference_broadcast(pld_tensor x, int32_t root,
                                               double *want) {
  const float *xs = pld_tensor_data(x);
  int64_t n = pld_tensor_dim(x, 0), per = pld_tensor_numel(x) / n;
  for (int64_t r = 0; r < n; r++)
    for (int64_t i = 0; i < per; i++)
      want[r * per + i] = (double)xs[root * per + i];
}

static inline void example_reference_allgather(pld_tensor x, int32_t unused,
                                               double *want) {
  (void)unused;
  const float *xs = pld_tensor_data(x);
  int64_t numel = pld_tensor_numel(x);
  for (int64_t r = 0; r < pld_tensor_dim(x, 0); r++)
    for (int64_t i = 0; i < numel; i++)
      want[r * numel + i] = (double)xs[i];
}

/* The golden check of `what`, a result of every rank (FP32, its leading
 * dimension the rank), against want (double, computed in plain C): with
 * integer-valued inputs bit for bit against want rounded to FP32, with
 * random ones within rtol = atol = 1e-5.  A mismatch prints one line
 * "FAILED: ..." naming the first (bitwise) or largest difference and
 * counts in ex->failed.  Returns whether it passed. */
static inline bool example_expect(struct example *ex, const char *what,
                                  pld_tensor got, const double *want,
                                  enum example_input in) {
  const float *g = pld_tensor_data(got);
  int64_t numel = pld_tensor_numel(got), per = numel / pld_tensor_dim(got, 0);
  int64_t bad = 0, at = -1;
  double worst = -1;
  for (int64_t i = 0; i < numel; i++) {
    float w = (float)want[i];
    double diff = fabs((double)g[i] - want[i]);
    if (in == EXAMPLE_INTEGERS ? memcmp(&g[i], &w, sizeof w) != 0
                               : !(diff <= 1e-5 + 1e-5 * fabs(want[i]))) {
      if (bad++ == 0 || (in == EXAMPLE_RANDOM && !(diff <= worst))) {
        at = i;
        worst = diff;
      }
    }
  }
  if (bad == 0)
    return true;
  ex->failed++;
  if (in == EXAMPLE_INTEGERS)
    printf("FAILED: %s, integer-valued inputs: %lld of %lld elements differ "
           "bitwise; the first at rank %lld, element %lld: got %.9g, "
           "expected %.9g\n",
           what, (long long)bad, (long long)numel, (long long)(at / per),
           (long long)(at % per), (double)g[at], want[at]);
  else
    printf("FAILED: %s, random inputs: %lld of %lld elements differ by more "
           "than 1e-5 + 1e-5 |expected|; the most, by %g, at rank %lld, "
           "element %lld: got %.9g, expected %.9g\n",
           what, (long long)bad, (long long)numel, worst, (long long)(at / per),
           (long long)(at % per), (double)g[at], want[at]);
  return false;
}

/* Every rank's result (the slices of got along its leading dimension)
 * has the bits of rank 0's: what the collectives promise whatever the
 * inputs, where a tolerance check could not tell.  As example_expect
 * otherwise. */
static inline bool example_expect_same(struct example *ex, const char *what,
                                       pld_tensor got) {
  const float *g = pld_tensor_data(got);
  int64_t n = pld_tensor_dim(got, 0), per = pld_tensor_numel(got) / n;
  for (int64_t r = 1; r < n; r++)
    for (int64_t i = 0; i < per; i++)
      if (memcmp(&g[r * per + i], &g[i], sizeof *g) != 0) {
        ex->failed++;
        printf("FAILED: %s: ranks 0 and %lld differ at element %lld: %.9g "
               "and %.9g (every rank must get the same bits)\n",
               what, (long long)r, (long long)i, (double)g[i],
               (double)g[r * per + i]);
        return false;
      }
  return true;
}

/* The golden runs of a collective's step: runs prog (compiled for argv,
 * which holds the input x and the result y, both with the rank as their
 * leading dimension) once per input (example_fill), and checks y against
 * reference(x, arg, want) with example_expect; with `same`, also that
 * every rank got the same bits (a result every rank holds whole). */
static inline void
example_runs_args(struct example *ex, pld_program *prog, pld_tensor x,
                  pld_tensor y, const char *what,
                  void (*reference)(pld_tensor, int32_t, double *), int32_t arg,
                  bool same, int argc, const pld_arg *argv) {
  double *want = example_reference(y);
  example_for_each_input(in) {
    example_fill(ex, x, in);
    example_check(example_program_run(prog, argc, argv), "pld_program_run");
    reference(x, arg, want);
    example_expect(ex, what, y, want, in);
    if (same)
      example_expect_same(ex, what, y);
  }
  free(want);
}
#define example_runs(ex, prog, x, y, what, reference, arg, same, ...)          \
  example_runs_args((ex), (prog), (x), (y), (what), (reference), (arg),        \
                    (same), PLD_ARGS(__VA_ARGS__))

/* Prints OK if every check passed; the exit status. */
static inline int example_done(const struct example *ex) {
  if (ex->failed)
    return 1;
  printf("OK\n");
  return 0;
}

/* The main of steps 08 to 11 after example_init_world: compiles `host`
 * for x and y [P, n] (and the scalar *mode, when not NULL), runs it and
 * checks y[r] = sum_k x[k] on every rank r, the same bits on all.
 * Returns the exit status. */
static inline int example_allreduce_main(struct example *ex, pld_host_fn host,
                                         int64_t n, const int32_t *mode) {
  const int64_t shape[] = {ex->cfg.ndevices, n};
  pld_tensor x = example_tensor(ex, 2, shape, 0);
  pld_tensor y = example_tensor(ex, 2, shape, 0);
  pld_program *prog;
  if (mode) {
    prog = example_compile(ex, host, x, y, *mode);
    example_runs(ex, prog, x, y, "allreduce", example_reference_allreduce, 0,
                 true, x, y, *mode);
  } else {
    prog = example_compile(ex, host, x, y);
    example_runs(ex, prog, x, y, "allreduce", example_reference_allreduce, 0,
                 true, x, y);
  }
  pld_program_destroy(prog);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return example_done(ex);
}

/* The usage of --mode in steps 12 to 15: the collective by hand, or the
 * builtin `name`. */
#define EXAMPLE_HAND_OR_BUILTIN(name)                                          \
  "  --mode hand|builtin  hand: built from signals and one-sided transfers "   \
  "(the\n"                                                                     \
  "                       default); builtin: " name "\n"

/* Kernels see data as rows (pld/tile.h: a 1-D tensor is one row) and move
 * it a tile of at most EXAMPLE_TILE elements (4 KiB of FP32) at a time;
 * the last tile of a row, or of a rank's chunk of it, is ragged. */
#define EXAMPLE_TILE 1024

/* Elements of the tile starting at `at` of a run ending at `end`. */
static inline int32_t example_tile_len(int64_t at, int64_t end) {
  return (int32_t)(end - at < EXAMPLE_TILE ? end - at : EXAMPLE_TILE);
}

/* Chunk c of P of a row of n elements: [n c / P, n (c + 1) / P).  Chunks
 * differ by at most one element; n need not be a multiple of P. */
static inline void example_chunk(int64_t n, int32_t c, int32_t p, int64_t *c0,
                                 int64_t *c1) {
  *c0 = n * c / p;
  *c1 = n * (c + 1) / p;
}

/* Kernels: step 04's barrier by hand, on row `row` of a signal window
 * sig [rows, P] of INT32 cells.  Each rank adds 1 to its cell [row][me] on
 * every peer, then waits until each peer's cell [row][q] on itself is
 * >= g.  Cells only grow, so the g-th barrier on a row waits for g
 * credits: nothing resets them between barriers (the window is zero at the
 * start of every program run), and a fast peer already past barrier g has
 * added more, which `>=` accepts. */
static inline void example_barrier(pld_core k, pld_window sig, int64_t row,
                                   int32_t g) {
  pld_comm comm = pld_window_comm(sig);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  for (int32_t q = 0; q < n; q++)
    if (q != me)
      pld_notify(k, sig, q, PLD_AT(row, me), 1, PLD_NOTIFY_ADD);
  for (int32_t q = 0; q < n; q++)
    if (q != me)
      pld_wait(k, sig, PLD_AT(row, q), g, PLD_WAIT_GE);
}

/* Kernels: a [1, len] tile = the sum over ranks 0, 1, ..., P-1, in that
 * order on every rank, of the elements [col, col + len) of row `row` of
 * window w: a remote load from each peer, a local load of this rank's own.
 * The same order everywhere makes every rank's sum the same bits.  The
 * caller frees the tile. */
static inline pld_tile *example_reduce_tile(pld_core k, pld_window w,
                                            int64_t row, int64_t col,
                                            int32_t len) {
  pld_comm comm = pld_window_comm(w);
  int32_t me = pld_rank(k, comm), n = pld_nranks(k, comm);
  pld_tile *acc = NULL;
  for (int32_t q = 0; q < n; q++) {
    pld_tile *t = q == me ? pld_load(k, pld_local(w), row, col, 1, len)
                          : pld_remote_load(k, w, q, row, col, 1, len);
    if (!acc) {
      acc = t;
      continue;
    }
    pld_add(k, acc, acc, t);
    pld_tile_free(k, t);
  }
  return acc;
}

#endif
