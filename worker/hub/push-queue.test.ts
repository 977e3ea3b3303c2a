import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { ApprovalNews } from "./api";
import { newsPush, resolvedPayload, retryDelayMs, SEND_CLAIM_MS, topicOf } from "./push-queue";
import { pushTopic } from "./web-push";

const approval = {
  id: "apr_1",
  state: "pending",
  expiresAt: 5_000,
  snapshot: { toolCall: { toolCallId: "t1", title: "Run tests" }, session: {} },
} as unknown as Approval;

const news = (over: Partial<ApprovalNews>): ApprovalNews => ({
  approval,
  ownerUserId: "usr_1",
  recipients: "session_owner",
  lockScreen: "tool_title",
  push: { kind: "approval" },
  ...over,
});

describe("newsPush", () => {
  it("pushes a new request once per device, urgently, with its lock-screen title", () => {
    expect(newsPush(news({}))).toEqual({
      payload: { v: 1, type: "approval", approvalId: "apr_1", title: "Run tests", expiresAt: 5_000 },
      urgency: "high",
      oncePerDevice: true,
    });
    expect(newsPush(news({ lockScreen: "generic" }))?.payload).toMatchObject({
      title: "An agent is asking for permission",
    });
  });

  it("sends one summary, not urgent, once the fatigue limit is reached", () => {
    expect(newsPush(news({ push: { kind: "summary", waiting: 7 } }))).toEqual({
      payload: { v: 1, type: "summary", count: 7 },
      urgency: "normal",
      oncePerDevice: false,
    });
  });

  it("pushes nothing when the gate says none", () => {
    expect(newsPush(news({ push: { kind: "none" } }))).toBeNull();
  });
});

describe("resolvedPayload", () => {
  it("names the request and its final state only", () => {
    expect(resolvedPayload({ id: "apr_1", state: "allowed" })).toEqual({
      v: 1,
      type: "resolved",
      approvalId: "apr_1",
      state: "allowed",
    });
  });
});

describe("retryDelayMs", () => {
  it("doubles from 2 s after the first failure, up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(retryDelayMs)).toEqual([
      2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });

  it("claims a job for longer than one send may take (10 s), so no job is sent twice", () => {
    expect(SEND_CLAIM_MS).toBeGreaterThan(10_000);
  });
});

describe("topicOf", () => {
  it("gives messages about one request one topic, and others none", () => {
    expect(topicOf({ v: 1, type: "resolved", approvalId: "apr_1", state: "denied" })).toBe(pushTopic("apr_1"));
    expect(topicOf(newsPush(news({}))?.payload as never)).toBe(pushTopic("apr_1"));
    expect(topicOf({ v: 1, type: "summary", count: 2 })).toBeUndefined();
    expect(topicOf({ v: 1, type: "test" })).toBeUndefined();
  });
});
