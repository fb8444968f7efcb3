/* host/artifact.c: the folder pld_compile writes for a person to read:
 * which function runs on which processor for each rank, with shapes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/tunables.h"
#include "host/program.h"

/* "x[1]" for a slice of host argument x, computed from its byte offset. */
static void slice_expr(char *buf, size_t cap, const struct pld_program *p,
                       const struct pld__devbuf *b, int ndim) {
  const struct pld__tensor *h = pld__host_meta(p, b->host_arg);
  size_t n = pld__catf(buf, cap, "%s", h->name);
  size_t stride = h->nbytes, off = b->host_offset;
  for (int d = 0; d < h->ndim - ndim; d++) {
    stride /= (size_t)h->shape[d];
    n += pld__catf(buf + n, cap - n, "[%zu]", off / stride);
    off %= stride;
  }
}

static void write_call(FILE *f, const struct pld_program *p,
                       const struct pld__devplan *pl, int c) {
  const struct pld__call *call = &pl->calls[c];
  const pld_signature *sig = call->fn.sig;
  fprintf(f, "  dispatch %d: %s on the AICPU of device %d (%s:%d)\n", c + 1,
          sig->name, pl->device_id, sig->file, sig->line);
  if (call->after_tasks)
    fprintf(f, "    starts after host task %d (%s)\n", call->after_tasks,
            p->plan.tasks[call->after_tasks - 1].fn.sig->name);
  for (int i = 0; i < call->argc; i++) {
    const struct pld__call_arg *a = &call->args[i];
    const pld_param *pm = &sig->params[i];
    char ts[128], ex[128];
    if (a->buf < 0 && a->win_buf < 0) {
      pld__scalar_str(ts, sizeof ts, pm, &a->scalar);
      fprintf(f, "    %s: %s\n", pm->name, ts);
      continue;
    }
    struct pld__tensor t;
    pld__tensor_init(&t, "pld_compile", a->dtype, a->ndim, a->shape);
    pld__tensor_str(ts, sizeof ts, &t);
    if (a->win_buf >= 0) {
      const struct pld__comm *comm =
          &p->plan.comms[(size_t)a->win_buf * (size_t)p->plan.nranks +
                         (size_t)pl->rank];
      fprintf(f,
              "    %s: %s window, view of buffer #%d at byte %zu; rank %d of "
              "%d in its domain\n",
              pm->name, ts, a->win_buf, a->win_offset, comm->rank,
              comm->nranks);
      continue;
    }
    const struct pld__devbuf *b = &pl->bufs[a->buf];
    const struct pld__inter *in = pld__host_inter(p, b->host_arg);
    slice_expr(ex, sizeof ex, p, b, a->ndim);
    fprintf(f, "    %s: %s %s = %s, %s; device memory [%zu, %zu)\n", pm->name,
            ts, pld__dir_name(pm->dir), ex,
            in && in->rank >= 0      ? "never copied"
            : in                     ? "copied only for host tasks"
            : pm->dir == PLD_DIR_IN  ? "copied in"
            : pm->dir == PLD_DIR_OUT ? "copied back"
                                     : "copied in and back",
            b->offset, b->offset + b->nbytes);
  }
  if (call->launches)
    fputs(call->launches, f);
}

/* A host task: where it runs, after what, its arguments. */
static void write_task(FILE *f, const struct pld_program *p, int t) {
  const struct pld__taskplan *tp = &p->plan.tasks[t];
  const pld_signature *sig = tp->fn.sig;
  fprintf(f, "  host task %d: %s on the host CPU (%s:%d), after", t + 1,
          sig->name, sig->file, sig->line);
  int any = 0;
  for (int r = 0; r < p->plan.nranks; r++)
    if (tp->need[r]) {
      fprintf(f, "%s rank %d's dispatch %d", any ? "," : "", r, tp->need[r]);
      any = 1;
    }
  fprintf(f, "%s\n", any ? "" : " nothing on the devices");
  for (int i = 0; i < tp->argc; i++) {
    const pld_param *pm = &sig->params[i];
    char ts[128];
    if (tp->argv[i].kind == PLD_ARG_SCALAR) {
      pld__scalar_str(ts, sizeof ts, pm, &tp->argv[i]);
      fprintf(f, "    %s: %s\n", pm->name, ts);
      continue;
    }
    const struct pld__tensor *m = pld__host_meta(p, tp->t[i].host_arg);
    struct pld__devbuf b = {0, tp->t[i].nbytes, tp->t[i].host_arg,
                            tp->t[i].host_offset, 0};
    char ex[128];
    slice_expr(ex, sizeof ex, p, &b, tp->t[i].ndim);
    pld__tensor_str(ts, sizeof ts, &tp->t[i]);
    fprintf(f, "    %s: %s %s = %s%s\n", pm->name, ts, pld__dir_name(pm->dir),
            ex, m->ndim == tp->t[i].ndim ? "" : " (a slice)");
  }
}

static int write_file(const char *dir, const char *name,
                      const struct pld_program *p, int rank) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    return pld__fail_api(PLD_ERR_SYSTEM, "artifact file %s: %s", path,
                         strerror(errno));
  const pld_signature *hs = p->plan.host.sig;
  const pld_platform_info *pi = p->plan.plat;
  if (rank < 0) {
    fprintf(f, "pld program %s (%s:%d)\n\n", hs->name, hs->file, hs->line);
    fprintf(f,
            "platform %s: per device %d cube (AIC) + %d vector (AIV) cores, "
            "Unified Buffer %zu KiB, L1 %zu KiB, L0A/L0B/L0C %zu/%zu/%zu "
            "KiB\n",
            pi->name, pi->cube_cores, pi->vector_cores, pi->ub_bytes / 1024,
            pi->l1_bytes / 1024, pi->l0a_bytes / 1024, pi->l0b_bytes / 1024,
            pi->l0c_bytes / 1024);
    fprintf(f, "world: %d rank%s\n", p->plan.nranks,
            p->plan.nranks == 1 ? "" : "s");
    for (int r = 0; r < p->plan.nranks; r++)
      fprintf(f, "  rank %d -> device %d (one process; see rank%d.txt)\n", r,
              p->plan.device_ids[r], r);
    fprintf(f,
            "\nhost orchestrator %s on the host CPU (the program's own "
            "process):\n",
            hs->name);
    for (int i = 0; i < p->plan.nargs; i++) {
      const pld_param *pm = &hs->params[i];
      if (pm->kind == PLD_ARG_TENSOR) {
        char ts[128];
        pld__tensor_str(ts, sizeof ts, &p->plan.arg_meta[i]);
        fprintf(f, "  %s: %s %s\n", pm->name, ts, pld__dir_name(pm->dir));
      } else {
        fprintf(f, "  %s: %s scalar\n", pm->name, pld_dtype_name(pm->dtype));
      }
    }
    for (int d = 0; d < p->plan.dims.n; d++)
      fprintf(f, "  dynamic dimension %s = %lld (bound by %s)\n",
              pld__dim_name(&p->plan.dims, d), (long long)p->plan.dims.size[d],
              p->plan.dims.by[d]);
    for (int i = 0; i < p->plan.ninters; i++) {
      const struct pld__inter *in = &p->plan.inters[i];
      char ts[128];
      pld__tensor_str(ts, sizeof ts, in->t);
      if (in->rank < 0)
        fprintf(f, "  %s: %s in host memory during a run\n", in->name, ts);
      else
        fprintf(f, "  %s: %s in the memory of rank %d's device during a run\n",
                in->name, ts, in->rank);
    }
    for (int t = 0; t < p->plan.ntasks; t++)
      write_task(f, p, t);
    for (int b = 0; b < p->plan.nwinbufs; b++) {
      const struct pld__winbuf *wb = p->plan.winbufs[b];
      fprintf(f,
              "  window buffer #%d: %zu bytes on each rank of its domain "
              "(copies of %zu bytes): ranks",
              b, wb->bytes, wb->phys);
      for (int r = 0; r < p->plan.nranks; r++)
        if (wb->member[r])
          fprintf(f, " %d", r);
      fprintf(f, "\n");
    }
  } else {
    const struct pld__devplan *pl = &p->plan.plans[rank];
    fprintf(f,
            "rank %d on device %d: %d dispatch%s, %zu bytes of dispatched "
            "tensors in device memory\n",
            rank, pl->device_id, pl->ncalls, pl->ncalls == 1 ? "" : "es",
            pl->data_bytes);
    for (int c = 0; c < pl->ncalls; c++)
      write_call(f, p, pl, c);
  }
  if (fclose(f) != 0)
    return pld__fail_api(PLD_ERR_SYSTEM, "artifact file %s: %s", path,
                         strerror(errno));
  return PLD_OK;
}

int pld__artifacts_write(struct pld_program *p, const char *dir) {
  char path[4096];
  if (dir[0] == '\0') {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/pld-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             p->plan.host.sig->name);
    if (!mkdtemp(path))
      return pld__fail_api(PLD_ERR_SYSTEM, "artifact folder %s: %s", path,
                           strerror(errno));
  } else {
    snprintf(path, sizeof path, "%s", dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return pld__fail_api(PLD_ERR_SYSTEM, "artifact folder %s: %s", path,
                           strerror(errno));
  }
  p->plan.artifact_dir = pld__strdup(path);
  if (!p->plan.artifact_dir)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  int st = write_file(path, "program.txt", p, -1);
  for (int r = 0; r < p->plan.nranks && st == PLD_OK; r++) {
    char name[32];
    snprintf(name, sizeof name, "rank%d.txt", r);
    st = write_file(path, name, p, r);
  }
  /* A folder written before by a program of more ranks keeps no rank
   * file this program has not: the folder describes one program. */
  for (int r = p->plan.nranks; st == PLD_OK; r++) {
    char name[4096 + 32];
    snprintf(name, sizeof name, "%s/rank%d.txt", path, r);
    if (unlink(name) != 0)
      break;
  }
  return st;
}

/* ---- the diagnostics' folders (device/diag.h) ---------------------------- */

/* Removes dispatch folder `dir` of an earlier program (its files, then the
 * folder).  Returns whether it was there. */
static int stale_dispatch_remove(const char *dir) {
  static const char *const files[] = {"deps.json",
                                      "scope_stats/scope_stats.jsonl"};
  char path[4096 + 64];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/scope_stats", dir);
  rmdir(path);
  return rmdir(dir) == 0 || errno != ENOENT;
}

int pld__diag_config(struct pld_program *p, const pld_config *cfg) {
  const char *v = cfg->diag ? cfg->diag : pld__setting(PLD__SET_DIAG);
  if (!v || !*v)
    return PLD_OK;
  char why[1024];
  if (pld__setting_refused(PLD__SET_DIAG, v, why, sizeof why))
    return pld__fail_api(PLD_ERR_CONFIG, "diagnostics: %s%s",
                         cfg->diag ? "pld_config.diag, read as " : "", why);
  unsigned what = 0;
  for (const char *w = v; *w;) {
    size_t len = strcspn(w, ",");
    /* deps, stats, all: the bits of PLD__DIAG_*, all of them last. */
    int i = pld__setting_word(PLD__SET_DIAG, w, len);
    what |= i == 2 ? 3u : 1u << i;
    w += len + (w[len] == ',');
  }
  const char *base = p->plan.artifact_dir;
  const char *env_dir = pld__setting(PLD__SET_DIAG_DIR);
  if (!base && env_dir && *env_dir) {
    base = env_dir;
    if (mkdir(base, 0777) != 0 && errno != EEXIST)
      return pld__fail_api(PLD_ERR_SYSTEM, "diagnostics: PLD_DIAG_DIR=%s: %s",
                           base, strerror(errno));
  }
  if (!base)
    return pld__fail_api(PLD_ERR_CONFIG,
                         "diagnostics (%s '%s'): expected a folder to write "
                         "them in, an artifact folder "
                         "(pld_config.artifact_dir) or PLD_DIAG_DIR, got "
                         "neither",
                         cfg->diag ? "pld_config.diag" : "PLD_DIAG", v);
  char path[4096];
  size_t n = (size_t)snprintf(path, sizeof path, "%s/dfx", base);
  if (n >= sizeof path - 64 || (mkdir(path, 0777) != 0 && errno != EEXIST))
    return pld__fail_api(PLD_ERR_SYSTEM, "diagnostics folder %s: %s", path,
                         n >= sizeof path - 64 ? "too long" : strerror(errno));
  p->plan.diag_dir = pld__strdup(path);
  if (!p->plan.diag_dir)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory");
  for (int r = 0; r < p->plan.nranks; r++) {
    struct pld__devplan *pl = &p->plan.plans[r];
    pl->diag = what;
    pl->diag_dir = p->plan.diag_dir;
    snprintf(path + n, sizeof path - n, "/rank%d", r);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return pld__fail_api(PLD_ERR_SYSTEM, "diagnostics folder %s: %s", path,
                           strerror(errno));
    /* The folder describes this program's last run: no dispatch beyond
     * the rank's is left from an earlier one. */
    size_t m = strlen(path);
    for (int k = pl->ncalls;; k++) {
      snprintf(path + m, sizeof path - m, "/d%d", k);
      if (!stale_dispatch_remove(path))
        break;
    }
    path[n] = '\0';
  }
  return PLD_OK;
}
