/* example.h: what every distributed example shares - the command line
 * (-p/--platform, -d/--device, --compile-only, -h/--help, and the options
 * an example adds), random inputs, the golden check and how a pld failure
 * is reported.  The pld program itself is in each example's own file. */
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

#define EXAMPLE_MAX_DEVICES 64

struct example {
  const char *name; /* the program's file name, for messages */
  pld_config cfg;
  int device_ids[EXAMPLE_MAX_DEVICES];
  int compile_only;
  const char *mode; /* --mode, for the examples that have one */
  int use_builtin;
  unsigned long long seed;
};

/* The usage: a line per option, the example's own (`extra`, see
 * example_init) after the common ones. */
static inline void example_usage(FILE *to, const struct example *ex,
                                 const char *extra) {
  fprintf(to,
          "usage: %s [options]\n"
          "  -p, --platform NAME  a2a3sim (the default) or a5sim\n"
          "  -d, --device ID,...  the device of each rank, comma-separated: "
          "ids in\n"
          "                       [0, %d] below the platform's device "
          "count\n"
          "                       (default 0,1)\n"
          "  --compile-only       write the program's description to a new "
          "folder, print\n"
          "                       its path and exit without running\n"
          "%s"
          "  -h, --help           print this and exit\n",
          ex->name, INT_MAX, extra ? extra : "");
}

/* A usage mistake: one line on stderr, then exit status 2. */
#define example_usage_error(ex, ...)                                           \
  do {                                                                         \
    fprintf(stderr, "%s: ", (ex)->name);                                       \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, "\n");                                                     \
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
 * EXAMPLE_MAX_DEVICES) is how many -d ids the example takes.  `extra` is
 * the usage of the example's own options, a line "  --option ARG  what"
 * each, or NULL; --mode and --use-builtin are accepted only where it lists
 * them.  --help prints the usage and exits 0; a mistake exits with status
 * 2 after one line naming it. */
static inline void example_init(struct example *ex, int argc, char **argv,
                                int min_devices, int max_devices,
                                const char *extra) {
  assert(max_devices <= EXAMPLE_MAX_DEVICES);
  memset(ex, 0, sizeof *ex);
  const char *slash = strrchr(argv[0], '/');
  ex->name = slash ? slash + 1 : argv[0];
  ex->cfg = (pld_config)PLD_CONFIG_INIT;
  const char *devices = "0,1";
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
    } else if (!strcmp(a, "--mode") && example_has_option(extra, a)) {
      ex->mode =
          example_value(ex, argc, argv, &i, "a mode (--help lists them)");
    } else if (!strcmp(a, "--use-builtin") && example_has_option(extra, a)) {
      ex->use_builtin = 1;
    } else {
      example_usage_error(ex, "unknown option '%s' (--help lists them)", a);
    }
  }
  int n = example_devices(ex, devices);
  if (n < min_devices || n > max_devices) {
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
  ex->cfg.device_ids = ex->device_ids;
  ex->cfg.ndevices = n;
  if (ex->compile_only)
    ex->cfg.artifact_dir = ""; /* a new folder, printed below */
  ex->seed =
      (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
}

/* A pld call failed: its message and the status name, then exit 1. */
static inline void example_check(int status, const char *what) {
  if (status == PLD_OK)
    return;
  fprintf(stderr, "%s failed (%s): %s\n", what, pld_status_name(status),
          pld_last_error());
  exit(1);
}

/* A host tensor of FP32 values, uniform in [-1, 1) when `random`. */
static inline pld_tensor example_tensor(struct example *ex, int ndim,
                                        const int64_t *shape, int random) {
  pld_tensor t;
  example_check(pld_tensor_create(PLD_FP32, ndim, shape, &t),
                "pld_tensor_create");
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; random && i < pld_tensor_numel(t); i++) {
    ex->seed = ex->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    d[i] = (float)((double)(ex->seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return t;
}

/* Compiles `host` for the arguments; with --compile-only prints the
 * artifact folder and exits 0.  Otherwise runs it once. */
#define example_run(ex, host, ...)                                             \
  do {                                                                         \
    pld_program *prog_;                                                        \
    example_check(                                                             \
        pld_compile(host, &(ex)->cfg, PLD_ARGS(__VA_ARGS__), &prog_),          \
        "pld_compile");                                                        \
    if ((ex)->compile_only) {                                                  \
      printf("%s\n", pld_program_artifact_dir(prog_));                         \
      pld_program_destroy(prog_);                                              \
      exit(0);                                                                 \
    }                                                                          \
    int st_ = pld_program_run(prog_, PLD_ARGS(__VA_ARGS__));                   \
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

/* --mode: `first` (the default) or `second`; true for `second`.  Exits
 * with status 2 after a message for anything else. */
static inline bool example_mode(const struct example *ex, const char *first,
                                const char *second) {
  const char *mode = ex->mode ? ex->mode : first;
  if (strcmp(mode, first) != 0 && strcmp(mode, second) != 0) {
    fprintf(stderr, "%s: --mode: expected %s or %s, got '%s'\n", ex->name,
            first, second, mode);
    exit(2);
  }
  return strcmp(mode, second) == 0;
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

#endif
