/* tests/pld_test.h: helpers shared by the pld test suites. */
#ifndef PLD_TEST_H
#define PLD_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "pld.h"
#include "test_main.h"

/* Asserts a call failed with `status` and its message contains each of
 * the NULL-terminated substrings; prints the message when it does not. */
#define assert_fails_with(call, status, ...)                                   \
  pld_test_assert_fails((call), (status), __FILE__, __LINE__,                  \
                        (const char *[]){__VA_ARGS__, NULL})

static inline void pld_test_assert_fails_msg(int got, int want, const char *msg,
                                             const char *file, int line,
                                             const char **subs) {
  if (got != want) {
    print_error("%s:%d: expected %s, got %s: %s\n", file, line,
                pld_status_name(want), pld_status_name(got), msg);
    _fail(file, line);
  }
  for (; *subs; subs++)
    if (!strstr(msg, *subs)) {
      print_error("%s:%d: message lacks \"%s\": %s\n", file, line, *subs, msg);
      _fail(file, line);
    }
}

static inline void pld_test_assert_fails(int got, int want, const char *file,
                                         int line, const char **subs) {
  pld_test_assert_fails_msg(got, want, pld_last_error(), file, line, subs);
}

#define assert_ok(call)                                                        \
  do {                                                                         \
    int st_ = (call);                                                          \
    if (st_ != PLD_OK) {                                                       \
      print_error("%s: %s\n", pld_status_name(st_), pld_last_error());         \
      fail();                                                                  \
    }                                                                          \
  } while (0)

/* A host FP32 tensor of the shape, element i = i * scale + offset. */
static inline pld_tensor pld_test_tensor(int ndim, const int64_t *shape,
                                         float scale, float offset) {
  pld_tensor t;
  assert_ok(pld_tensor_create(PLD_FP32, ndim, shape, &t));
  float *d = pld_tensor_data(t);
  for (int64_t i = 0; i < pld_tensor_numel(t); i++)
    d[i] = (float)i * scale + offset;
  return t;
}

/* The text of file `name` of folder dir (an artifact folder), in a
 * buffer the next call reuses. */
static inline const char *pld_test_slurp(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Removes the folder dir (an artifact folder a test asked for). */
static inline void remove_dir(const char *dir) {
  char cmd[4200];
  assert_true(snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd);
  assert_int_equal(system(cmd), 0);
}

/* The process has no child left (every device process was reaped). */
static inline void assert_no_children(void) {
  errno = 0;
  pid_t w = waitpid(-1, NULL, WNOHANG);
  assert_int_equal(w, -1);
  assert_int_equal(errno, ECHILD);
}

/* Shared mappings of this process (the devices' memory while they run). */
static inline int count_shared_mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char perms[8];
    if (sscanf(line, "%*s %7s", perms) == 1 && perms[3] == 's')
      n++;
  }
  fclose(f);
  return n;
}

/* Files in /dev/shm (named shared memory segments). */
static inline int count_dev_shm(void) {
  FILE *p = popen("ls -A /dev/shm 2>/dev/null | wc -l", "r");
  assert_non_null(p);
  int n = -1;
  assert_int_equal(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

#endif
