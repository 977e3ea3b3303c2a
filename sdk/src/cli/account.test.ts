import { describe, expect, it } from "vitest";
import { baseUrl, isLoopback } from "./account.js";

describe("baseUrl: plain http:// only to this machine", () => {
  it.each([
    "http://localhost:8787",
    "http://LOCALHOST",
    "http://127.0.0.1:8787/",
    "http://127.1.2.3",
    "http://127.1",
    "http://[::1]:8787",
    "https://tapgate.example.com",
    "https://192.0.2.1",
  ])("%s is allowed", (url) => {
    expect(() => baseUrl(url)).not.toThrow();
  });

  it.each([
    "http://tapgate.example.com",
    "http://192.0.2.1:8787",
    "http://128.0.0.1",
    "http://[::2]",
    "http://localhost.example.com",
    "http://127.0.0.1.nip.io",
    "http://0.0.0.0",
  ])("%s is refused", (url) => {
    expect(() => baseUrl(url)).toThrow(/refusing plain http:\/\//);
  });

  it("still refuses what is not http(s), and trims trailing slashes", () => {
    expect(() => baseUrl("ftp://localhost")).toThrow(/invalid Tapgate URL/);
    expect(baseUrl("https://tapgate.example.com/base//")).toBe("https://tapgate.example.com/base");
    expect(isLoopback("127.0.0.1")).toBe(true);
    expect(isLoopback("localhost.")).toBe(true);
  });
});
