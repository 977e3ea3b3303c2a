/**
 * What every answer and every request must satisfy before a route sees it: the host name is ours
 * (421 otherwise, so DNS rebinding cannot pass the Origin check), answers carry
 * `X-Content-Type-Options: nosniff` and, over HTTPS, HSTS. And what "local" means for local mode.
 *
 * Owns: those headers, host pinning, `isLocalRequest` (with the outbox token off loopback). Does not own: parsing addresses
 * (client-address.ts), the Origin check (auth.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import { hostName, isLoopbackAddress, isLoopbackHost } from "./client-address";
import { sha256Hex } from "./crypto";
import { DomainError } from "./errors";
import type { AppEnv, Env } from "./types";

const HSTS = "max-age=31536000; includeSubDomains";

/** Headers a proxy or tunnel adds: a request carrying one did not come straight from this machine. */
const FORWARDED_HEADERS = ["Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-IP", "CF-Ray"];

/**
 * `nosniff` on every answer (errors and 404s too: the body is JSON, never a script or a page) and
 * HSTS where the server is reached over HTTPS: when APP_ORIGIN is https, or, without it, when the
 * request was. Never on a loopback host, so `http://localhost` stays usable.
 */
export const securityHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  // A WebSocket upgrade's answer is not a document; its headers are fixed.
  if (c.res.status === 101) return;
  c.res.headers.set("X-Content-Type-Options", "nosniff");
  if (servedOverHttps(c)) c.res.headers.set("Strict-Transport-Security", HSTS);
};

function servedOverHttps(c: Context<AppEnv>): boolean {
  const url = new URL(c.env.APP_ORIGIN ?? c.req.url);
  return url.protocol === "https:" && !isLoopbackHost(url.host);
}

/**
 * With APP_ORIGIN set, the server answers only for its host name: a page on another name (for
 * example one rebound to this server's address) gets 421 `misdirected`. A loopback APP_ORIGIN
 * accepts every loopback name (`localhost`, `127.0.0.1`, `[::1]`): only this machine can send those.
 */
export const pinHost: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!c.env.APP_ORIGIN || servesHost(c.env, new URL(c.req.url).host)) return next();
  throw new DomainError("misdirected", `this server answers only for ${new URL(c.env.APP_ORIGIN).host}`);
};

function servesHost(env: Env, host: string): boolean {
  const ours = new URL(env.APP_ORIGIN ?? "").host;
  if (isLoopbackHost(ours)) return isLoopbackHost(host);
  return hostName(host) === hostName(ours) && portOf(host) === portOf(ours);
}

const portOf = (host: string) => /:(\d+)$/.exec(host.replace(/^\[.*\]/, ""))?.[1] ?? "";

/**
 * Local mode (`DEV_OUTBOX` exactly "1") and a request from this machine to a loopback name, not
 * through a proxy or tunnel. `wrangler dev` sets `CF-Connecting-IP` to the socket's address
 * (127.0.0.1) unless the client sent one; behind Cloudflare (a deployment or a cloudflared
 * tunnel) it is the real client's. A server listening on more than loopback can be sent both
 * headers by any host on the network, so there (`DEV_OUTBOX_TOKEN` set) the request must also
 * carry the token `npm start` printed.
 */
export function isLocalRequest(c: Context<AppEnv>): boolean {
  if (c.env.DEV_OUTBOX !== "1") return false;
  if (!isLoopbackAddress(c.req.header("CF-Connecting-IP"))) return false;
  if (!isLoopbackHost(new URL(c.req.url).host)) return false;
  if (!FORWARDED_HEADERS.every((name) => c.req.header(name) === undefined)) return false;
  return c.env.DEV_OUTBOX_TOKEN === undefined || carriesToken(c, c.env.DEV_OUTBOX_TOKEN);
}

/** `Authorization: Bearer <token>` or `?token=<token>`; their hashes are compared, so the time taken tells nothing of the token. */
function carriesToken(c: Context<AppEnv>, token: string): boolean {
  const bearer = /^Bearer\s+(\S+)$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  const sent = bearer ?? c.req.query("token") ?? "";
  return token.length > 0 && sha256Hex(sent) === sha256Hex(token);
}
