/**
 * The live feed: browsers hold a WebSocket to their team's hub and get every approval and
 * session change as it happens. The feed is one-way; browsers only ping, and pings are answered
 * by the runtime without waking the hub.
 *
 * Owns: the join handshake (`hubJoinRequest` on the Worker's side, `join` on the hub's), the
 * sockets and their tags, the events sent, and the `approvals` table (the latest state of each
 * request, which never goes back to pending), and closing a socket whose web session ended:
 * signed out, removed, or expired (checked before every event). Does not own: who may join (the
 * route checks the cookie and Origin; the hub checks D1 once more after accepting, so a removal
 * or sign-out racing the join cannot leave a socket open), deliveries (`push-queue.ts`), or
 * sessions (`sessions.ts`).
 */
import type { Approval, Delivery } from "../../sdk/src/approval";
import type { Claim } from "../../sdk/src/human/approvals";
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

export class LiveFeed {
  constructor(
    private readonly host: HubHost,
    private readonly deliveries: (approvalId: string) => Delivery[],
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

  private liveApproval(approvalId: string): LiveApproval | null {
    const row = this.host.sql
      .exec(
        `SELECT a.owner_user_id, a.record, p.name FROM approvals a LEFT JOIN people p ON p.user_id = a.owner_user_id
          WHERE a.id = ?`,
        approvalId,
      )
      .toArray()[0];
    if (!row) return null;
    const approval = JSON.parse(row.record as string) as Approval;
    const owner = { userId: row.owner_user_id as string, name: (row.name as string | null) ?? "" };
    return { ...approval, owner, delivery: this.deliveries(approvalId) };
  }

  /** Records the latest state; a resolved approval never goes back to pending. Returns whether it changed. */
  remember(approval: Approval, ownerUserId: string, now: number): boolean {
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

  /** Forgets requests resolved before `before` (their deliveries go first: `push-queue.ts`). */
  prune(before: number): void {
    this.host.sql.exec("DELETE FROM approvals WHERE state <> 'pending' AND updated_at < ?", before);
  }
}
