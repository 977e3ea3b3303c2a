import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { ApprovalNews } from "./api";
import { approvalPush, resolvedPayload, summaryPush } from "./news-push";
import { retryDelayMs, SEND_CLAIM_MS, topicOf } from "./push-queue";
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
  ...over,
});

describe("approvalPush", () => {
  it("pushes a new request urgently, with its lock-screen title", () => {
    expect(approvalPush(news({}))).toEqual({
      payload: { v: 1, type: "approval", approvalId: "apr_1", title: "Run tests", expiresAt: 5_000 },
      urgency: "high",
    });
    expect(approvalPush(news({ lockScreen: "generic" })).payload).toMatchObject({
      title: "An agent is asking for permission",
    });
  });

  it("marks a high-risk request, so the lock screen offers no action for it", () => {
    expect(approvalPush(news({ approval: { ...approval, risk: "high" } })).payload).toMatchObject({ risk: "high" });
    expect(approvalPush(news({})).payload).not.toHaveProperty("risk");
  });
});

describe("summaryPush", () => {
  it("says how many requests wait, not urgently, once a device's budget is spent", () => {
    expect(summaryPush(7)).toEqual({ payload: { v: 1, type: "summary", count: 7 }, urgency: "normal" });
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
    expect(topicOf(approvalPush(news({})).payload)).toBe(pushTopic("apr_1"));
    expect(topicOf({ v: 1, type: "summary", count: 2 })).toBeUndefined();
    expect(topicOf({ v: 1, type: "test" })).toBeUndefined();
  });
});
