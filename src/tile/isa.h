/* tile/isa.h: the instruction sets the tile loops run with, chosen once at
 * run time.
 *
 * The library is built for any x86-64 (SSE2) by default, yet the tile
 * loops are worth several times more with AVX2 or AVX-512.  Each hot loop
 * is therefore compiled once per level - plain C that gcc vectorizes, the
 * same source each time - and the level in force picks the copy:
 *
 *   generic  the compiler's flags alone (x86-64: SSE2; arm64: NEON);
 *   avx2     x86-64-v3: AVX2, FMA, F16C (and BMI1/2, LZCNT, MOVBE);
 *   avx512   x86-64-v4: the above and AVX-512 F, BW, CD, DQ, VL.
 *
 * The level in force is the best one the CPU has, or the one PLD_ISA
 * names (generic, avx2, avx512; unset, empty or "auto": the best).  A
 * word that is no level, a level the CPU lacks, or one below what the
 * build's own flags use (PLD_NATIVE=ON) is refused: every tile operation
 * then fails its kernel with PLD_ERR_CONFIG and the refusal (the loops
 * meanwhile run the best level); pld__isa_check lets a program's checks
 * of its environment (pld_compile) refuse it up front.
 * Every level computes the same bits: the loops round the same way
 * (matmul multiplies and adds with one rounding on every level, FP16 goes
 * through the same round-to-nearest-even), which the tile tests check on
 * every level the machine has (tests/tile/CMakeLists.txt).  Only which
 * NaN comes out where two NaNs meet may differ (IEEE 754 leaves it open,
 * and gcc may order the operands of a commutative operation differently
 * in each copy): a NaN stays a NaN.
 *
 * One mechanism: a loop is written as the body of
 *
 *   PLD__ISA_FUNCTION(static, name, (params...), (args...)) { body }
 *
 * which defines `static void name(params...)` calling a copy of the body
 * compiled for the level in force (an indexed call through a table of
 * three).  In the body, `isa` is that level as a constant, for the few
 * places that differ (instructions gcc does not generate by itself, such
 * as the FP16 conversions).  Functions the body calls are compiled with
 * it only when inlined: helpers of hot loops are `static inline` (or
 * PLD__ISA_INLINE when they are large).  Without the target attributes
 * (another architecture, another compiler, or a build whose flags already
 * include AVX-512, as PLD_NATIVE=ON on such a machine) there is one copy,
 * called directly.
 *
 * Variants are per function, not ifuncs or target_clones: those pick
 * their copy in a resolver that runs before the program (and before the
 * sanitizers' runtimes) is set up, which could not read PLD_ISA, and they
 * need a dynamic loader (static executables handle them only in part).
 * A table indexed by one global works the same in static, shared, -fPIC
 * and sanitized builds. */
#ifndef PLD_TILE_ISA_H
#define PLD_TILE_ISA_H

#include <stddef.h>

/* The levels, in order (macros: the preprocessor compares them). */
#define PLD__ISA_GENERIC 0
#define PLD__ISA_AVX2 1
#define PLD__ISA_AVX512 2
#define PLD__ISA_LEVELS 3

/* Whether the levels above generic exist: x86-64 with gcc or clang. */
#if defined(__x86_64__) && defined(__GNUC__)
#define PLD__ISA_X86 1
#else
#define PLD__ISA_X86 0
#endif

/* The level the compiler's own flags already give (PLD_NATIVE=ON, or
 * -march=... in CFLAGS): levels below it cannot run this build's code. */
#if PLD__ISA_X86 && defined(__AVX512F__) && defined(__AVX512BW__) &&           \
    defined(__AVX512CD__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PLD__ISA_BASE PLD__ISA_AVX512
#elif PLD__ISA_X86 && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PLD__ISA_BASE PLD__ISA_AVX2
#else
#define PLD__ISA_BASE PLD__ISA_GENERIC
#endif

/* The target attributes of the levels: instruction sets only, never
 * "arch=", which would also change the tuning and stop gcc from inlining
 * the (default-target) helpers into the copy. */
#if PLD__ISA_X86
#define PLD__ISA_TARGET_AVX2                                                   \
  __attribute__((target("avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt")))
#define PLD__ISA_TARGET_AVX512                                                 \
  __attribute__((target("avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt,"           \
                        "avx512f,avx512bw,avx512cd,avx512dq,avx512vl")))
#endif

#define PLD__ISA_INLINE static inline __attribute__((always_inline))

/* The level in force: chosen on the first call (PLD_ISA, the CPU), then
 * one relaxed load. */
extern int pld__isa_level;
int pld__isa_choose(void) __attribute__((cold));
static inline int pld__isa(void) {
  const int level = __atomic_load_n(&pld__isa_level, __ATOMIC_RELAXED);
  return level >= 0 ? level : pld__isa_choose();
}

/* "generic", "avx2" or "avx512". */
const char *pld__isa_name(int level);
/* The level a name of pld__isa_name names, or -1. */
int pld__isa_parse(const char *name);
/* The best level this CPU runs (never below PLD__ISA_BASE). */
int pld__isa_best(void);
/* Whether this build can run level on this CPU: from PLD__ISA_BASE (what
 * the build's own flags use) to the best the CPU has.  The one rule: a
 * level PLD_ISA names is accepted, and pld__isa_set takes it, exactly
 * when this says so, and the tile tests run each level where it does. */
int pld__isa_runs(int level);
/* Why PLD_ISA is refused ("environment: PLD_ISA='...': ..."), or NULL
 * when it is accepted (or unset).  The level in force is then the best.
 * Inline: every tile operation asks. */
extern char pld__isa_refusal_text[256];
static inline const char *pld__isa_refusal(void) {
  if (__atomic_load_n(&pld__isa_level, __ATOMIC_ACQUIRE) < 0)
    pld__isa_choose();
  return pld__isa_refusal_text[0] ? pld__isa_refusal_text : NULL;
}
/* PLD_OK, or PLD_ERR_CONFIG with the calling thread's message set to
 * "<fn>: <refusal>": for the checks of a program's environment
 * (pld_compile, as pld__tunables_check). */
int pld__isa_check(const char *fn);
/* Makes level the one in force (tests, benchmarks: one process timing or
 * comparing every level).  PLD_OK, or PLD_ERR_CONFIG (message set) for a
 * level this CPU or this build cannot run. */
int pld__isa_set(int level);

/* ---- the multi-versioned function --------------------------------------- */

#define PLD__ISA_UNPAREN(...) __VA_ARGS__

/* The copy of name's body for one level, with every call in it inlined
 * where it can be: the helpers compiled for one level (the FP16 and BF16
 * loops of tile/convert_loops.h) are inlined into that level's copy only,
 * where gcc's size limits would otherwise leave some calls in the large
 * elementwise kernels (a call, and a vzeroupper, per block). */
#define PLD__ISA_FLAT __attribute__((flatten))
#define PLD__ISA_COPY(attr, suffix, level, name, params, args)                 \
  attr PLD__ISA_FLAT static void name##__##suffix params {                     \
    name##__body(level, PLD__ISA_UNPAREN args);                                \
  }

#if PLD__ISA_X86 && PLD__ISA_BASE < PLD__ISA_AVX512
#define PLD__ISA_DISPATCH(linkage, name, params, args)                         \
  PLD__ISA_COPY(, generic, PLD__ISA_BASE, name, params, args)                  \
  PLD__ISA_COPY(PLD__ISA_TARGET_AVX2, avx2, PLD__ISA_AVX2, name, params, args) \
  PLD__ISA_COPY(PLD__ISA_TARGET_AVX512, avx512, PLD__ISA_AVX512, name, params, \
                args)                                                          \
  linkage void name params {                                                   \
    static void(*const copies[PLD__ISA_LEVELS])                                \
        params = {name##__generic, name##__avx2, name##__avx512};              \
    copies[pld__isa()] args;                                                   \
  }
#else
#define PLD__ISA_DISPATCH(linkage, name, params, args)                         \
  linkage void name params {                                                   \
    name##__body(PLD__ISA_BASE, PLD__ISA_UNPAREN args);                        \
  }
#endif

/* PLD__ISA_FUNCTION(linkage, name, (params), (args)) { body }: see above.
 * linkage is `static` or empty (a function declared in a header); the
 * function returns nothing (results go through its pointers). */
#define PLD__ISA_FUNCTION(linkage, name, params, args)                         \
  PLD__ISA_INLINE void name##__body(const int isa __attribute__((unused)),     \
                                    PLD__ISA_UNPAREN params);                  \
  PLD__ISA_DISPATCH(linkage, name, params, args)                               \
  PLD__ISA_INLINE void name##__body(const int isa __attribute__((unused)),     \
                                    PLD__ISA_UNPAREN params)

#endif
