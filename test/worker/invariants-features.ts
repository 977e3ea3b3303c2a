/**
 * The property test's actions for the newer features, applied to the real Worker through a
 * `Run` (invariants-model.ts): high-risk requests allowed with a passkey step-up (software
 * authenticator) under the case's quorum, elicitations and their answers, batch decisions,
 * standing rules made from a card and ended, key revocation, and the escalation ladder climbed
 * by the gate's alarm. Each predicts only what the invariants (invariants-checks.ts) need.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import { expect, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { stepUpOptionsAnswerSchema } from "../../sdk/src/human/step-up";
import { SessionGate } from "../../worker/gate/session-gate";
import { api, createKey, gateStub, hubStub, json, type Member, permissionParams, unique } from "./helpers";
import type { Action } from "./invariants-actions";
import { ladderOf } from "./invariants-checks";
import {
  type Choice,
  decisionBody,
  expectedDecision,
  FORM,
  failClosed,
  type Modelled,
  pickFrom,
} from "./invariants-expect";
import type { Run } from "./invariants-model";
import type { Approver } from "./team-helpers";

export type FeatureAction = Extract<
  Action,
  {
    kind:
      | "riskyRequest"
      | "elicit"
      | "stepUpAllow"
      | "answer"
      | "batch"
      | "allowWithRule"
      | "endRule"
      | "revokeKey"
      | "escalate";
  }
>;

const FEATURES = new Set<Action["kind"]>([
  "riskyRequest",
  "elicit",
  "stepUpAllow",
  "answer",
  "batch",
  "allowWithRule",
  "endRule",
  "revokeKey",
  "escalate",
]);
export const isFeature = (a: Action): a is FeatureAction => FEATURES.has(a.kind);

/** Under the team's default `highRisk` patterns a force push is high-risk. */
const forcePush = () => ({
  toolCallId: unique("push"),
  title: "git push --force origin main",
  kind: "execute" as const,
  rawInput: { command: "git push --force origin main" },
});

const post = (member: Member, path: string, body: unknown) =>
  api(path, { method: "POST", cookie: member.cookie, body: JSON.stringify(body) });

export async function featureStep(run: Run, a: FeatureAction) {
  const who = "byColleague" in a && a.byColleague ? run.cast.colleague : run.owner;
  switch (a.kind) {
    case "riskyRequest": {
      const rpcId = run.nextId++;
      await run.socket.ask(rpcId, permissionParams(run.sessionId, { toolCall: forcePush() }));
      expect((await run.adopt(run.socket, rpcId)).risk).toBe("high");
      return;
    }
    case "elicit": {
      const rpcId = run.nextId++;
      const params = { sessionId: run.sessionId, mode: "form", message: "Which project name?", requestedSchema: FORM };
      await run.socket.send({ jsonrpc: "2.0", id: rpcId, method: "elicitation/create", params });
      expect((await run.adopt(run.socket, rpcId)).type).toBe("elicitation");
      return;
    }
    case "stepUpAllow":
      return stepUpAllow(run, a.pick, who);
    case "answer": {
      const item = pickFrom(
        run.items.filter((i) => i.type === "elicitation"),
        a.pick,
      );
      if (item) await run.decideAs(item, who, { action: a.action });
      return;
    }
    case "batch":
      return batch(run, a, who);
    case "allowWithRule": {
      const item = pickFrom(run.pending(), a.pick);
      if (!item) return;
      const decided = await run.decideAs(item, who, { optionId: "allow" }, { rule: true });
      if (!decided) return;
      expect(decided.createdRule).toBeDefined(); // it was pending: the allow made its rule
      run.rules.push({ id: decided.createdRule?.id as string, endedAt: null });
      return;
    }
    case "endRule": {
      const rule = pickFrom(run.rules, a.pick);
      if (!rule) return;
      const response = await api(`/v1/rules/${rule.id}`, { method: "DELETE", cookie: who.cookie });
      // The owner made it and may end it (again); to the colleague, an approver, it is someone else's.
      expect(response.status).toBe(who === run.owner ? 200 : 404);
      if (response.status === 200) rule.endedAt ??= run.tick;
      return;
    }
    case "revokeKey":
      return revokeKey(run, a);
    case "escalate": {
      const gate = gateStub(run.owner.teamId, run.sessionId);
      for (let i = 0; i < a.wakes; i++) await runDurableObjectAlarm(gate);
      // Nobody has a push device, so nothing the ladder fired reached anyone: every step is due at
      // once, up to the mail to the owner (the default ladder's last). The request stays pending.
      for (const item of run.pending()) {
        expect((await ladderOf(item.approval.id)).map((s) => s.via)).toContain("email");
      }
      return;
    }
  }
}

/** A high-risk allow with a fresh passkey assertion bound to this request and option. */
async function stepUpAllow(run: Run, pick: number, who: Approver) {
  const item = pickFrom(
    run.pending((i) => i.risk === "high"),
    pick,
  );
  if (!item) return;
  const options = await post(who, `/v1/approvals/${item.approval.id}/step-up`, { optionId: "allow" });
  if (item.partialAllows.includes(who.userId)) {
    // Under a quorum, a second allow must come from someone else.
    expect(options.status).toBe(409);
    expect(await json(options)).toMatchObject({ error: "second_approver_required" });
    return;
  }
  expect(options.status).toBe(200);
  const answer = stepUpOptionsAnswerSchema.parse(await json(options));
  const stepUp = await who.authenticator.assert(answer.options as unknown as PublicKeyCredentialRequestOptionsJSON);
  await run.decideAs(item, who, { optionId: "allow" }, { stepUp });
}

/** One batch: each item answered as its single decision would be, in order (a repeated id decides once). */
async function batch(run: Run, a: Extract<Action, { kind: "batch" }>, who: Member) {
  const items = a.picks.map((p) => pickFrom(run.items, p)).filter((i) => i !== undefined);
  if (items.length === 0) return;
  const choice: Choice = { optionId: a.option };
  const response = await post(who, "/v1/approvals/decisions", {
    decisions: items.map((item) => ({ approvalId: item.approval.id, ...decisionBody(item, choice) })),
  });
  expect(response.status).toBe(200);
  const { results } = await json<{ results: Array<{ status: number; approval?: Approval }> }>(response);
  expect(results).toHaveLength(items.length);
  for (const [i, item] of items.entries()) {
    const result = results[i] as { status: number; approval?: Approval };
    const expected = expectedDecision(item, who.userId, choice, { owner: run.owner.userId });
    expect(result.status).toBe(expected);
    if (expected === 200) run.decided(item, who.userId, choice, "web", result.approval as Approval);
  }
}

/**
 * The run's key is revoked: its pending requests end `denied` / `key_revoked` (the socket's
 * agent hears the fail-closed answer, then the socket closes 4001), the key is refused from then
 * on, and the agent goes on with a new key in the same session. When the session's gate fails
 * the hub's telling, its requests stay pending until a human's allow of one finds the key
 * withdrawn (`410 already_resolved`, every one of them ended) or the hub's alarm tells it again.
 */
async function revokeKey(run: Run, a: Extract<FeatureAction, { kind: "revokeKey" }>) {
  const { keyId, key } = run.cast;
  // The gate fails the first telling of this key only: the hub's alarm may be telling it of an
  // earlier key meanwhile (a revocation whose requests a human's allow ended first).
  const failing = a.gateFails ? gateFailsOnce(keyId) : null;
  const old = run.socket;
  const pending = run.pending((i) => i.keyId === keyId);
  try {
    const response = await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: run.owner.cookie });
    expect(response.status).toBe(200);
    run.revoked.set(keyId, run.tick);
    if (failing) {
      expect(await json(response)).toMatchObject({ unreachedSessions: 1 });
      await tellAgainOrAllow(run, pending, a.allowPick);
    }
  } finally {
    failing?.mockRestore();
  }
  for (const item of pending) run.resolve(item, "denied", "key_revoked", failClosed(item));
  expect((await old.closed).code).toBe(4001);
  await run.drain(old, false);
  const refused = await run.asAgent(
    `/v1/agent/sessions/${run.sessionId}/permissions`,
    { method: "POST", body: JSON.stringify(permissionParams(run.sessionId)) },
    key,
  );
  expect(refused.status).toBe(401);
  const fresh = await createKey(run.owner, "property");
  Object.assign(run.cast, { key: fresh.key, keyId: fresh.id });
  await run.connect();
}

/** Telling a gate of `keyId`'s revocation fails once; every other telling goes through. */
function gateFailsOnce(keyId: string) {
  const told = SessionGate.prototype.revokeKey;
  let failures = 1;
  return vi.spyOn(SessionGate.prototype, "revokeKey").mockImplementation(async function (
    this: SessionGate,
    teamId: string,
    revoked: string,
  ) {
    if (revoked !== keyId || failures === 0) return told.call(this, teamId, revoked);
    failures--;
    throw new Error("gate down");
  });
}

/** A human allows the picked request of a withdrawn key its gate was not told of, or the hub's alarm tells the gate. */
async function tellAgainOrAllow(run: Run, pending: Modelled[], allowPick: number | null) {
  const item = allowPick === null ? undefined : pickFrom(pending, allowPick);
  if (item) {
    const choice: Choice = item.type === "elicitation" ? { action: "accept" } : { optionId: "allow" };
    const allow = await post(run.owner, `/v1/approvals/${item.approval.id}/decision`, decisionBody(item, choice));
    expect(allow.status).toBe(410);
    expect(await json(allow)).toMatchObject({
      error: "already_resolved",
      approval: { state: "denied", reason: "key_revoked" },
    });
    return;
  }
  await runInDurableObject(hubStub(run.owner.teamId), (_hub, state) => {
    state.storage.sql.exec("UPDATE revocation_fanout SET next_at = ?", Date.now() - 1);
  });
  await runDurableObjectAlarm(hubStub(run.owner.teamId));
}
