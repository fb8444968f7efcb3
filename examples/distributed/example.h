/* example.h: what every distributed example shares - the command line
 * (-p/--platform, -d/--device, --compile-only), random inputs, the golden
 * check and how a pld failure is reported.  The pld program itself is in
 * each example's own file. */
#ifndef PLD_EXAMPLE_H
#define PLD_EXAMPLE_H

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
  const char *name;
  pld_config cfg;
  int device_ids[EXAMPLE_MAX_DEVICES];
  int compile_only;
  const char *mode; /* --mode, for the examples that have one */
  int use_builtin;
  unsigned long long seed;
};

static inline void example_usage(const struct example *ex, const char *extra) {
  fprintf(stderr,
          "usage: %s [-p a2a3sim|a5sim] [-d ID,ID] [--compile-only]%s\n",
          ex->name, extra ? extra : "");
}

/* Parses the command line.  min_devices..max_devices is how many -d ids
 * the example takes.  Exits with status 2 after a message on bad usage. */
static inline void example_init(struct example *ex, int argc, char **argv,
                         int min_devices, int max_devices) {
  memset(ex, 0, sizeof *ex);
  ex->name = argv[0];
  ex->cfg = (pld_config)PLD_CONFIG_INIT;
  const char *devices = "0,1";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if ((!strcmp(a, "-p") || !strcmp(a, "--platform")) && i + 1 < argc) {
      ex->cfg.platform = argv[++i];
    } else if ((!strcmp(a, "-d") || !strcmp(a, "--device")) && i + 1 < argc) {
      devices = argv[++i];
    } else if (!strcmp(a, "--compile-only")) {
      ex->compile_only = 1;
    } else if (!strcmp(a, "--mode") && i + 1 < argc) {
      ex->mode = argv[++i];
    } else if (!strcmp(a, "--use-builtin")) {
      ex->use_builtin = 1;
    } else {
      fprintf(stderr, "%s: unknown or incomplete option '%s'\n", ex->name, a);
      example_usage(ex, NULL);
      exit(2);
    }
  }
  int n = 0;
  for (const char *s = devices; *s;) {
    char *end;
    long id = strtol(s, &end, 10);
    if (end == s || (*end && *end != ',') || n == EXAMPLE_MAX_DEVICES) {
      fprintf(stderr,
              "%s: -d: expected a comma-separated list of device ids, got "
              "'%s'\n",
              ex->name, devices);
      exit(2);
    }
    ex->device_ids[n++] = (int)id;
    s = *end ? end + 1 : end;
  }
  if (n < min_devices || n > max_devices) {
    if (min_devices == max_devices)
      fprintf(stderr, "%s: -d: this example needs exactly %d devices, got %d "
                      "('%s')\n",
              ex->name, min_devices, n, devices);
    else
      fprintf(stderr,
              "%s: -d: this example needs %d to %d devices, got %d ('%s')\n",
              ex->name, min_devices, max_devices, n, devices);
    exit(2);
  }
  ex->cfg.device_ids = ex->device_ids;
  ex->cfg.ndevices = n;
  if (ex->compile_only)
    ex->cfg.artifact_dir = ""; /* a new folder, printed below */
  ex->seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
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
    example_check(pld_compile(host, &(ex)->cfg, PLD_ARGS(__VA_ARGS__), &prog_), \
                  "pld_compile");                                              \
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
         (long long)bad, (long long)pld_tensor_numel(got), worst,
         (long long)at, (double)g[at], (double)want[at], ex->seed);
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
