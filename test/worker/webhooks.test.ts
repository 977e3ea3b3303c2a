/**
 * Signed webhooks end to end, in workerd with real D1: the routes, the queue the chain's writer
 * fills in its own batch, delivery from the hub's alarm, signatures checked by the
 * `standardwebhooks` package's own verifier. The receiver is the one part outside the machine,
 * so it is faked at `fetch` for its loopback URL (as `slow-mail.test.ts` fakes a provider).
 */
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  type Webhook as Endpoint,
  type WebhookPayload,
  type WebhookSecret,
  webhookListSchema,
  webhookPayloadSchema,
  webhookSecretSchema,
} from "../../sdk/src/human/webhooks";
import type { AuditEvent } from "../../worker/audit-chain";
import { sweepWebhooks } from "../../worker/team/webhooks";
import type { Env } from "../../worker/types";
import { api, askOnce, decide, flush, hubStub, json, type Member, signUp, unique } from "./helpers";
import { addMember } from "./team-helpers";

const RECEIVER = "http://127.0.0.1:9797";

interface Received {
  path: string;
  id: string;
  body: string;
  headers: Record<string, string>;
}

/** An answer a receiver never gives: the request waits until the sender gives up (its signal aborts). */
const NEVER = 0;

/**
 * The receiver: what reached each path, and what a path answers next (200 unless told; NEVER:
 * no answer). Each test's endpoint has a path of its own: hubs of earlier tests may still deliver.
 */
function fakeReceiver() {
  const received: Received[] = [];
  const answers = new Map<string, number[]>();
  const others: string[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(RECEIVER)) {
      others.push(request.url);
      return realFetch(input, init);
    }
    expect(request.redirect).toBe("manual");
    const path = new URL(request.url).pathname;
    received.push({
      path,
      id: request.headers.get("webhook-id") ?? "",
      body: await request.text(),
      headers: Object.fromEntries(request.headers),
    });
    const status = answers.get(path)?.shift() ?? 200;
    if (status !== NEVER) return new Response(null, { status });
    return new Promise<Response>((_, reject) => {
      const signal = init?.signal;
      signal?.addEventListener("abort", () => reject(signal.reason));
    });
  });
  return {
    at: (path: string) => received.filter((r) => r.path === path),
    answer: (path: string, ...statuses: number[]) => answers.set(path, statuses),
    others,
  };
}

/**
 * The sender's timeouts (`AbortSignal.timeout`): how long each asked for; each runs out at once
 * instead (a 10 s wait would only slow the test down).
 */
function shortTimeouts(): number[] {
  const asked: number[] = [];
  const timeout = AbortSignal.timeout.bind(AbortSignal);
  vi.spyOn(AbortSignal, "timeout").mockImplementation((ms) => {
    asked.push(ms);
    return timeout(1);
  });
  return asked;
}

let receiver: ReturnType<typeof fakeReceiver>;
beforeEach(() => {
  receiver = fakeReceiver();
});
afterEach(() => vi.restoreAllMocks());

/** The API as `npm start`'s own machine calls it: a loopback client on a loopback host (local mode). */
function localApi(path: string, member: Member, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("CF-Connecting-IP", "127.0.0.1");
  headers.set("Cookie", member.cookie);
  headers.set("Origin", "http://localhost:8787");
  headers.set("Content-Type", "application/json");
  return SELF.fetch(`http://localhost:8787${path}`, { ...init, headers });
}

/** Makes an endpoint in local mode, at a path of its own; `path` is where its deliveries arrive. */
async function addWebhook(member: Member, events: string[]): Promise<WebhookSecret & { path: string }> {
  const path = `/${unique("hook")}`;
  const response = await localApi("/v1/webhooks", member, {
    method: "POST",
    body: JSON.stringify({ url: `${RECEIVER}${path}`, events }),
  });
  expect(response.status).toBe(201);
  return { ...webhookSecretSchema.parse(await response.json()), path };
}

async function endpoints(member: Member): Promise<Endpoint[]> {
  const response = await api("/v1/webhooks", { cookie: member.cookie });
  expect(response.status).toBe(200);
  return webhookListSchema.parse(await response.json()).webhooks;
}

/**
 * The hub's alarm work at `now` (`wake`, as `alarm()` runs it): every message due then is tried.
 * Sends run one at a time, so this also waits for an alarm that fired by itself.
 */
async function alarmAt(teamId: string, now = Date.now()): Promise<void> {
  await runDurableObjectAlarm(hubStub(teamId));
  await runInDurableObject(hubStub(teamId), (hub) => hub.wake(now));
}

function verified(secret: string, r: Received): WebhookPayload {
  return webhookPayloadSchema.parse(new Webhook(secret).verify(r.body, r.headers));
}

const testEvent = (teamId: string, n: number): AuditEvent => ({
  eventId: unique(`evt${n}`),
  teamId,
  at: Date.now(),
  actor: "system",
  action: "test.event",
  subject: teamId,
  detail: { n },
});

/** Runs the alarm's work until `path` got `count` deliveries (a gate reports to its hub in the background). */
async function deliveredTo(teamId: string, path: string, count: number): Promise<Received[]> {
  return vi.waitFor(
    async () => {
      await alarmAt(teamId);
      const got = receiver.at(path);
      if (got.length < count) throw new Error(`${got.length} of ${count} delivered`);
      return got;
    },
    { timeout: 5_000, interval: 20 },
  );
}

describe("delivery", () => {
  it("sends an approval's events signed per Standard Webhooks, each checked by the package's verifier", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["approval.requested", "approval.resolved"]);
    const { approval, sessionId, agent } = await askOnce(owner);
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await agent.next();
    await flush(owner.teamId, sessionId);
    const got = await deliveredTo(owner.teamId, hook.path, 2);

    const payloads = got.map((r) => verified(hook.secret, r));
    expect(payloads.map((p) => p.type)).toEqual(["approval.requested", "approval.resolved"]);
    expect(payloads.map((p) => p.data.subject)).toEqual([approval.id, approval.id]);
    expect(payloads[1]?.data.action).toBe("approval.allowed");
    expect(got[0]?.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    expect(got[0]?.id).toBe(`${approval.id}:approval.requested/approval.requested`);
    // Another key verifies nothing.
    const other = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    expect(() => new Webhook(other).verify(got[0]?.body ?? "", got[0]?.headers ?? {})).toThrow();
    // Each delivery is listed as delivered, newest first, and no secret is.
    const [listed] = await endpoints(owner);
    expect(listed?.deliveries.map((d) => [d.type, d.state, d.attempts, d.lastStatus])).toEqual([
      ["approval.resolved", "delivered", 1, 200],
      ["approval.requested", "delivered", 1, 200],
    ]);
    expect(JSON.stringify(listed)).not.toContain(hook.secret.slice(6));
  });

  it("sends member.changed for a role change and a removal, and nothing it was not asked for", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["member.changed"]);
    const bo = await addMember(owner, "approver", "Bo");
    const patched = await api(`/v1/members/${bo.userId}`, {
      method: "PATCH",
      cookie: owner.cookie,
      body: JSON.stringify({ role: "viewer" }),
    });
    expect(patched.status).toBe(200);
    expect((await api(`/v1/members/${bo.userId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    const { approval, sessionId, agent } = await askOnce(owner);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await agent.next();
    await flush(owner.teamId, sessionId);
    const payloads = (await deliveredTo(owner.teamId, hook.path, 2)).map((r) => verified(hook.secret, r));
    expect(payloads.map((p) => [p.type, p.data.action, p.data.subject])).toEqual([
      ["member.changed", "member.role_changed", bo.userId],
      ["member.changed", "member.removed", bo.userId],
    ]);
  });

  it("streams every audit entry with its chain hash, as GET /v1/audit has it, in chain order", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    const { approval, sessionId, agent } = await askOnce(owner);
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await agent.next();
    await flush(owner.teamId, sessionId);
    const { entries } = await json<{ entries: Array<{ seq: number; hash: string; action: string }> }>(
      await api("/v1/audit?limit=500", { cookie: owner.cookie }),
    );
    const created = entries.find((e) => e.action === "webhook.created");
    const since = entries.filter((e) => e.seq >= (created?.seq ?? 0)).reverse();
    const streamed = (await deliveredTo(owner.teamId, hook.path, since.length)).map(
      (r) => verified(hook.secret, r).data,
    );

    expect(streamed.map((d) => [d.seq, d.action, d.hash])).toEqual(since.map((e) => [e.seq, e.action, e.hash]));
    expect(streamed.map((d) => d.action)).toEqual(
      expect.arrayContaining(["webhook.created", "key.created", "approval.requested", "approval.denied"]),
    );
    // Linked: each entry's prevHash is the hash before it.
    for (let i = 1; i < streamed.length; i++) expect(streamed[i]?.prevHash).toBe(streamed[i - 1]?.hash);
  });

  it("keeps order per endpoint: a later event waits behind one the receiver refused, until its retry lands", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1); // webhook.created
    receiver.answer(hook.path, 500);
    const events = [1, 2, 3].map((n) => testEvent(owner.teamId, n));
    await hubStub(owner.teamId).appendAudit(events);
    await alarmAt(owner.teamId);

    // One try, refused; nothing behind it went.
    const eventIds = () =>
      receiver
        .at(hook.path)
        .slice(1)
        .map((r) => verified(hook.secret, r).data.eventId);
    expect(eventIds()).toEqual([events[0]?.eventId]);
    const pending = (await endpoints(owner))[0]?.deliveries.filter((d) => d.state === "pending") ?? [];
    expect(pending).toHaveLength(3);
    const waiting = pending.at(-1); // the oldest: the list is newest first
    expect(waiting).toMatchObject({ attempts: 1, lastStatus: 500, lastError: "status 500" });
    expect(waiting?.nextAt).toBeGreaterThan(Date.now());

    // The alarm on a clock past the retry time: the first again, then the rest, in order.
    await alarmAt(owner.teamId, (waiting?.nextAt ?? 0) + 1_000);
    expect(eventIds()).toEqual([events[0], events[0], events[1], events[2]].map((e) => e?.eventId));
    // The retry is the same message: the same webhook-id, so a receiver drops a repeat.
    const [, firstTry, retry] = receiver.at(hook.path);
    expect(retry?.id).toBe(firstTry?.id);
    const listed = (await endpoints(owner))[0]?.deliveries ?? [];
    expect(listed.slice(0, 3).map((d) => [d.state, d.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
      ["delivered", 2],
    ]);
  });

  it("gives a message up 24 h after its event, and the next one goes", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1);
    receiver.answer(hook.path, 503, 503);
    const events = [1, 2].map((n) => testEvent(owner.teamId, n));
    await hubStub(owner.teamId).appendAudit(events);
    await alarmAt(owner.teamId);
    await alarmAt(owner.teamId, Date.now() + 25 * 3_600_000);

    const eventIds = receiver
      .at(hook.path)
      .slice(1)
      .map((r) => verified(hook.secret, r).data.eventId);
    expect(eventIds).toEqual([events[0], events[0], events[1]].map((e) => e?.eventId));
    const listed = (await endpoints(owner))[0]?.deliveries ?? [];
    expect(listed.slice(0, 2).map((d) => [d.state, d.attempts, d.lastError])).toEqual([
      ["delivered", 1, null],
      ["failed", 2, "status 503"],
    ]);
  });

  it("a receiver that never answers: the try gives up after 10 s, and the message waits for its retry", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1);
    receiver.answer(hook.path, NEVER);
    const timeouts = shortTimeouts();
    await hubStub(owner.teamId).appendAudit([testEvent(owner.teamId, 1)]);
    await alarmAt(owner.teamId);
    expect(receiver.at(hook.path)).toHaveLength(2);
    // (Other tests' hubs may still be sending: only this one's ask is known.)
    expect(timeouts).toContain(10_000);
    const [waiting] = (await endpoints(owner))[0]?.deliveries ?? [];
    expect(waiting).toMatchObject({ state: "pending", attempts: 1, lastStatus: null, lastError: "timeout after 10 s" });
    expect(waiting?.nextAt).toBeGreaterThan(Date.now());
  });

  it("a 3xx is a failure, never followed", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1);
    receiver.answer(hook.path, 307);
    await hubStub(owner.teamId).appendAudit([testEvent(owner.teamId, 1)]);
    await alarmAt(owner.teamId);
    expect((await endpoints(owner))[0]?.deliveries[0]).toMatchObject({
      state: "pending",
      lastStatus: 307,
      lastError: "redirect 307 (not followed)",
    });
  });

  it("checks the URL again at send: a row that now points at a private address is never fetched", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1);
    await env.DB.prepare("UPDATE webhook_endpoints SET url = 'https://10.0.0.7/hook' WHERE id = ?").bind(hook.id).run();
    await hubStub(owner.teamId).appendAudit([testEvent(owner.teamId, 1)]);
    await alarmAt(owner.teamId);

    expect(receiver.others.filter((url) => url.includes("10.0.0.7"))).toEqual([]);
    expect((await endpoints(owner))[0]?.deliveries[0]).toMatchObject({
      state: "failed",
      lastStatus: null,
      lastError: expect.stringMatching(/^url_not_allowed: 10\.0\.0\.7 is not a public address/),
    });
  });

  it("a deleted endpoint gets nothing more; a rotated secret signs what follows", async () => {
    const owner = await signUp();
    const first = await addWebhook(owner, ["rule.created"]);
    const second = await addWebhook(owner, ["rule.created"]);
    const rotated = await api(`/v1/webhooks/${second.id}/rotate`, { method: "POST", cookie: owner.cookie });
    expect(rotated.status).toBe(200);
    const fresh = await json<WebhookSecret>(rotated);
    expect(fresh.id).toBe(second.id);
    expect(fresh.secret).not.toBe(second.secret);
    const deleted = await api(`/v1/webhooks/${first.id}`, { method: "DELETE", cookie: owner.cookie });
    expect(await json(deleted)).toEqual({ id: first.id, deleted: true });
    await hubStub(owner.teamId).appendAudit([{ ...testEvent(owner.teamId, 1), action: "rule.created" }]);
    const [only] = await deliveredTo(owner.teamId, second.path, 1);

    expect(receiver.at(first.path)).toEqual([]);
    expect(verified(fresh.secret, only as Received)).toMatchObject({ type: "rule.created" });
    expect(() => verified(second.secret, only as Received)).toThrow();
    expect((await endpoints(owner)).map((e) => e.id)).toEqual([second.id]);
  });
});

describe("a message the hub missed", () => {
  it("is found by the hourly sweep and sent, when the hub never marked it due", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    await deliveredTo(owner.teamId, hook.path, 1);
    // As if the hub was gone right after the batch that queued the message: no mark, no alarm.
    const queue = async () => {
      const event = testEvent(owner.teamId, 1);
      await runInDurableObject(hubStub(owner.teamId), async (hub, state) => {
        await hub.appendAudit([event]);
        state.storage.sql.exec("DELETE FROM meta WHERE k = 'webhooks_due'");
        await state.storage.deleteAlarm();
      });
      await env.DB.prepare("UPDATE webhook_messages SET next_at = next_at - 600000 WHERE endpoint_id = ?")
        .bind(hook.id)
        .run();
      return event;
    };
    const missed = await queue();
    await alarmAt(owner.teamId);
    expect(receiver.at(hook.path)).toHaveLength(1);

    await sweepWebhooks(env as unknown as Env, Date.now());
    const [, got] = await deliveredTo(owner.teamId, hook.path, 2);
    expect(verified(hook.secret, got as Received).data.eventId).toBe(missed.eventId);
  });
});

describe("the routes", () => {
  it("refuses http outside local mode, private addresses, unknown events, with precise codes", async () => {
    const owner = await signUp();
    const post = (body: unknown, local = false) =>
      local
        ? localApi("/v1/webhooks", owner, { method: "POST", body: JSON.stringify(body) })
        : api("/v1/webhooks", { method: "POST", cookie: owner.cookie, body: JSON.stringify(body) });
    const code = async (r: Response) => [r.status, (await json<{ error: string }>(r)).error];

    expect(await code(await post({ url: `${RECEIVER}/hook`, events: ["audit.appended"] }))).toEqual([
      400,
      "webhook_url_not_allowed",
    ]);
    expect(await code(await post({ url: "http://hooks.example.com/in", events: ["audit.appended"] }, true))).toEqual([
      400,
      "webhook_url_not_allowed",
    ]);
    for (const url of ["https://10.0.0.7/in", "https://192.168.1.2/in", "https://[::1]/in", "https://localhost/in"]) {
      expect(await code(await post({ url, events: ["audit.appended"] })), url).toEqual([
        400,
        "webhook_url_not_allowed",
      ]);
    }
    expect(await code(await post({ url: "https://hooks.example.com/in", events: ["approval.decided"] }))).toEqual([
      400,
      "webhook_event_unknown",
    ]);
    expect(await code(await post({ url: "https://hooks.example.com/in", events: [] }))).toEqual([
      400,
      "invalid_request",
    ]);
    expect(
      await code(await post({ url: "https://hooks.example.com/in", events: ["rule.created", "rule.created"] })),
    ).toEqual([400, "invalid_request"]);
    // A public https host is taken without local mode.
    const made = await post({ url: "https://hooks.example.com/in", events: ["rule.created", "member.changed"] });
    expect(made.status).toBe(201);
    expect((await json<WebhookSecret>(made)).secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it("is for owners and admins: approvers and viewers are refused 403", async () => {
    const owner = await signUp();
    const admin = await addMember(owner, "admin");
    await addWebhook(admin, ["rule.created"]);
    for (const role of ["approver", "viewer"] as const) {
      const member = await addMember(owner, role);
      expect((await api("/v1/webhooks", { cookie: member.cookie })).status).toBe(403);
      const post = await localApi("/v1/webhooks", member, {
        method: "POST",
        body: JSON.stringify({ url: `${RECEIVER}/x`, events: ["rule.created"] }),
      });
      expect(post.status).toBe(403);
    }
  });

  it("another team's webhook is 404 to rotate or delete, and never listed", async () => {
    const ada = await signUp("Ada");
    const bob = await signUp("Bob");
    const hook = await addWebhook(ada, ["audit.appended"]);
    for (const [method, path] of [
      ["DELETE", `/v1/webhooks/${hook.id}`],
      ["POST", `/v1/webhooks/${hook.id}/rotate`],
    ] as const) {
      const response = await api(path, { method, cookie: bob.cookie });
      expect(response.status).toBe(404);
      expect((await json<{ error: string }>(response)).error).toBe("not_found");
    }
    expect(await endpoints(bob)).toEqual([]);
    expect((await endpoints(ada)).map((e) => e.id)).toEqual([hook.id]);
  });

  it("stores the secret sealed: nowhere in D1 as plain text", async () => {
    const owner = await signUp();
    const hook = await addWebhook(owner, ["audit.appended"]);
    const key = hook.secret.slice("whsec_".length);
    const row = await env.DB.prepare("SELECT * FROM webhook_endpoints WHERE id = ?").bind(hook.id).first();
    // The workerd tests set CHANNEL_SECRET_KEY (channels need it), which a new seal prefers.
    expect(row?.secret).toMatch(/^v1\.CHANNEL_SECRET_KEY\./);
    const dump = JSON.stringify([
      row,
      (await env.DB.prepare("SELECT * FROM audit_log WHERE team_id = ?").bind(owner.teamId).all()).results,
      (await env.DB.prepare("SELECT * FROM audit_outbox").all()).results,
    ]);
    expect(dump).not.toContain(key);
    expect(dump).not.toContain(Buffer.from(key, "base64").toString("hex"));
  });

  it("answers 409 too_many_webhooks past ten per team", async () => {
    const owner = await signUp();
    for (let i = 0; i < 10; i++) await addWebhook(owner, ["rule.ended"]);
    const over = await localApi("/v1/webhooks", owner, {
      method: "POST",
      body: JSON.stringify({ url: `${RECEIVER}/h10`, events: ["rule.ended"] }),
    });
    expect(over.status).toBe(409);
    expect((await json<{ error: string }>(over)).error).toBe("too_many_webhooks");
  });
});
