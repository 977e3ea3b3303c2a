/**
 * Stopping a session: a person's "Stop" denies every pending request of the session at once
 * (`denied` / `session_stopped`, with who stopped it and their words to the agent), and the
 * session refuses every new request until someone resumes it. The stop is kept in the gate's
 * own storage (`meta('stopped')`), so an evicted or restarted gate stays stopped, and it goes to
 * D1's sessions row and the audit chain through the outbox, like every record of the gate.
 *
 * Owns: the stop and the resume (what they write, deny and report). Does not own: who may stop
 * or resume (the route), refusing new requests (state-machine.ts `check`, which reads the stop)
 * or the answers (rules.ts `agentAnswer`, elicitation.ts).
 */
import type { Owner, SessionStop } from "../../sdk/src/approval";
import { randomBase62 } from "../crypto";
import type { OutboxOp } from "../db";
import type { StopInput, StopResult } from "./api";
import type { Outbox } from "./outbox";
import type { StateMachine } from "./state-machine";
import type { GateStore, ServedSession } from "./store";

export interface StopHost {
  store: GateStore;
  machine: StateMachine;
  outbox: Outbox;
  /** The session's state changed: D1's index and the team's hub (and so the dashboards) hear it. */
  report(now: number): void;
}

export class SessionStops {
  constructor(private readonly host: StopHost) {}

  /**
   * Stops the session: every pending request is denied (each exactly once: a decision that got
   * there first keeps its answer), new ones are refused. A stop of a stopped session keeps the
   * first stop (and its audit entry); null for another team's session or one never served.
   */
  stop(teamId: string, input: StopInput, now: number): StopResult | null {
    const meta = this.served(teamId);
    if (!meta) return null;
    const stop: SessionStop =
      this.host.store.stopped() ?? this.record(meta, { by: input.by, at: now, reason: input.reason ?? null });
    const rows = this.host.store.pendingAll();
    this.host.machine.resolveAll(
      rows,
      {
        state: "denied",
        reason: "session_stopped",
        decidedBy: { ...input.by, device: input.device },
        ...(stop.reason !== null && { message: stop.reason }),
      },
      now,
    );
    this.host.report(now);
    return { stopped: stop, denied: rows.length };
  }

  /** Resumes a stopped session: new requests are held again. Null for another team's session or one never served. */
  resume(teamId: string, by: Owner, now: number): StopResult | null {
    const meta = this.served(teamId);
    if (!meta) return null;
    const stopped = this.host.store.stopped();
    if (stopped) {
      this.host.machine.atomically(() => {
        this.host.store.setStopped(null);
        this.host.outbox.enqueue(stopRow(meta, null, now));
        this.host.outbox.enqueue(
          stopAudit(meta, `user:${by.userId}`, "session.resumed", now, { stoppedAt: stopped.at }),
        );
      });
      this.host.report(now);
    }
    return { stopped: null, denied: 0 };
  }

  private served(teamId: string): Readonly<ServedSession> | null {
    const meta = this.host.store.meta();
    return meta?.teamId === teamId ? meta : null;
  }

  /** Writes a new stop, with its D1 row and audit event, in one transaction. */
  private record(meta: Readonly<ServedSession>, stop: SessionStop): SessionStop {
    this.host.machine.atomically(() => {
      this.host.store.setStopped(stop);
      this.host.outbox.enqueue(stopRow(meta, stop, stop.at));
      this.host.outbox.enqueue(
        stopAudit(meta, `user:${stop.by.userId}`, "session.stopped", stop.at, { reason: stop.reason }),
      );
    });
    return stop;
  }
}

/** D1's copy of the stop (the sessions row's `stopped`), replayed in order with the session's other rows. */
function stopRow(meta: Readonly<ServedSession>, stopped: SessionStop | null, at: number): OutboxOp {
  return { op: "session_stop", teamId: meta.teamId, sessionId: meta.sessionId, stopped, at };
}

/** The audit event of a stop or a resume: who, when, and the stopper's words. */
function stopAudit(
  meta: Readonly<ServedSession>,
  actor: string,
  action: "session.stopped" | "session.resumed",
  at: number,
  detail: Record<string, unknown>,
): OutboxOp {
  const { teamId, sessionId } = meta;
  // Event ids are unique across teams, and a session may be stopped and resumed many times.
  const eventId = `session:${teamId}/${sessionId}:${action}:${randomBase62(12)}`;
  return { op: "audit", eventId, teamId, at, actor, action, subject: sessionId, detail };
}
