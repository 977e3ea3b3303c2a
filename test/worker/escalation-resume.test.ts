/**
 * A hub evicted in the middle of an escalation step: a push step was marked started before its
 * pushes left, so the gate's retry of it (the same step, asked again) sends none twice; a mail
 * step runs again, and its mail carries the same idempotency key, so the provider (here the dev
 * outbox, which keeps one message per key as the provider sends one) does not send it twice. The
 * eviction is left as it leaves the hub's storage: the step's start marked (and its mail sent),
 * its outcome never stored. A fake push service and the dev outbox stand for what is outside.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { escalationMailKey } from "../../worker/hub/escalation-mail";
import { sendMail } from "../../worker/mail";
import type { Env } from "../../worker/types";
import { fakePushService } from "./fake-push";
import {
  connectAgent,
  createKey,
  gateStub,
  hubStub,
  json,
  type Member,
  outbox,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";

let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => vi.restoreAllMocks());

async function escalationMails(member: Member) {
  const { messages } = await json<{ messages: Array<{ subject: string }> }>(await outbox(member.email));
  return messages.filter((m) => m.subject.includes("waiting for your answer"));
}

/** What an instance evicted after marking a step started, before storing its outcome, leaves behind. */
function startedBeforeEviction(member: Member, approvalId: string, step: number) {
  return runInDurableObject(hubStub(member.teamId), (_, state) => {
    state.storage.sql.exec(
      "INSERT INTO escalation_starts (approval_id, step, phase, at) VALUES (?, ?, 'step', ?)",
      approvalId,
      step,
      Date.now(),
    );
  });
}

describe("a hub evicted mid-step", () => {
  it("sends no second push or mail for the step it started; the steps it never started still go", async () => {
    const owner = await signUp();
    const phone = await fake.addPhone(owner, "Pixel 8");
    const { key } = await createKey(owner);
    const sessionId = unique("evicted");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      id: 1,
      method: "session/request_permission",
      params: permissionParams(sessionId),
    });
    const [approval] = await pendingApprovals(owner, sessionId);
    if (!approval) throw new Error("not pending");
    await fake.untilPushes(1);
    const at = (ms: number) =>
      runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.escalateDue(approval.createdAt + ms));

    // The default ladder: owner again at 60 s, every approver at 3 min, mail at 5 min.
    await startedBeforeEviction(owner, approval.id, 1);
    await startedBeforeEviction(owner, approval.id, 3);
    await at(60_000);
    expect(fake.to(phone)).toHaveLength(1);
    await at(180_000);
    expect(fake.to(phone)).toHaveLength(2); // step 2 was never started: it goes
    // The evicted instance's mail of step 3 went before it stored anything: the run again sends it under the same key.
    const evictedMail = {
      to: owner.email,
      subject: "An agent is waiting for your answer on Tapgate",
      text: "",
      link: null,
    };
    await sendMail(env as unknown as Env, {
      ...evictedMail,
      idempotencyKey: escalationMailKey(approval.id, 3, "step", owner.userId),
    });
    await at(300_000);
    expect(await escalationMails(owner)).toHaveLength(1);
  });
});
