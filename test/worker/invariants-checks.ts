/**
 * The invariants the property test checks after every step of a `Run` (invariants-model.ts), and
 * once more over the routes at the end of a case: docs/state-machine.md ("Invariants") against
 * the gate's own answers and the agent's, plus what the newer features promise (a rule's end,
 * a key's revocation, the quorum, the escalation ladder) and that D1 and the audit chain
 * converge with the gate once faults lift. Owns no actions.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import type { Approval, ApprovalDetail } from "../../sdk/src/approval";
import { type AgentSocket, api, flush, gateStub, json } from "./helpers";
import type { Answer, Modelled } from "./invariants-expect";
import type { Run } from "./invariants-model";

type Observed = { read: Approval; polled: { status: number; body: unknown } | null };
type Received = Answer & { _meta?: unknown };

/** Each approval as the human API shows it, and for HTTP-held ones what the agent's poll answers. */
function observeOverApi(run: Run): Promise<Observed[]> {
  return Promise.all(
    run.items.map(async (item) => {
      const path = `/v1/approvals/${item.approval.id}`;
      const {
        owner: _o,
        delivery: _d,
        escalations: _e,
        ...read
      } = await json<ApprovalDetail>(await api(path, { cookie: run.owner.cookie }));
      const polled = item.socket === null ? await run.poll(item) : null;
      return { read, polled: polled && { status: polled.status, body: await polled.json() } };
    }),
  );
}

/** The same, asked of the gate directly (the routes are thin; one call instead of two per item). */
function observeInGate(run: Run): Promise<Observed[]> {
  const { teamId, userId } = run.owner;
  const caller = { teamId, userId, keyId: run.cast.keyId };
  return runInDurableObject(gateStub(teamId, run.sessionId), (gate) =>
    Promise.all(
      run.items.map(async ({ approval: { id }, socket }) => {
        const read = (await gate.getApproval(teamId, id)) as Approval;
        const polled = socket === null ? await gate.poll(caller, id, 0) : null;
        if (!polled) return { read, polled };
        if (!polled.ok) return { read, polled: { status: 404, body: polled } };
        return { read, polled: { status: polled.body.state === "pending" ? 202 : 200, body: polled.body } };
      }),
    ),
  );
}

/**
 * The invariants, checked against the gate's own answers: asked of the gate after every step,
 * over the routes at the end of a case.
 */
export async function check(run: Run, overApi = false) {
  await run.drain(run.socket, true);
  const observed = await (overApi ? observeOverApi(run) : observeInGate(run));
  for (const [i, item] of run.items.entries()) {
    const { read, polled } = observed[i] as Observed;
    // 1. exactly one terminal state, the one the model expects; at most one answer to the agent
    expect({ state: read.state, reason: read.reason }).toEqual({ state: item.state, reason: item.reason });
    if (item.decided) expect(read).toEqual(item.decided); // the gate keeps the first decision's result
    const received = item.socket ? socketAnswers(run, item) : [];
    if (polled && item.state === "pending") expect(polled.status).toBe(202);
    else if (polled) {
      expect(polled.status).toBe(200);
      run.expectFinal(item, polled.body);
      received.push(polled.body as Received);
    }
    // 2 and 3. allowed only by a human's allow, or a live rule; nothing fails open
    if (read.state === "allowed") expectAllowedRightly(run, item, read);
    for (const answer of received) {
      const chosen = (answer.outcome as { optionId?: string } | undefined)?.optionId;
      if (chosen === "allow" || answer.action === "accept") expect(read.state).toBe("allowed");
      expect(chosen).not.toBe("always");
    }
  }
  await checkWritten(run, observed);
}

/**
 * An allow stands only where docs/state-machine.md says one may: a human's allow (a high-risk
 * one by `quorum` different people), or a rule of this team that was live when the request
 * came (nothing is allowed by a rule after its end was answered); and never by a key after its
 * revocation was answered.
 */
function expectAllowedRightly(run: Run, item: Modelled, read: Approval) {
  expect(item.allowedAt).not.toBeNull();
  const revokedAt = run.revoked.get(item.keyId);
  if (revokedAt !== undefined) expect(item.allowedAt).toBeLessThan(revokedAt);
  if (read.reason === "rule") {
    const rule = run.rules.find((r) => r.id === read.rule?.id);
    expect(rule).toBeDefined();
    if (rule?.endedAt != null) expect(item.askedAt).toBeLessThan(rule.endedAt);
    expect(item.risk).toBe("normal");
    return;
  }
  expect(read.reason).toBe("decided");
  if (item.type === "elicitation") expect(read.action).toBe("accept");
  else expect(read.optionId).toBe("allow");
  if (item.risk === "normal") return;
  const allowers = read.quorum ? read.quorum.allowedBy.map((p) => p.userId) : [read.decidedBy?.userId];
  expect(new Set(allowers).size).toBe(item.quorum);
}

/** What a socket-held request's agent received: nothing while pending, its one answer after. */
function socketAnswers(run: Run, item: Modelled): Received[] {
  const received = (run.answers.get(item.socket as AgentSocket)?.get(item.rpcId) ?? []) as Received[];
  expect(received.length).toBeLessThanOrEqual(1);
  if (item.state === "pending") expect(received).toEqual([]);
  else if (item.answer !== null) {
    expect(received).toHaveLength(1);
    const [{ _meta, ...answer }] = received as [Received];
    expect(answer).toEqual(item.answer);
    // ACP `_meta` on the result: which approval, and why it ended.
    expect(_meta).toMatchObject({ tapgate: { approvalId: item.approval.id, reason: item.reason } });
  }
  return [...received];
}

type AuditRow = { subject: string; action: string; actor: string; at: number; detail: string };

/**
 * Once the outbox is flushed, D1 agrees with the gate (state, reason, option, action, rule), and
 * the audit log holds exactly one `approval.requested` by the key that asked, one
 * `approval.allow_recorded` per allow short of a quorum, and at most one resolution per request,
 * by who ended it: a repeated decision adds no event. The escalation ladder's steps are each
 * recorded once, and none after the request ended.
 */
async function checkWritten(run: Run, observed: Observed[]) {
  if (run.items.length === 0) return;
  await flush(run.owner.teamId, run.sessionId);
  const ids = run.items.map((i) => i.approval.id);
  const marks = ids.map(() => "?").join(", ");
  const [index, audit] = await env.DB.batch<Record<string, unknown>>([
    env.DB.prepare(`SELECT id, state, reason, option_id, action, rule_id FROM approvals WHERE id IN (${marks})`).bind(
      ...ids,
    ),
    env.DB.prepare(
      `SELECT subject, action, actor, at, detail FROM audit_log WHERE subject IN (${marks}) ORDER BY seq`,
    ).bind(...ids),
  ]);
  for (const [i, item] of run.items.entries()) {
    const { read } = observed[i] as Observed;
    const row = index?.results.find((r) => r.id === item.approval.id);
    expect(row).toEqual({
      id: item.approval.id,
      state: item.state,
      reason: item.reason,
      option_id: read.optionId,
      action: read.action ?? null,
      rule_id: read.rule?.id ?? null,
    });
    const events = ((audit?.results ?? []) as AuditRow[]).filter((r) => r.subject === item.approval.id);
    const ended = item.state === "pending" ? [] : [{ action: `approval.${item.state}`, actor: endedBy(item, read) }];
    expect(
      events.filter((e) => e.action !== "approval.escalated").map(({ action, actor }) => ({ action, actor })),
    ).toEqual([
      { action: "approval.requested", actor: `key:${item.keyId}` },
      ...item.partialAllows.map((userId) => ({ action: "approval.allow_recorded", actor: `user:${userId}` })),
      ...ended,
    ]);
    expectLadder(events, read);
  }
}

/** The escalation ladder: each (step, phase) once, by the system, and none after the request ended. */
function expectLadder(events: AuditRow[], read: Approval) {
  const steps = events.filter((e) => e.action === "approval.escalated");
  const keys = steps.map((e) => {
    const { step, phase } = JSON.parse(e.detail) as { step: number; phase: string };
    return `${step}/${phase}`;
  });
  expect(new Set(keys).size).toBe(keys.length);
  for (const e of steps) {
    expect(e.actor).toBe("system");
    if (read.resolvedAt !== null) expect(e.at).toBeLessThanOrEqual(read.resolvedAt);
  }
}

/** The steps of the ladder recorded for a request so far (the mail step ends the default ladder). */
export async function ladderOf(approvalId: string) {
  const { results } = await env.DB.prepare(
    "SELECT detail FROM audit_log WHERE subject = ? AND action = 'approval.escalated' ORDER BY seq",
  )
    .bind(approvalId)
    .all<{ detail: string }>();
  return results.map((r) => JSON.parse(r.detail) as { step: number; phase: string; via: string });
}

const endedBy = (item: Modelled, read: Approval) =>
  item.decided?.decidedBy ? `user:${item.decided.decidedBy.userId}` : read.rule ? `rule:${read.rule.id}` : "system";

/** Once the faults lifted and the case ended: the team's audit chain verifies link by link. */
export async function checkChain(run: Run) {
  const verdict = await json(await api("/v1/audit/verify", { cookie: run.owner.cookie }));
  expect(verdict).toMatchObject({ ok: true });
}
