/**
 * Who the client is, as far as the network says: the rate limits' client subject (an IPv4
 * address, or an IPv6 address's /64: one household or server gets a whole /64, so counting single
 * IPv6 addresses would let it take 2^64 turns) and whether a request comes from this machine.
 *
 * Owns: parsing addresses and `Host` values. Does not own: which routes count (team/rate-limits.ts)
 * nor what local mode serves (edge.ts). Pure: no Workers APIs.
 */

/** The rate limit's subject for a `CF-Connecting-IP` value: `v4:a.b.c.d`, `v6:<first 64 bits>` or `unknown`. */
export function clientSubject(ip: string | undefined): string {
  const address = ip?.trim() ?? "";
  const v4 = parseIpv4(address);
  if (v4) return `v4:${v4.join(".")}`;
  const v6 = parseIpv6(address);
  if (!v6) return "unknown";
  const mapped = ipv4Mapped(v6);
  if (mapped) return `v4:${mapped.join(".")}`;
  return `v6:${v6
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/** 127.0.0.0/8 and ::1 (and IPv4-mapped 127/8): this machine. */
export function isLoopbackAddress(ip: string | undefined): boolean {
  const address = ip?.trim() ?? "";
  const v4 = parseIpv4(address) ?? ipv4Mapped(parseIpv6(address) ?? []);
  if (v4) return v4[0] === 127;
  const v6 = parseIpv6(address);
  return v6?.join(":") === "0:0:0:0:0:0:0:1";
}

/** The host name of a `Host` value (`localhost:8787`, `[::1]:8787`, `127.0.0.1`), lower-cased, without the port. */
export function hostName(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  return value.replace(/:\d*$/, "");
}

/** `localhost`, `127.x.y.z` or `[::1]`, any port: a name only this machine answers to. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = hostName(host);
  if (name === "localhost") return true;
  if (name.startsWith("[")) return isLoopbackAddress(name.slice(1, -1));
  return parseIpv4(name)?.[0] === 127;
}

function parseIpv4(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.map(Number);
}

/** Eight 16-bit groups, or null when `text` is not an IPv6 address (a zone id is ignored). */
function parseIpv6(text: string): number[] | null {
  const address = text.replace(/%.*$/, "");
  if (!address.includes(":")) return null;
  const halves = address.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (half: string | undefined): number[] | null => {
    if (!half) return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (const [i, part] of parts.entries()) {
      const v4 = i === parts.length - 1 ? parseIpv4(part) : null;
      if (v4) out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      else if (/^[0-9a-fA-F]{1,4}$/.test(part)) out.push(Number.parseInt(part, 16));
      else return null;
    }
    return out;
  };
  const head = groupsOf(halves[0]);
  const tail = groupsOf(halves[1]);
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...new Array<number>(missing).fill(0), ...tail] : null;
}

/** The IPv4 address inside `::ffff:a.b.c.d`, else null. */
function ipv4Mapped(groups: number[]): number[] | null {
  if (groups.length !== 8 || !groups.slice(0, 5).every((g) => g === 0) || groups[5] !== 0xffff) return null;
  const [hi = 0, lo = 0] = groups.slice(6);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
}
