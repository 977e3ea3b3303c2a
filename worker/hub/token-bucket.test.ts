import { describe, expect, it } from "vitest";
import { fullAt, take } from "./token-bucket";

const rate = { perMinute: 120, burst: 3 };

describe("token bucket", () => {
  it("lets a burst through, then refuses with the wait for the next token", () => {
    let bucket = null;
    for (let i = 0; i < 3; i++) {
      const t = take(bucket, rate, 1_000);
      expect(t.ok).toBe(true);
      bucket = t.bucket;
    }
    const refused = take(bucket, rate, 1_000);
    expect(refused).toMatchObject({ ok: false, retryAfterMs: 500 });
  });

  it("refills at the rate and never over the burst", () => {
    const empty = { tokens: 0, at: 0 };
    expect(take(empty, rate, 499).ok).toBe(false);
    expect(take(empty, rate, 250)).toMatchObject({ ok: false, retryAfterMs: 250 });
    const one = take(empty, rate, 500);
    expect(one).toMatchObject({ ok: true, bucket: { tokens: 0, at: 500 } });
    const later = take(empty, rate, 3_600_000);
    expect(later).toMatchObject({ ok: true, bucket: { tokens: 2 } });
  });

  it("says when a bucket is full again", () => {
    expect(fullAt({ tokens: 0, at: 1_000 }, rate)).toBe(2_500);
    expect(fullAt({ tokens: 3, at: 1_000 }, rate)).toBe(1_000);
  });
});
