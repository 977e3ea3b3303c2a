import { describe, expect, it } from "vitest";
import { coarseNetwork, countryCode } from "./coarse-address";

describe("coarseNetwork", () => {
  it("keeps an IPv4 address's /24 only", () => {
    expect(coarseNetwork("203.0.113.77")).toBe("203.0.113.0/24");
    expect(coarseNetwork(" 10.1.2.3 ")).toBe("10.1.2.0/24");
  });

  it("keeps an IPv6 address's /48 only", () => {
    expect(coarseNetwork("2001:db8:1234:5678::9")).toBe("2001:db8:1234::/48");
    expect(coarseNetwork("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::/48");
    expect(coarseNetwork("2001:db8:abcd:12::1%eth0")).toBe("2001:db8:abcd::/48");
    expect(coarseNetwork("::1")).toBe("::/48");
  });

  it("reads IPv4-mapped IPv6 as IPv4", () => {
    expect(coarseNetwork("::ffff:198.51.100.9")).toBe("198.51.100.0/24");
    expect(coarseNetwork("::ffff:c633:6409")).toBe("198.51.100.0/24");
  });

  it("answers null for what is not an address", () => {
    for (const bad of [
      undefined,
      "",
      "unknown",
      "256.1.1.1",
      "1.2.3",
      "1:2:3:4:5:6:7:8:9",
      "1::2::3",
      "12345::",
      "a.b.c.d",
    ]) {
      expect(coarseNetwork(bad)).toBeNull();
    }
  });
});

describe("countryCode", () => {
  it("takes two upper-case letters or digits only", () => {
    expect(countryCode("NL")).toBe("NL");
    expect(countryCode("T1")).toBe("T1");
    expect(countryCode("nl")).toBeNull();
    expect(countryCode("NLD")).toBeNull();
    expect(countryCode(undefined)).toBeNull();
    expect(countryCode(42)).toBeNull();
  });
});
