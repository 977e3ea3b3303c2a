/**
 * A hub that never answers (its input gate held: `stall.ts`) costs a gate's alarm one bounded
 * wait (`worker/deadline.ts`), never its expiry and lease sweeps; the ladder's climb is started by
 * the alarm, not awaited, and its outcome is seen by the gate when the hub answers.
 */
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Ladder } from "../../worker/gate/escalation-rules";
import { DIRECTORY_MAX_AGE_MS } from "../../worker/hub/directory";
import type { TeamHub } from "../../worker/hub/team-hub";
import { TeamHub as TeamHubClass } from "../../worker/hub/team-hub";
import { DEFAULT_POLICY } from "../../worker/policy";
import { fakePushService } from "./fake-push";
import {
  api,
  askOnce,
  connectAgent,
  createKey,
  decide,
  gateStub,
  hubStub,
  json,
  type Member,
  ORIGIN,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { teamRule } from "./rule-helpers";
import { type StalledHub, stallGate, stallHub } from "./stall";
import { addMember } from "./team-helpers";

let stalled: StalledHub | null = null;
let fake: ReturnType<typeof fakePushService>;
beforeEach(() => {
  fake = fakePushService();
});
afterEach(() => {
  stalled?.release();
  vi.restoreAllMocks();
});

async function askOverHttp(key: string, sessionId: string): Promise<string> {
  const created = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${sessionId}/permissions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(permissionParams(sessionId)),
  });
  expect(created.status).toBe(201);
  return (await json<{ approvalId: string }>(created)).approvalId;
}

/** The gate's own row: its state and reason. */
function row(owner: Member, sessionId: string, approvalId: string) {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT state, record FROM approvals WHERE id = ?", approvalId).one();
    return { state: r.state, reason: (JSON.parse(r.record as string) as { reason: string | null }).reason };
  });
}

function setColumn(owner: Member, sessionId: string, approvalId: string, column: "expires_at" | "lease_until") {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    state.storage.sql.exec(`UPDATE approvals SET ${column} = ? WHERE id = ?`, Date.now() - 1, approvalId);
  });
}

function ladderOf(owner: Member, sessionId: string, approvalId: string): Promise<Ladder> {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT ladder FROM ladders WHERE approval_id = ?", approvalId).one();
    return JSON.parse(r.ladder as string) as Ladder;
  });
}

/** Waits until the gate recorded the hub's outcome of the `at`-th fired step. */
function untilAcked(owner: Member, sessionId: string, approvalId: string, at: number) {
  return vi.waitFor(async () => {
    if (!(await ladderOf(owner, sessionId, approvalId)).fired[at]?.acked) throw new Error("not acknowledged yet");
  });
}

/** As if the request had been pending for `ms` more: the ladder's next step is due now. */
function ageLadder(owner: Member, sessionId: string, approvalId: string, ms: number) {
  return runInDurableObject(gateStub(owner.teamId, sessionId), (_, state) => {
    const r = state.storage.sql.exec("SELECT ladder FROM ladders WHERE approval_id = ?", approvalId).one();
    const ladder = JSON.parse(r.ladder as string) as Ladder;
    ladder.openedAt -= ms;
    for (const f of ladder.fired) f.at -= ms;
    state.storage.sql.exec(
      "UPDATE ladders SET ladder = ?, next_at = ? WHERE approval_id = ?",
      JSON.stringify(ladder),
      Date.now(),
      approvalId,
    );
  });
}

/** Two requests held over HTTP in one session, their first escalation step (a push to the owner's phone) acknowledged. */
async function twoRequests() {
  const owner = await signUp();
  await fake.addPhone(owner, "Pixel 8");
  const { key } = await createKey(owner);
  const sessionId = unique("stuck");
  const first = await askOverHttp(key, sessionId);
  const second = await askOverHttp(key, sessionId);
  for (const id of [first, second]) {
    await untilAcked(owner, sessionId, id, 0);
  }
  return { owner, sessionId, first, second };
}

describe("a gate whose hub never answers", () => {
  it("still expires its due requests and sweeps lapsed leases, alarm after alarm", async () => {
    const { owner, sessionId, first, second } = await twoRequests();
    const gate = gateStub(owner.teamId, sessionId);
    stalled = await stallHub(owner.teamId);

    // The first alarm expires one request: its news and outbox rows go to a hub that never answers.
    await setColumn(owner, sessionId, first, "expires_at");
    expect(await runDurableObjectAlarm(gate)).toBe(true);
    expect(await row(owner, sessionId, first)).toEqual({ state: "expired", reason: "expired" });

    // The next alarm still runs: the other request's lease lapsed meanwhile.
    await setColumn(owner, sessionId, second, "lease_until");
    expect(await runDurableObjectAlarm(gate)).toBe(true);
    expect(await row(owner, sessionId, second)).toEqual({ state: "denied", reason: "agent_disconnected" });
  }, 30_000);

  it("the alarm starts a due escalation step without waiting for the hub; the gate records its outcome when it answers", async () => {
    const { owner, sessionId, first } = await twoRequests();
    const gate = gateStub(owner.teamId, sessionId);
    await ageLadder(owner, sessionId, first, 61_000);
    stalled = await stallHub(owner.teamId);

    expect(await runDurableObjectAlarm(gate)).toBe(true);
    const asked = await ladderOf(owner, sessionId, first);
    expect(asked.fired.map((f) => [f.step, f.acked])).toEqual([
      [0, true],
      [1, false],
    ]);

    stalled.release();
    await untilAcked(owner, sessionId, first, 1);
  }, 30_000);
});

describe("a request path whose hub never answers takes its fallback after 2 s", () => {
  it("a decider's role is read from D1, and an approval is read without its pushes and timeline, marked", async () => {
    const { owner, approval } = await askOnce();
    stalled = await stallHub(owner.teamId);

    const read = await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie });
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({
      id: approval.id,
      state: "pending",
      delivery: [],
      detailUnavailable: true,
    });

    const decided = await decide(owner, approval, "allow");
    expect(decided.status).toBe(200);
    expect(await json(decided)).toMatchObject({ state: "allowed", decidedBy: { userId: owner.userId } });

    stalled.release();
    stalled = null;
    const whole = await json(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }));
    expect(whole).not.toHaveProperty("detailUnavailable");
    expect(whole).toHaveProperty("escalations");
  }, 30_000);

  it("an agent rejoining keeps its session's last policy; a new session, with none, is refused 503 policy_unavailable", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("known");
    (await connectAgent(key, sessionId)).ws.close();
    stalled = await stallHub(owner.teamId);

    const again = await connectAgent(key, sessionId);
    again.ws.close();
    const fresh = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${unique("new")}`, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${key}` },
    });
    expect(fresh.status).toBe(503);
    expect(await json(fresh)).toMatchObject({ error: "policy_unavailable" });
  }, 30_000);

  it("a request whose quota check is later than 2 s is refused quota_unavailable, and the slot the hub counts late is freed", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("quota");
    await askOverHttp(key, sessionId); // the session is known, with its policy
    stalled = await stallHub(owner.teamId);

    const refused = await SELF.fetch(`${ORIGIN}/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(permissionParams(sessionId)),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(await json(refused)).toMatchObject({ error: "quota_unavailable", reason: "quota_unavailable" });

    stalled.release();
    stalled = null;
    const hub = hubStub(owner.teamId);
    await vi.waitFor(async () => {
      const pending = await runInDurableObject(hub, (h: TeamHub) => h.quotaPending());
      if (pending !== 1) throw new Error(`the hub counts ${pending} pending`);
    });
  }, 30_000);

  it("the human API's other calls to the hub answer 503 after 2 s; what D1 stores stands", async () => {
    const { owner, approval } = await askOnce();
    stalled = await stallHub(owner.teamId);
    const post = (path: string, body: unknown, method = "POST") =>
      api(path, { method, cookie: owner.cookie, body: JSON.stringify(body) });
    const device = `dev_${"a".repeat(22)}`;
    const policy = { ...DEFAULT_POLICY, lifetimeMs: 120_000 };

    const [claim, receipt, testPush, rule, policyPut, verify] = await Promise.all([
      post(`/v1/approvals/${approval.id}/claim`, {}),
      post(`/v1/approvals/${approval.id}/receipt`, { deviceId: device, event: "displayed" }),
      post(`/v1/devices/${device}/test`, {}),
      post("/v1/rules", teamRule),
      post("/v1/policy", policy, "PUT"),
      api("/v1/audit/verify", { cookie: owner.cookie }),
    ]);
    for (const answer of [claim, receipt, testPush, policyPut, verify]) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get("Retry-After")).toBe("1");
      expect(await json(answer)).toMatchObject({ error: "service_unavailable" });
    }
    // A rule the hub could not be told of is undone (docs/faults.md); a policy stands in D1.
    expect(rule.status).toBe(503);
    expect(await json(rule)).toMatchObject({ error: "rules_unavailable" });
    expect(await json(await api("/v1/policy", { cookie: owner.cookie }))).toEqual(policy);
    // Signing out ends the session in D1 and says the hub was not told.
    const signOut = await post("/v1/auth/signout", {});
    expect(signOut.status).toBe(503);
    expect((await api("/v1/policy", { cookie: owner.cookie })).status).toBe(401);
  }, 30_000);
});

describe("the screens around a hub that never answers", () => {
  it("the sessions screen, a seen mark, a role change and the live feed answer 503 after 2 s; the device list and a device's removal answer from D1", async () => {
    const { owner, sessionId, approval } = await askOnce();
    const phone = await fake.addPhone(owner);
    const bea = await addMember(owner, "approver", "Bea");
    stalled = await stallHub(owner.teamId);
    const get = (path: string) => api(path, { cookie: owner.cookie });
    const send = (path: string, body: unknown, method: string) =>
      api(path, { method, cookie: owner.cookie, body: JSON.stringify(body) });

    const [list, one, seen, role, live, devices] = await Promise.all([
      get("/v1/sessions"),
      get(`/v1/sessions/${sessionId}`),
      send(`/v1/approvals/${approval.id}/seen`, { deviceId: phone.deviceId }, "POST"),
      send(`/v1/members/${bea.userId}`, { role: "viewer" }, "PATCH"),
      SELF.fetch(`${ORIGIN}/v1/live`, { headers: { Upgrade: "websocket", Origin: ORIGIN, Cookie: owner.cookie } }),
      get("/v1/devices"),
    ]);
    for (const answer of [list, one, seen, role, live]) {
      expect(answer.status).toBe(503);
      expect(await json(answer)).toMatchObject({ error: "service_unavailable" });
    }
    // The role change stands in D1 (the hub vouches from D1 when it is back, within 10 s).
    const members = await json<{ members: Array<{ userId: string; role: string }> }>(await get("/v1/members"));
    expect(members.members.find((m) => m.userId === bea.userId)?.role).toBe("viewer");
    // The device list is D1's, its push health unknown; a removal stands in D1 and answers 200.
    expect(devices.status).toBe(200);
    expect(await json(devices)).toMatchObject({ devices: [{ id: phone.deviceId, health: "ok" }] });
    expect((await send(`/v1/devices/${phone.deviceId}`, {}, "DELETE")).status).toBe(200);
    expect(await json(await get("/v1/devices"))).toMatchObject({ devices: [] });
  }, 30_000);
});

describe("a device removal the hub never hears", () => {
  it("is pushed to no more once the hub's directory is 30 s old: the next request reaches only the devices D1 has", async () => {
    const owner = await signUp();
    const gone = await fake.addPhone(owner, "Lost phone");
    const kept = await fake.addPhone(owner, "Pixel 8");
    const { key } = await createKey(owner);
    const sessionId = unique("lost-phone");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, permissionParams(sessionId));
    await fake.untilPushes(2);

    // The hub throws when told: the removal stands in D1 and is answered 200.
    vi.spyOn(TeamHubClass.prototype, "deviceRemoved").mockRejectedValue(new Error("hub down"));
    vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await api(`/v1/devices/${gone.deviceId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);

    // Its copy of the directory 30 s old, the hub reads D1 again before it addresses the next request.
    await runInDurableObject(hubStub(owner.teamId), (_hub, state) => {
      state.storage.sql.exec(
        "UPDATE meta SET v = CAST(v AS INTEGER) - ? WHERE k = 'directory'",
        DIRECTORY_MAX_AGE_MS + 1,
      );
    });
    await agent.ask(2, permissionParams(sessionId));
    await fake.untilPushes(3);
    expect(fake.to(gone)).toHaveLength(1);
    expect(fake.to(kept)).toHaveLength(2);
  });

  it("is sent no more retries of a queued push once the hub's directory is 30 s old", async () => {
    const owner = await signUp();
    const gone = await fake.addPhone(owner, "Lost phone");
    const { key } = await createKey(owner);
    const sessionId = unique("lost-retry");
    const agent = await connectAgent(key, sessionId);
    fake.state.answer = () => 503; // the push service asks for a retry
    await agent.ask(1, permissionParams(sessionId));
    await fake.untilPushes(1);

    vi.spyOn(TeamHubClass.prototype, "deviceRemoved").mockRejectedValue(new Error("hub down"));
    vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await api(`/v1/devices/${gone.deviceId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);

    // The retry is due and the copy 30 s old: the hub's alarm reads D1 again before it sends.
    const queued = () =>
      runInDurableObject(hubStub(owner.teamId), (_hub, state) => {
        const { sql } = state.storage;
        sql.exec("UPDATE meta SET v = CAST(v AS INTEGER) - ? WHERE k = 'directory'", DIRECTORY_MAX_AGE_MS + 1);
        sql.exec("UPDATE push_queue SET next_at = ?", Date.now() - 1);
        return sql.exec("SELECT COUNT(*) AS n FROM push_queue WHERE device_id = ?", gone.deviceId).one().n;
      });
    expect(await queued()).toBe(1);
    await runDurableObjectAlarm(hubStub(owner.teamId));
    expect(await queued()).toBe(0);
    expect(fake.to(gone)).toHaveLength(1);
  });
});

describe("an approval read whose gate never answers", () => {
  it("is answered from D1 after 2 s, marked detailUnavailable", async () => {
    const { owner, sessionId, approval } = await askOnce();
    stalled = await stallGate(owner.teamId, sessionId);
    const read = await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie });
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ id: approval.id, state: "pending", detailUnavailable: true });
  }, 30_000);

  it("a claim, the rule choices, a step-up's options and its proof answer 503 after 2 s", async () => {
    const { owner, sessionId, approval } = await askOnce();
    stalled = await stallGate(owner.teamId, sessionId);
    const [claim, choices, stepUp, proof] = await Promise.all([
      api(`/v1/approvals/${approval.id}/claim`, { method: "POST", cookie: owner.cookie, body: "{}" }),
      api(`/v1/approvals/${approval.id}/rule-choices`, { cookie: owner.cookie }),
      api(`/v1/approvals/${approval.id}/step-up`, {
        method: "POST",
        cookie: owner.cookie,
        body: JSON.stringify({ optionId: "allow" }),
      }),
      api(`/v1/approvals/${approval.id}/proof`, { cookie: owner.cookie }),
    ]);
    for (const answer of [claim, choices, stepUp, proof]) {
      expect(answer.status).toBe(503);
      expect(await json(answer)).toMatchObject({ error: "service_unavailable" });
    }
  }, 30_000);
});
