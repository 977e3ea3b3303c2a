/**
 * Bounded waits across objects: every call to a team's hub (from a gate or a route), every
 * fan-out from the hub to its gates, and every route's read of a gate's detail waits at most a
 * named budget, then gives up with `DeadlineExceeded` and takes its stated fallback. A stuck hub
 * then costs a caller one budget, never its heartbeat, expiry or lease sweeps (the gate's alarm)
 * or a request's answer. A route's call that *is* the change, to the session's own gate (a
 * decision, a stop, an HTTP hold and its poll, a replay of dead letters), is not given up on:
 * the gate is the record, an answer before it committed could say neither yes nor no, and the
 * platform bounds the request.
 *
 * The call given up on is not cancelled (an RPC cannot be): it may still finish later, so each
 * call site's work is idempotent or its late answer is ignored.
 *
 * Owns: the budgets and the one way to apply them. Does not own: the fallbacks (each call
 * site states its own: `docs/faults.md`, "Slow or stuck dependencies").
 */

/** The alarm path (a gate's outbox flush and news, an escalation step, a hub's fan-outs, mail). */
export const ALARM_BUDGET_MS = 5_000;
/** A request path: an answer someone is waiting for (admission, roles, an approval's detail, a connect's policy). */
export const REQUEST_BUDGET_MS = 2_000;
/**
 * How long a hub waits on its gates before it answers the route that started a fan-out (a
 * revocation, a policy change): well within the route's own REQUEST_BUDGET_MS, so one slow gate
 * never turns a change that stands into a `503`. The gates not told by then are told after.
 */
export const FANOUT_ANSWER_MS = REQUEST_BUDGET_MS / 2;

/** A bounded wait ran out: `what` did not answer within `ms`. */
export class DeadlineExceeded extends Error {
  override readonly name = "DeadlineExceeded";

  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`${what} did not answer within ${ms} ms`);
  }
}

/** Settles as `promise` does, or rejects with `DeadlineExceeded` once `ms` have passed first. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(what, ms)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for `promise` at most `ms`, then goes on without it (it keeps running): for work a
 * caller need not see finish. A failure other than running out of time is logged, never thrown.
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number, what: string): Promise<void> {
  try {
    await withDeadline(promise, ms, what);
  } catch (error) {
    if (!(error instanceof DeadlineExceeded)) console.error(`${what} failed: ${String(error).slice(0, 200)}`);
  }
}

/** `withDeadline`, with `fallback` answered instead of any failure (late or thrown). */
export function orFallback<T>(promise: Promise<T>, ms: number, what: string, fallback: T): Promise<T> {
  return withDeadline(promise, ms, what).catch(() => fallback);
}
