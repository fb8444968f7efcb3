/* tile/isa.c: the level the tile loops run with (tile/isa.h): what the CPU
 * has, and what PLD_ISA asks for. */
#include "tile/isa.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tunables.h"

int pld__isa_level = -1;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int best;
char pld__isa_refusal_text[256]; /* empty when PLD_ISA is accepted */

static const char *const names[PLD__ISA_LEVELS] = {"generic", "avx2", "avx512"};

const char *pld__isa_name(int level) {
  return level >= 0 && level < PLD__ISA_LEVELS ? names[level] : "?";
}

/* What each level needs of the CPU, for messages. */
static const char *const needs[PLD__ISA_LEVELS] = {
    "", "x86-64-v3: AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE",
    "x86-64-v4: AVX-512 F, BW, CD, DQ and VL, with x86-64-v3"};

/* The best level of this CPU.  The psABI levels are what the copies are
 * compiled for; __builtin_cpu_supports also checks that the operating
 * system saves the vector registers (XCR0). */
static int cpu_best(void) {
  int level = PLD__ISA_GENERIC;
#if PLD__ISA_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3"))
    level = PLD__ISA_AVX2;
  if (level == PLD__ISA_AVX2 && __builtin_cpu_supports("x86-64-v4"))
    level = PLD__ISA_AVX512;
#endif
  /* A build for a level the CPU lacks does not get this far (its code
   * faults first), so BASE is the floor. */
  return level < PLD__ISA_BASE ? PLD__ISA_BASE : level;
}

/* value between single quotes, bounded, other bytes than printable ASCII
 * as \xNN. */
static size_t isa_quote(char *buf, size_t cap, const char *value) {
  size_t n = pld__catf(buf, cap, "'");
  size_t i = 0;
  for (; value[i] && i < 32; i++) {
    const unsigned char c = (unsigned char)value[i];
    n += c >= 0x20 && c < 0x7f && c != '\'' && c != '\\'
             ? pld__catf(buf + n, cap - n, "%c", c)
             : pld__catf(buf + n, cap - n, "\\x%02x", c);
  }
  return n + pld__catf(buf + n, cap - n, "'%s", value[i] ? "..." : "");
}

int pld__isa_parse(const char *name) {
  for (int level = 0; level < PLD__ISA_LEVELS; level++)
    if (!strcmp(name, names[level]))
      return level;
  return -1;
}

/* Whether this build runs level on this CPU (best known): the one rule of
 * PLD_ISA, pld__isa_set and pld__isa_runs. */
static int runnable(int level) {
  return level >= PLD__ISA_BASE && level <= best;
}

/* The level PLD_ISA asks for, or the best with the refusal recorded. */
static int from_environment(void) {
  const char *v = pld__setting(PLD__SET_ISA);
  if (!v || !*v || !strcmp(v, "auto"))
    return best;
  int want = pld__isa_parse(v);
  if (want >= 0 && runnable(want))
    return want;
  char *const r = pld__isa_refusal_text;
  const size_t cap = sizeof pld__isa_refusal_text;
  size_t n = pld__catf(r, cap, "environment: PLD_ISA=");
  n += isa_quote(r + n, cap - n, v);
  if (want < 0)
    pld__catf(r + n, cap - n,
              ": expected generic, avx2, avx512 or auto (unset: the best "
              "this CPU has, here %s)",
              names[best]);
  else if (want < PLD__ISA_BASE)
    pld__catf(r + n, cap - n,
              ": this build's compiler flags (-march=native: PLD_NATIVE=ON) "
              "already use %s; build without them to run %s",
              names[PLD__ISA_BASE], names[want]);
  else
    pld__catf(r + n, cap - n, ": this CPU lacks %s (%s); the best it has is %s",
              names[want], needs[want], names[best]);
  return best;
}

/* The level is stored last, with release: a thread that sees it set (the
 * fast path of pld__isa_refusal, which every tile operation asks) sees
 * best and refusal too. */
static void choose(void) {
  best = cpu_best();
  __atomic_store_n(&pld__isa_level, from_environment(), __ATOMIC_RELEASE);
}

int pld__isa_choose(void) {
  pthread_once(&once, choose);
  return __atomic_load_n(&pld__isa_level, __ATOMIC_RELAXED);
}

int pld__isa_best(void) {
  pld__isa_choose();
  return best;
}

int pld__isa_runs(int level) {
  pld__isa_choose();
  return runnable(level);
}

int pld__isa_check(const char *fn) {
  const char *r = pld__isa_refusal();
  return r ? pld__fail(PLD_ERR_CONFIG, "%s: %s", fn, r) : PLD_OK;
}

int pld__isa_set(int level) {
  if (!pld__isa_runs(level))
    return pld__fail(PLD_ERR_CONFIG,
                     "pld__isa_set: level %s: this CPU and build run %s to "
                     "%s",
                     pld__isa_name(level), names[PLD__ISA_BASE], names[best]);
  __atomic_store_n(&pld__isa_level, level, __ATOMIC_RELEASE);
  return PLD_OK;
}
