/**
 * Who is calling: humans by session cookie, agents by API key. Each sign-in method (email link,
 * passkey, pairing) ends in `startWebSession`, so methods plug in beside each other.
 */
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Role } from "../sdk/src/human/roles";
import { API_KEY_PATTERN, randomToken, sha256Hex } from "./crypto";
import { createWebSession, deleteWebSession, findAgentKey, findWebSession } from "./db";
import { DomainError } from "./errors";
import { appOrigin } from "./http";
import { hubFor } from "./hub/api";
import type { AppEnv, WebIdentity } from "./types";

export const SESSION_COOKIE = "__Host-tapgate";

/**
 * Session lookups are cached briefly per isolate so a decision does not wait on D1. Sign-out and
 * member changes made through this isolate take effect at once; elsewhere within CACHE_MS.
 */
const CACHE_MS = 10_000;
const sessionCache = new Map<string, { identity: WebIdentity; until: number }>();

export function forgetWebSession(tokenHash: string): void {
  sessionCache.delete(tokenHash);
}

async function lookupWebSession(db: D1Database, tokenHash: string): Promise<WebIdentity | null> {
  const now = Date.now();
  const cached = sessionCache.get(tokenHash);
  if (cached && cached.until > now) return cached.identity;
  const identity = await findWebSession(db, tokenHash, now);
  if (!identity) {
    sessionCache.delete(tokenHash);
    return null;
  }
  if (sessionCache.size > 5000) sessionCache.clear();
  sessionCache.set(tokenHash, { identity, until: now + CACHE_MS });
  return identity;
}

export async function startWebSession(c: Context<AppEnv>, userId: string, teamId: string, method: string) {
  const token = randomToken();
  await createWebSession(c.env.DB, { tokenHash: sha256Hex(token), userId, teamId, method, now: Date.now() });
  setCookie(c, SESSION_COOKIE, token, {
    path: "/",
    secure: true,
    httpOnly: true,
    sameSite: "Lax",
    maxAge: 30 * 24 * 60 * 60,
  });
}

export async function endWebSession(c: Context<AppEnv>, web: WebIdentity) {
  forgetWebSession(web.tokenHash);
  await deleteWebSession(c.env.DB, web.tokenHash);
  // A signed-out tab must not keep receiving the team's approvals.
  await hubFor(c.env, web.teamId).closeWebSession(web.tokenHash);
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
}

/** Who is signed in, or null: for routes that serve both the signed-in and the signed-out. */
export async function currentWeb(c: Context<AppEnv>): Promise<WebIdentity | null> {
  const token = getCookie(c, SESSION_COOKIE);
  return token ? lookupWebSession(c.env.DB, sha256Hex(token)) : null;
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

/** Agents: `Authorization: Bearer tg_…`, looked up by SHA-256. */
export const requireAgentKey: MiddlewareHandler<AppEnv> = async (c, next) => {
  const key = c.req.header("Authorization")?.replace(/^Bearer\s+/i, "");
  if (!key) throw new DomainError("no_api_key", "send Authorization: Bearer <API key>; create one with POST /v1/keys");
  const agent = API_KEY_PATTERN.test(key) ? await findAgentKey(c.env.DB, sha256Hex(key)) : null;
  if (!agent) throw new DomainError("bad_api_key", "the API key is unknown or revoked");
  c.set("agent", agent);
  return next();
};
