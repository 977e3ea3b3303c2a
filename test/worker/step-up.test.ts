/**
 * Step-up for high-risk requests: an allow needs a fresh passkey assertion bound to that exact
 * request (a replayed one, one for another request, one without user verification, another
 * person's passkey: each refused), a deny never does, the proof verifies offline with WebCrypto
 * alone, and under `highRiskQuorum: 2` two different people must allow (any deny denies at once;
 * the agent gets one answer). The challenge commits to the option too, and a quorum counts only
 * the allows of people who still decide.
 */

import { env } from "cloudflare:test";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";

import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type StepUpOptionsAnswer, type StepUpProof, stepUpProofSchema } from "../../sdk/src/human/step-up";
import {
  api,
  connectAgent,
  createKey,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { offlineProblem } from "./offline-proof";
import { addMember, openLive, stepUpFor, withPasskey } from "./team-helpers";

const post = (member: Member, path: string, body: unknown) =>
  api(path, { method: "POST", cookie: member.cookie, body: JSON.stringify(body) });

const FORCE_PUSH = {
  toolCallId: "push-1",
  title: "git push --force origin main",
  kind: "execute" as const,
  rawInput: { command: "git push --force origin main" },
};

/** A team (its owner with a passkey), an agent session, and `count` high-risk requests (force pushes unless told). */
async function highRiskSetup(policy: object = {}, count = 1, toolCall: typeof FORCE_PUSH | object = FORCE_PUSH) {
  const owner = await withPasskey(await signUp("Ada"));
  if (Object.keys(policy).length > 0) {
    const put = await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify(policy) });
    expect(put.status).toBe(200);
  }
  const { key } = await createKey(owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  for (let i = 1; i <= count; i++) {
    await agent.ask(i, permissionParams(sessionId, { toolCall: { ...toolCall, toolCallId: `push-${i}` } }));
  }
  const approvals = (await pendingApprovals(owner, sessionId)).sort((a, b) => a.createdAt - b.createdAt);
  return { owner, agent, sessionId, approvals };
}

const decideWith = (member: Member, approval: Approval, optionId: string, stepUp?: unknown) =>
  post(member, `/v1/approvals/${approval.id}/decision`, {
    optionId,
    requestHash: approval.requestHash,
    ...(stepUp !== undefined && { stepUp }),
  });

const read = async (member: Member, id: string) =>
  json<Approval>(await api(`/v1/approvals/${id}`, { cookie: member.cookie }));

describe("risk tiers", () => {
  it("a request matching the team's highRisk patterns opens high-risk; others normal", async () => {
    const { owner, agent, sessionId, approvals } = await highRiskSetup();
    expect(approvals[0]).toMatchObject({ risk: "high" });
    expect(approvals[0]?.quorum).toBeUndefined();
    await agent.ask(9, permissionParams(sessionId));
    const normal = (await pendingApprovals(owner, sessionId)).find((a) => a.id !== approvals[0]?.id);
    expect(normal?.risk).toBe("normal");
    // A normal request needs no step-up, and has none to ask for.
    const options = await post(owner, `/v1/approvals/${normal?.id}/step-up`, { optionId: "allow" });
    expect(options.status).toBe(400);
    expect(await json(options)).toMatchObject({ error: "step_up_not_needed" });
    expect((await decideWith(owner, normal as Approval, "allow")).status).toBe(200);
  });
});

describe("high-risk matching sees through the shape of a command and covers tools without one", () => {
  it.each([
    [
      "a force push inside bash -c",
      { kind: "execute", title: "Bash", rawInput: { command: "bash -c 'git push --force'" } },
    ],
    [
      "a +refspec push behind a wrapper",
      { kind: "execute", rawInput: { command: "nohup /usr/bin/git push origin +main &" } },
    ],
    ["a write to ~/.ssh", { kind: "edit", locations: [{ path: "/home/ada/.ssh/authorized_keys" }], rawInput: {} }],
  ])("%s opens high-risk and its allow needs the step-up", async (_, toolCall) => {
    const { owner, agent, approvals } = await highRiskSetup({}, 1, toolCall);
    const approval = approvals[0] as Approval;
    expect(approval.risk).toBe("high");
    const refused = await decideWith(owner, approval, "allow");
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "step_up_required" });
    const { assertion } = await stepUpFor(owner, approval);
    expect((await decideWith(owner, approval, "allow", assertion)).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
  });
});

describe("allowing a high-risk request", () => {
  it("without a step-up: 403 step_up_required; denying needs none", async () => {
    const { owner, agent, approvals } = await highRiskSetup({}, 2);
    const [first, second] = approvals as [Approval, Approval];
    const refused = await decideWith(owner, first, "allow");
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "step_up_required" });
    expect((await read(owner, first.id)).state).toBe("pending");
    expect((await decideWith(owner, second, "deny")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 2, result: { outcome: { outcome: "selected", optionId: "deny" } } });
  });

  it("with a step-up for it: allowed, the agent answered once, and the proof verifies offline", async () => {
    const { owner, agent, approvals } = await highRiskSetup();
    const approval = approvals[0] as Approval;
    const { answer, assertion } = await stepUpFor(owner, approval);
    expect(answer).toMatchObject({ approvalId: approval.id, requestHash: approval.requestHash, optionId: "allow" });
    expect(answer.options).toMatchObject({ userVerification: "required" });
    const allowed = await decideWith(owner, approval, "allow", assertion);
    expect(allowed.status).toBe(200);
    expect(await json(allowed)).toMatchObject({
      state: "allowed",
      optionId: "allow",
      decidedBy: { userId: owner.userId },
    });
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });

    const proof: StepUpProof = stepUpProofSchema.parse(
      await json(await api(`/v1/approvals/${approval.id}/proof`, { cookie: owner.cookie })),
    );
    expect(proof).toMatchObject({ approvalId: approval.id, requestHash: approval.requestHash, state: "allowed" });
    expect(proof.assertions).toHaveLength(1);
    const [signed] = proof.assertions;
    expect(signed).toMatchObject({ userId: owner.userId, optionId: "allow", credentialId: owner.authenticator.id });
    expect(await offlineProblem(proof.approvalId, proof.requestHash, signed as never)).toBeNull();
    // The verifier can fail: the same assertion does not hold for another request, another option or with a flipped bit.
    expect(await offlineProblem(proof.approvalId, "0".repeat(64), signed as never)).toMatch(/challenge/);
    expect(
      await offlineProblem(proof.approvalId, proof.requestHash, { ...signed, optionId: "always" } as never),
    ).toMatch(/challenge/);
    const tampered = Buffer.from(signed?.authenticatorData ?? "", "base64url");
    tampered[36] = (tampered[36] ?? 0) ^ 1; // the signature counter
    expect(
      await offlineProblem(proof.approvalId, proof.requestHash, {
        ...signed,
        authenticatorData: tampered.toString("base64url"),
      } as never),
    ).toMatch(/signature/);
  });

  it("a replayed assertion is refused (step_up_replayed)", async () => {
    const { owner, approvals } = await highRiskSetup({}, 1);
    const approval = approvals[0] as Approval;
    const { assertion } = await stepUpFor(owner, approval);
    // The first use fails at the gate (a stale requestHash), and spends the challenge anyway.
    const stale = await post(owner, `/v1/approvals/${approval.id}/decision`, {
      optionId: "allow",
      requestHash: "0".repeat(64),
      stepUp: assertion,
    });
    expect(stale.status).toBe(409);
    const replayed = await decideWith(owner, approval, "allow", assertion);
    expect(replayed.status).toBe(403);
    expect(await json(replayed)).toMatchObject({ error: "step_up_replayed" });
    expect((await read(owner, approval.id)).state).toBe("pending");
  });

  it("an allow retried after its 200 was lost gets the stored 200, not step_up_replayed; nothing is allowed twice", async () => {
    const { owner, agent, approvals } = await highRiskSetup({}, 1);
    const approval = approvals[0] as Approval;
    const { assertion } = await stepUpFor(owner, approval);
    const first = await decideWith(owner, approval, "allow", assertion);
    expect(first.status).toBe(200);
    const decided = await json<Approval>(first);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });

    const retried = await decideWith(owner, approval, "allow", assertion);
    expect(retried.status).toBe(200);
    expect(await json(retried)).toEqual(decided);
    // The same assertion for another option is no repeat: its challenge named the allow.
    const other = await decideWith(owner, approval, "deny", assertion);
    expect(other.status).toBe(403);
    expect(await json(other)).toMatchObject({ error: "step_up_wrong_request" });
  });

  it("an expired step-up challenge is refused (step_up_failed), and the request stays pending", async () => {
    const { owner, approvals } = await highRiskSetup({}, 1);
    const approval = approvals[0] as Approval;
    const { answer, assertion } = await stepUpFor(owner, approval);
    // Its two minutes pass (time moved for the challenge).
    await env.DB.prepare("UPDATE step_up_challenges SET expires_at = ? WHERE nonce = ?")
      .bind(Date.now() - 1, answer.nonce)
      .run();
    const late = await decideWith(owner, approval, "allow", assertion);
    expect(late.status).toBe(400);
    expect(await json(late)).toMatchObject({
      error: "step_up_failed",
      message: "this step-up expired; ask for a new one",
    });
    expect((await read(owner, approval.id)).state).toBe("pending");
  });

  it("an assertion for another request is refused (step_up_wrong_request), and still works for its own", async () => {
    const { owner, agent, approvals } = await highRiskSetup({}, 2);
    const [first, second] = approvals as [Approval, Approval];
    const { assertion } = await stepUpFor(owner, first);
    const wrong = await decideWith(owner, second, "allow", assertion);
    expect(wrong.status).toBe(403);
    expect(await json(wrong)).toMatchObject({ error: "step_up_wrong_request" });
    expect((await read(owner, second.id)).state).toBe("pending");
    expect((await decideWith(owner, first, "allow", assertion)).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1 });
  });

  it("an assertion without user verification is refused (step_up_no_user_verification)", async () => {
    const { owner, approvals } = await highRiskSetup();
    const approval = approvals[0] as Approval;
    const { assertion } = await stepUpFor(owner, approval, { userVerified: false });
    const refused = await decideWith(owner, approval, "allow", assertion);
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "step_up_no_user_verification" });
    expect((await read(owner, approval.id)).state).toBe("pending");
  });

  it("another person's passkey, a foreign origin or a forged signature: 400 step_up_failed", async () => {
    const { owner, approvals } = await highRiskSetup();
    const approval = approvals[0] as Approval;
    const colleague = await withPasskey(await addMember(owner, "approver", "Bob"));
    // Bob's challenge, signed with Ada's authenticator.
    const bobs = await json<StepUpOptionsAnswer>(
      await post(colleague, `/v1/approvals/${approval.id}/step-up`, { optionId: "allow" }),
    );
    const adaSigned = await owner.authenticator.assert(
      bobs.options as unknown as PublicKeyCredentialRequestOptionsJSON,
    );
    const notHis = await decideWith(colleague, approval, "allow", adaSigned);
    expect(notHis.status).toBe(400);
    expect(await json(notHis)).toMatchObject({ error: "step_up_failed" });
    // Ada's own challenge, from a page at another origin.
    const { assertion: phished } = await stepUpFor(owner, approval, { origin: "https://evil.example" });
    expect(await json(await decideWith(owner, approval, "allow", phished))).toMatchObject({ error: "step_up_failed" });
    // A signature over other bytes.
    const { assertion } = await stepUpFor(owner, approval);
    const other = await stepUpFor(owner, approval);
    const forged = { ...assertion, response: { ...assertion.response, signature: other.assertion.response.signature } };
    expect(await json(await decideWith(owner, approval, "allow", forged))).toMatchObject({ error: "step_up_failed" });
    expect((await read(owner, approval.id)).state).toBe("pending");
  });

  it("the proof of another team's approval is 404, like an unknown one", async () => {
    const { approvals } = await highRiskSetup();
    const stranger = await signUp("Eve");
    const approval = approvals[0] as Approval;
    const proof = await api(`/v1/approvals/${approval.id}/proof`, { cookie: stranger.cookie });
    expect(proof.status).toBe(404);
    const options = await api(`/v1/approvals/${approval.id}/step-up`, {
      method: "POST",
      cookie: stranger.cookie,
      body: '{"optionId":"allow"}',
    });
    expect(options.status).toBe(404);
  });
});

describe("highRiskQuorum: 2", () => {
  it("the first allow is 1 of 2 (live), the same person again is refused, a second person completes it", async () => {
    const { owner, agent, approvals } = await highRiskSetup({ highRiskQuorum: 2 });
    const approval = approvals[0] as Approval;
    expect(approval.quorum).toEqual({ required: 2, allowedBy: [] });
    const colleague = await withPasskey(await addMember(owner, "approver", "Bob"));
    const live = await openLive(colleague);

    const first = await decideWith(owner, approval, "allow", (await stepUpFor(owner, approval)).assertion);
    expect(first.status).toBe(200);
    const partial = await json<Approval>(first);
    expect(partial).toMatchObject({ state: "pending", decidedBy: null });
    expect(partial.quorum?.allowedBy.map((p) => p.userId)).toEqual([owner.userId]);
    const shown = await live.next(
      (f) =>
        f.type === "approval" &&
        (f.approval as Approval).id === approval.id &&
        (f.approval as Approval).quorum?.allowedBy.length === 1,
    );
    expect((shown.approval as Approval).state).toBe("pending");

    // Ada again: no second step-up for her, and no decision.
    const again = await post(owner, `/v1/approvals/${approval.id}/step-up`, { optionId: "allow" });
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ error: "second_approver_required" });
    await agent.barrier();
    expect(agent.pending()).toBe(0); // nothing reached the agent yet

    const second = await decideWith(colleague, approval, "allow", (await stepUpFor(colleague, approval)).assertion);
    expect(second.status).toBe(200);
    const done = await json<Approval>(second);
    expect(done).toMatchObject({ state: "allowed", decidedBy: { userId: colleague.userId } });
    expect(done.quorum?.allowedBy.map((p) => p.userId)).toEqual([owner.userId, colleague.userId]);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
    await agent.barrier();
    expect(agent.pending()).toBe(0); // one answer

    const proof = await json<StepUpProof>(
      await api(`/v1/approvals/${approval.id}/proof`, { cookie: colleague.cookie }),
    );
    expect(proof.assertions.map((a) => a.userId)).toEqual([owner.userId, colleague.userId]);
    for (const a of proof.assertions) expect(await offlineProblem(proof.approvalId, proof.requestHash, a)).toBeNull();
    live.ws.close();
  });

  it("after one allow, any deny denies at once; the agent gets the deny only", async () => {
    const { owner, agent, approvals } = await highRiskSetup({ highRiskQuorum: 2 });
    const approval = approvals[0] as Approval;
    const colleague = await addMember(owner, "approver", "Bob");
    expect((await decideWith(owner, approval, "allow", (await stepUpFor(owner, approval)).assertion)).status).toBe(200);
    const denied = await decideWith(colleague, approval, "deny");
    expect(denied.status).toBe(200);
    expect(await json(denied)).toMatchObject({ state: "denied", optionId: "deny" });
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "deny" } } });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
  });
});

describe("a step-up signs the option", () => {
  it("a step-up for allow_once does not allow allow_always; one for allow_always does", async () => {
    const { owner, agent, approvals } = await highRiskSetup({ onceOnlyOptions: false });
    const approval = approvals[0] as Approval;
    expect(approval.options.map((o) => o.optionId)).toEqual(["allow", "always", "deny"]);
    const once = await stepUpFor(owner, approval);
    const wrong = await decideWith(owner, approval, "always", once.assertion);
    expect(wrong.status).toBe(403);
    expect(await json(wrong)).toMatchObject({ error: "step_up_wrong_request" });
    expect((await read(owner, approval.id)).state).toBe("pending");

    const always = await stepUpFor(owner, approval, {}, "always");
    expect(always.answer.optionId).toBe("always");
    expect((await decideWith(owner, approval, "always", always.assertion)).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "always" } } });
    const proof = stepUpProofSchema.parse(
      await json(await api(`/v1/approvals/${approval.id}/proof`, { cookie: owner.cookie })),
    );
    expect(proof.assertions.map((a) => a.optionId)).toEqual(["always"]);
    for (const a of proof.assertions) expect(await offlineProblem(proof.approvalId, proof.requestHash, a)).toBeNull();
  });

  it("options are only for an allow that is offered", async () => {
    const { owner, approvals } = await highRiskSetup();
    const approval = approvals[0] as Approval;
    const deny = await post(owner, `/v1/approvals/${approval.id}/step-up`, { optionId: "deny" });
    expect(deny.status).toBe(400);
    expect(await json(deny)).toMatchObject({ error: "step_up_not_needed" });
    const unknown = await post(owner, `/v1/approvals/${approval.id}/step-up`, { optionId: "always" });
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toMatchObject({ error: "option_not_offered" });
    const none = await post(owner, `/v1/approvals/${approval.id}/step-up`, {});
    expect(none.status).toBe(400);
    expect(await json(none)).toMatchObject({ error: "invalid_request" });
  });
});

describe("a quorum counts the allows of people who still decide", () => {
  it("a partial allow no longer counts once its maker lost the role", async () => {
    const { owner, agent, approvals } = await highRiskSetup({ highRiskQuorum: 2 });
    const approval = approvals[0] as Approval;
    const bob = await withPasskey(await addMember(owner, "approver", "Bob"));
    const carol = await withPasskey(await addMember(owner, "approver", "Carol"));
    expect((await decideWith(bob, approval, "allow", (await stepUpFor(bob, approval)).assertion)).status).toBe(200);
    await env.DB.prepare("UPDATE memberships SET role = 'viewer' WHERE team_id = ? AND user_id = ?")
      .bind(owner.teamId, bob.userId)
      .run();

    const second = await decideWith(owner, approval, "allow", (await stepUpFor(owner, approval)).assertion);
    expect(second.status).toBe(200);
    const partial = await json<Approval>(second);
    expect(partial).toMatchObject({ state: "pending", decidedBy: null });
    expect(partial.quorum?.allowedBy.map((p) => p.userId)).toEqual([owner.userId]);
    await agent.barrier();
    expect(agent.pending()).toBe(0); // Bob's allow and Ada's are not two

    const third = await decideWith(carol, approval, "allow", (await stepUpFor(carol, approval)).assertion);
    expect(await json(third)).toMatchObject({ state: "allowed", decidedBy: { userId: carol.userId } });
    expect(await agent.next()).toMatchObject({ id: 1, result: { outcome: { optionId: "allow" } } });
  });
});
