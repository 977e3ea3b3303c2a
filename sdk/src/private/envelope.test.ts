import { describe, expect, it } from "vitest";
import type { SealedPlaintext } from "./contract.js";
import { newDeviceKeyPair, openSealed, requestHashOf, sealRequest, toBase64url } from "./envelope.js";
import { newRuleKey, ruleFingerprint } from "./fingerprint.js";

const plaintext: SealedPlaintext = {
  v: 1,
  snapshot: {
    toolCall: { toolCallId: "t1", title: "rm -rf build", kind: "execute", rawInput: { command: "rm -rf build" } },
    session: { title: "s", agent: null, host: "laptop", cwd: "/home/ada/app" },
  },
  options: [
    { optionId: "yes", name: "Yes, run it", kind: "allow_once" },
    { optionId: "no", name: "No", kind: "reject_once" },
  ],
};

describe("a sealed request", () => {
  it("opens on each recipient device to exactly what requestHash commits to", async () => {
    const [a, b] = [await newDeviceKeyPair(), await newDeviceKeyPair()];
    const sealed = await sealRequest({ plaintext, risk: "high", to: [a, b] });
    expect(sealed.requestHash).toBe(requestHashOf(plaintext));
    expect(sealed.ciphertext).not.toContain("rm -rf");
    for (const d of [a, b]) expect(await openSealed(sealed, sealed.requestHash, d)).toEqual({ ok: true, plaintext });
  });

  it("does not open on a device added later", async () => {
    const [a, later] = [await newDeviceKeyPair(), await newDeviceKeyPair()];
    const sealed = await sealRequest({ plaintext, risk: "normal", to: [a] });
    expect(await openSealed(sealed, sealed.requestHash, later)).toEqual({ ok: false, reason: "not_a_recipient" });
  });

  it("is altered when its ciphertext, its hash or its fingerprint changed on the way", async () => {
    const a = await newDeviceKeyPair();
    const sealed = await sealRequest({
      plaintext: { ...plaintext, fingerprint: "a".repeat(64) },
      risk: "normal",
      to: [a],
    });
    const bytes = Uint8Array.from(atob(sealed.ciphertext.replace(/-/g, "+").replace(/_/g, "/")), (c) =>
      c.charCodeAt(0),
    );
    bytes[0] = (bytes[0] ?? 0) ^ 1;
    const tampered = { ...sealed, ciphertext: toBase64url(bytes) };
    const other = requestHashOf({ ...plaintext, options: [] });
    expect(await openSealed(tampered, sealed.requestHash, a)).toEqual({ ok: false, reason: "altered" });
    expect(await openSealed({ ...sealed, requestHash: other }, other, a)).toEqual({ ok: false, reason: "altered" });
    expect(await openSealed(sealed, other, a)).toEqual({ ok: false, reason: "altered" });
    expect(await openSealed({ ...sealed, fingerprint: "b".repeat(64) }, sealed.requestHash, a)).toEqual({
      ok: false,
      reason: "altered",
    });
  });
});

describe("a rule fingerprint", () => {
  it("differs by key and by each fact", () => {
    const facts = { kind: "execute", command: "npm test", cwd: "/app", host: "laptop" };
    const key = newRuleKey();
    const fp = ruleFingerprint(key, facts);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(ruleFingerprint(key, { ...facts })).toBe(fp);
    expect(ruleFingerprint(newRuleKey(), facts)).not.toBe(fp);
    expect(ruleFingerprint(key, { ...facts, cwd: "/app/sub" })).not.toBe(fp);
  });
});
