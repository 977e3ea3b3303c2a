/**
 * A decider dismisses a permission card (`POST /v1/approvals/:id/decision {dismiss: true,
 * requestHash}`): the request ends `cancelled`/`dismissed` exactly once, and every way in hears
 * ACP's `cancelled` or a deny (docs/agent-protocol.md "Dismissed"): the socket (v1 and v2
 * requests), the HTTP long poll, the Claude Code HTTP hook and the MCP `approve` tool. A
 * dismissal racing an allow: one wins. Recorded like a decision: D1, the audit chain, the live feed.
 */
import { env, SELF } from "cloudflare:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import {
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

const dismiss = (member: Member, approval: Approval, body: Record<string, unknown> = {}) =>
  api(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ dismiss: true, requestHash: approval.requestHash, ...body }),
  });

const asAgent = (key: string, path: string, init: RequestInit = {}) =>
  SELF.fetch(`${ORIGIN}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
  });

/** The session's one pending approval, once the gate holds it. */
async function oneOf(owner: Member, sessionId: string): Promise<Approval> {
  return vi.waitFor(
    async () => {
      const [approval] = await pendingApprovals(owner, sessionId);
      if (!approval) throw new Error("not held yet");
      return approval;
    },
    { timeout: 10_000, interval: 20 },
  );
}

describe("dismissing a permission card", () => {
  it("answers the socket agent cancelled, once; records cancelled/dismissed in D1, the audit chain and the live feed", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const live = await openLive(owner);
    const res = await dismiss(owner, approval, { reason: "not now" });
    expect(res.status).toBe(200);
    const dismissed = await json<Approval>(res);
    expect(dismissed).toMatchObject({
      state: "cancelled",
      reason: "dismissed",
      optionId: null,
      message: "not now",
      decidedBy: { userId: owner.userId, name: "Ada" },
    });
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: {
        outcome: { outcome: "cancelled" },
        _meta: {
          tapgate: { approvalId: approval.id, reason: "dismissed", decidedBy: { name: "Ada" }, message: "not now" },
        },
      },
    });

    // The same person dismissing again gets the stored result; an allow after it is 409.
    const again = await dismiss(owner, approval, { reason: "not now" });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(dismissed);
    const late = await decide(owner, approval, "allow");
    expect(late.status).toBe(409);
    expect(await json(late)).toMatchObject({ error: "already_decided", approval: { state: "cancelled" } });
    await agent.barrier();
    expect(agent.pending()).toBe(0);

    const shown = await live.next(
      (f) => f.type === "resolved" && (f.approval as Approval | undefined)?.id === approval.id,
    );
    expect(shown.approval).toMatchObject({ state: "cancelled", reason: "dismissed" });

    await flush(owner.teamId, sessionId);
    const audit = await env.DB.prepare(
      "SELECT action, actor, detail FROM audit_log WHERE subject = ? AND action <> 'approval.escalated' ORDER BY seq",
    )
      .bind(approval.id)
      .all<{ action: string; actor: string; detail: string }>();
    expect(audit.results.map((r) => [r.action, r.actor])).toEqual([
      ["approval.requested", expect.stringMatching(/^key:/)],
      ["approval.cancelled", `user:${owner.userId}`],
    ]);
    expect(JSON.parse(audit.results[1]?.detail ?? "{}")).toMatchObject({ state: "cancelled", reason: "dismissed" });
    const history = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(history).toMatchObject({ state: "cancelled", reason: "dismissed", decidedBy: { userId: owner.userId } });
  });

  it("answers an ACP v2 request cancelled as well", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("v2");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(7, {
      sessionId,
      title: "Run the migration?",
      subject: { type: "command", command: "npm run migrate", cwd: "/srv/app" },
      options: [
        { optionId: "go", name: "Run it", kind: "allow_once" },
        { optionId: "stop", name: "Don't", kind: "reject_once" },
      ],
    });
    const approval = await oneOf(owner, sessionId);
    // An option the request never offered is refused and answers nothing; the dismissal then ends it.
    const unoffered = await decide(owner, approval, "allow");
    expect(unoffered.status).toBe(400);
    expect(await json(unoffered)).toMatchObject({ error: "option_not_offered" });
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    expect((await dismiss(owner, approval)).status).toBe(200);
    expect(await agent.next()).toMatchObject({ id: 7, result: { outcome: { outcome: "cancelled" } } });
  });

  it("answers the HTTP long poll cancelled", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("http");
    const asked = await asAgent(key, `/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      body: JSON.stringify(permissionParams(sessionId)),
    });
    expect(asked.status).toBe(201);
    const { approvalId } = await json<{ approvalId: string }>(asked);
    const approval = await oneOf(owner, sessionId);
    const held = asAgent(key, `/v1/agent/approvals/${approvalId}?wait=30`);
    expect((await dismiss(owner, approval)).status).toBe(200);
    expect(await json(await held)).toMatchObject({
      approvalId,
      state: "cancelled",
      reason: "dismissed",
      outcome: { outcome: "cancelled" },
    });
  });

  it("the Claude Code HTTP hook answers deny, saying who dismissed it", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude");
    const held = SELF.fetch(`${ORIGIN}/v1/hooks/claude-code?timeout=600`, {
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
    expect((await dismiss(owner, await oneOf(owner, sessionId))).status).toBe(200);
    expect((await json<{ hookSpecificOutput: Record<string, string> }>(await held)).hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: "dismissed on Tapgate by Ada (web), not allowed",
    });
  });

  it("the MCP approve tool answers deny", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const transport = new StreamableHTTPClientTransport(new URL(`${ORIGIN}/v1/mcp`), {
      fetch: (url, init) => SELF.fetch(url, init),
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    const client = new Client({ name: "test-client", version: "1.0.0" });
    await client.connect(transport);
    const sessionId = transport.sessionId ?? "";
    const call = client.callTool({
      name: "approve",
      arguments: { tool_name: "Bash", input: { command: "git push origin main" } },
    });
    expect((await dismiss(owner, await oneOf(owner, sessionId))).status).toBe(200);
    const [block] = (await call).content as Array<{ text: string }>;
    expect(JSON.parse(block?.text ?? "")).toEqual({
      behavior: "deny",
      message: "dismissed on Tapgate by Ada (web), not allowed",
    });
    await client.close();
  });

  it("a dismissal racing an allow: exactly one wins, and the agent gets only the winner's answer", async () => {
    const { owner, agent, approval } = await askOnce();
    const colleague = await addMember(owner, "approver", "Bob");
    const [dismissal, allow] = await Promise.all([dismiss(owner, approval), decide(colleague, approval, "allow")]);
    const statuses = [dismissal.status, allow.status].sort();
    expect(statuses).toEqual([200, 409]);
    const loser = dismissal.status === 409 ? dismissal : allow;
    expect(await json(loser)).toMatchObject({ error: "already_decided" });
    const answer = await agent.next<{ result: { outcome: Record<string, unknown> } }>();
    expect(answer.result.outcome).toEqual(
      dismissal.status === 200 ? { outcome: "cancelled" } : { outcome: "selected", optionId: "allow" },
    );
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    const record = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(record.state).toBe(dismissal.status === 200 ? "cancelled" : "allowed");
  });

  it("refuses a dismissal with an option, a stale hash, or from a viewer; nothing ends", async () => {
    const { owner, agent, approval } = await askOnce();
    const withOption = await dismiss(owner, approval, { optionId: "allow" });
    expect(withOption.status).toBe(400);
    expect(await json(withOption)).toMatchObject({ error: "invalid_request" });
    const stale = await dismiss(owner, approval, { requestHash: "0".repeat(64) });
    expect(stale.status).toBe(409);
    expect(await json(stale)).toMatchObject({ error: "request_changed" });
    const viewer = await addMember(owner, "viewer", "Vic");
    expect((await dismiss(viewer, approval)).status).toBe(403);
    await agent.barrier();
    expect(agent.pending()).toBe(0);
    const still = await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(still.state).toBe("pending");
  });
});
