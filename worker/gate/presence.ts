/**
 * What the session is and who can see it: who joined with which policy, the team's newer
 * policies, what `hello` and `session/update` told about it, and the reports of its connection
 * state to D1 (sessions index) and to the team's hub (live, and the source of newer policies).
 *
 * Owns: the session's metadata and tool calls. Does not own: requests (state-machine.ts) or
 * the sockets themselves (sockets.ts).
 */
import { type HelloParams, toolCallUpdateSchema } from "../../sdk/src/protocol";
import type { VersionedPolicy } from "../policy";
import type { GateJoin } from "./api";
import { type GateNews, PRESENCE_REPORT_MS } from "./hub";
import type { Outbox } from "./outbox";
import { helloInfo, joinedMeta, withoutNullish, withPolicy } from "./rules";
import { isPrivateTeam } from "./sealed";
import type { GateStore, ServedSession } from "./store";

export interface PresenceHost {
  store: GateStore;
  outbox: Outbox;
  /** News for the team's hub, which answers a newer policy to the shell (the gate's `HubMail`). */
  tellHub(teamId: string, news: GateNews): void;
  /** Whether the session has an open socket. */
  connected(): boolean;
}

/** Why a join was refused. */
export interface JoinRefusal {
  refused: "key_revoked" | "policy_unavailable";
  message: string;
}

export class Presence {
  constructor(private readonly host: PresenceHost) {}

  /**
   * Records who joins with which policy, or why not: the key was revoked here, or the join
   * carries no policy (the hub did not answer in time) and the session has none of its own yet.
   * A join without a policy keeps the session's last one; the hub's answer to the next report
   * brings a newer one.
   */
  join(join: GateJoin): ServedSession | JoinRefusal {
    if (this.host.store.isRevoked(join.keyId)) return { refused: "key_revoked", message: "this API key was revoked" };
    const meta = joinedMeta(this.host.store.meta(), join);
    if (!meta) return { refused: "policy_unavailable", message: "the team's policy could not be read; try again" };
    this.host.store.saveMeta(meta);
    return meta;
  }

  /**
   * The team's policy changed: requests opened from now on use it (open ones keep the options
   * and lifetime they were opened with). Older versions than the one held are ignored.
   */
  applyPolicy(teamId: string, update: VersionedPolicy): boolean {
    const meta = withPolicy(this.host.store.meta(), teamId, update);
    if (meta) this.host.store.saveMeta(meta);
    return meta !== null;
  }

  hello(params: HelloParams): void {
    const meta = this.host.store.meta();
    if (!meta) return;
    // A private team's working directory is content (it names the project): never kept.
    const info = helloInfo(meta.info, params);
    this.host.store.saveMeta({ ...meta, info: isPrivateTeam(meta.policy) ? { ...info, cwd: null } : info });
    this.noteConnection(Date.now());
  }

  /**
   * From the alarm: reports when the connection state changed since `wasConnected` (a silent
   * socket was closed), or when a connected session has not reported for PRESENCE_REPORT_MS,
   * so the hub and D1 can tell it from a session whose gate died without reporting.
   */
  reportIfDue(now: number, wasConnected: boolean): void {
    const connected = this.host.connected();
    const due = connected && now >= this.host.store.reportedAt() + PRESENCE_REPORT_MS;
    if (due || connected !== wasConnected) this.noteConnection(now);
  }

  /** When the alarm must come back to report a connected session; null when none is open. */
  reportDueAt(): number | null {
    return this.host.connected() ? this.host.store.reportedAt() + PRESENCE_REPORT_MS : null;
  }

  /**
   * Records whether the session has a live socket: for the sessions index in D1, and for the
   * team's hub, which shows it live and answers with a newer policy if one raced our join.
   */
  noteConnection(now: number): void {
    const meta = this.host.store.meta();
    if (!meta) return;
    const connected = this.host.connected();
    this.host.store.setReportedAt(now);
    this.host.outbox.enqueue({
      op: "session",
      teamId: meta.teamId,
      sessionId: meta.sessionId,
      info: meta.info,
      connected,
      at: now,
    });
    this.reportToHub(meta, connected, now);
  }

  /**
   * The session's dead-letter count changed (outbox rows set aside, replayed or pruned, or a
   * request quarantined): the hub hears it now, for the dashboard. Only the hub: D1 may be what
   * failed, and the index row would wait in the outbox anyway.
   */
  noteDeadLetters(now: number): void {
    const meta = this.host.store.meta();
    if (meta) this.reportToHub(meta, this.host.connected(), now);
  }

  private reportToHub(meta: ServedSession, connected: boolean, now: number): void {
    this.host.tellHub(meta.teamId, {
      kind: "session",
      news: {
        sessionId: meta.sessionId,
        ownerUserId: meta.ownerUserId,
        info: meta.info,
        connected,
        pending: this.host.store.pendingCount(),
        at: now,
        policyVersion: meta.policyVersion ?? 0,
        // Rows set aside: the outbox's dead letters, and the requests whose own record could not be written (quarantined).
        deadLetters: this.host.outbox.deadLetterCount() + this.host.store.quarantinedCount(),
        stopped: this.host.store.stopped(),
      },
    });
  }

  /**
   * `tool_call` / `tool_call_update` merged by id, so a later permission request on the same
   * socket can show them. Kept per socket: another socket of the session (another agent, or a
   * hostile one with a key) cannot dress up a request it did not ask.
   */
  mergeToolCall(socketId: string, update: { sessionUpdate: string }): void {
    if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return;
    // A private team's tool calls are content: its requests are sealed whole, so nothing is kept.
    if (isPrivateTeam(this.host.store.meta()?.policy)) return;
    const parsed = toolCallUpdateSchema.safeParse(update);
    if (!parsed.success) return;
    const { sessionUpdate: _, ...fields } = withoutNullish(parsed.data) as Record<string, unknown>;
    const merged = { ...this.host.store.toolCall(socketId, parsed.data.toolCallId), ...fields };
    this.host.store.saveToolCall(socketId, parsed.data.toolCallId, merged, Date.now());
  }
}
