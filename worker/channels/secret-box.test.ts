import { describe, expect, it } from "vitest";
import type { Env } from "../types";
import { openSecret, sealSecret } from "./secret-box";

const env = { CHANNEL_SECRET_KEY: "a deployment secret" } as Env;

describe("the secret box", () => {
  it("opens what it sealed, in the same context only; each seal is fresh", async () => {
    const sealed = await sealSecret(env, "xoxb-bot-token", "team_1:slack");
    expect(sealed).toMatch(/^v1\.[\w-]{16}\.[\w-]+$/);
    expect(sealed).not.toContain("xoxb");
    expect(await openSecret(env, sealed, "team_1:slack")).toBe("xoxb-bot-token");
    expect(await sealSecret(env, "xoxb-bot-token", "team_1:slack")).not.toBe(sealed);
    await expect(openSecret(env, sealed, "team_2:slack")).rejects.toThrow();
    await expect(openSecret(env, sealed, "team_1:pagerduty")).rejects.toThrow();
  });

  it("refuses a tampered value, another key, another version, and sealing without a key", async () => {
    const sealed = await sealSecret(env, "routing key", "t:pagerduty");
    const [version, iv, body] = sealed.split(".") as [string, string, string];
    const flipped = `${body.slice(0, -2)}${body.at(-2) === "A" ? "B" : "A"}${body.at(-1)}`;
    await expect(openSecret(env, `${version}.${iv}.${flipped}`, "t:pagerduty")).rejects.toThrow();
    await expect(openSecret({ CHANNEL_SECRET_KEY: "another" } as Env, sealed, "t:pagerduty")).rejects.toThrow();
    await expect(openSecret(env, `v2.${iv}.${body}`, "t:pagerduty")).rejects.toThrow("not a sealed secret");
    await expect(sealSecret({} as Env, "x", "t:pagerduty")).rejects.toThrow("CHANNEL_SECRET_KEY");
  });
});
