import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { Tapgate, TapgateError } from "../../sdk/src/index";
import { askParams, Person, unique } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;
const quiet = () => undefined;
const PERSON = "Ada";

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url, PERSON);
  key = (await person.createKey("sdk tests")).key;
});
afterAll(() => worker?.stop());

const gate = () => new Tapgate({ url: worker.url, apiKey: key, onLog: quiet });

describe("the SDK against wrangler dev", () => {
  it("asks, waits for the human, and returns the chosen option", async () => {
    const tapgate = gate();
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId, { title: "fix flaky test", agent: { name: "test-agent" } });
    session.update({
      sessionId,
      update: { sessionUpdate: "tool_call", toolCallId: "c1", title: "Run git push", kind: "execute" },
    });
    const answer = session.requestPermission({ ...askParams(sessionId, "c1"), toolCall: { toolCallId: "c1" } });
    const approval = await person.waitForOne(sessionId);
    expect(approval?.snapshot.toolCall).toMatchObject({ title: "Run git push", kind: "execute" });
    expect(approval?.snapshot.session).toMatchObject({ title: "fix flaky test", agent: { name: "test-agent" } });
    expect((await person.decide(approval, "allow")).status).toBe(200);
    // The service's `_meta` reaches the caller: which approval, why it ended, who decided where.
    expect(await answer).toEqual({
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { approvalId: approval.id, reason: "decided", decidedBy: { name: PERSON, device: "web" } } },
    });
    tapgate.close();
  });

  it("returns a deny the same way", async () => {
    const tapgate = gate();
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId);
    const answer = session.requestPermission(askParams(sessionId));
    const approval = await person.waitForOne(sessionId);
    await person.decide(approval, "deny");
    expect(await answer).toMatchObject({
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { tapgate: { approvalId: approval.id, reason: "decided", decidedBy: { name: PERSON } } },
    });
    tapgate.close();
  });

  it("aborting the signal cancels the request on the server too", async () => {
    const tapgate = gate();
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId);
    const controller = new AbortController();
    const answer = session.requestPermission(askParams(sessionId), { signal: controller.signal });
    const approval = await person.waitForOne(sessionId);
    controller.abort();
    expect(await answer).toEqual({ outcome: { outcome: "cancelled" } });
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
    tapgate.close();
  });

  it("timeoutMs makes the gate expire the request sooner, answered fail-closed", async () => {
    const tapgate = gate();
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId);
    const answer = session.requestPermission(askParams(sessionId), { timeoutMs: 1_000 });
    const approval = await person.waitForOne(sessionId);
    expect(approval.expiresAt - approval.createdAt).toBe(1_000);
    expect(await answer).toEqual({
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { tapgate: { approvalId: approval.id, reason: "expired" } },
    });
    expect(await person.approval(approval.id)).toMatchObject({ state: "expired", reason: "expired" });
    tapgate.close();
  });

  it("a missing key is an actionable error, a bad key is refused, neither hangs", async () => {
    const saved = process.env.TAPGATE_API_KEY;
    delete process.env.TAPGATE_API_KEY;
    try {
      await expect(new Tapgate({ url: worker.url, onLog: quiet }).session("s1")).rejects.toThrow(
        "no API key: set TAPGATE_API_KEY or run `tapgate login`",
      );
    } finally {
      if (saved !== undefined) process.env.TAPGATE_API_KEY = saved;
    }
    const bad = new Tapgate({ url: worker.url, apiKey: `tg_${"0".repeat(43)}`, onLog: quiet });
    const error = await bad.session("s1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TapgateError);
    expect((error as TapgateError).code).toBe("unauthorized");
    expect(String(error)).toContain("401");
  });

  it("the same session id in another team is another session; a second key of the owner rejoins", async () => {
    const bob = await Person.signUp(worker.url, "Bob");
    const sessionId = unique("sdk");
    const mine = await gate().session(sessionId);
    // Bob is in another team, so the same id is a different session: each request reaches only its own team.
    const bobs = await new Tapgate({ url: worker.url, apiKey: (await bob.createKey()).key, onLog: quiet }).session(
      sessionId,
    );
    const bobsAnswer = bobs.requestPermission(askParams(sessionId, "bob-call"));
    const mineAnswer = mine.requestPermission(askParams(sessionId, "ada-call"));
    const bobsApproval = await bob.waitForOne(sessionId);
    const myApproval = await person.waitForOne(sessionId);
    expect(bobsApproval.snapshot.toolCall.toolCallId).toBe("bob-call");
    expect(myApproval.snapshot.toolCall.toolCallId).toBe("ada-call");
    expect((await person.fetch(`/v1/approvals/${bobsApproval.id}`)).status).toBe(404);
    expect((await person.decide(myApproval, "allow")).status).toBe(200);
    expect((await mineAnswer).outcome).toEqual({ outcome: "selected", optionId: "allow" });
    expect((await bob.decide(bobsApproval, "deny")).status).toBe(200);
    expect((await bobsAnswer).outcome).toEqual({ outcome: "selected", optionId: "deny" });
    bobs.close();
    mine.close();
    // A second key of the same person rejoins the same session: its request is held there, for the owner.
    const second = await new Tapgate({
      url: worker.url,
      apiKey: (await person.createKey("second")).key,
      onLog: quiet,
    }).session(sessionId);
    const secondAnswer = second.requestPermission(askParams(sessionId, "second-call"));
    const rejoined = await person.waitForOne(sessionId);
    expect(rejoined.sessionId).toBe(sessionId);
    expect(rejoined.snapshot.toolCall.toolCallId).toBe("second-call");
    expect((await person.decide(rejoined, "allow")).status).toBe(200);
    expect((await secondAnswer).outcome).toEqual({ outcome: "selected", optionId: "allow" });
    second.close();
  });

  it("a terminated socket denies its pending request at once (agent_disconnected)", async () => {
    const sessionId = unique("raw");
    const ws = new WebSocket(`${worker.url.replace("http", "ws")}/v1/agent/sessions/${sessionId}`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/request_permission", params: askParams(sessionId) }),
    );
    const approval = await person.waitForOne(sessionId);
    ws.terminate();
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "denied", reason: "agent_disconnected" });
  });

  it("revoking the key denies both pending requests (key_revoked) and ends the session", async () => {
    const { id: keyId, key: doomed } = await person.createKey("doomed");
    const tapgate = new Tapgate({ url: worker.url, apiKey: doomed, onLog: quiet });
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId);
    const answers = [session.requestPermission(askParams(sessionId)), session.requestPermission(askParams(sessionId))];
    const pending = await person.waitForPending(sessionId, 2);
    const revoked = await person.fetch(`/v1/keys/${keyId}`, { method: "DELETE" });
    expect(await revoked.json()).toMatchObject({ id: keyId, deniedRequests: 2 });
    const revokedAnswer = {
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { tapgate: { reason: "key_revoked" } },
    };
    expect(await Promise.all(answers)).toMatchObject([revokedAnswer, revokedAnswer]);
    for (const a of pending)
      expect(await person.approval(a.id)).toMatchObject({ state: "denied", reason: "key_revoked" });
    // A new request on a revoked key is answered fail-closed, never sent for a human to allow.
    expect(await session.requestPermission(askParams(sessionId))).toEqual({
      outcome: { outcome: "selected", optionId: "deny" },
    });
    await person.waitForPending(sessionId, 0);
    tapgate.close();
  });

  it("a team quota refusal (-32001) gives the agent the fail-closed answer; the request never reaches a human", async () => {
    const owner = await Person.signUp(worker.url, "Quota");
    const limited = await owner.fetch("/v1/policy", {
      method: "PUT",
      body: JSON.stringify({ limits: { pendingPerKey: 1 } }),
    });
    expect(limited.status).toBe(200);
    const logs: string[] = [];
    const tapgate = new Tapgate({
      url: worker.url,
      apiKey: (await owner.createKey("quota")).key,
      onLog: (_level, message) => logs.push(message),
    });
    const sessionId = unique("quota");
    const session = await tapgate.session(sessionId);
    const held = session.requestPermission(askParams(sessionId));
    await owner.waitForOne(sessionId);
    // The key's one pending slot is taken: the second request is refused, and answered as a deny.
    expect(await session.requestPermission(askParams(sessionId))).toEqual({
      outcome: { outcome: "selected", optionId: "deny" },
    });
    expect(logs.some((m) => m.includes("-32001") && m.includes("pendingPerKey"))).toBe(true);
    expect(await owner.waitForPending(sessionId, 1)).toHaveLength(1);
    tapgate.close();
    expect((await held).outcome).toEqual({ outcome: "selected", optionId: "deny" });
  });

  it("measures the raw ping round trip", async () => {
    const session = await gate().session(unique("sdk"));
    expect(await session.ping()).toBeGreaterThan(0);
    session.close();
  });
});

describe("a restart of the service", () => {
  it("answers in-flight requests fail-closed, does not re-send them, and reconnects for new ones", async () => {
    const tapgate = gate();
    const sessionId = unique("sdk");
    const session = await tapgate.session(sessionId);
    const inFlight = session.requestPermission(askParams(sessionId));
    const approval = await person.waitForOne(sessionId);

    const port = Number(new URL(worker.url).port);
    // A crash, not a shutdown: a shutting-down instance may still see the socket close and end
    // the request itself (agent_disconnected) before it goes.
    await worker.stop("SIGKILL");
    // The SDK's own fail-closed answer: no `_meta`, since the service never answered.
    expect(await inFlight).toEqual({ outcome: { outcome: "selected", optionId: "deny" } });
    worker = await startLocalWorker({ persistTo: worker.persistTo, port });

    // Reading the card wakes the gate, which ends what the old instance held.
    expect(await person.approval(approval.id)).toMatchObject({ state: "denied", reason: "service_restart" });
    const after = session.requestPermission(askParams(sessionId)); // waits for the reconnection
    const fresh = await person.waitForOne(sessionId, (a) => a.id !== approval.id);
    await person.waitForOne(sessionId); // and only that one: the old request was not re-sent
    await person.decide(fresh, "allow");
    expect(await after).toMatchObject({
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { approvalId: fresh.id, reason: "decided" } },
    });
    tapgate.close();
  });
});
