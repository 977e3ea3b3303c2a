/**
 * Less friction for the routine: a batch of decisions (each item decided exactly as a single
 * decision would be, once), a reason that reaches the agent, and claims ("Ada is looking").
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { CLAIM_MS, type DecisionBatchAnswer } from "../../sdk/src/human/approvals";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  flush,
  hubStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember, openLive } from "./team-helpers";

const batch = (member: Member, decisions: object[]) =>
  api("/v1/approvals/decisions", { method: "POST", cookie: member.cookie, body: JSON.stringify({ decisions }) });

const item = (a: Approval, optionId: string, extra: object = {}) => ({
  approvalId: a.id,
  optionId,
  requestHash: a.requestHash,
  ...extra,
});

const claim = (member: Member, approvalId: string) =>
  api(`/v1/approvals/${approvalId}/claim`, { method: "POST", cookie: member.cookie, body: "{}" });

/** The audit actions and the D1 row of an approval, once its gate's outbox is flushed. */
async function written(teamId: string, sessionId: string, approvalId: string) {
  await flush(teamId, sessionId);
  const audit = await env.DB.prepare("SELECT action, detail FROM audit_log WHERE subject = ? ORDER BY seq")
    .bind(approvalId)
    .all<{ action: string; detail: string }>();
  const row = await env.DB.prepare("SELECT state, option_id, message FROM approvals WHERE id = ?")
    .bind(approvalId)
    .first();
  // The escalation ladder's steps are audited too; this file is about decisions.
  const decisions = audit.results.filter((r) => r.action !== "approval.escalated");
  return { actions: decisions.map((r) => r.action), details: decisions.map((r) => JSON.parse(r.detail)), row };
}

/** One agent socket holding `count` requests (ids 1…count), and their approvals in that order. */
async function askMany(owner: Member, count: number) {
  const { key } = await createKey(owner);
  const sessionId = unique("batch");
  const agent = await connectAgent(key, sessionId);
  for (let id = 1; id <= count; id++) await agent.ask(id, permissionParams(sessionId));
  const approvals = (await pendingApprovals(owner, sessionId)).sort((a, b) => a.createdAt - b.createdAt);
  expect(approvals).toHaveLength(count);
  return { agent, sessionId, approvals };
}

describe("POST /v1/approvals/decisions", () => {
  it("decides each item as a single decision would, exactly once; the agents get one answer each", async () => {
    const owner = await signUp("Ada");
    const { agent, sessionId, approvals } = await askMany(owner, 4);
    const [ok, decidedBefore, stale, untouched] = approvals as [Approval, Approval, Approval, Approval];
    const stranger = await askOnce(); // another team's request
    expect((await decide(owner, decidedBefore, "deny")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 2, result: { outcome: { optionId: "deny" } } });

    const response = await batch(owner, [
      item(ok, "allow"),
      item(decidedBefore, "allow"),
      item(stale, "allow", { requestHash: "0".repeat(64) }),
      item(stranger.approval, "allow"),
      item(ok, "allow"), // the same decision again: a repeat
      item(ok, "deny"), // another decision on it: a conflict
      item(untouched, "nope"),
    ]);
    expect(response.status).toBe(200);
    const { results } = await json<DecisionBatchAnswer>(response);
    expect(results.map((r) => [r.approvalId, r.status, r.error])).toEqual([
      [ok.id, 200, undefined],
      [decidedBefore.id, 409, "already_decided"],
      [stale.id, 409, "request_changed"],
      [stranger.approval.id, 404, "not_found"],
      [ok.id, 200, undefined],
      [ok.id, 409, "already_decided"],
      [untouched.id, 400, "option_not_offered"],
    ]);
    expect(results[0]?.approval).toMatchObject({
      state: "allowed",
      optionId: "allow",
      decidedBy: { userId: owner.userId },
    });
    expect(results[4]?.approval).toEqual(results[0]?.approval);
    expect(results[1]?.approval).toMatchObject({ state: "denied", optionId: "deny" });
    expect(results[3]).not.toHaveProperty("approval"); // nothing of another team's request leaks

    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
    await agent.barrier(); // replies come in order: nothing else reached the agent before this one
    expect(agent.pending()).toBe(0);
    await stranger.agent.barrier();
    expect(stranger.agent.pending()).toBe(0);

    expect((await written(owner.teamId, sessionId, ok.id)).actions).toEqual(["approval.requested", "approval.allowed"]);
    expect((await written(owner.teamId, sessionId, decidedBefore.id)).actions).toEqual([
      "approval.requested",
      "approval.denied",
    ]);
    for (const still of [stale, untouched]) {
      expect((await written(owner.teamId, sessionId, still.id)).row).toMatchObject({ state: "pending" });
    }
    const theirs = await api(`/v1/approvals/${stranger.approval.id}`, { cookie: stranger.owner.cookie });
    expect(await json(theirs)).toMatchObject({ state: "pending" });
  });

  it("answers step_up_required for a high-risk item, deciding the others; a deny of one needs no step-up", async () => {
    const owner = await signUp("Ada");
    const { key } = await createKey(owner);
    const sessionId = unique("batch-risk");
    const agent = await connectAgent(key, sessionId);
    const forcePush = (id: string) => ({
      toolCallId: id,
      title: "git push --force origin main",
      kind: "execute" as const,
      rawInput: { command: "git push --force origin main" },
    });
    await agent.ask(1, permissionParams(sessionId, { toolCall: forcePush("push-1") }));
    await agent.ask(2, permissionParams(sessionId, { toolCall: forcePush("push-2") }));
    await agent.ask(3, permissionParams(sessionId));
    const [risky, riskyToDeny, routine] = (await pendingApprovals(owner, sessionId)).sort(
      (a, b) => a.createdAt - b.createdAt,
    ) as [Approval, Approval, Approval];
    expect([risky.risk, riskyToDeny.risk, routine.risk]).toEqual(["high", "high", "normal"]);

    const { results } = await json<DecisionBatchAnswer>(
      await batch(owner, [item(risky, "allow"), item(riskyToDeny, "deny"), item(routine, "allow")]),
    );
    expect(results.map((r) => [r.approvalId, r.status, r.error])).toEqual([
      [risky.id, 403, "step_up_required"],
      [riskyToDeny.id, 200, undefined],
      [routine.id, 200, undefined],
    ]);
    const answers = [await agent.next(), await agent.next()].sort((a, b) => Number(a.id) - Number(b.id));
    expect(answers).toMatchObject([
      { id: 2, result: { outcome: { optionId: "deny" } } },
      { id: 3, result: { outcome: { optionId: "allow" } } },
    ]);
    await agent.barrier();
    expect(agent.pending()).toBe(0); // the high-risk allow reached nobody: still waiting for a passkey
    expect((await written(owner.teamId, sessionId, risky.id)).row).toMatchObject({ state: "pending" });
  });

  it("checks each item's role like a single decision: a viewer gets 403 for the whole batch", async () => {
    const { owner, approval } = await askOnce();
    const viewer = await addMember(owner, "viewer");
    const refused = await batch(viewer, [item(approval, "allow")]);
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "forbidden" });
  });

  it("refuses a body that is empty, over 50 items, or with a bad item, naming the field", async () => {
    const { owner, approval } = await askOnce();
    const empty = await batch(owner, []);
    expect(empty.status).toBe(400);
    expect(await json(empty)).toMatchObject({
      error: "invalid_request",
      message: expect.stringContaining("decisions"),
    });
    const tooMany = await batch(
      owner,
      Array.from({ length: 51 }, () => item(approval, "allow")),
    );
    expect(tooMany.status).toBe(400);
    const badHash = await batch(owner, [item(approval, "allow", { requestHash: "xyz" })]);
    expect(badHash.status).toBe(400);
    expect(await json(badHash)).toMatchObject({ message: expect.stringContaining("decisions[0].requestHash") });
    expect(await json(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }))).toMatchObject({
      state: "pending",
    });
  });
});

describe("a reason with a decision", () => {
  it("reaches the agent in _meta.tapgate.message, the approval, the live feed, history and the audit chain", async () => {
    const owner = await signUp("Ada");
    const feed = await openLive(owner);
    const { agent, sessionId, approval } = await askOnce(owner);
    const reason = "Use the staging <b>bucket</b> instead";
    const decided = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "deny", requestHash: approval.requestHash, reason }),
    });
    expect(decided.status).toBe(200);
    expect(await json(decided)).toMatchObject({ state: "denied", message: reason });
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { optionId: "deny" }, _meta: { tapgate: { reason: "decided", message: reason } } },
    });
    const resolved = await feed.next((f) => f.type === "resolved");
    expect(resolved).toMatchObject({ approval: { id: approval.id, message: reason } });

    const { details, row } = await written(owner.teamId, sessionId, approval.id);
    expect(row).toMatchObject({ state: "denied", message: reason });
    expect(details.at(-1)).toMatchObject({ optionId: "deny", message: reason });
    const history = await json<{ approvals: Approval[] }>(await api("/v1/history", { cookie: owner.cookie }));
    expect(history.approvals.find((a) => a.id === approval.id)).toMatchObject({ message: reason });
    feed.ws.close();
  });

  it("is optional, and refused over 500 characters", async () => {
    const { owner, agent, approval } = await askOnce();
    const long = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "deny", requestHash: approval.requestHash, reason: "x".repeat(501) }),
    });
    expect(long.status).toBe(400);
    expect(await json(long)).toMatchObject({ error: "invalid_request", message: expect.stringContaining("reason") });
    const plain = await decide(owner, approval, "deny");
    expect(await json(plain)).not.toHaveProperty("message");
    const answer = await agent.next<{ result: { _meta: { tapgate: object } } }>();
    expect(answer.result._meta.tapgate).not.toHaveProperty("message");
  });

  it("rides on each batch item", async () => {
    const owner = await signUp();
    const { agent, approvals } = await askMany(owner, 2);
    const [a, b] = approvals as [Approval, Approval];
    const { results } = await json<DecisionBatchAnswer>(
      await batch(owner, [item(a, "deny", { reason: "not on Fridays" }), item(b, "deny")]),
    );
    expect(results.map((r) => r.approval?.message)).toEqual(["not on Fridays", undefined]);
    const answers = [await agent.next(), await agent.next()];
    expect(answers).toContainEqual(
      expect.objectContaining({
        id: 1,
        result: expect.objectContaining({ _meta: { tapgate: expect.objectContaining({ message: "not on Fridays" }) } }),
      }),
    );
  });
});

describe("claiming: who is looking", () => {
  it("tells the team through the live feed, joins later see it, and a decision ends it without being blocked", async () => {
    const { owner, agent, approval } = await askOnce(await signUp("Olga"));
    const ada = await addMember(owner, "approver", "Ada");
    const feed = await openLive(owner);
    const before = Date.now();
    const claimed = await claim(ada, approval.id);
    expect(claimed.status).toBe(200);
    const body = await json<{ approvalId: string; by: object; until: number }>(claimed);
    expect(body).toMatchObject({ approvalId: approval.id, by: { userId: ada.userId, name: "Ada" } });
    expect(body.until).toBeGreaterThanOrEqual(before + CLAIM_MS);
    expect(await feed.next((f) => f.type === "claimed")).toEqual({ type: "claimed", ...body });

    const later = await openLive(owner);
    expect(await later.next((f) => f.type === "claimed")).toEqual({ type: "claimed", ...body });
    expect(await hubStub(owner.teamId).claimOf(approval.id)).toEqual(body);
    expect(await hubStub(owner.teamId).claimOf(approval.id, body.until)).toBeNull(); // lapsed after 2 minutes

    // Not a lock: the owner decides while Ada is looking.
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({ result: { outcome: { optionId: "allow" } } });
    await feed.next((f) => f.type === "resolved");
    expect(await hubStub(owner.teamId).claimOf(approval.id)).toBeNull();
    const afterwards = await claim(ada, approval.id);
    expect(afterwards.status).toBe(409);
    expect(await json(afterwards)).toMatchObject({ error: "already_decided", approval: { state: "allowed" } });
    feed.ws.close();
    later.ws.close();
  });

  it("refuses viewers (403) and answers another team's id like an unknown one (404)", async () => {
    const { owner, approval } = await askOnce();
    const viewer = await addMember(owner, "viewer");
    expect((await claim(viewer, approval.id)).status).toBe(403);
    const stranger = await signUp();
    const foreign = await claim(stranger, approval.id);
    expect(foreign.status).toBe(404);
    expect(await json(foreign)).toMatchObject({ error: "not_found" });
    expect((await claim(stranger, `apr_${"0".repeat(64)}_${"a".repeat(22)}`)).status).toBe(404);
    expect(await hubStub(owner.teamId).claimOf(approval.id)).toBeNull();
  });
});
