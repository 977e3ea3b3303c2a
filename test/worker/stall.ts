/**
 * A team's real hub made to stall, as an overloaded or wedged object does: its input gate is held
 * (`blockConcurrencyWhile`), so every call to it waits, unanswered, until the test lets go
 * (`release`) or the hub breaks (`fail`: the calls waiting on it throw). No stub: the gate and the
 * routes call the real hub through its real binding.
 */
import { runInDurableObject } from "cloudflare:test";
import { vi } from "vitest";
import { hubStub } from "./helpers";

export interface StalledHub {
  /** The hub takes its calls again (each waiting one is then answered). */
  release(): void;
  /** The hub breaks: the calls waiting on it throw, and the next call finds a fresh instance. */
  fail(): void;
}

export async function stallHub(teamId: string): Promise<StalledHub> {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const held = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  // A flag, not a promise: a promise resolved inside the hub would run the test on in the hub's I/O context.
  let blocked = false;
  await runInDurableObject(hubStub(teamId), (_, state) => {
    // After this call has answered: a call's own input gate would otherwise hold its answer.
    setTimeout(() => {
      state
        .blockConcurrencyWhile(async () => {
          blocked = true;
          await held;
        })
        .catch(() => undefined);
    }, 0);
  });
  await vi.waitFor(() => {
    if (!blocked) throw new Error("the hub is not held yet");
  });
  return { release, fail: () => fail(new Error("the hub broke")) };
}
