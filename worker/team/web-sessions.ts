/**
 * A person's web sessions as use cases: list them, end one (from any of their devices), end all
 * but this one ("sign out everywhere else"). An ended session's next request is 401 and its live
 * sockets close at once.
 *
 * Owns: what ending a session must also reach (the identity cache, each session's team hub).
 * Does not own: the SQL (`db/web-sessions.ts`), the cookie (`auth.ts`).
 */
import type { WebSessionInfo } from "../../sdk/src/human/auth";
import { forgetWebSession } from "../auth";
import { deleteWebSessions, listWebSessions } from "../db";
import { DomainError } from "../errors";
import { closeWebSessionAtHub } from "../hub/api";
import type { Env, WebIdentity } from "../types";

export async function mySessions(env: Env, w: WebIdentity): Promise<WebSessionInfo[]> {
  const rows = await listWebSessions(env.DB, w.userId, Date.now());
  return rows.map((s) => ({
    id: s.id,
    device: s.userAgent,
    method: s.method,
    createdAt: s.createdAt,
    lastSeenAt: s.lastSeenAt,
    current: s.id === w.sessionId,
  }));
}

/** Ends one of the caller's sessions (404 when they have none by that id). */
export async function endMySession(env: Env, w: WebIdentity, sessionId: string): Promise<void> {
  const ended = await deleteWebSessions(env.DB, { userId: w.userId, id: sessionId });
  if (ended.length === 0) throw new DomainError("not_found", "no such session");
  await closeEnded(env, ended);
}

/** Ends every session of the caller but the one making the request; answers how many. */
export async function endMyOtherSessions(env: Env, w: WebIdentity): Promise<number> {
  const ended = await deleteWebSessions(env.DB, { userId: w.userId, exceptTokenHash: w.tokenHash });
  await closeEnded(env, ended);
  return ended.length;
}

async function closeEnded(env: Env, ended: Array<{ tokenHash: string; teamId: string }>): Promise<void> {
  for (const s of ended) forgetWebSession(s.tokenHash);
  await Promise.all(ended.map((s) => closeWebSessionAtHub(env, s.teamId, s.tokenHash)));
}
