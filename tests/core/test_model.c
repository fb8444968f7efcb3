/* The timing model's machine description (core/model.h): each platform's
 * figures, the figures derived from others, the model file's and the
 * configuration's lines replacing them, and every refusal, also through
 * pld_compile. */
#include <stdlib.h>
#include <unistd.h>

#include "pld_test.h"

#include "../host/programs.h"
#include "core/error.h"
#include "core/model.h"

static char msg[1024];

static int init(struct pld__machine *m, const char *plat, const char *file,
                const char *values) {
  msg[0] = '\0';
  return pld__machine_init(m, plat, file, values, msg, sizeof msg);
}

/* A file holding text; its path in a static buffer. */
static const char *file_with(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/pld-model-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
  return path;
}

static void test_platforms(void **state) {
  (void)state;
  struct pld__machine m;
  static const char *const names[] = {"a2a3sim", "a2a3", "a5sim", "a5"};
  for (int p = 0; p < 4; p++) {
    assert_ok(init(&m, names[p], NULL, NULL));
    for (int id = 0; id < PLD__MODEL_VALUES; id++) {
      const struct pld__model_info *f = pld__model_info(id);
      assert_int_equal(m.v[id], p < 2 ? f->a2a3 : f->a5);
      assert_int_equal(m.given[id], 0);
      assert_true(f->min <= m.v[id] && m.v[id] <= f->max);
      assert_true(!strcmp(f->source, "cited") ||
                  !strcmp(f->source, "derived") ||
                  !strcmp(f->source, "assumed"));
    }
  }
  /* Figures checked against their sources' arithmetic (docs/model.md):
   * the cube's 16x16x16 FP16 MACs, INT8 twice that; a2a3's peak of 354
   * TFLOPS BF16 = 2 x 4096 x 24 x 1.8 GHz; a core's moves derived from
   * 910B4's 960 GB/s = 20 cores x 32 B x 1.5 GHz; a2a3's port = its 7
   * mesh links of 56 GB/s. */
  assert_ok(init(&m, "a2a3sim", NULL, NULL));
  assert_int_equal(m.v[PLD__M_CUBE_MACS_FP16], 16 * 16 * 16);
  assert_int_equal(m.v[PLD__M_CUBE_MACS_INT8], 2 * 16 * 16 * 16);
  assert_int_equal(
      2 * m.v[PLD__M_CUBE_MACS_BF16] * 24 * m.v[PLD__M_AIC_MHZ] / 1000000, 353);
  assert_int_equal(960 * 1000 / (20 * 1500), m.v[PLD__M_MOVE_BYTES]);
  assert_int_equal(m.v[PLD__M_PORT_GBPS], 7 * m.v[PLD__M_LINK_GBPS]);
  assert_int_equal(init(&m, "a9sim", NULL, NULL), PLD_ERR_CONFIG);
  assert_string_equal(msg, "the model: expected a platform a2a3sim, a5sim, "
                           "a2a3 or a5, got 'a9sim'");
}

static void test_lines_replace(void **state) {
  (void)state;
  struct pld__machine m;
  const char *f = file_with("# figures measured on our SKU\n"
                            "\n"
                            "  aic_mhz = 2000   # both platforms\n"
                            "a5sim.HBM_GBPS=1700\n"
                            "a2a3.link_gbps = 60\n"
                            "Link_NS = 0\r\n"
                            "net_ns = 1000000000");
  assert_ok(init(&m, "a5sim", f, NULL));
  assert_int_equal(m.v[PLD__M_AIC_MHZ], 2000);
  assert_int_equal(m.v[PLD__M_HBM_GBPS], 1700);
  assert_int_equal(m.v[PLD__M_LINK_GBPS], 140);     /* a2a3's line only */
  assert_int_equal(m.v[PLD__M_LINK_NS], 0);         /* its minimum */
  assert_int_equal(m.v[PLD__M_NET_NS], 1000000000); /* its maximum */
  assert_int_equal(m.given[PLD__M_AIC_MHZ], 1);
  assert_int_equal(m.given[PLD__M_LINK_GBPS], 0);
  assert_int_equal(m.given[PLD__M_AIV_MHZ], 0);
  assert_int_equal(m.v[PLD__M_AIV_MHZ], 1650);
  assert_ok(init(&m, "a2a3", f, NULL));
  assert_int_equal(m.v[PLD__M_HBM_GBPS], 1500);
  assert_int_equal(m.v[PLD__M_LINK_GBPS], 60);
  /* The configuration's lines come after the file's. */
  assert_ok(init(&m, "a2a3sim", f, "aic_mhz = 900; aiv_mhz=901;;"));
  assert_int_equal(m.v[PLD__M_AIC_MHZ], 900);
  assert_int_equal(m.v[PLD__M_AIV_MHZ], 901);
  assert_int_equal(m.v[PLD__M_LINK_GBPS], 56); /* a2a3's, not a2a3sim's */
  assert_ok(init(&m, "a2a3sim", "", "\n# nothing\n"));
  assert_int_equal(m.v[PLD__M_AIC_MHZ], 1800);
  unlink(f);
}

/* Each refusal names the line and what was expected and got. */
static void test_refusals(void **state) {
  (void)state;
  struct pld__machine m;
  const char *f = file_with("aic_mhz = 2000\nhbm = 3\n");
  char want[512];
  assert_int_equal(init(&m, "a2a3sim", f, NULL), PLD_ERR_CONFIG);
  snprintf(want, sizeof want,
           "model file '%s' line 2: 'hbm' is no figure of the model "
           "(pld-env lists them)",
           f);
  assert_string_equal(msg, want);
  unlink(f);
  static const struct {
    const char *line, *msg;
  } cases[] = {
      {"aic_mhz = 0", "AIC_MHZ: expected an integer in [1, 100000] (MHz), "
                      "got '0'"},
      {"aic_mhz = 100001", "AIC_MHZ: expected an integer in [1, 100000] "
                           "(MHz), got '100001'"},
      {"link_ns = -1", "LINK_NS: expected an integer in [0, 1000000000] "
                       "(ns), got '-1'"},
      {"link_ns = 1000000001", "LINK_NS: expected an integer in [0, "
                               "1000000000] (ns), got '1000000001'"},
      {"aic_mhz = 1e3", "AIC_MHZ: expected an integer in [1, 100000] (MHz), "
                        "got '1e3'"},
      {"aic_mhz = +5", "AIC_MHZ: expected an integer in [1, 100000] (MHz), "
                       "got '+5'"},
      {"aic_mhz =", "AIC_MHZ: expected an integer in [1, 100000] (MHz), "
                    "got ''"},
      {"aic_mhz = 99999999999999999999", "AIC_MHZ: expected an integer in "
                                         "[1, 100000] (MHz), got "
                                         "'99999999999999999999'"},
      {"aic_mhz 5", "expected 'name = value', got 'aic_mhz 5'"},
      {"= 5", "expected 'name = value', got '= 5'"},
      {"a6sim.aic_mhz = 5", "'a6sim' is no platform: expected a2a3sim, "
                            "a5sim, a2a3 or a5 before '.'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(init(&m, "a5sim", NULL, cases[i].line), PLD_ERR_CONFIG);
    snprintf(want, sizeof want, "model values '%s' line 1: %s", cases[i].line,
             cases[i].msg);
    assert_string_equal(msg, want);
  }
  /* A line of another platform is checked all the same. */
  assert_int_equal(init(&m, "a5sim", NULL, "aiv_mhz=2;a2a3sim.aic_mhz = 0"),
                   PLD_ERR_CONFIG);
  assert_non_null(strstr(msg, "line 2: AIC_MHZ: expected an integer"));
  assert_int_equal(init(&m, "a5sim", "/nonexistent/model", NULL),
                   PLD_ERR_SYSTEM);
  assert_string_equal(msg, "model file '/nonexistent/model': cannot be read: "
                           "No such file or directory");
}

/* pld_compile with these figures: its status, its message left. */
static int compile_with(const char *file, const char *values) {
  pld_config cfg = PLD_CONFIG_INIT;
  cfg.model_file = file;
  cfg.model_values = values;
  return compile_h_scale(cfg);
}

static void test_compile(void **state) {
  (void)state;
  assert_int_equal(unsetenv("PLD_MODEL_FILE"), 0);
  assert_ok(compile_with(NULL, "aic_mhz = 1000"));
  assert_fails_with(compile_with(NULL, "aic_mhz = 0"), PLD_ERR_CONFIG,
                    "pld_compile: cfg.model_values: model values 'aic_mhz = "
                    "0' line 1: AIC_MHZ: expected an integer in [1, 100000] "
                    "(MHz), got '0'");
  const char *f = file_with("net_gbps = x\n");
  char want[512];
  snprintf(want, sizeof want,
           "pld_compile: cfg.model_file: model file '%s' line 1: NET_GBPS: "
           "expected an integer in [1, 1000000] (GB/s), got 'x'",
           f);
  assert_fails_with(compile_with(f, NULL), PLD_ERR_CONFIG, want);
  /* The environment's file, unless the configuration names another or
   * none (""). */
  assert_int_equal(setenv("PLD_MODEL_FILE", f, 1), 0);
  snprintf(want, sizeof want,
           "pld_compile: environment: PLD_MODEL_FILE: model file '%s' line "
           "1: NET_GBPS",
           f);
  assert_fails_with(compile_with(NULL, NULL), PLD_ERR_CONFIG, want);
  assert_ok(compile_with("", NULL));
  assert_int_equal(setenv("PLD_MODEL_FILE", "/nonexistent/model", 1), 0);
  assert_fails_with(compile_with(NULL, NULL), PLD_ERR_SYSTEM,
                    "pld_compile: environment: PLD_MODEL_FILE: model file "
                    "'/nonexistent/model': cannot be read");
  assert_int_equal(unsetenv("PLD_MODEL_FILE"), 0);
  unlink(f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_platforms),
    cmocka_unit_test(test_lines_replace),
    cmocka_unit_test(test_refusals),
    cmocka_unit_test(test_compile),
};

PLD_TEST_MAIN("core_model", tests)
