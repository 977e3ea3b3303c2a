/**
 * A team's real hub (or a session's real gate) made to stall, as an overloaded or wedged object
 * does: its input gate is held (`blockConcurrencyWhile`), so every call to it waits, unanswered,
 * until the test lets go (`release`) or the object breaks (`fail`: the calls waiting on it throw).
 * No stub: the gate and the routes call the real object through its real binding.
 */
import { runInDurableObject } from "cloudflare:test";
import { vi } from "vitest";
import { gateStub, hubStub } from "./helpers";

export interface StalledHub {
  /** The hub takes its calls again (each waiting one is then answered). */
  release(): void;
  /** The hub breaks: the calls waiting on it throw, and the next call finds a fresh instance. */
  fail(): void;
}

export function stallHub(teamId: string): Promise<StalledHub> {
  return stallObject(hubStub(teamId));
}

/** A session's gate, stalled the same way. */
export function stallGate(teamId: string, sessionId: string): Promise<StalledHub> {
  return stallObject(gateStub(teamId, sessionId));
}

async function stallObject(stub: DurableObjectStub): Promise<StalledHub> {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const held = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  // A flag, not a promise: a promise resolved inside the hub would run the test on in the hub's I/O context.
  let blocked = false;
  await runInDurableObject(stub, (_, state) => {
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
