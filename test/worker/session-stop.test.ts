/**
 * Stopping a session (`POST /v1/sessions/:id/stop`, `/resume`): every pending request of the
 * session denied at once (`session_stopped`, the stopper and their words in the agent's
 * `_meta.tapgate`), new requests refused on every path until a resume, kept through eviction in
 * the gate and D1, audited, shown live; who may stop and resume; a decision racing the stop.
 */
import { abortAllDurableObjects, env, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval, SessionStop } from "../../sdk/src/approval";
import type { StopAnswer } from "../../sdk/src/human/sessions";
import { RPC_ERROR } from "../../sdk/src/protocol";
import {
  type AgentSocket,
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  flush,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember, openLive } from "./team-helpers";

const stop = (m: Member, sessionId: string, body: object = {}) =>
  api(`/v1/sessions/${sessionId}/stop`, { method: "POST", cookie: m.cookie, body: JSON.stringify(body) });
const resume = (m: Member, sessionId: string) =>
  api(`/v1/sessions/${sessionId}/resume`, { method: "POST", cookie: m.cookie, body: "{}" });

const askOverHttp = (key: string, sessionId: string) =>
  SELF.fetch(`${ORIGIN}/v1/agent/sessions/${sessionId}/permissions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(permissionParams(sessionId)),
  });

type Answer = {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; data?: Record<string, unknown> };
};
const tapgateMeta = (a: Answer) => (a.result?._meta as { tapgate?: Record<string, unknown> } | undefined)?.tapgate;

/** The agent's answers to the ids asked, however they arrive. */
async function answers(agent: AgentSocket, count: number): Promise<Answer[]> {
  const got: Answer[] = [];
  while (got.length < count) got.push(await agent.next<Answer>());
  return got;
}

describe("stopping a session", () => {
  it("denies every pending request at once (permissions and an elicitation), each agent told who stopped it and why", async () => {
    const { owner, sessionId, agent } = await askOnce();
    await agent.ask(2, permissionParams(sessionId));
    const form = { type: "object", properties: { name: { type: "string" } } };
    await agent.send({
      jsonrpc: "2.0",
      id: "e1",
      method: "elicitation/create",
      params: { sessionId, mode: "form", message: "Name?", requestedSchema: form },
    });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(3);

    const stopped = await stop(owner, sessionId, { reason: "runaway loop" });
    expect(stopped.status).toBe(200);
    const body = await json<StopAnswer>(stopped);
    expect(body).toMatchObject({ sessionId, denied: 3, stopped: { by: { userId: owner.userId, name: "Ada" } } });
    expect(body.stopped?.reason).toBe("runaway loop");

    const got = await answers(agent, 3);
    expect(got.map((a) => a.id).sort()).toEqual([1, 2, "e1"].sort());
    for (const a of got) {
      expect(tapgateMeta(a)).toMatchObject({
        reason: "session_stopped",
        message: "runaway loop",
        decidedBy: { name: "Ada" },
      });
    }
    // A permission gets the agent's own reject option; the elicitation is cancelled (fail-closed).
    const permission = got.find((a) => a.id === 1);
    expect(permission?.result?.outcome).toEqual({ outcome: "selected", optionId: "deny" });
    expect(got.find((a) => a.id === "e1")?.result?.action).toBe("cancel");
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api(`/v1/sessions/${sessionId}`, { cookie: owner.cookie }),
    );
    expect(approvals.map((a) => [a.state, a.reason, a.message])).toEqual(
      Array(3).fill(["denied", "session_stopped", "runaway loop"]),
    );
  });

  it("refuses new requests until resumed: -32001 over the socket, 403 session_stopped over HTTP", async () => {
    const { owner, key, sessionId, agent } = await askOnce();
    expect((await stop(owner, sessionId, { reason: "lunch" })).status).toBe(200);
    await agent.next(); // the pending one, denied

    await agent.ask(7, permissionParams(sessionId));
    const refused = await agent.next<Answer>();
    expect(refused.id).toBe(7);
    expect(refused.error?.code).toBe(RPC_ERROR.tooManyPending);
    expect(refused.error?.data).toMatchObject({ reason: "session_stopped", stopped: { reason: "lunch" } });

    const overHttp = await askOverHttp(key, sessionId);
    expect(overHttp.status).toBe(403);
    expect(await json(overHttp)).toMatchObject({
      error: "session_stopped",
      message: "stopped by Ada: lunch",
      stopped: { by: { name: "Ada" }, reason: "lunch" },
    });
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);

    const resumed = await resume(owner, sessionId);
    expect(resumed.status).toBe(200);
    expect(await json(resumed)).toEqual({ sessionId, stopped: null, denied: 0 });
    expect((await askOverHttp(key, sessionId)).status).toBe(201);
    await agent.ask(8, permissionParams(sessionId));
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(2);
  });

  it("the Claude Code HTTP hook: the held request is denied saying who stopped it and why, the next one refused the same way", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude-stop");
    const hook = () =>
      SELF.fetch(`${ORIGIN}/v1/hooks/claude-code?timeout=600`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          session_id: sessionId,
          cwd: "/home/ada/demo",
          hook_event_name: "PreToolUse",
          tool_name: "Bash",
          tool_input: { command: "git push origin main" },
          tool_use_id: unique("toolu"),
        }),
      });
    const decision = async (res: Response) =>
      (await json<{ hookSpecificOutput: Record<string, string> }>(res)).hookSpecificOutput;
    const held = hook();
    await vi.waitFor(async () => expect(await pendingApprovals(owner, sessionId)).toHaveLength(1), {
      timeout: 10_000,
      interval: 20,
    });
    expect((await stop(owner, sessionId, { reason: "wrong branch" })).status).toBe(200);
    const denied = { permissionDecision: "deny", permissionDecisionReason: "Tapgate: stopped by Ada: wrong branch" };
    expect(await decision(await held)).toMatchObject(denied);
    expect(await decision(await hook())).toMatchObject(denied);
    expect(await pendingApprovals(owner, sessionId)).toHaveLength(0);
  });

  it("stays stopped when the gate is evicted, and D1's session row, the audit chain and the live feed show it", async () => {
    const { owner, key, sessionId, agent } = await askOnce();
    const live = await openLive(owner);
    expect((await stop(owner, sessionId, { reason: "checking the diff" })).status).toBe(200);
    await agent.next();
    const shown = await live.next(
      (f) => f.type === "session" && (f.session as { stopped?: SessionStop }).stopped?.reason === "checking the diff",
    );
    expect((shown.session as { sessionId: string }).sessionId).toBe(sessionId);

    await abortAllDurableObjects();
    const overHttp = await askOverHttp(key, sessionId);
    expect(overHttp.status).toBe(403);
    expect((await json(overHttp)).error).toBe("session_stopped");

    await flush(owner.teamId, sessionId);
    const { sessions } = await json<{ sessions: Array<{ sessionId: string; stopped?: SessionStop }> }>(
      await api("/v1/sessions", { cookie: owner.cookie }),
    );
    expect(sessions.find((s) => s.sessionId === sessionId)?.stopped).toMatchObject({
      by: { userId: owner.userId, name: "Ada" },
      reason: "checking the diff",
    });

    expect((await resume(owner, sessionId)).status).toBe(200);
    await flush(owner.teamId, sessionId);
    const detail = await json<{ stopped?: SessionStop }>(
      await api(`/v1/sessions/${sessionId}`, { cookie: owner.cookie }),
    );
    expect(detail.stopped).toBeUndefined();
    const { results } = await env.DB.prepare(
      "SELECT actor, action, subject, detail FROM audit_log WHERE team_id = ? AND action LIKE 'session.%' ORDER BY seq",
    )
      .bind(owner.teamId)
      .all<{ actor: string; action: string; subject: string; detail: string }>();
    expect(results.map((r) => [r.actor, r.action, r.subject])).toEqual([
      [`user:${owner.userId}`, "session.stopped", sessionId],
      [`user:${owner.userId}`, "session.resumed", sessionId],
    ]);
    expect(JSON.parse(results[0]?.detail ?? "{}")).toEqual({ reason: "checking the diff" });
  });

  it("lets deciders stop, and only the session's owner or an admin resume; another team's session is 404", async () => {
    const team = await signUp("Ada");
    const bob = await addMember(team, "approver", "Bob");
    const cy = await addMember(team, "approver", "Cy");
    const viewer = await addMember(team, "viewer", "Vi");
    const admin = await addMember(team, "admin", "Al");
    const { key } = await createKey(bob);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.barrier();

    expect(await json(await stop(viewer, sessionId))).toMatchObject({ error: "forbidden" });
    const byCy = await stop(cy, sessionId);
    expect(byCy.status).toBe(200);
    expect((await json<StopAnswer>(byCy)).stopped?.by.name).toBe("Cy");

    const notOwner = await resume(cy, sessionId);
    expect(notOwner.status).toBe(403);
    expect((await json(notOwner)).error).toBe("forbidden");
    expect((await resume(viewer, sessionId)).status).toBe(403);
    expect((await resume(bob, sessionId)).status).toBe(200);
    expect((await stop(bob, sessionId)).status).toBe(200);
    expect((await resume(admin, sessionId)).status).toBe(200);

    const other = await signUp("Eve");
    for (const answer of [await stop(other, sessionId), await resume(other, sessionId)]) {
      expect(answer.status).toBe(404);
      expect((await json(answer)).error).toBe("not_found");
    }
    expect((await stop(team, unique("never"))).status).toBe(404);
  });

  it("ends a request exactly once when a decision races the stop", async () => {
    const { owner, sessionId, agent, approval } = await askOnce();
    const [decided, stopped] = await Promise.all([decide(owner, approval, "allow"), stop(owner, sessionId)]);
    const stopBody = await json<StopAnswer>(stopped);
    const answer = await agent.next<Answer>();
    await agent.barrier();
    expect(agent.pending()).toBe(0); // one answer, never two
    if (decided.status === 200) {
      expect(stopBody.denied).toBe(0);
      expect(answer.result?.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    } else {
      expect(decided.status).toBe(410);
      expect(stopBody.denied).toBe(1);
      expect(tapgateMeta(answer)?.reason).toBe("session_stopped");
    }
    const final = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(final.state).toBe(decided.status === 200 ? "allowed" : "denied");
  });

  it("keeps the first stop when stopped twice, and a resume of a running session changes nothing", async () => {
    const { owner, sessionId, agent } = await askOnce();
    const bob = await addMember(owner, "approver", "Bob");
    expect((await resume(owner, sessionId)).status).toBe(200);
    const first = await json<StopAnswer>(await stop(owner, sessionId, { reason: "first" }));
    await agent.next();
    const again = await json<StopAnswer>(await stop(bob, sessionId, { reason: "second" }));
    expect(again.stopped).toEqual(first.stopped);
    expect(again.denied).toBe(0);
    await flush(owner.teamId, sessionId);
    const { n } = (await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM audit_log WHERE team_id = ? AND action IN ('session.stopped', 'session.resumed')",
    )
      .bind(owner.teamId)
      .first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(1);
  });
});
