/**
 * The live feed: browsers hold a WebSocket to their team's hub and get every approval and
 * session change as it happens. Browsers ping (answered by the runtime without waking the hub)
 * and say whether they are visible and which cards they showed (presence, `message`).
 *
 * Owns: the join handshake (`hubJoinRequest` on the Worker's side, `join` on the hub's), the
 * sockets and their tags (and each socket's reported visibility), the events sent, and the `approvals` table (the latest state of each
 * request, which never goes back to pending), and closing a socket whose web session ended:
 * signed out, removed, or expired (checked before every event). Does not own: who may join (the
 * route checks the cookie and Origin; the hub checks D1 once more after accepting, so a removal
 * or sign-out racing the join cannot leave a socket open), deliveries (`push-queue.ts`), or
 * sessions (`sessions.ts`).
 */
import type { Approval, Delivery, EscalationEvent } from "../../sdk/src/approval";
import type { Claim } from "../../sdk/src/human/approvals";
import { liveClientMessageSchema } from "../../sdk/src/human/live";
import { webSessionInTeam } from "../db";
import { closeQuietly, objectUpgrade, reciprocateClose, upgradeIdentity } from "../gate/sockets";
import type { HubJoin, LiveApproval, LiveEvent } from "./api";
import type { HubHost } from "./host";

const JOIN_HEADER = "x-tapgate-hub-join";
/** Resolved requests are kept this long, for late news and their delivery rows. */
export const KEEP_RESOLVED_MS = 24 * 60 * 60 * 1000;

/** The upgrade the Worker hands the hub once it checked who is joining. */
export function hubJoinRequest(request: Request, join: HubJoin): Request {
  return objectUpgrade(request, JOIN_HEADER, join);
}

/** The hub's state for a request that ended without its gate's news of an end (never an approval's state). */
const WITHDRAWN = "withdrawn";

export class LiveFeed {
  /** Cards shown at admission, not stored yet (`showAdmitted`), by approval id. */
  private readonly admitted = new Map<string, { approval: Approval; ownerUserId: string; at: number }>();

  constructor(
    private readonly host: HubHost,
    private readonly deliveries: (approvalId: string) => Delivery[],
    private readonly timeline: (approvalId: string) => EscalationEvent[],
    /** The claims running at `now` ("Ada is looking"), told to each browser as it joins. */
    private readonly claims: (now: number) => Claim[],
  ) {}

  /**
   * Accepts a browser's socket; the join names the team, so the hub adopts it first. The session
   * is read again only once the socket is accepted: a removal or sign-out either finished before
   * that read (refused here) or closes the accepted socket itself.
   */
  async join(request: Request, adopt: (teamId: string) => void): Promise<Response> {
    const join = upgradeIdentity<HubJoin>(request, JOIN_HEADER);
    if (!join) return new Response("expected a WebSocket upgrade from the Worker", { status: 400 });
    adopt(join.teamId);
    const { 0: client, 1: server } = new WebSocketPair();
    this.host.accept(server, [`user:${join.userId}`, `web:${join.tokenHash}`]);
    server.serializeAttachment(join);
    const live = await webSessionInTeam(this.host.env.DB, { ...join, now: Date.now() });
    if (!live) {
      closeQuietly(server, 4003, "signed out");
      return new Response("the web session ended", { status: 401 });
    }
    for (const claim of this.claims(Date.now())) server.send(JSON.stringify({ type: "claimed", ...claim }));
    return new Response(null, { status: 101, webSocket: client });
  }

  /**
   * A page's message (`liveClientMessageSchema`): its visibility, kept on the socket (so it
   * survives hibernation), or the cards it showed. Cards count as seen only from a page that
   * said it is visible. Returns who saw which cards, or null.
   */
  message(ws: WebSocket, text: string): { userId: string; approvalIds: string[] } | null {
    let parsed: ReturnType<typeof liveClientMessageSchema.safeParse>;
    try {
      parsed = liveClientMessageSchema.safeParse(JSON.parse(text));
    } catch {
      return null;
    }
    const join = ws.deserializeAttachment() as (HubJoin & { visible?: boolean }) | null;
    if (!parsed.success || !join) return null;
    if (parsed.data.type === "visibility") {
      ws.serializeAttachment({ ...join, visible: parsed.data.visible });
      return null;
    }
    return join.visible ? { userId: join.userId, approvalIds: parsed.data.approvalIds } : null;
  }

  /** Whether this person has an open page that said it is visible (never guessed). */
  isVisible(userId: string): boolean {
    return this.host
      .sockets(`user:${userId}`)
      .some((ws) => (ws.deserializeAttachment() as { visible?: boolean } | null)?.visible === true);
  }

  closed(ws: WebSocket, code: number, reason: string): void {
    reciprocateClose(ws, code, reason);
  }

  closeSocketsOf(userId: string): void {
    this.closeTagged(`user:${userId}`);
  }

  closeWebSession(tokenHash: string): void {
    this.closeTagged(`web:${tokenHash}`);
  }

  private closeTagged(tag: string): void {
    for (const ws of this.host.sockets(tag)) closeQuietly(ws, 4003, "signed out");
  }

  /**
   * Closes the sockets whose web session expired by `now` (idle or absolute lifetime, as the
   * Worker saw it at join); the browser reconnects, which renews a session still in use.
   */
  closeExpired(now: number): void {
    for (const ws of this.host.sockets()) {
      const join = ws.deserializeAttachment() as Partial<HubJoin> | null;
      if (join?.validUntil !== undefined && join.validUntil <= now) closeQuietly(ws, 4003, "session expired");
    }
  }

  /** Shows a request as it now stands, with its deliveries. */
  broadcast(type: "approval" | "resolved", approvalId: string): void {
    const approval = this.liveApproval(approvalId);
    if (approval) this.send({ type, approval });
  }

  /** Like `broadcast`, for an approval just stored (`remember`): not read back and parsed again. */
  broadcastStored(type: "approval" | "resolved", approval: Approval, ownerUserId: string): void {
    this.send({ type, approval: this.live(approval, ownerUserId) });
  }

  send(event: LiveEvent): void {
    this.closeExpired(Date.now());
    const frame = JSON.stringify(event);
    for (const ws of this.host.sockets()) {
      try {
        ws.send(frame);
      } catch {
        // Closing sockets are cleaned up by their close handler.
      }
    }
  }

  /**
   * Shows a request as the team's quotas admit it, while its gate holds it: on the dashboards
   * one hub call after the agent asked, not after the gate's commit and a second call. Stored
   * here once the admission's answer has left (a write before it would hold that answer, and
   * the agent, until the hub's commit). The gate's news follows: `created` once it is held
   * (`showNew`), or `released` when it was not (`withdraw`).
   */
  showAdmitted(approval: Approval, ownerUserId: string, now: number): void {
    if (this.admitted.has(approval.id)) return;
    this.send({ type: "approval", approval: this.live(approval, ownerUserId) });
    this.admitted.set(approval.id, { approval, ownerUserId, at: now });
    if (this.admitted.size > 1) return;
    setTimeout(() => this.storeAdmitted(), 0);
  }

  /** Stores the cards shown at admission; whatever reads them from the table calls this first. */
  storeAdmitted(): void {
    for (const { approval, ownerUserId, at } of this.admitted.values()) {
      // Anything stored since is newer than the admission's copy.
      this.host.sql.exec(
        `INSERT INTO approvals (id, owner_user_id, state, expires_at, updated_at, record) VALUES (?, ?, 'pending', ?, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
        approval.id,
        ownerUserId,
        approval.expiresAt,
        at,
        JSON.stringify(approval),
      );
    }
    this.admitted.clear();
  }

  /**
   * A held request, shown unless it already is as it stands (at its admission), and stored.
   * Whatever is sent after a write waits for that write's commit, and the gate holds the request
   * durably, so the card is sent before the hub's copy is written. False when news of its end
   * overtook it.
   */
  showNew(approval: Approval, ownerUserId: string, now: number): boolean {
    this.storeAdmitted();
    const known = this.host.sql.exec("SELECT state, record FROM approvals WHERE id = ?", approval.id).toArray()[0];
    if (known && known.state !== "pending") return false;
    if (known?.record !== JSON.stringify(approval)) {
      this.send({ type: "approval", approval: this.live(approval, ownerUserId) });
    }
    this.remember(approval, ownerUserId, now);
    return true;
  }

  /**
   * A request shown at admission that its gate did not hold after all: its card is taken down.
   * Its row stays, ended, until the prune (so whatever hangs off it goes with it).
   */
  withdraw(approvalId: string, now: number): void {
    this.storeAdmitted();
    const ended = this.host.sql
      .exec(
        "UPDATE approvals SET state = ?, updated_at = ? WHERE id = ? AND state = 'pending' RETURNING id",
        WITHDRAWN,
        now,
        approvalId,
      )
      .toArray();
    if (ended.length > 0) this.send({ type: "withdrawn", approvalId });
  }

  private liveApproval(approvalId: string): LiveApproval | null {
    const row = this.host.sql.exec("SELECT owner_user_id, record FROM approvals WHERE id = ?", approvalId).toArray()[0];
    return row ? this.live(JSON.parse(row.record as string) as Approval, row.owner_user_id as string) : null;
  }

  private live(approval: Approval, ownerUserId: string): LiveApproval {
    const name = this.host.sql.exec("SELECT name FROM people WHERE user_id = ?", ownerUserId).toArray()[0]?.name;
    const owner = { userId: ownerUserId, name: (name as string | undefined) ?? "" };
    return { ...approval, owner, delivery: this.deliveries(approval.id), escalations: this.timeline(approval.id) };
  }

  /** Whether the hub already knows this request ended (resolved, or withdrawn). */
  ended(approvalId: string): boolean {
    return (
      this.host.sql.exec("SELECT 1 FROM approvals WHERE id = ? AND state <> 'pending'", approvalId).toArray().length > 0
    );
  }

  /** Whether the hub already has this request exactly as it stands. */
  holds(approval: Approval): boolean {
    const stored = this.host.sql.exec("SELECT record FROM approvals WHERE id = ?", approval.id).toArray()[0];
    return stored?.record === JSON.stringify(approval);
  }

  /** Records the latest state; a resolved approval never goes back to pending. Returns whether it changed. */
  remember(approval: Approval, ownerUserId: string, now: number): boolean {
    this.storeAdmitted();
    const changed = this.host.sql
      .exec(
        `INSERT INTO approvals (id, owner_user_id, state, expires_at, updated_at, record) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, record = excluded.record
          WHERE approvals.state = 'pending'
         RETURNING id`,
        approval.id,
        ownerUserId,
        approval.state,
        approval.expiresAt,
        now,
        JSON.stringify(approval),
      )
      .toArray();
    return changed.length > 0;
  }

  /**
   * Forgets requests resolved before `before` (their deliveries go first: `push-queue.ts`). A
   * request still pending here past its expiry lost its end's news (or its gate, before the
   * hold): it counts as ended from then, so the next prune takes it with what hangs off it.
   */
  prune(before: number): void {
    const { sql } = this.host;
    sql.exec("DELETE FROM approvals WHERE state <> 'pending' AND updated_at < ?", before);
    sql.exec(
      "UPDATE approvals SET state = ?, updated_at = expires_at WHERE state = 'pending' AND expires_at < ?",
      WITHDRAWN,
      before,
    );
  }
}
