/**
 * Private mode's proof, service side (issue 34): a private team's requests carry a canary string
 * in every content field, sent every way the service takes them (socket, long-poll, an
 * elicitation; unsealed over the socket, long-poll, the Claude hook route and MCP, all refused),
 * and nothing the service holds or emits contains it: D1, both Durable Objects' storage, the
 * Worker's logs, push payloads before encryption, live-feed frames, mail, webhook bodies. The
 * canary does travel, sealed: the device's key opens it. `test/sdk/private-canary.test.ts` sends
 * it through the SDK and every CLI way in.
 */
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { WEBHOOK_EVENTS } from "../../sdk/src/human/webhooks";
import { openSealed } from "../../sdk/src/private/envelope";
import { registerDeviceKey } from "./device-key-helpers";
import { fakePushService } from "./fake-push";
import {
  api,
  connectAgent,
  createKey,
  decide,
  flush,
  gateStub,
  hubStub,
  json,
  type Member,
  ORIGIN,
  outbox,
  settled,
  signUp,
  unique,
} from "./helpers";
import { CANARY, plaintextOf, sealedElicitation, sealedPermission } from "./private-helpers";
import { openLive, putPolicyConfirmed, withPasskey } from "./team-helpers";

const RECEIVER = "http://127.0.0.1:9798";
const SESSION_TITLE = "Release train";

afterEach(() => vi.restoreAllMocks());

/** Everything the Worker logs, as text. */
function captureLogs(): string[] {
  const lines: string[] = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
  }
  return lines;
}

/**
 * Webhook bodies reaching the loopback receiver. The fake push service already holds `fetch`'s
 * spy (one spy per function): its implementation takes every other request.
 */
function captureWebhooks(): string[] {
  const bodies: string[] = [];
  const spy = vi.mocked(globalThis.fetch);
  const pushService = spy.getMockImplementation();
  if (!pushService) throw new Error("install the fake push service first");
  spy.mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(RECEIVER)) return pushService(input, init);
    bodies.push(await request.text());
    return new Response(null, { status: 200 });
  });
  return bodies;
}

/** The API as `npm start`'s own machine calls it (local mode: a loopback webhook receiver is allowed). */
function localApi(path: string, member: Member, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("CF-Connecting-IP", "127.0.0.1");
  headers.set("Cookie", member.cookie);
  headers.set("Origin", "http://localhost:8787");
  headers.set("Content-Type", "application/json");
  return SELF.fetch(`http://localhost:8787${path}`, { ...init, headers });
}

/** The same request in the clear, as an agent that does not seal would send it. */
function clearParams(sessionId: string) {
  const { snapshot, options } = plaintextOf();
  return { sessionId, toolCall: snapshot.toolCall, options, _meta: snapshot.meta };
}

function asAgent(key: string, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  headers.set("Content-Type", "application/json");
  return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
}

/** Every row of every table of D1, as text. */
async function d1Text(): Promise<string> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
  ).all<{ name: string }>();
  const dumps: string[] = [];
  for (const { name } of results) {
    dumps.push(JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results));
  }
  return dumps.join("\n");
}

/** Every row of a Durable Object's SQLite tables and every key of its key-value storage, as text. */
function objectText(stub: DurableObjectStub): Promise<string> {
  return runInDurableObject(stub, async (_, state) => {
    const sql = state.storage.sql;
    const tables = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'")
      .toArray();
    const dumps = tables.map(({ name }) => JSON.stringify(sql.exec(`SELECT * FROM "${name}"`).toArray()));
    dumps.push(JSON.stringify([...(await state.storage.list()).entries()]));
    return dumps.join("\n");
  });
}

describe("a private team's requests, every way the service takes them", () => {
  it("leave no canary in anything the service holds or emits; the device opens it", async () => {
    const canary = CANARY;
    const logs = captureLogs();
    const push = fakePushService();
    const webhooks = captureWebhooks();

    const owner = await withPasskey(await signUp("Olga"));
    const escalation = [
      { afterMs: 0, to: "session_owner", via: "push" },
      { afterMs: 0, to: "session_owner", via: "email" },
    ];
    expect((await putPolicyConfirmed(owner, { privacy: "private", escalation })).status).toBe(200);
    await push.addPhone(owner);
    const device = await registerDeviceKey(owner);
    const hook = await localApi("/v1/webhooks", owner, {
      method: "POST",
      body: JSON.stringify({ url: `${RECEIVER}/${unique("hook")}`, events: [...WEBHOOK_EVENTS] }),
    });
    expect(hook.status).toBe(201);
    const live = await openLive(owner);
    const { key } = await createKey(owner);

    // Over the socket: a hello naming a directory, then the sealed request, and the same in the clear.
    const sessionId = unique("private");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      id: "h",
      method: "_tapgate/hello",
      params: { title: SESSION_TITLE, cwd: `/home/${canary}` },
    });
    expect(await agent.next()).toMatchObject({ id: "h", result: {} });
    await agent.ask(1, (await sealedPermission(sessionId, { to: [device] })).params);
    await agent.ask(2, clearParams(sessionId));
    await agent.send({
      jsonrpc: "2.0",
      id: 3,
      method: "elicitation/create",
      params: await sealedElicitation(sessionId, [device]),
    });
    const refused = await agent.next<{ id: number; error?: { data?: { reason?: string } } }>();
    expect(refused).toMatchObject({ id: 2, error: { data: { reason: "private_required" } } });

    // Over long-poll: sealed, and in the clear.
    const pollSession = unique("private-poll");
    const held = await asAgent(key, `/v1/agent/sessions/${pollSession}/permissions`, {
      method: "POST",
      body: JSON.stringify((await sealedPermission(pollSession, { to: [device] })).params),
    });
    expect(held.status).toBe(201);
    const clearPoll = await asAgent(key, `/v1/agent/sessions/${pollSession}/permissions`, {
      method: "POST",
      body: JSON.stringify(clearParams(pollSession)),
    });
    expect(clearPoll.status).toBeGreaterThanOrEqual(400);

    // The Claude Code hook route and MCP cannot seal: refused, a deny.
    const hookAnswer = await asAgent(key, "/v1/hooks/claude-code?timeout=600", {
      method: "POST",
      body: JSON.stringify({
        session_id: unique("private-hook"),
        transcript_path: `/home/${canary}/t.jsonl`,
        cwd: `/home/${canary}`,
        permission_mode: "default",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: `deploy --token ${canary}` },
        tool_use_id: unique("toolu"),
      }),
    });
    expect(JSON.stringify(await hookAnswer.json())).toContain('"deny"');

    // The socket's request reaches the person; they allow it with the hash they saw.
    await flush(owner.teamId, sessionId);
    const { approvals } = await json<{ approvals: Approval[] }>(
      await api("/v1/approvals?state=pending", { cookie: owner.cookie }),
    );
    const ofSession = approvals.filter((a) => a.sessionId === sessionId);
    expect(ofSession.map((a) => a.type ?? "permission").sort()).toEqual(["elicitation", "permission"]);
    const approval = ofSession.find((a) => a.type !== "elicitation") as Approval;
    expect(approval.sealed).toBeDefined();
    for (const a of ofSession) {
      const opened = await openSealed(a.sealed as NonNullable<Approval["sealed"]>, a.requestHash, device);
      expect({ type: a.type, opened: opened.ok ? "ok" : opened.reason }).toEqual({ type: a.type, opened: "ok" });
      expect(opened.ok && JSON.stringify(opened.plaintext)).toContain(canary);
    }
    await runDurableObjectAlarm(hubStub(owner.teamId));
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
    expect((await settled(owner, approval.id)).state).toBe("allowed");

    // Everything lands: the outbox in D1, the audit chain, webhooks.
    await flush(owner.teamId, sessionId);
    await flush(owner.teamId, pollSession);
    await runDurableObjectAlarm(hubStub(owner.teamId));
    await runInDurableObject(hubStub(owner.teamId), (hub) => hub.wake(Date.now()));
    await vi.waitFor(() => expect(push.pushes.length).toBeGreaterThan(0));
    await vi.waitFor(() => expect(webhooks.length).toBeGreaterThan(0));
    const mail = await (await outbox(owner.email)).text();

    const seen = {
      d1: await d1Text(),
      gate: await objectText(gateStub(owner.teamId, sessionId)),
      pollGate: await objectText(gateStub(owner.teamId, pollSession)),
      hub: await objectText(hubStub(owner.teamId) as unknown as DurableObjectStub),
      logs: logs.join("\n"),
      pushes: JSON.stringify(push.pushes.map((p) => p.payload)),
      live: JSON.stringify(live.frames),
      mail,
      webhooks: webhooks.join("\n"),
    };
    // What the service may see does reach each place (the scan reads real text)...
    expect(seen.d1).toContain(approval.id);
    expect(seen.gate).toContain(approval.requestHash);
    expect(seen.pushes).toContain(approval.id);
    expect(seen.mail).toContain(approval.id);
    expect(seen.webhooks).toContain(approval.requestHash);
    // ...and the content never does.
    for (const [place, text] of Object.entries(seen))
      expect({ place, leaks: text.includes(canary) }).toEqual({ place, leaks: false });
  }, 60_000);
});
