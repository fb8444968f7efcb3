/* host/lifecycle.c: a compiled program's public life after pld_compile:
 * its blocking runs (after the runs in flight of host/submit.c), its
 * destruction, and pld_run (compile, run, destroy). */
#include "host/ctl.h"
#include "host/run.h"
#include "host/submit.h"

int pld_program_run(pld_program *p, int argc, const pld_arg *argv) {
  const char *saved = pld__api_enter("pld_program_run");
  /* After the runs in flight on its devices (its group's: a program
   * sharing them that never submitted has no runner of its own), as a
   * submit then a wait would be. */
  struct pld_program *group = p && p->rs.share ? p->rs.share : p;
  if (p && (p->rs.runner || group->rs.runner))
    pld__runner_drain(p->rs.runner ? p : group);
  int st = pld__program_run_now(p, argc, argv, NULL);
  pld__api_leave(saved);
  return st;
}

static void destroy(struct pld_program *p) {
  if (p->rs.sharers > 0) {
    /* Other programs run on its devices: they stay until the last of
     * them is destroyed (and this one with it). */
    pld__runner_drain(p);
    p->rs.destroy_pending = 1;
    return;
  }
  pld__runner_stop(p);
  if (p->rs.started)
    p->be.cp->stop(p, 0);
  struct pld_program *root = p->rs.share;
  pld__program_free(p);
  if (root && --root->rs.sharers == 0 && root->rs.destroy_pending)
    destroy(root);
}

void pld_program_destroy(pld_program *p) {
  if (!p)
    return;
  const char *saved = pld__api_enter("pld_program_destroy");
  destroy(p);
  pld__api_leave(saved);
}

int pld_run(pld_host_fn host, const pld_config *cfg, int argc,
            const pld_arg *argv) {
  pld_program *p;
  int st = pld_compile(host, cfg, argc, argv, &p);
  if (st)
    return st;
  st = pld_program_run(p, argc, argv);
  /* Keep the run's message: destroying must not overwrite it. */
  pld_program_destroy(p);
  return st;
}
