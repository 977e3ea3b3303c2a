/**
 * Faults for the outbox tests, injected as production meets them: D1 refusing writes (a trigger,
 * as `audit-durable.test.ts` does), a hub whose `gateReport` throws, and the clock the gate's
 * alarms run by, moved forward (the objects run in the tests' isolate, so they read it too).
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { vi } from "vitest";
import type { OutboxOp } from "../../worker/db";
import { TeamHub } from "../../worker/hub/team-hub";
import type { gateStub } from "./helpers";

type Stub = ReturnType<typeof gateStub>;

let triggers = 0;
/** The real clock, taken before any test moves it. */
const real = Date.now.bind(Date);

async function withTriggers(statements: Array<(name: string) => string>): Promise<() => Promise<void>> {
  const names = statements.map(() => `refuse_${++triggers}_${Date.now().toString(36)}`);
  for (const [i, make] of statements.entries()) await env.DB.exec(make(names[i] as string));
  return async () => {
    for (const name of names) await env.DB.exec(`DROP TRIGGER IF EXISTS ${name}`);
  };
}

const refuse = (reason: string) => `BEGIN SELECT RAISE(ABORT, '${reason}'); END;`;

/** D1 refuses every write of the team's outbox rows (approvals, sessions, audit) until lifted. */
export function refuseTeamWrites(teamId: string): Promise<() => Promise<void>> {
  const when = `WHEN NEW.team_id = '${teamId}'`;
  return withTriggers([
    (n) => `CREATE TRIGGER ${n} BEFORE INSERT ON approvals ${when} ${refuse("D1_ERROR: unavailable")}`,
    (n) => `CREATE TRIGGER ${n} BEFORE UPDATE ON approvals ${when} ${refuse("D1_ERROR: unavailable")}`,
    (n) => `CREATE TRIGGER ${n} BEFORE UPDATE ON agent_sessions ${when} ${refuse("D1_ERROR: unavailable")}`,
    (n) => `CREATE TRIGGER ${n} BEFORE INSERT ON audit_log ${when} ${refuse("D1_ERROR: unavailable")}`,
  ]);
}

/** D1 refuses any change to one approval's row (a poison row): every other write goes through. */
export function refuseApprovalRow(approvalId: string): Promise<() => Promise<void>> {
  const when = `WHEN NEW.id = '${approvalId}'`;
  return withTriggers([(n) => `CREATE TRIGGER ${n} BEFORE UPDATE ON approvals ${when} ${refuse("row refused")}`]);
}

/** D1 refuses to mark one session disconnected (its `session` op, alone): every other write goes through. */
export function refuseSessionDisconnect(sessionId: string): Promise<() => Promise<void>> {
  const when = `WHEN NEW.session_id = '${sessionId}' AND NEW.disconnected_at IS NOT NULL`;
  return withTriggers([(n) => `CREATE TRIGGER ${n} BEFORE UPDATE ON agent_sessions ${when} ${refuse("row refused")}`]);
}

/** D1 refuses to mark one session stopped (its `session_stop` op): every other write goes through. */
export function refuseSessionStop(sessionId: string): Promise<() => Promise<void>> {
  const when = `WHEN NEW.session_id = '${sessionId}' AND NEW.stopped IS NOT NULL`;
  return withTriggers([(n) => `CREATE TRIGGER ${n} BEFORE UPDATE ON agent_sessions ${when} ${refuse("row refused")}`]);
}

/** Every hub's `gateReport` throws (the hub down or erring) until restored. */
export function hubThrows(): () => void {
  const spy = vi.spyOn(TeamHub.prototype, "gateReport").mockRejectedValue(new Error("hub unavailable"));
  return () => spy.mockRestore();
}

/** A clock only moved forward by the test: Date.now() is the real time plus what the test added. */
export function simulatedClock() {
  let offset = 0;
  const spy = vi.spyOn(Date, "now").mockImplementation(() => real() + offset);
  return {
    advanceTo(at: number) {
      offset = Math.max(offset, at - real());
    },
    advanceBy(ms: number) {
      offset += ms;
    },
    restore: () => spy.mockRestore(),
  };
}

export const alarmOf = (stub: Stub) => runInDurableObject(stub, (_, state) => state.storage.getAlarm());

/**
 * Runs the gate's alarms as the platform would over the next `ms`: each at its time, the clock
 * moved there first, after `meanwhile` (an agent's heartbeat). How many ran.
 */
export async function runAlarmsFor(
  stub: Stub,
  clock: ReturnType<typeof simulatedClock>,
  ms: number,
  meanwhile: () => Promise<void> = async () => undefined,
) {
  const end = Date.now() + ms;
  let ran = 0;
  for (;;) {
    const at = await alarmOf(stub);
    if (at === null || at > end) break;
    clock.advanceTo(at);
    await meanwhile();
    if (await runDurableObjectAlarm(stub)) ran++;
  }
  clock.advanceTo(end);
  return ran;
}

/** The rows still to deliver (acknowledged ones wait only for the next change to delete them). */
export const outboxRows = (stub: Stub) =>
  runInDurableObject(stub, (gate, state) =>
    state.storage.sql
      .exec<{ op: string; attempts: number }>(
        "SELECT op, attempts FROM outbox WHERE seq > ? ORDER BY seq",
        gate.outbox.deliveredThrough,
      )
      .toArray(),
  );

export const deadLetters = (stub: Stub) =>
  runInDurableObject(stub, (_, state) =>
    state.storage.sql
      .exec<{ op: string }>("SELECT op FROM outbox_dead ORDER BY seq")
      .toArray()
      .map((r) => JSON.parse(r.op) as OutboxOp),
  );

/** The outbox's persisted failure streak, or null. */
export const backoffOf = (stub: Stub) =>
  runInDurableObject(stub, (_, state) => {
    const v = state.storage.sql.exec("SELECT v FROM meta WHERE k = 'outbox_backoff'").toArray()[0]?.v;
    return typeof v === "string" ? (JSON.parse(v) as { failures: number; retryAt: number }) : null;
  });

export const d1State = async (approvalId: string) =>
  (await env.DB.prepare("SELECT state FROM approvals WHERE id = ?").bind(approvalId).first<{ state: string }>())?.state;
