/**
 * Where a webhook may go, checked when an endpoint is made AND before every send, so a row edited
 * in D1 (or a server that left local mode) never turns into a request to an internal address:
 * `https` to a public host; in local mode (`npm start`) also `http`/`https` to this machine
 * (`127.0.0.1`, `localhost`, `[::1]`) so a person can try a receiver of their own.
 *
 * A Worker cannot resolve a name before it connects, so a name is judged by its spelling
 * (single-label, `localhost`, `.local`, `.internal`, … refused) and an address by its range
 * (`ipaddr.js`: only `unicast`); Cloudflare's fetch itself does not reach private networks.
 *
 * Owns: the rule and its reasons. Does not own: whether this is local mode (`edge.ts`'s
 * `isLocalRequest` at creation, `DEV_OUTBOX` at send). Pure: unit-tested in `url.test.ts`.
 */
import ipaddr from "ipaddr.js";
import { MAX_WEBHOOK_URL_CHARS } from "../../sdk/src/human/webhooks";
import { isLoopbackHost } from "../client-address";

/** Suffixes of names that only mean something inside a network. */
const PRIVATE_SUFFIXES = [".localhost", ".local", ".internal", ".intranet", ".lan", ".home.arpa", ".corp", ".onion"];

/** Why `raw` may not receive webhooks (a sentence), or null when it may. */
export function webhookUrlProblem(raw: string, localMode: boolean): string | null {
  if (raw.length > MAX_WEBHOOK_URL_CHARS) return `the URL is longer than ${MAX_WEBHOOK_URL_CHARS} characters`;
  if (!URL.canParse(raw)) return "not a URL";
  const url = new URL(raw);
  if (url.username || url.password) return "the URL must not carry credentials";
  if (url.protocol !== "https:" && url.protocol !== "http:") return "the URL must use https";
  if (localMode && isLoopbackHost(url.host)) return null;
  if (url.protocol !== "https:") return "the URL must use https (plain http only to this machine, in local mode)";
  return hostProblem(url.hostname);
}

function hostProblem(hostname: string): string | null {
  // "localhost." and "foo.internal." are the same names as without the root's dot.
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  const literal = host.startsWith("[") ? host.slice(1, -1) : host;
  if (ipaddr.isValid(literal)) {
    const address = ipaddr.parse(literal);
    const range =
      address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
        ? (address as ipaddr.IPv6).toIPv4Address().range()
        : address.range();
    return range === "unicast" ? null : `${hostname} is not a public address (${range})`;
  }
  if (!host.includes(".")) return `${hostname} is not a public host name`;
  if (host === "localhost" || PRIVATE_SUFFIXES.some((suffix) => host.endsWith(suffix)))
    return `${hostname} is not a public host name`;
  return null;
}
