import { createECDH } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { lockScreenTitle, outcomeOf, pushPlatformOf, pushSubscriptionSchema, pushTopic } from "./web-push";

const GENERIC = "An agent is asking for permission";

function approval(title: unknown): Approval {
  return {
    id: "apr_1",
    sessionId: "s1",
    state: "pending",
    reason: null,
    snapshot: {
      toolCall: { toolCallId: "t1", title, rawInput: { secret: "never on the lock screen" } },
      session: { title: null, agent: null, host: null, cwd: null },
    },
    options: [],
    requestHash: "h",
    createdAt: 0,
    expiresAt: 1,
    resolvedAt: null,
    optionId: null,
    decidedBy: null,
  };
}

describe("lockScreenTitle", () => {
  it("never carries an elicitation's question, form or URL, whatever the policy", () => {
    const asked = approval("Tool call that asked");
    asked.type = "elicitation";
    asked.snapshot.elicitation = { mode: "url", message: "Sign in to Acme", url: "https://acme.example/oauth" };
    for (const policy of ["tool_title", "generic"] as const) {
      expect(lockScreenTitle(asked, policy)).toBe("An agent is asking you a question");
    }
  });

  it("shows the tool title when the policy allows it", () => {
    expect(lockScreenTitle(approval("Run npm test"), "tool_title")).toBe("Run npm test");
  });

  it("shows a generic line when the policy says so, whatever the title", () => {
    expect(lockScreenTitle(approval("Run npm test"), "generic")).toBe(GENERIC);
  });

  it("shows a generic line for a missing, blank or non-string title", () => {
    for (const title of [undefined, null, "", "   \n", 42, { text: "x" }]) {
      expect(lockScreenTitle(approval(title), "tool_title")).toBe(GENERIC);
    }
  });

  it("cuts a long title to 80 characters, ending in an ellipsis", () => {
    const exactly80 = "a".repeat(80);
    expect(lockScreenTitle(approval(exactly80), "tool_title")).toBe(exactly80);
    const long = lockScreenTitle(approval("b".repeat(81)), "tool_title");
    expect(long).toBe(`${"b".repeat(79)}…`);
    expect(long.length).toBe(80);
  });

  it("never shows the tool's arguments", () => {
    expect(lockScreenTitle(approval("Edit file"), "tool_title")).not.toContain("never on the lock screen");
  });
});

describe("pushPlatformOf", () => {
  it("names the push service of each accepted host, and none for another", () => {
    expect(pushPlatformOf("https://fcm.googleapis.com/fcm/send/abc")).toBe("fcm");
    expect(pushPlatformOf("https://web.push.apple.com/QGx")).toBe("apple");
    expect(pushPlatformOf("https://updates.push.services.mozilla.com/wpush/v2/x")).toBe("mozilla");
    expect(pushPlatformOf("https://wns2-par02p.notify.windows.com/w/?token=x")).toBe("windows");
    expect(pushPlatformOf("https://push.example.com/x")).toBeNull();
    expect(pushPlatformOf("not a url")).toBeNull();
  });
});

describe("outcomeOf", () => {
  it("maps push-service statuses to what the queue does next", () => {
    expect([200, 201, 202].map(outcomeOf)).toEqual(["delivered", "delivered", "delivered"]);
    expect([404, 410].map(outcomeOf)).toEqual(["gone", "gone"]);
    expect([429, 500, 503].map(outcomeOf)).toEqual(["retry", "retry", "retry"]);
    expect([400, 401, 403, 413].map(outcomeOf)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
  });
});

describe("pushTopic", () => {
  it("is a stable base64url string of at most 32 characters per approval", () => {
    const topic = pushTopic("apr_1");
    expect(topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    expect(pushTopic("apr_1")).toBe(topic);
    expect(pushTopic("apr_2")).not.toBe(topic);
  });
});

describe("pushSubscriptionSchema", () => {
  const auth = Buffer.alloc(16, 1).toString("base64url");
  const notOnCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString("base64url");

  it("refuses endpoints that are not a known push service over https:443", async () => {
    for (const endpoint of [
      "http://fcm.googleapis.com/x",
      "https://fcm.googleapis.com:8443/x",
      "https://user:pw@fcm.googleapis.com/x",
      "https://localhost/push",
      "https://evil.example/push",
      "not a url",
      `https://fcm.googleapis.com/${"x".repeat(1000)}`,
    ]) {
      const parsed = await pushSubscriptionSchema.safeParseAsync({ endpoint, keys: { p256dh: notOnCurve, auth } });
      expect(parsed.success, endpoint).toBe(false);
      expect(
        parsed.error?.issues.some((i) => i.path[0] === "endpoint"),
        endpoint,
      ).toBe(true);
    }
  });

  it("refuses keys that are not a P-256 point and a 16-byte secret", async () => {
    const parsed = await pushSubscriptionSchema.safeParseAsync({
      endpoint: "https://fcm.googleapis.com/fcm/send/abc",
      keys: { p256dh: notOnCurve, auth: "short" },
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join(".")).sort()).toEqual(["keys.auth", "keys.p256dh"]);
  });

  it("accepts a real subscription", async () => {
    const ecdh = createECDH("prime256v1");
    const raw = ecdh.generateKeys().toString("base64url");
    for (const endpoint of [
      "https://fcm.googleapis.com/fcm/send/abc",
      "https://web.push.apple.com/abc",
      "https://updates.push.services.mozilla.com/wpush/v2/abc",
      "https://wns2-par02p.notify.windows.com/w/?token=abc",
    ]) {
      const parsed = await pushSubscriptionSchema.safeParseAsync({ endpoint, keys: { p256dh: raw, auth } });
      expect(parsed.success, endpoint).toBe(true);
    }
  });
});
