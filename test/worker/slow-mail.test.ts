/**
 * A mail provider that never answers (outside the machine, so faked at `fetch`): a send gives up
 * after the alarm path's budget instead of holding its caller (a hub's escalation step), and
 * carries the idempotency key the provider dedups a resend by.
 */
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendMail } from "../../worker/mail";
import type { Env } from "../../worker/types";

afterEach(() => vi.restoreAllMocks());

describe("a mail provider that never answers", () => {
  it("costs a send one bounded wait, and the mail names its idempotency key", async () => {
    const asked: Request[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const request = new Request(input, init);
      asked.push(request);
      // Never answers; only the caller's signal ends the wait.
      return new Promise((_, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason)));
    });
    const provider: Env = {
      ...(env as unknown as Env),
      DEV_OUTBOX: "0",
      MAIL_API_URL: "http://127.0.0.1:9/send",
      MAIL_API_KEY: "test",
      MAIL_FROM: "tapgate@example.com",
    };
    const mail = { to: "ada@example.com", subject: "waiting", text: "a request", link: null, idempotencyKey: "k-1" };

    await expect(sendMail(provider, mail)).rejects.toMatchObject({ name: "TimeoutError" });
    expect(asked).toHaveLength(1);
    expect(asked[0]?.headers.get("Idempotency-Key")).toBe("k-1");
  }, 20_000);
});
