/**
 * Who is calling: humans by session cookie, agents by API key. Each sign-in method (email link,
 * passkey, pairing) ends in `startWebSession`, so methods plug in beside each other.
 */

import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Role } from "../sdk/src/human/roles";
import { API_KEY_PATTERN, digestHex, randomToken, sha256Hex } from "./crypto";
import {
  AGENT_KEY_CACHE_MS,
  createWebSession,
  deleteWebSession,
  findAgentKey,
  findWebSession,
  listMyTeams,
  markSignedIn,
  WEB_IDENTITY_CACHE_MS,
  WEB_SESSION_MS,
} from "./db";
import { orFallback, REQUEST_BUDGET_MS } from "./deadline";
import { DomainError } from "./errors";
import { appOrigin } from "./http";
import { closeWebSessionAtHub, type DeciderVouch, hubFor } from "./hub/api";
import { IsolateCache } from "./isolate-cache";
import { chainQueued } from "./team/audit";
import { auditEvents, userActor } from "./team/audit-events";
import type { AgentIdentity, AppEnv, Env, WebIdentity } from "./types";

export const SESSION_COOKIE = "__Host-tapgate";

/**
 * Session lookups are cached briefly per isolate so a request does not wait on D1. Sign-out and
 * member changes made through this isolate take effect at once; elsewhere within
 * WEB_IDENTITY_CACHE_MS. What must not wait that long either asks the team's hub, which hears of
 * every such change (a decision: `requireCurrentDecider`, `requireCurrentWeb`), or reads D1
 * itself (the live feed, a passkey change, minting a key: `requireFreshWeb`, `requireRecentSignIn`).
 */
const sessionCache = new IsolateCache<WebIdentity>(WEB_IDENTITY_CACHE_MS);

export function forgetWebSession(tokenHash: string): void {
  sessionCache.delete(tokenHash);
}

async function lookupWebSession(db: D1Database, tokenHash: string): Promise<WebIdentity | null> {
  const now = Date.now();
  const cached = sessionCache.get(tokenHash, now);
  if (cached) return cached;
  const identity = await findWebSession(db, tokenHash, now);
  sessionCache.set(tokenHash, identity, now);
  return identity;
}

/** How recent a sign-in a passkey change, a pairing link or "end other sessions" needs (else 401 `reauth_required`). */
export const REAUTH_WINDOW_MS = 10 * 60 * 1000;

/**
 * Signs the browser in as `userId`. A browser already signed in as that person keeps its session
 * and only its sign-in time moves (a reauth); otherwise a new session starts in `teamId`. Every
 * sign-in is audited in each of the person's teams.
 */
export async function startWebSession(c: Context<AppEnv>, userId: string, teamId: string, method: string) {
  const now = Date.now();
  const token = getCookie(c, SESSION_COOKIE);
  const current = token ? await findWebSession(c.env.DB, sha256Hex(token), now) : null;
  const teams = await listMyTeams(c.env.DB, userId);
  // One `auth.signed_in` entry per team the person belongs to: each team sees who came in, how.
  const signedIn = (sessionId: string) =>
    teams.map((t) =>
      auditEvents.signedIn({ teamId: t.id, actor: userActor(userId), at: now }, { userId, sessionId, method }),
    );
  if (current?.userId === userId) {
    await markSignedIn(c.env.DB, { tokenHash: current.tokenHash, method, now }, signedIn(current.sessionId));
    forgetWebSession(current.tokenHash);
  } else {
    const fresh = randomToken();
    const userAgent = c.req.header("User-Agent")?.slice(0, 200) ?? null;
    const tokenHash = sha256Hex(fresh);
    await createWebSession(c.env.DB, { tokenHash, userId, teamId, method, userAgent, now }, signedIn);
    setCookie(c, SESSION_COOKIE, fresh, {
      path: "/",
      secure: true,
      httpOnly: true,
      sameSite: "Lax",
      maxAge: WEB_SESSION_MS / 1000,
    });
  }
  await Promise.all(teams.map((t) => chainQueued(c.env, t.id)));
}

export async function endWebSession(c: Context<AppEnv>, web: WebIdentity) {
  forgetWebSession(web.tokenHash);
  const teams = await webSessionTeams(c.env.DB, web);
  await deleteWebSession(c.env.DB, web.tokenHash);
  // A signed-out tab must not keep receiving the team's approvals, nor its hub vouch for it.
  await Promise.all(teams.map((teamId) => closeWebSessionAtHub(c.env, teamId, web.tokenHash)));
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
}

/**
 * The teams whose hubs must hear that this session ends or moves: the one the (maybe cached)
 * identity names and the one D1 has now, which another isolate may have moved it to.
 */
export async function webSessionTeams(db: D1Database, web: WebIdentity): Promise<string[]> {
  const current = await findWebSession(db, web.tokenHash, Date.now());
  return [...new Set([web.teamId, current?.teamId ?? web.teamId])];
}

/** Who is signed in, or null: for routes that serve both the signed-in and the signed-out. */
export async function currentWeb(c: Context<AppEnv>): Promise<WebIdentity | null> {
  const token = getCookie(c, SESSION_COOKIE);
  return token ? lookupWebSession(c.env.DB, await digestHex(token)) : null;
}

/** Humans only. An agent key here is refused with 403: agent keys never decide or administer. */
export const requireWeb: MiddlewareHandler<AppEnv> = async (c, next) => {
  const identity = await currentWeb(c);
  if (identity) {
    c.set("web", identity);
    return next();
  }
  if (c.req.header("Authorization")?.startsWith("Bearer ")) {
    throw new DomainError("agent_key_forbidden", "agent API keys cannot use the human API; sign in instead");
  }
  throw new DomainError("unauthenticated", "sign in first");
};

/**
 * Humans, checked against D1 rather than the cache: for what a removed member or an ended session
 * must not get even for a moment (the live feed, a standing rule, a step-up).
 */
export const requireFreshWeb: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("web", await freshWeb(c));
  return next();
};

async function freshWeb(c: Context<AppEnv>): Promise<WebIdentity> {
  const token = getCookie(c, SESSION_COOKIE);
  const identity = token ? await findWebSession(c.env.DB, await digestHex(token), Date.now()) : null;
  if (!identity) throw new DomainError("unauthenticated", "sign in first");
  return identity;
}

/**
 * After `requireWeb`: the cached identity, with the role the team's hub says it holds now. The
 * hub hears of every session end and member change before the route that made it answers
 * (hub/vouching.ts), so a member removed, demoted or signed out a moment ago decides
 * nothing, and a decision waits on no D1 read. When the hub cannot vouch for it (or does not
 * answer within REQUEST_BUDGET_MS), D1 decides.
 */
export const requireCurrentWeb = vouchedWeb("hub.currentRole", async (hub, w) => ({
  role: await hub.currentRole(w.tokenHash, w.userId),
  key: null,
}));

/**
 * `requireCurrentWeb` for a decision on the route's `:id`: the same call to the hub also answers
 * the standing of the key that asked the request (`keyStanding`), which the gate checks before
 * an allow (`gate/key-check.ts`) instead of asking the hub again.
 */
export const requireCurrentDecider = vouchedWeb("hub.vouchDecider", (hub, w, c) =>
  hub.vouchDecider(w.tokenHash, w.userId, c.req.param("id") ?? ""),
);

function vouchedWeb(
  label: string,
  ask: (hub: ReturnType<typeof hubFor>, cached: WebIdentity, c: Context<AppEnv>) => Promise<DeciderVouch>,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const cached = c.get("web");
    const vouched =
      cached.validUntil > Date.now()
        ? await orFallback(ask(hubFor(c.env, cached.teamId), cached, c), REQUEST_BUDGET_MS, label, null)
        : null;
    if (vouched?.key) c.set("keyStanding", vouched.key);
    c.set("web", vouched?.role ? { ...cached, role: vouched.role } : await freshWeb(c));
    return next();
  };
}

/**
 * The session's last real sign-in (read fresh) is within REAUTH_WINDOW_MS, else 401
 * `reauth_required`: a stolen cookie alone cannot add or remove a passkey, make a pairing link or
 * sign the other browsers out.
 */
export async function ensureRecentSignIn(db: D1Database, web: WebIdentity): Promise<WebIdentity> {
  const now = Date.now();
  const fresh = await findWebSession(db, web.tokenHash, now);
  if (!fresh) throw new DomainError("unauthenticated", "sign in first");
  if (now - fresh.signedInAt > REAUTH_WINDOW_MS) {
    throw new DomainError("reauth_required", "sign in again (within the last 10 minutes) to do this");
  }
  return fresh;
}

/** After `requireWeb`: `ensureRecentSignIn` as middleware. */
export const requireRecentSignIn: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("web", await ensureRecentSignIn(c.env.DB, c.get("web")));
  return next();
};

/**
 * State-changing browser requests must come from our own origin (CSRF). Browsers always send
 * `Origin` on such requests; scripts send it explicitly.
 */
export const requireSameOrigin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD") return next();
  const origin = c.req.header("Origin");
  if (origin !== appOrigin(c)) {
    throw new DomainError("bad_origin", `state-changing requests need the header Origin: ${appOrigin(c)}`);
  }
  return next();
};

export function requireRole(...roles: Role[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (roles.includes(c.get("web").role)) return next();
    throw new DomainError("forbidden", `your role (${c.get("web").role}) may not do this`);
  };
}

/**
 * Agent keys are cached per isolate too, but a cached key is used only when the team's hub vouches
 * for it (`hub/vouching.ts`: it hears of every revocation and member removal before the route
 * that made it answers), so an agent's connect, request or poll waits on no D1 read for its key
 * and a revoked key is refused at once. When the hub cannot vouch, D1 decides.
 */
const keyCache = new IsolateCache<AgentIdentity>(AGENT_KEY_CACHE_MS);

async function lookupAgentKey(env: Env, keyHash: string): Promise<AgentIdentity | null> {
  const now = Date.now();
  const cached = keyCache.get(keyHash, now);
  if (cached && (await vouchedKey(env, cached))) return cached;
  const identity = await findAgentKey(env.DB, keyHash);
  keyCache.set(keyHash, identity, now);
  return identity;
}

function vouchedKey(env: Env, agent: AgentIdentity): Promise<boolean> {
  return orFallback(
    hubFor(env, agent.teamId).keyInUse(agent.keyId, agent.userId),
    REQUEST_BUDGET_MS,
    "hub.keyInUse",
    false,
  );
}

/** Agents: `Authorization: Bearer tg_…`, looked up by SHA-256. */
export const requireAgentKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("agent", await agentOf(c));
  return next();
};

/** The agent key's identity from `Authorization: Bearer …`; throws 401 `no_api_key` / `bad_api_key`. */
export async function agentOf(c: Context<AppEnv>): Promise<AgentIdentity> {
  const key = c.req
    .header("Authorization")
    ?.replace(/^Bearer\s+/i, "")
    .trim();
  if (!key) throw new DomainError("no_api_key", "send Authorization: Bearer <API key>; create one with POST /v1/keys");
  const agent = API_KEY_PATTERN.test(key) ? await lookupAgentKey(c.env, await digestHex(key)) : null;
  if (!agent) throw new DomainError("bad_api_key", "the API key is unknown or revoked");
  return agent;
}
