/**
 * Idempotent decisions: the same person repeating the decision that ended a request (same
 * `optionId`, same `requestHash`, from any of their devices) gets `200` and the stored result;
 * any other decision on it is a `409`; nothing is written twice.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, askOnce, decide, flush, gateStub, json, type Member } from "./helpers";
import { addMember } from "./team-helpers";

/** A decision from a named device (the app sends its name in `X-Tapgate-Device`). */
const decideFrom = (member: Member, approval: Approval, optionId: string, device: string) =>
  api(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    cookie: member.cookie,
    headers: { "X-Tapgate-Device": device },
    body: JSON.stringify({ optionId, requestHash: approval.requestHash }),
  });

/** What D1 holds about an approval once the gate's outbox is flushed: its audit events and index row. */
async function written(teamId: string, sessionId: string, approvalId: string) {
  await flush(teamId, sessionId);
  const audit = await env.DB.prepare(
    "SELECT seq, action, actor FROM audit_log WHERE subject = ? AND action <> 'approval.escalated' ORDER BY seq",
  )
    .bind(approvalId)
    .all();
  const index = await env.DB.prepare("SELECT state, option_id, resolved_at, decided_by FROM approvals WHERE id = ?")
    .bind(approvalId)
    .first();
  return { audit: audit.results, index };
}

describe("repeating a decision", () => {
  it("the same person, same option, from another device: 200 and the first answer, nothing written again", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const first = await decideFrom(owner, approval, "allow", "phone");
    expect(first.status).toBe(200);
    const decided = await json<Approval>(first);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
    const before = await written(owner.teamId, sessionId, approval.id);
    expect(before.audit.map((r) => r.action)).toEqual(["approval.requested", "approval.allowed"]);

    const again = await decideFrom(owner, approval, "allow", "laptop");
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(decided); // decidedBy still names the phone
    const sameDevice = await decide(owner, approval, "allow");
    expect(sameDevice.status).toBe(200);
    expect(await json(sameDevice)).toEqual(decided);

    expect(await written(owner.teamId, sessionId, approval.id)).toEqual(before);
    const queued = await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.outbox.size());
    expect(queued).toBe(0);
    await agent.barrier(); // replies come in order: no second answer reached the agent before this one
    expect(agent.pending()).toBe(0);
  });

  it("a different option, or another person with the same option, is 409 already_decided", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const colleague = await addMember(owner, "approver");
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    const before = await written(owner.teamId, sessionId, approval.id);

    const otherOption = await decide(owner, approval, "allow");
    expect(otherOption.status).toBe(409);
    expect(await json(otherOption)).toMatchObject({
      error: "already_decided",
      approval: { state: "denied", optionId: "deny", decidedBy: { userId: owner.userId } },
    });
    const otherPerson = await decide(colleague, approval, "deny");
    expect(otherPerson.status).toBe(409);
    expect(await json(otherPerson)).toMatchObject({ error: "already_decided" });
    const staleHash = await decide(owner, approval, "deny", "0".repeat(64));
    expect(staleHash.status).toBe(409);

    expect(await written(owner.teamId, sessionId, approval.id)).toEqual(before);
  });

  it("the same decision sent twice at once: two 200s with one result, one answer to the agent", async () => {
    const { owner, agent, approval } = await askOnce();
    const [a, b] = await Promise.all([decide(owner, approval, "allow"), decide(owner, approval, "allow")]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await json(a)).toEqual(await json(b));
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
  });

  it("after the request ended without a human, the decision stays 410 however often it is sent", async () => {
    const { owner, sessionId, approval } = await askOnce();
    await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) => gate.sweep(Date.now() + 11 * 60_000));
    for (let i = 0; i < 2; i++) {
      const late = await decide(owner, approval, "allow");
      expect(late.status).toBe(410);
      expect(await json(late)).toMatchObject({ error: "already_resolved", approval: { state: "expired" } });
    }
  });
});
