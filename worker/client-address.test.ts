import { describe, expect, it } from "vitest";
import { clientSubject, hostName, isLoopbackAddress, isLoopbackHost } from "./client-address";

describe("clientSubject", () => {
  it("counts an IPv4 client by its address", () => {
    expect(clientSubject("203.0.113.9")).toBe("v4:203.0.113.9");
    expect(clientSubject("::ffff:203.0.113.9")).toBe("v4:203.0.113.9");
  });

  it("counts an IPv6 client by its /64, however the address is written", () => {
    const a = clientSubject("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    expect(a).toBe("v6:2001:db8:1:2::/64");
    expect(clientSubject("2001:0db8:0001:0002::1")).toBe(a);
    expect(clientSubject("2001:DB8:1:2::ffff:1.2.3.4")).toBe(a);
    expect(clientSubject("2001:db8:1:3::1")).not.toBe(a);
    expect(clientSubject("2001:db8::1")).toBe("v6:2001:db8:0:0::/64");
  });

  it("counts what it cannot read as one client", () => {
    for (const bad of [undefined, "", "localhost", "1.2.3", "1.2.3.256", "1::2::3", "1:2:3:4:5:6:7:8:9", "g::1"]) {
      expect(clientSubject(bad)).toBe("unknown");
    }
  });
});

describe("loopback", () => {
  it("knows this machine's addresses", () => {
    for (const ip of ["127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]) {
      expect(isLoopbackAddress(ip)).toBe(true);
    }
    for (const ip of [undefined, "", "10.0.0.1", "::", "::2", "2001:db8::1", "128.0.0.1", "localhost"]) {
      expect(isLoopbackAddress(ip)).toBe(false);
    }
  });

  it("knows this machine's host names, with any port", () => {
    for (const host of ["localhost", "localhost:8787", "LOCALHOST:1", "127.0.0.1:8787", "[::1]", "[::1]:8787"]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of [
      undefined,
      "",
      "tapgate.example.com",
      "localhost.example.com",
      "evil.localhost.example",
      "127.0.0.1.nip.io",
      "[2001:db8::1]:80",
      "10.0.0.1:8787",
    ]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
    expect(hostName("[::1]:8787")).toBe("[::1]");
    expect(hostName("Tapgate.Example.com:443")).toBe("tapgate.example.com");
  });
});
