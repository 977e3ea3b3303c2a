import { describe, expect, it } from "vitest";
import { IsolateCache } from "./isolate-cache";

describe("IsolateCache", () => {
  it("answers an entry until its time is up, then nothing", () => {
    const cache = new IsolateCache<string>(10_000);
    cache.set("a", "Ada", 1_000);
    expect(cache.get("a", 10_999)).toBe("Ada");
    expect(cache.get("a", 11_000)).toBeUndefined();
  });

  it("forgets a key when D1 knew none, or when told", () => {
    const cache = new IsolateCache<string>(10_000);
    cache.set("a", "Ada", 0);
    cache.set("a", null, 1);
    expect(cache.get("a", 2)).toBeUndefined();
    cache.set("b", "Bob", 0);
    cache.delete("b");
    expect(cache.get("b", 1)).toBeUndefined();
  });

  it("holds at most about 5,000 entries: past that it starts again", () => {
    const cache = new IsolateCache<number>(10_000);
    for (let i = 0; i <= 5_000; i++) cache.set(`k${i}`, i, 0);
    expect(cache.get("k0", 1)).toBe(0);
    cache.set("one more", 1, 0);
    expect(cache.get("k0", 1)).toBeUndefined();
    expect(cache.get("one more", 1)).toBe(1);
  });
});
