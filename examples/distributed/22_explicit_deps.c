/* Step 22: explicit dependencies - a launch names the tasks it waits for.
 *
 * A device orders its kernel launches by the data: a task waits for the
 * earlier tasks whose tensors overlap its own, one of them writing.  Some
 * orders are not in the data.  This is the original's deferred-completion
 * scenario (deferred_notify_demo), on P ranks:
 *
 *   producer     puts this rank's partial x[r] into the previous rank's
 *                mailbox window, a notify on that rank's counter behind it;
 *   notify_wait  completes once this rank's counter reached 1: its block
 *                ends at once (pld_wait_deferred), its task only then;
 *   consumer     result[r] = this rank's mailbox, which must wait for the
 *                notify_wait task: the peer's data is in only then.
 *
 * The consumer shares no tensor with notify_wait (the counter is a window
 * of its own), so no automatic order holds it back: the original passes
 * a token tensor from one to the other; here the consumer names the task,
 * pld_launch_after(a, PLD_DEPS(notified), consumer, ...), with the id
 * pld_launch_task returned.
 *
 *   --mode auto     (the default) the edge beside the automatic order
 *                   (the consumer after the producer by the mailbox);
 *   --mode manual   in a manual scope, as the original's MANUAL scope:
 *                   no automatic order among the scope's launches, every
 *                   edge named.
 *
 * The result is checked against plain C: result[r] = x[(r + 1) % P].
 *
 *   22_explicit_deps -p a2a3sim -d 0,1,2,3 --mode manual      prints OK
 *   (any P >= 2)
 */
#include "example.h"

enum { N = 4096 };
PLD_DYNAMIC(NR);

PLD_KERNEL(producer, k, PLD_IN(partial, FP32, N), PLD_WINDOW(mailbox, FP32, N),
           PLD_WINDOW(counter, INT32, 1)) {
  pld_comm c = pld_window_comm(mailbox);
  int32_t n = pld_nranks(k, c), prev = (pld_rank(k, c) + n - 1) % n;
  pld_put_notify(k, mailbox, prev, partial, NULL, counter, PLD_AT(0), 1,
                 PLD_NOTIFY_ADD);
}

PLD_KERNEL(notify_wait, k, PLD_WINDOW(counter, INT32, 1)) {
  pld_wait_deferred(k, counter, PLD_AT(0), 1, PLD_WAIT_GE);
}

PLD_KERNEL(consumer, k, PLD_WINDOW(mailbox, FP32, N),
           PLD_OUT(result, FP32, N)) {
  pld_get(k, result, pld_rank(k, pld_window_comm(mailbox)), mailbox, NULL);
}

PLD_DEVICE(deps_device, a, PLD_IN(partial, FP32, N),
           PLD_WINDOW(mailbox, FP32, N), PLD_WINDOW(counter, INT32, 1),
           PLD_OUT(result, FP32, N), PLD_SCALAR(manual, BOOL)) {
  if (manual)
    pld_manual_scope_begin(a);
  pld_task_id put = pld_launch_task(a, producer, 1, partial, mailbox, counter);
  pld_task_id notified = pld_launch_task(a, notify_wait, 1, counter);
  if (manual) /* every order named: the mailbox orders nothing here */
    pld_launch_after(a, PLD_DEPS(put, notified), consumer, 1, mailbox, result);
  else
    pld_launch_after(a, PLD_DEPS(notified), consumer, 1, mailbox, result);
  if (manual)
    pld_manual_scope_end(a);
}

PLD_HOST(deps_host, h, PLD_IN(x, FP32, NR, N), PLD_OUT(y, FP32, NR, N),
         PLD_SCALAR(manual, BOOL)) {
  pld_window_buf mb = pld_window_alloc_shape(h, PLD_FP32, PLD_SHAPE(N));
  pld_window_buf cb = pld_window_alloc_shape(h, PLD_INT32, PLD_SHAPE(1));
  for (int r = 0; r < pld_world_size(h); r++)
    pld_dispatch(h, deps_device, r, pld_slice(h, x, r),
                 pld_window_view(h, mb, PLD_FP32, PLD_SHAPE(N)),
                 pld_window_view(h, cb, PLD_INT32, PLD_SHAPE(1)),
                 pld_slice(h, y, r), manual);
}

int main(int argc, char **argv) {
  struct example ex;
  example_init_world(&ex, argc, argv,
                     "  --mode auto|manual   the edge beside the automatic "
                     "order (the default),\n"
                     "                       or every edge named in a manual "
                     "scope\n");
  bool manual = example_mode(&ex, "auto", "manual");
  const int64_t shape[] = {ex.cfg.ndevices, N};
  pld_tensor x = example_tensor(&ex, 2, shape, 1);
  pld_tensor y = example_tensor(&ex, 2, shape, 0);

  example_run(&ex, deps_host, x, y, manual);

  /* The original's golden: rank r's result is rank r + 1's partial. */
  int bad = example_golden_shift(&ex, x, y, 1);
  pld_tensor_destroy(x);
  pld_tensor_destroy(y);
  return bad;
}
