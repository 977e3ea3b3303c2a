/**
 * Where a request came from, coarsely enough to store and show a stranger: the IPv4 /24 or the
 * IPv6 /48 around the client's address, never the address itself, plus Cloudflare's country
 * guess. The device-code page shows it so an approver can tell "my laptop, here" from "someone
 * who sent me a link". Pure: no I/O.
 */

/** `203.0.113.0/24` or `2001:db8:1::/48`; null for anything that is not an IP address. */
export function coarseNetwork(ip: string | undefined): string | null {
  if (!ip) return null;
  const v4 = ipv4Octets(ip.trim());
  if (v4) return `${v4.slice(0, 3).join(".")}.0/24`;
  const v6 = ipv6Groups(ip.trim());
  if (!v6) return null;
  // An IPv4-mapped address (::ffff:a.b.c.d) is really IPv4.
  const [, , , , , mapped = 0, high = 0, low = 0] = v6;
  if (v6.slice(0, 5).every((g) => g === 0) && mapped === 0xffff) {
    return `${high >> 8}.${high & 0xff}.${low >> 8}.0/24`;
  }
  const head = v6.slice(0, 3);
  while (head.length && head[head.length - 1] === 0) head.pop();
  return `${head.map((g) => g.toString(16)).join(":")}::/48`;
}

/** Cloudflare's two-letter country (`request.cf.country`; `T1` is Tor, `XX` unknown), else null. */
export function countryCode(value: unknown): string | null {
  return typeof value === "string" && /^[A-Z0-9]{2}$/.test(value) ? value : null;
}

function ipv4Octets(s: string): number[] | null {
  const parts = s.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted IPv4 read), else null. */
function ipv6Groups(s: string): number[] | null {
  const address = s.split("%")[0] ?? ""; // a zone id (fe80::1%eth0) says nothing about the network
  const halves = address.split("::");
  if (halves.length > 2) return null;
  const side = (part: string | undefined) => (part ? part.split(":") : []);
  const head = side(halves[0]);
  const tail = side(halves[1]);
  const last = (halves.length === 2 ? tail : head).at(-1);
  const list = halves.length === 2 ? tail : head;
  if (last?.includes(".")) {
    const v4 = ipv4Octets(last);
    if (!v4) return null;
    const [a = 0, b = 0, c = 0, d = 0] = v4;
    list.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<string>(missing).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  return groups.map((g) => Number.parseInt(g, 16));
}
