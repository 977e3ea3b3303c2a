/**
 * What `tapgate login`, `status` and `logout` share: JSON calls to the server, with failures a
 * person can act on, and safe printing of what the server says.
 */
import { errorMessageOf } from "../errors.js";
import { isRecord } from "../jsonrpc.js";
import { parseJson } from "../protocol.js";

const TIMEOUT_MS = 10_000;

export interface Reply {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** The server could not be reached at all (refused, DNS, TLS, no answer in time). */
export class Unreachable extends Error {
  override readonly name = "Unreachable";
}

/**
 * An http(s) base URL without a trailing slash; anything else is a usage error. Plain `http://`
 * only to this machine (localhost, 127.0.0.0/8, ::1): anywhere else the API key, and every
 * request's arguments, would cross the network readable by anyone on the path.
 */
export function baseUrl(url: string): string {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new TypeError(`invalid Tapgate URL ${JSON.stringify(url)}: use http(s)://host[:port]`);
  }
  if (parsed.protocol === "http:" && !isLoopback(parsed.hostname)) {
    throw new TypeError(
      `refusing plain http:// to ${parsed.host}: the API key would travel unencrypted; use https://${parsed.host} ` +
        "(http:// is only for localhost, 127.0.0.0/8 and [::1])",
    );
  }
  return parsed.origin + parsed.pathname.replace(/\/+$/, "");
}

/** `hostname` as the URL parser normalised it (`127.1` is `127.0.0.1`, IPv6 in brackets). */
export function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export async function callServer(
  base: string,
  path: string,
  init: { method?: string; apiKey?: string; json?: unknown; signal?: AbortSignal } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (init.apiKey) headers.Authorization = `Bearer ${init.apiKey}`;
  if (init.json !== undefined) headers["Content-Type"] = "application/json";
  const timeout = AbortSignal.timeout(TIMEOUT_MS);
  try {
    const response = await fetch(`${base}${path}`, {
      method: init.method ?? "GET",
      headers,
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
      signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout,
    });
    const parsed = parseJson(await response.text());
    return { status: response.status, body: isRecord(parsed) ? parsed : {}, headers: response.headers };
  } catch (error) {
    if (init.signal?.aborted) throw error; // the user's Ctrl-C, not the server's fault
    throw new Unreachable(
      `cannot reach ${base}: ${timeout.aborted ? `no answer within ${TIMEOUT_MS / 1000} s` : why(error)}`,
    );
  }
}

/** Node's fetch says only "fetch failed"; the cause says ECONNREFUSED, ENOTFOUND, a TLS problem… */
function why(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** The server's own explanation of a refusal (`{error, message}`), or the status. */
export function detail(reply: Reply): string {
  const text = errorMessageOf(reply.body);
  return text ? printable(text) : `HTTP ${reply.status}`;
}

/** Names and messages come from the server: never let them drive the terminal (escape sequences). */
export function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, "?");
}

/** How a key is shown: its first 9 characters, the prefix the server lists it by. */
export function keyHint(apiKey: string): string {
  return `${apiKey.slice(0, 9)}…`;
}
