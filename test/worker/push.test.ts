/**
 * Web Push, with outbound fetch intercepted as a fake push service (`fake-push.ts`; the push
 * services are the one part outside this machine). Bodies are decrypted with http_ece and the VAPID JWT is
 * verified against the public key, independently of the code that made them.
 */

import { env, runInDurableObject } from "cloudflare:test";
import { createECDH, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { declarativePushSchema, pushPayloadSchema } from "../../sdk/src/human/push";
import type { TeamHub } from "../../worker/hub/team-hub";
import { type Captured, fakePushService } from "./fake-push";
import {
  api,
  connectAgent,
  createKey,
  decide,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember } from "./team-helpers";

let fake: ReturnType<typeof fakePushService>;
let pushes: Captured[];
beforeEach(() => {
  fake = fakePushService();
  pushes = fake.pushes;
});
afterEach(() => vi.restoreAllMocks());

const addPhone = (member: Member, name?: string) => fake.addPhone(member, name);

/** An agent asks; resolves once the hub has handed the push to the (fake) push service. */
const secretCall = () => ({
  toolCallId: unique("call"),
  title: "Remove build output",
  kind: "execute" as const,
  rawInput: { command: "rm -rf build --secret-token=abc123" },
});

async function ask(member: Member, toolCall = secretCall()) {
  const { key } = await createKey(member);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  await agent.ask(1, permissionParams(sessionId, { toolCall }));
  const [approval] = await pendingApprovals(member, sessionId);
  return { agent, sessionId, approval: approval as Approval };
}

const untilPushes = (count: number) => fake.untilPushes(count);

async function verifyVapid(headers: Headers, endpoint: string): Promise<void> {
  const authorization = headers.get("Authorization") ?? "";
  const [, jwt, key] = /^vapid t=([^,]+), k=(.+)$/.exec(authorization) ?? [];
  expect(key).toBe(env.VAPID_PUBLIC_KEY);
  const [header, claims, signature] = (jwt ?? "").split(".");
  const publicKey = await crypto.subtle.importKey(
    "raw",
    Buffer.from(key ?? "", "base64url"),
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["verify"],
  );
  const valid = await crypto.subtle.verify(
    { name: "ECDSA", hash: "SHA-256" },
    publicKey,
    Buffer.from(signature ?? "", "base64url"),
    new TextEncoder().encode(`${header}.${claims}`),
  );
  expect(valid).toBe(true);
  expect(JSON.parse(Buffer.from(header ?? "", "base64url").toString())).toMatchObject({ alg: "ES256" });
  const body = JSON.parse(Buffer.from(claims ?? "", "base64url").toString()) as { aud: string; exp: number };
  expect(body.aud).toBe(new URL(endpoint).origin);
  expect(body.exp * 1000).toBeLessThanOrEqual(Date.now() + 24 * 60 * 60 * 1000);
  expect(body.exp * 1000).toBeGreaterThan(Date.now());
}

describe("Web Push", () => {
  it("pushes an encrypted, VAPID-signed notice with ids and the title only, then a resolved notice", async () => {
    const owner = await signUp();
    const phone = await addPhone(owner);
    const { agent, approval } = await ask(owner);
    await untilPushes(1);
    const [push] = pushes;
    expect(push?.url).toBe(phone.endpoint);
    expect(push?.payload).toEqual({
      v: 1,
      type: "approval",
      approvalId: approval.id,
      title: "Remove build output",
      expiresAt: approval.expiresAt,
      risk: "high", // `rm -rf …` is high-risk by default: the lock screen offers no action for it
      // Declarative Web Push beside it: Safari and iOS 18.4+ show this even without the service worker.
      web_push: 8030,
      notification: {
        title: "High risk: Remove build output",
        body: "Open it in Tapgate to decide.",
        navigate: expect.stringMatching(new RegExp(`^https?://[^/]+/approvals/${approval.id}$`)),
        tag: approval.id,
      },
      mutable: true,
    });
    // Both readers take it: the service worker's schema and the declarative format's.
    expect(pushPayloadSchema.parse(push?.payload)).toMatchObject({ type: "approval", approvalId: approval.id });
    expect(declarativePushSchema.safeParse(push?.payload).success).toBe(true);
    expect(JSON.stringify(push?.payload)).not.toContain("rm -rf");
    expect(JSON.stringify(push?.payload)).not.toContain("abc123");
    expect(push?.headers.get("Urgency")).toBe("high");
    expect(push?.headers.get("Content-Encoding")).toBe("aes128gcm");
    const ttl = Number(push?.headers.get("TTL"));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual((approval.expiresAt - Date.now()) / 1000 + 1);
    expect(push?.headers.get("Topic")).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    await verifyVapid(push?.headers as Headers, phone.endpoint);

    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await agent.next();
    await untilPushes(2);
    expect(pushes[1]?.payload).toEqual({ v: 1, type: "resolved", approvalId: approval.id, state: "denied" });
  });

  it("shows sent, delivered and seen per device on the approval", async () => {
    const owner = await signUp();
    const phone = await addPhone(owner, "Pixel 8");
    const { approval } = await ask(owner);
    await untilPushes(1);
    const delivered = await vi.waitFor(async () => {
      const read = await json<Approval & { delivery: Array<Record<string, unknown>> }>(
        await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }),
      );
      if (!read.delivery[0]?.deliveredAt) throw new Error("not delivered yet");
      return read;
    });
    expect(delivered.delivery).toEqual([
      expect.objectContaining({ deviceId: phone.deviceId, deviceName: "Pixel 8", seenAt: null }),
    ]);
    const seen = await api(`/v1/approvals/${approval.id}/seen`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ deviceId: phone.deviceId }),
    });
    expect(seen.status).toBe(204);
    const read = await json<Approval & { delivery: Array<{ seenAt: number | null }> }>(
      await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }),
    );
    expect(read.delivery[0]?.seenAt).toBeGreaterThan(0);
    // The device answered, so the Devices screen shows it as seen just now.
    await vi.waitFor(async () => {
      const { devices } = await json<{ devices: Array<{ id: string; lastSeenAt: number }> }>(
        await api("/v1/devices", { cookie: owner.cookie }),
      );
      const device = devices.find((d) => d.id === phone.deviceId);
      if (!device || device.lastSeenAt < (read.delivery[0]?.seenAt ?? Infinity)) throw new Error("not touched yet");
    });
  });

  it("a lock-screen policy of 'generic' hides even the tool title", async () => {
    const owner = await signUp();
    await env.DB.prepare("UPDATE teams SET policy = ? WHERE id = ?")
      .bind(JSON.stringify({ lockScreen: "generic" }), owner.teamId)
      .run();
    await addPhone(owner);
    await ask(owner);
    await untilPushes(1);
    expect(pushes[0]?.payload.title).toBe("An agent is asking for permission");
  });

  it("a 410 from the push service deletes the device", async () => {
    const owner = await signUp();
    const phone = await addPhone(owner);
    fake.state.answer = () => 410;
    await ask(owner);
    await untilPushes(1);
    await vi.waitFor(async () => {
      const { devices } = await json<{ devices: unknown[] }>(await api("/v1/devices", { cookie: owner.cookie }));
      if (devices.length !== 0) throw new Error("device still there");
    });
    const row = await env.DB.prepare("SELECT id FROM devices WHERE id = ?").bind(phone.deviceId).first();
    expect(row).toBeNull();
  });

  it("a 500 is retried from the hub's alarm until it is delivered", async () => {
    const owner = await signUp();
    await addPhone(owner);
    let calls = 0;
    fake.state.answer = () => (++calls === 1 ? 500 : 201);
    const { approval } = await ask(owner);
    await untilPushes(1);
    const hub = hubStub(owner.teamId);
    // The failed push waits with backoff, and the hub's alarm is set for it.
    const alarm = await vi.waitFor(async () => {
      const at = await runInDurableObject(hub, (_, state) => state.storage.getAlarm());
      if (at === null) throw new Error("no alarm yet");
      return at;
    });
    expect(alarm).toBeGreaterThan(Date.now());
    expect(pushes).toHaveLength(1);
    await runInDurableObject(hub as unknown as DurableObjectStub<TeamHub>, (h) => h.drain(alarm)); // the alarm's moment
    expect(pushes).toHaveLength(2);
    expect(pushes[1]?.payload).toMatchObject({ type: "approval", approvalId: approval.id });
  });

  it("refuses every invalid subscription with 400 and makes no fetch", async () => {
    const owner = await signUp();
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    const good = { p256dh: ecdh.getPublicKey("base64url"), auth: randomBytes(16).toString("base64url") };
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString("base64url");
    const cases = [
      { endpoint: "http://fcm.googleapis.com/fcm/send/x", keys: good },
      { endpoint: "https://fcm.googleapis.com:8443/fcm/send/x", keys: good },
      { endpoint: "https://user:pw@fcm.googleapis.com/fcm/send/x", keys: good },
      { endpoint: `https://fcm.googleapis.com/${"x".repeat(1000)}`, keys: good },
      { endpoint: "https://evil.example/fcm.googleapis.com", keys: good },
      { endpoint: "https://169.254.169.254/latest/meta-data", keys: good },
      { endpoint: "https://localhost/push", keys: good },
      { endpoint: "https://fcm.googleapis.com.evil.example/x", keys: good },
      { endpoint: "https://push.services.mozilla.com.evil.example/x", keys: good },
      { endpoint: "https://fcm.googleapis.com/fcm/send/x", keys: { ...good, p256dh: offCurve } },
      { endpoint: "https://fcm.googleapis.com/fcm/send/x", keys: { ...good, p256dh: good.p256dh.slice(0, 40) } },
      {
        endpoint: "https://fcm.googleapis.com/fcm/send/x",
        keys: { ...good, auth: randomBytes(8).toString("base64url") },
      },
    ];
    for (const subscription of cases) {
      const response = await api("/v1/devices", {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({ name: "x", subscription }),
      });
      expect({ endpoint: subscription.endpoint.slice(0, 60), status: response.status }).toEqual({
        endpoint: subscription.endpoint.slice(0, 60),
        status: 400,
      });
    }
    expect(globalThis.fetch).not.toHaveBeenCalled();
    // Known services with their real shapes are accepted.
    for (const endpoint of [
      "https://updates.push.services.mozilla.com/wpush/v2/abc",
      "https://web.push.apple.com/QGx",
      "https://wns2-by3p.notify.windows.com/w/?token=abc",
    ]) {
      const response = await api("/v1/devices", {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({ name: "ok", subscription: { endpoint, keys: good } }),
      });
      expect(response.status).toBe(201);
    }
  });

  it("checks a stored subscription again at send time", async () => {
    const owner = await signUp();
    const phone = await addPhone(owner);
    // A row edited behind the API's back must not become a fetch to an internal address.
    await env.DB.prepare("UPDATE devices SET endpoint = 'https://127.0.0.1/admin' WHERE id = ?")
      .bind(phone.deviceId)
      .run();
    const hub = hubStub(owner.teamId);
    await hub.forgetDirectory();
    const { approval } = await ask(owner);
    await settledDelivery(owner, approval.id);
    expect(globalThis.fetch).not.toHaveBeenCalledWith(expect.stringContaining("127.0.0.1"), expect.anything());
    expect(pushes).toEqual([]);
  });

  it("allows each device at most 10 pushes per 10 minutes across all the team's sessions, then one summary", async () => {
    const owner = await signUp();
    const approver = await addMember(owner, "approver", "Bea");
    await env.DB.prepare("UPDATE teams SET policy = ? WHERE id = ?")
      .bind(JSON.stringify({ notify: "all_approvers" }), owner.teamId)
      .run();
    const ownerPhone = await addPhone(owner, "Pixel 8");
    const approverPhone = await addPhone(approver, "iPhone");
    const { key } = await createKey(owner);
    // Twelve sessions, one request each: a per-session budget would push all twelve.
    const sessions = Array.from({ length: 12 }, () => unique("sess"));
    for (const sessionId of sessions) {
      const agent = await connectAgent(key, sessionId);
      await agent.ask(1, permissionParams(sessionId));
    }
    // Settled: the hub counted all twelve requests against both devices and its queue is empty,
    // so a push for the twelfth would already be here.
    await vi.waitFor(async () => {
      const [counted, queued] = await runInDurableObject(hubStub(owner.teamId), async (_hub, state) => [
        state.storage.sql.exec("SELECT count(*) AS n FROM push_budget").one().n,
        state.storage.sql.exec("SELECT count(*) AS n FROM push_queue").one().n,
      ]);
      if (counted !== 24 || queued !== 0) throw new Error(`${counted} counted, ${queued} queued`);
    });
    await untilPushes(22);
    for (const phone of [ownerPhone, approverPhone]) {
      const mine = pushes.filter((p) => p.url === phone.endpoint).map((p) => p.payload);
      expect(mine.filter((p) => p.type === "approval")).toHaveLength(10);
      // The eleventh request brings one summary of the requests waiting for this device; the twelfth, silence.
      expect(mine.filter((p) => p.type === "summary")).toEqual([
        {
          v: 1,
          type: "summary",
          count: 11,
          web_push: 8030,
          notification: {
            title: "11 requests waiting",
            body: "Open Tapgate to review them.",
            navigate: expect.stringMatching(/^https?:\/\/[^/]+\/$/),
            tag: "tapgate-summary",
          },
          mutable: true,
        },
      ]);
    }
    // Every request still waits: the budget holds back pushes, never requests.
    for (const sessionId of sessions) expect(await pendingApprovals(owner, sessionId)).toHaveLength(1);
    expect(pushes).toHaveLength(22);
  });

  it("sends a test push to my own device only", async () => {
    const owner = await signUp();
    const other = await signUp("Eve");
    const phone = await addPhone(owner);
    expect((await api(`/v1/devices/${phone.deviceId}/test`, { method: "POST", cookie: other.cookie })).status).toBe(
      404,
    );
    expect((await api(`/v1/devices/${phone.deviceId}/test`, { method: "POST", cookie: owner.cookie })).status).toBe(
      202,
    );
    await untilPushes(1);
    expect(pushes[0]?.payload).toMatchObject({ v: 1, type: "test", web_push: 8030, mutable: true });
    expect(declarativePushSchema.parse(pushes[0]?.payload).notification).toMatchObject({
      title: "Tapgate test",
      navigate: expect.stringMatching(/\/devices$/),
    });
  });
});

/** Waits until the hub has finished with an approval's pushes (a delivery row exists or none will). */
async function settledDelivery(owner: Member, approvalId: string) {
  const hub = hubStub(owner.teamId);
  await vi.waitFor(async () => {
    const rows = await hub.deliveries(approvalId);
    if (rows.length === 0 || rows.some((r) => r.sentAt === null)) throw new Error("not attempted yet");
  });
}
