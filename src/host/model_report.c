/* host/model_report.c: the timing model's report (host/model.h): made
 * public from the replay's (pld/model.h), written as JSON
 * (PLD_MODEL_OUT; docs/model.md), and the API that returns it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/watch.h"
#include "host/model.h"

static double ns_of(int64_t ps) { return (double)ps / 1000.0; }

/* Rank r's tasks of the report into m->tasks from *at (its spans are
 * rep->spans[*s...], by call, task and block); their kernels' names from
 * the timeline tl. */
static void publish_tasks(struct pld__model *m, const struct pld__timeline *tl,
                          int32_t r, int32_t *s, int32_t *at) {
  const struct pld__tl_report *rep = &m->rep;
  pld_model_rank *pr = &m->ranks[r];
  pr->tasks = m->tasks + *at;
  while (*s < rep->nspans && rep->spans[*s].rank == r) {
    const struct pld__tl_span *sp = &rep->spans[*s];
    const struct pld__tl_task *tt =
        &tl->ranks[r].calls[sp->call].tasks[sp->task];
    pld_model_task *t = &m->tasks[*at];
    pld__name_copy(m->names[*at], sizeof m->names[*at], tt->name);
    *t = (pld_model_task){.call = sp->call,
                          .task = sp->task,
                          .kernel = m->names[*at],
                          .type = sp->cube ? PLD_CORE_CUBE : PLD_CORE_VECTOR,
                          .start_ns = ns_of(sp->start_ps),
                          .end_ns = ns_of(sp->end_ps)};
    for (; *s < rep->nspans && rep->spans[*s].rank == r &&
           rep->spans[*s].call == t->call && rep->spans[*s].task == t->task;
         (*s)++) {
      t->blocks++;
      if (ns_of(rep->spans[*s].start_ps) < t->start_ns)
        t->start_ns = ns_of(rep->spans[*s].start_ps);
      if (ns_of(rep->spans[*s].end_ps) > t->end_ns)
        t->end_ns = ns_of(rep->spans[*s].end_ps);
    }
    pr->ntasks++;
    (*at)++;
  }
}

int pld__model_publish(const struct pld_program *p, struct pld__model *m,
                       const struct pld__timeline *tl) {
  const struct pld__tl_report *rep = &m->rep;
  m->ranks = pld__calloc((size_t)rep->nranks + 1, sizeof *m->ranks);
  m->cores = pld__calloc((size_t)rep->ncores + 1, sizeof *m->cores);
  m->tasks = pld__calloc((size_t)rep->nspans + 1, sizeof *m->tasks);
  m->names = pld__calloc((size_t)rep->nspans + 1, sizeof *m->names);
  if (!m->ranks || !m->cores || !m->tasks || !m->names)
    return pld__fail_api(PLD_ERR_NOMEM, "out of memory (timing model)");
  int32_t s = 0, at = 0;
  for (int32_t r = 0; r < rep->nranks; r++)
    publish_tasks(m, tl, r, &s, &at);
  static const int cls[PLD__TB_CLASSES] = {[PLD__TB_COMPUTE] =
                                               PLD_MODEL_COMPUTE,
                                           [PLD__TB_MOVE] = PLD_MODEL_MOVE,
                                           [PLD__TB_COMM] = PLD_MODEL_COMM,
                                           [PLD__TB_WAIT] = PLD_MODEL_WAIT};
  int32_t c = 0;
  for (int32_t r = 0; r < rep->nranks; r++) {
    pld_model_rank *pr = &m->ranks[r];
    pr->rank = r;
    pr->device = p->plan.device_ids[r];
    pr->finish_ns = ns_of(rep->rank_ps[r]);
    pr->cores = m->cores + c;
    for (; c < rep->ncores && rep->cores[c].rank == r; c++) {
      const struct pld__tl_core *tc = &rep->cores[c];
      pld_model_core *pc = &m->cores[c];
      pc->type = tc->cube ? PLD_CORE_CUBE : PLD_CORE_VECTOR;
      pc->index = tc->id;
      pc->blocks = tc->blocks;
      pc->finish_ns = ns_of(tc->finish_ps);
      int64_t used = 0;
      for (int k = 0; k < PLD__TB_CLASSES; k++) {
        pc->busy_ns[cls[k]] = ns_of(tc->busy_ps[k]);
        used += tc->busy_ps[k];
      }
      pc->busy_ns[PLD_MODEL_IDLE] =
          ns_of(rep->rank_ps[r] > used ? rep->rank_ps[r] - used : 0);
      pr->ncores++;
    }
  }
  m->pub = (pld_model_report){.platform = p->plan.plat->name,
                              .total_ns = ns_of(rep->total_ps),
                              .nranks = rep->nranks,
                              .ranks = m->ranks};
  return PLD_OK;
}

static const char *const class_names[PLD_MODEL_CLASSES] = {
    "compute", "move", "comm", "wait", "idle"};

static void put_busy(FILE *f, const double *busy) {
  fprintf(f, "{");
  for (int k = 0; k < PLD_MODEL_CLASSES; k++)
    fprintf(f, "%s\"%s\": %.3f", k ? ", " : "", class_names[k], busy[k]);
  fprintf(f, "}");
}

int pld__model_write_json(const pld_model_report *r, const char *path) {
  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return pld__fail_api(PLD_ERR_SYSTEM,
                         "timing model: cannot write the report to '%s' "
                         "(PLD_MODEL_OUT): the path is too long",
                         path);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return pld__fail_api(PLD_ERR_SYSTEM,
                         "timing model: cannot write the report to '%s' "
                         "(PLD_MODEL_OUT): %s",
                         path, strerror(errno));
  fprintf(f, "{\"platform\": \"%s\", \"total_ns\": %.3f, \"ranks\": [",
          r->platform, r->total_ns);
  for (int32_t i = 0; i < r->nranks; i++) {
    const pld_model_rank *k = &r->ranks[i];
    fprintf(f,
            "%s\n  {\"rank\": %d, \"device\": %d, \"finish_ns\": %.3f, "
            "\"cores\": [",
            i ? "," : "", k->rank, k->device, k->finish_ns);
    for (int32_t j = 0; j < k->ncores; j++) {
      const pld_model_core *c = &k->cores[j];
      fprintf(f,
              "%s\n    {\"type\": \"%s\", \"index\": %d, \"blocks\": %d, "
              "\"finish_ns\": %.3f, \"busy_ns\": ",
              j ? "," : "", c->type == PLD_CORE_CUBE ? "AIC" : "AIV", c->index,
              c->blocks, c->finish_ns);
      put_busy(f, c->busy_ns);
      fprintf(f, "}");
    }
    fprintf(f, "],\n   \"tasks\": [");
    for (int32_t j = 0; j < k->ntasks; j++) {
      const pld_model_task *t = &k->tasks[j];
      fprintf(f, "%s\n    {\"call\": %d, \"task\": %d, \"kernel\": \"",
              j ? "," : "", t->call, t->task);
      for (const char *c = t->kernel; *c; c++) {
        char esc[8];
        fwrite(esc, 1, pld__json_char(esc, (unsigned char)*c), f);
      }
      fprintf(f,
              "\", \"type\": \"%s\", \"blocks\": %d, \"start_ns\": %.3f, "
              "\"end_ns\": %.3f}",
              t->type == PLD_CORE_CUBE ? "AIC" : "AIV", t->blocks, t->start_ns,
              t->end_ns);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "\n]}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return pld__fail_api(PLD_ERR_SYSTEM,
                         "timing model: cannot write the report to '%s' "
                         "(PLD_MODEL_OUT): %s",
                         path, strerror(e));
  }
  return PLD_OK;
}

/* ---- the API --------------------------------------------------------------
 */

int pld_program_model(const pld_program *p, pld_model_report *out) {
  const char *saved = pld__api_enter("pld_program_model");
  int st = PLD_OK;
  if (!p || !out)
    st = pld__fail_api(PLD_ERR_ARG, "%s: expected %s, got NULL",
                       p ? "out" : "p", p ? "a report to fill" : "a program");
  else if (!p->rs.model)
    st = pld__fail_api(PLD_ERR_STATE,
                       "the timing model is off for this program: set "
                       "PLD_MODEL=on or pld_config.model = \"on\"");
  else if (!p->rs.model->have)
    st = pld__fail_api(PLD_ERR_STATE,
                       "no modeled run yet: the report comes with a run's "
                       "successful end");
  else
    *out = p->rs.model->pub;
  pld__api_leave(saved);
  return st;
}

size_t pld_model_summary(const pld_model_report *r, char *buf, size_t cap) {
  if (!r)
    return (size_t)snprintf(buf, cap, "model: no report");
  double busy[PLD_MODEL_CLASSES] = {0}, all = 0;
  int32_t last = 0;
  for (int32_t i = 0; i < r->nranks; i++) {
    if (r->ranks[i].finish_ns > r->ranks[last].finish_ns)
      last = i;
    for (int32_t j = 0; j < r->ranks[i].ncores; j++)
      for (int k = 0; k < PLD_MODEL_CLASSES; k++) {
        busy[k] += r->ranks[i].cores[j].busy_ns[k];
        all += r->ranks[i].cores[j].busy_ns[k];
      }
  }
  double pct[PLD_MODEL_CLASSES];
  for (int k = 0; k < PLD_MODEL_CLASSES; k++)
    pct[k] = all > 0 ? 100.0 * busy[k] / all : 0;
  return (size_t)snprintf(
      buf, cap,
      "model: %s, %d rank%s, %.3f us (rank %d last); cores busy %.0f%% "
      "(compute %.0f%%, moves %.0f%%, comm %.0f%%, waiting %.0f%%)",
      r->platform, (int)r->nranks, r->nranks == 1 ? "" : "s",
      r->total_ns / 1000.0, (int)last, 100.0 - pct[PLD_MODEL_IDLE],
      pct[PLD_MODEL_COMPUTE], pct[PLD_MODEL_MOVE], pct[PLD_MODEL_COMM],
      pct[PLD_MODEL_WAIT]);
}
