/**
 * Every SQL statement of a SessionGate's own SQLite, and the mapping between rows and values.
 *
 * Owns: reads and writes of `meta` (the session, its stop), `approvals` (and pruning them past retention), `quarantined`,
 * `tool_calls`, `revoked_keys` (the outbox's tables: `outbox-store.ts`; the escalation ladder's
 * `ladders`: `ladder-store.ts`; the cap on resolved rows: `resolved-cap.ts`). Does not own: the
 * schema (migrations.ts) or any
 * decision about what to write (state-machine.ts, outbox.ts, ...). Synchronous, like the
 * storage under it: a caller that reads and then writes cannot be interleaved.
 */
import type { Approval, SessionInfo, SessionStop } from "../../sdk/src/approval";
import type { TeamPolicy } from "../policy";
import type { VerifiedStepUp } from "./api";

/** The session the object serves, kept under `meta('session')`. */
export interface ServedSession {
  teamId: string;
  sessionId: string;
  ownerUserId: string;
  policy: TeamPolicy;
  /** The team's policy_version of `policy`; absent (0) in objects from before versions. */
  policyVersion?: number;
  info: SessionInfo;
}

export interface PendingRow {
  id: string;
  rpc_id: string;
  /** Empty for a request held over HTTP, by `lease_until` instead. */
  socket_id: string;
  key_id: string;
  lease_until: number | null;
  agent_options: string;
  record: string;
  /** The agent's answer (RequestPermissionResponse JSON), once resolved. */
  answer: string | null;
  [key: string]: SqlStorageValue;
}

export interface StoredRow extends PendingRow {
  state: string;
}

/** What holds a request open: a socket (answered on it) or an HTTP lease that polls renew. */
export interface Holder {
  socketId: string;
  rpcKey: string;
  keyId: string;
  leaseUntil: number | null;
}

/** Every state a resolved row can have (constants, so they can stand in the SQL). */
const RESOLVED_STATES = ["allowed", "denied", "cancelled", "expired"] as const;

/**
 * How long a gate remembers a revoked key: far past every copy that could still vouch for it
 * (an isolate's cached key lives 10 s, the hub remembers a revocation a minute and until every
 * gate has it), after which D1 alone refuses it. The alarm's prune forgets it then.
 */
export const REVOKED_KEY_MEMORY_MS = 24 * 60 * 60 * 1000;

/**
 * How a request set aside (quarantined) ends for everyone who asks after it: denied `invalid`,
 * nobody can decide it any more (docs/state-machine.md). Its agent is answered so at once.
 */
export const SET_ASIDE = { state: "denied", reason: "invalid" } as const;

/** A pending row that is not set aside (quarantined): the rows every pending query and count sees. */
const LIVE_PENDING = "state = 'pending' AND id NOT IN (SELECT approval_id FROM quarantined)";

/** The most recent tool calls kept for decorating later requests. */
const KEPT_TOOL_CALLS = 256;

export class GateStore {
  /**
   * The session as stored, read once per instance: every change reads it several times, and
   * parsing it each time was a measurable share of a decision. Frozen, so nobody can change
   * the copy without `saveMeta`.
   */
  private cachedMeta: Readonly<ServedSession> | null | undefined;
  /**
   * The earliest `expires_at` of a resolved row, which schedules the next prune. Read once, then
   * kept by `resolve` and the prune (the only writes that move it), so the alarm's schedule after
   * each change costs no query for it.
   */
  private oldestResolved: number | null | undefined;
  /** The session's stop (`meta('stopped')`), read once per instance: every new request checks it. */
  private cachedStop: Readonly<SessionStop> | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  // ── meta ─────────────────────────────────────────────────────────────────

  meta(): Readonly<ServedSession> | null {
    if (this.cachedMeta === undefined) {
      const row = this.sql.exec("SELECT v FROM meta WHERE k = 'session'").toArray()[0];
      this.cachedMeta = row ? deepFreeze(JSON.parse(row.v as string) as ServedSession) : null;
    }
    return this.cachedMeta;
  }

  /** When the session last reported its connection state (to D1 and the hub); 0 before any. */
  reportedAt(): number {
    return Number(this.sql.exec("SELECT v FROM meta WHERE k = 'reported_at'").toArray()[0]?.v ?? 0);
  }

  setReportedAt(at: number): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('reported_at', ?)", String(at));
  }

  saveMeta(meta: ServedSession): void {
    const text = JSON.stringify(meta);
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('session', ?)", text);
    this.cachedMeta = deepFreeze(JSON.parse(text) as ServedSession);
  }

  // ── the session's stop ───────────────────────────────────────────────────

  /** Who stopped the session, when and why; null while it is not stopped. */
  stopped(): Readonly<SessionStop> | null {
    if (this.cachedStop === undefined) {
      const row = this.sql.exec("SELECT v FROM meta WHERE k = 'stopped'").toArray()[0];
      this.cachedStop = row ? deepFreeze(JSON.parse(row.v as string) as SessionStop) : null;
    }
    return this.cachedStop;
  }

  /** Stops the session (a stop), or resumes it (null). */
  setStopped(stop: SessionStop | null): void {
    if (stop) this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('stopped', ?)", JSON.stringify(stop));
    else this.sql.exec("DELETE FROM meta WHERE k = 'stopped'");
    this.cachedStop = stop && deepFreeze({ ...stop, by: { ...stop.by } });
  }

  // ── revoked keys ─────────────────────────────────────────────────────────

  isRevoked(keyId: string): boolean {
    return this.sql.exec("SELECT 1 FROM revoked_keys WHERE key_id = ?", keyId).toArray().length > 0;
  }

  revoke(keyId: string, now: number): void {
    this.sql.exec("INSERT OR IGNORE INTO revoked_keys (key_id, revoked_at) VALUES (?, ?)", keyId, now);
  }

  /** Forgets keys revoked before `before` (D1 and the hub refuse them by then); how many went. */
  pruneRevokedBefore(before: number): number {
    return this.sql.exec("DELETE FROM revoked_keys WHERE revoked_at < ?", before).rowsWritten;
  }

  // ── approvals ────────────────────────────────────────────────────────────

  insertPending(approval: Approval, holder: Holder, agentOptions: unknown): void {
    this.sql.exec(
      `INSERT INTO approvals (id, rpc_id, socket_id, key_id, state, expires_at, lease_until, agent_options, record)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
      approval.id,
      holder.rpcKey,
      holder.socketId,
      holder.keyId,
      approval.expiresAt,
      holder.leaseUntil,
      JSON.stringify(agentOptions),
      JSON.stringify(approval),
    );
  }

  /**
   * Moves a row out of `pending` with its resolved record and the agent's answer, in one
   * statement (its stored size too, for the cap on resolved rows); its verified step-ups, or
   * null when it was no longer pending (someone else claimed it, and nothing is written).
   */
  resolve(id: string, state: string, approval: Approval, answer: unknown): VerifiedStepUp[] | null {
    const row = this.sql
      .exec(
        `UPDATE approvals SET state = ?1, record = ?2, answer = ?3,
           bytes = length(CAST(?2 AS BLOB)) + length(CAST(?3 AS BLOB)) + length(CAST(agent_options AS BLOB))
             + COALESCE(length(CAST(step_ups AS BLOB)), 0)
         WHERE id = ?4 AND state = 'pending' RETURNING step_ups, expires_at`,
        state,
        JSON.stringify(approval),
        JSON.stringify(answer),
        id,
      )
      .toArray()[0];
    if (!row) return null;
    const expiresAt = row.expires_at as number;
    if (this.oldestResolved !== undefined) this.oldestResolved = Math.min(this.oldestResolved ?? expiresAt, expiresAt);
    return row.step_ups ? (JSON.parse(row.step_ups as string) as VerifiedStepUp[]) : [];
  }

  /** Adds a verified step-up to a pending row, with the record as it now stands (a quorum's partial allow). */
  addStepUp(id: string, stepUp: VerifiedStepUp, record?: Approval): void {
    const stepUps = [...this.stepUps(id), stepUp];
    this.sql.exec(
      "UPDATE approvals SET step_ups = ?, record = COALESCE(?, record) WHERE id = ? AND state = 'pending'",
      JSON.stringify(stepUps),
      record ? JSON.stringify(record) : null,
      id,
    );
  }

  /** The verified step-ups of a row, in the order they came. */
  stepUps(id: string): VerifiedStepUp[] {
    const row = this.sql.exec("SELECT step_ups FROM approvals WHERE id = ?", id).toArray()[0];
    return row?.step_ups ? (JSON.parse(row.step_ups as string) as VerifiedStepUp[]) : [];
  }

  /**
   * A row by id, as its agent and its deciders know it: a pending row set aside (quarantined)
   * reads as resolved `SET_ASIDE` at the time it was set aside, since its agent was answered so.
   */
  row(id: string): StoredRow | null {
    const found = this.sql
      .exec<StoredRow & { set_aside_at: number | null }>(
        "SELECT a.*, q.at AS set_aside_at FROM approvals a LEFT JOIN quarantined q ON q.approval_id = a.id WHERE a.id = ?",
        id,
      )
      .toArray()[0];
    if (!found) return null;
    const { set_aside_at: setAsideAt, ...row } = found;
    if (setAsideAt === null || row.state !== "pending") return row as StoredRow;
    const record = { ...(JSON.parse(row.record) as Approval), ...SET_ASIDE, resolvedAt: setAsideAt };
    return { ...row, state: SET_ASIDE.state, record: JSON.stringify(record) } as StoredRow;
  }

  approval(id: string): Approval | null {
    const row = this.row(id);
    return row ? (JSON.parse(row.record) as Approval) : null;
  }

  renewLease(id: string, until: number): void {
    this.sql.exec(
      "UPDATE approvals SET lease_until = ? WHERE id = ? AND state = 'pending' AND lease_until IS NOT NULL",
      until,
      id,
    );
  }

  pendingCount(): number {
    return this.sql.exec(`SELECT COUNT(*) AS n FROM approvals WHERE ${LIVE_PENDING}`).one().n as number;
  }

  pendingAll(): PendingRow[] {
    return this.pending("1");
  }

  pendingById(id: string): PendingRow | undefined {
    return this.pending("id = ?", id)[0];
  }

  pendingOnSocket(socketId: string): PendingRow[] {
    return this.pending("socket_id = ?", socketId);
  }

  pendingForRpc(socketId: string, rpcKey: string): PendingRow[] {
    return this.pending("socket_id = ? AND rpc_id = ?", socketId, rpcKey);
  }

  pendingOfKey(keyId: string): PendingRow[] {
    return this.pending("key_id = ?", keyId);
  }

  pendingExpiredBy(now: number): PendingRow[] {
    return this.pending("expires_at <= ?", now);
  }

  pendingLeaseLapsedBy(now: number): PendingRow[] {
    return this.pending("lease_until <= ?", now);
  }

  /** Requests held by a socket (not by an HTTP lease). */
  pendingSocketHeld(): PendingRow[] {
    return this.pending("lease_until IS NULL");
  }

  /** What the next alarm must serve among pending requests. */
  pendingDue(): { expiry: number | null; lease: number | null; socketHeld: number } {
    return this.sql
      .exec<{ expiry: number | null; lease: number | null; socketHeld: number }>(
        `SELECT MIN(expires_at) AS expiry, MIN(lease_until) AS lease, COUNT(*) - COUNT(lease_until) AS socketHeld
           FROM approvals WHERE ${LIVE_PENDING}`,
      )
      .one();
  }

  // ── retention ────────────────────────────────────────────────────────────

  /** The earliest expiry among resolved rows (each state through the index), or null when none. */
  oldestResolvedExpiry(): number | null {
    if (this.oldestResolved !== undefined) return this.oldestResolved;
    const row = this.sql
      .exec<{ at: number | null }>(
        `SELECT MIN(at) AS at FROM (${RESOLVED_STATES.map(
          (s) => `SELECT MIN(expires_at) AS at FROM approvals WHERE state = '${s}'`,
        ).join(" UNION ALL ")})`,
      )
      .one();
    this.oldestResolved = row.at;
    return row.at;
  }

  /** Deletes resolved rows (and quarantined ones) whose time was over before `before`; how many went. */
  pruneResolvedBefore(before: number): number {
    const pruned = this.sql
      .exec("DELETE FROM approvals WHERE state <> 'pending' AND expires_at < ? RETURNING id", before)
      .toArray().length;
    this.sql.exec("DELETE FROM approvals WHERE expires_at < ? AND id IN (SELECT approval_id FROM quarantined)", before);
    this.sql.exec("DELETE FROM quarantined WHERE approval_id NOT IN (SELECT id FROM approvals)");
    // Read afresh after every prune, so a cached time that was never written cannot loop the alarm.
    this.oldestResolved = undefined;
    return pruned;
  }

  private pending(where: string, ...bindings: SqlStorageValue[]): PendingRow[] {
    return this.sql
      .exec<PendingRow>(`SELECT * FROM approvals WHERE ${LIVE_PENDING} AND ${where} ORDER BY expires_at`, ...bindings)
      .toArray();
  }

  // ── quarantine ───────────────────────────────────────────────────────────

  /**
   * Sets aside a pending row whose resolution threw: no pending query, count or alarm sees it
   * again, so it blocks nothing behind it. It stays stored, for inspection.
   */
  quarantine(id: string, error: string, now: number): void {
    this.sql.exec("INSERT OR IGNORE INTO quarantined (approval_id, at, error) VALUES (?, ?, ?)", id, now, error);
  }

  quarantinedCount(): number {
    return this.sql.exec("SELECT COUNT(*) AS n FROM quarantined").one().n as number;
  }

  // ── tool calls ───────────────────────────────────────────────────────────

  /** What `session/update` told on this socket about a tool call ({} when nothing). */
  toolCall(socketId: string, toolCallId: string): Record<string, unknown> {
    const row = this.sql
      .exec("SELECT data FROM tool_calls WHERE socket_id = ? AND id = ?", socketId, toolCallId)
      .toArray()[0];
    return row ? (JSON.parse(row.data as string) as Record<string, unknown>) : {};
  }

  /** Saves a socket's tool call and keeps only the most recent ones of the session. */
  saveToolCall(socketId: string, toolCallId: string, data: Record<string, unknown>, now: number): void {
    this.sql.exec(
      `INSERT INTO tool_calls (socket_id, id, data, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (socket_id, id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      socketId,
      toolCallId,
      JSON.stringify(data),
      now,
    );
    this.sql.exec(
      "DELETE FROM tool_calls WHERE rowid NOT IN (SELECT rowid FROM tool_calls ORDER BY updated_at DESC LIMIT ?)",
      KEPT_TOOL_CALLS,
    );
  }

  /** A closed socket's tool calls: no request can be asked on it any more. */
  forgetToolCalls(socketId: string): void {
    this.sql.exec("DELETE FROM tool_calls WHERE socket_id = ?", socketId);
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
