/**
 * What a push says for each piece of hub news: a new request (its lock-screen title, or for a
 * private request only where it waits), a device's spent budget, a request's end. Pure.
 *
 * Owns: the payloads. Does not own: sending or retrying them (`push-queue.ts`), their encryption
 * (`web-push.ts`).
 */
import type { Approval } from "../../sdk/src/approval";
import { privateSessionLabel } from "../../sdk/src/human/push";
import type { ApprovalNews } from "./api";
import { lockScreenTitle, type PushPayload } from "./web-push";

export type Urgency = "high" | "normal";

/** What a request's push to one device is: the same message for every device it goes to. */
export interface NewsPush {
  payload: PushPayload;
  urgency: Urgency;
}

/** A new request's push: urgent, with its lock-screen title (at most once per device). */
export function approvalPush(news: ApprovalNews): NewsPush {
  const { approval } = news;
  // A private request's push names its session only: the service worker opens `sealed` itself.
  const says = approval.sealed
    ? { title: "", private: true as const, sessionTitle: privateSessionLabel(approval).slice(0, 256) }
    : { title: lockScreenTitle(approval, news.lockScreen) };
  return {
    payload: {
      v: 1,
      type: "approval",
      approvalId: approval.id,
      expiresAt: approval.expiresAt,
      ...says,
      ...(approval.risk === "high" && { risk: "high" as const }),
    },
    urgency: "high",
  };
}

/** A device's budget is spent: one summary of how many requests wait for it, not urgent. */
export function summaryPush(waiting: number): NewsPush {
  return { payload: { v: 1, type: "summary", count: waiting }, urgency: "normal" };
}

/** The message that closes a request's notification where one went out. */
export function resolvedPayload(approval: Pick<Approval, "id" | "state">): PushPayload {
  return { v: 1, type: "resolved", approvalId: approval.id, state: approval.state };
}
