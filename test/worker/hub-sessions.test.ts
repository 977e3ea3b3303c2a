/**
 * The hub's sessions at scale: a policy change reaches every live gate in bounded invocations
 * (continued from the hub's alarm), stale "connected" rows are corrected and skipped, idle rows
 * are pruned, and a connected gate reports from its alarm so it never looks stale.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { SessionInfo } from "../../sdk/src/approval";
import { setTeamPolicy } from "../../worker/db";
import { PRESENCE_REPORT_MS, SESSION_LIVE_MS, type SessionNews } from "../../worker/hub/api";
import { KEEP_SESSIONS_MS, POLICY_FANOUT_PER_RUN } from "../../worker/hub/sessions";
import { DEFAULT_POLICY } from "../../worker/policy";
import {
  type AgentSocket,
  api,
  connectAgent,
  createKey,
  flush,
  gateStub,
  hubStub,
  json,
  signUp,
  unique,
} from "./helpers";
import { openLive } from "./team-helpers";

type HubRow = {
  session_id: string;
  connected: number;
  disconnected_at: number | null;
  last_seen_at: number;
};

const hubRows = (teamId: string) =>
  runInDurableObject(hubStub(teamId), (_, state) =>
    state.storage.sql
      .exec<HubRow>("SELECT session_id, connected, disconnected_at, last_seen_at FROM sessions")
      .toArray(),
  );

const gatePolicyVersion = (teamId: string, sessionId: string) =>
  runInDurableObject(gateStub(teamId, sessionId), (_, state) => {
    const row = state.storage.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'session'").one();
    return (JSON.parse(row.v) as { policyVersion?: number }).policyVersion ?? 0;
  });

const versions = (teamId: string, sessionIds: string[]) =>
  Promise.all(sessionIds.map((id) => gatePolicyVersion(teamId, id)));

const EMPTY_INFO: SessionInfo = { title: null, agent: null, host: null, cwd: null };

const news = (sessionId: string, ownerUserId: string, connected: boolean, at: number): SessionNews => ({
  sessionId,
  ownerUserId,
  info: EMPTY_INFO,
  connected,
  pending: 0,
  at,
  policyVersion: 0,
});

describe("the hub's sessions", () => {
  it(`fans a policy change out to every live gate, ${POLICY_FANOUT_PER_RUN} per invocation; stale rows are skipped`, async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const live = Array.from({ length: 65 }, () => unique("live"));
    const stale = Array.from({ length: 5 }, () => unique("stale"));
    const agents = new Map<string, AgentSocket>();
    for (const sessionId of [...live, ...stale]) agents.set(sessionId, await connectAgent(key, sessionId));
    await vi.waitFor(
      async () => {
        const rows = await hubRows(owner.teamId);
        if (rows.filter((r) => r.connected === 1).length < 70) throw new Error(`${rows.length} sessions known`);
      },
      { timeout: 10_000, interval: 50 },
    );
    // Five gates died without reporting: the hub last heard of them longer ago than SESSION_LIVE_MS.
    const hub = hubStub(owner.teamId);
    await runInDurableObject(hub, (_, state) => {
      for (const id of stale) {
        state.storage.sql.exec(
          "UPDATE sessions SET last_seen_at = ? WHERE session_id = ?",
          Date.now() - SESSION_LIVE_MS - 60_000,
          id,
        );
      }
    });

    const { version } = await setTeamPolicy(env.DB, owner.teamId, { ...DEFAULT_POLICY, lifetimeMs: 120_000 });
    // The change's own invocation tells POLICY_FANOUT_PER_RUN gates and leaves the rest for the alarm.
    const waiting = await runInDurableObject(hub, async (h, state) => {
      await h.policyChanged();
      const left = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM policy_fanout").one().n;
      const alarm = await state.storage.getAlarm();
      await state.storage.deleteAlarm(); // the test runs the alarm itself, below
      return { left, alarm };
    });
    expect(waiting.left).toBe(live.length - POLICY_FANOUT_PER_RUN);
    expect(waiting.alarm).not.toBeNull();
    const first = await versions(owner.teamId, live);
    expect(first.filter((v) => v === version)).toHaveLength(POLICY_FANOUT_PER_RUN);

    // The alarm's invocation tells the rest (within the same bound) and leaves nothing waiting.
    await runInDurableObject(hub, (h) => h.wake());
    expect(await versions(owner.teamId, live)).toEqual(live.map(() => version));
    expect(
      await runInDurableObject(hub, (_, state) => state.storage.sql.exec("SELECT 1 FROM policy_fanout").toArray()),
    ).toEqual([]);

    // Stale gates were not called, and the hub no longer counts them as connected.
    expect(await versions(owner.teamId, stale)).toEqual(stale.map(() => 0));
    const rows = new Map((await hubRows(owner.teamId)).map((r) => [r.session_id, r]));
    for (const id of stale) expect(rows.get(id)).toMatchObject({ connected: 0, disconnected_at: expect.any(Number) });

    // A stale gate that reports again gets the newer policy in the hub's answer.
    const [revived] = stale;
    await agents.get(revived as string)?.send({ jsonrpc: "2.0", method: "_tapgate/hello", params: { title: "back" } });
    await vi.waitFor(async () => expect(await gatePolicyVersion(owner.teamId, revived as string)).toBe(version));
    await Promise.all(
      [...agents.values()].map((agent) => {
        agent.ws.close(1000, "done");
        return agent.closed;
      }),
    );
  }, 60_000); // seventy real agent sockets

  it("marks a connected row whose gate stopped reporting disconnected, live, and prunes rows idle for a week", async () => {
    const owner = await signUp("Olga");
    const hub = hubStub(owner.teamId);
    const feed = await openLive(owner);
    const now = Date.now();
    const [fresh, silent, idle, gone, unsaved] = ["fresh", "silent", "idle", "gone", "unsaved"].map((n) =>
      unique(n),
    ) as string[];
    await hub.sessionChanged(owner.teamId, news(fresh as string, owner.userId, true, now));
    await hub.sessionChanged(owner.teamId, news(idle as string, owner.userId, false, now - KEEP_SESSIONS_MS + 60_000));
    await hub.sessionChanged(owner.teamId, news(gone as string, owner.userId, false, now - KEEP_SESSIONS_MS - 60_000));
    await hub.sessionChanged(owner.teamId, news(silent as string, owner.userId, true, now - 60_000));
    // A session with dead letters stays listed past the week, so the dashboard keeps showing them.
    await hub.sessionChanged(owner.teamId, {
      ...news(unsaved as string, owner.userId, false, now - KEEP_SESSIONS_MS - 60_000),
      deadLetters: 3,
    });

    // Later, the silent gate has not reported for longer than SESSION_LIVE_MS; the fresh one has.
    const later = now + SESSION_LIVE_MS;
    await hub.sessionChanged(owner.teamId, news(fresh as string, owner.userId, true, later));
    await runInDurableObject(hub, (h) => h.wake(later));
    const rows = new Map((await hubRows(owner.teamId)).map((r) => [r.session_id, r]));
    expect(rows.get(fresh as string)).toMatchObject({ connected: 1, disconnected_at: null });
    expect(rows.get(silent as string)).toMatchObject({ connected: 0, disconnected_at: now - 60_000 });
    expect(rows.has(idle as string)).toBe(false); // a week idle by `later`
    expect(rows.has(gone as string)).toBe(false);
    expect(rows.has(unsaved as string)).toBe(true);
    expect(rows.size).toBe(3);
    expect(await hub.deadLettered(owner.teamId)).toEqual([
      { sessionId: unsaved, deadLetters: 3, at: now - KEEP_SESSIONS_MS - 60_000 },
    ]);
    const shown = await feed.next(
      (f) =>
        f.type === "session" &&
        (f.session as { sessionId: string }).sessionId === silent &&
        (f.session as { disconnectedAt: number | null }).disconnectedAt !== null,
    );
    expect(shown.session).toMatchObject({ disconnectedAt: now - 60_000, owner: { name: "Olga" } });
    // The hub's alarm stays set for the next row due: the fresh row going stale.
    const alarm = await runInDurableObject(hub, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeLessThanOrEqual(later + SESSION_LIVE_MS);
    feed.ws.close();
  });

  it("a connected gate reports from its alarm, so the hub and the dashboard keep it connected", async () => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    const stub = gateStub(owner.teamId, sessionId);
    const first = await vi.waitFor(async () => {
      const row = (await hubRows(owner.teamId)).find((r) => r.session_id === sessionId);
      if (!row) throw new Error("not reported yet");
      return row;
    });
    // An idle connected gate holds no request, yet its alarm is set for the next report.
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm).toBeLessThanOrEqual(first.last_seen_at + PRESENCE_REPORT_MS);

    // Without reports, the dashboard stops listing it as connected.
    const connectedIds = async () => {
      const { sessions } = await json<{ sessions: Array<{ sessionId: string }> }>(
        await api("/v1/sessions?state=connected", { cookie: owner.cookie }),
      );
      return sessions.map((s) => s.sessionId);
    };
    await flush(owner.teamId, sessionId);
    await env.DB.prepare("UPDATE agent_sessions SET last_seen_at = ? WHERE team_id = ? AND session_id = ?")
      .bind(Date.now() - SESSION_LIVE_MS - 60_000, owner.teamId, sessionId)
      .run();
    expect(await connectedIds()).not.toContain(sessionId);

    // The report is due (as if ten minutes passed): the alarm reports, to the hub and to D1.
    await runInDurableObject(stub, (_, state) =>
      state.storage.sql.exec(
        "UPDATE meta SET v = ? WHERE k = 'reported_at'",
        String(Date.now() - PRESENCE_REPORT_MS - 1),
      ),
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await vi.waitFor(async () => {
      const row = (await hubRows(owner.teamId)).find((r) => r.session_id === sessionId);
      if (!row || row.last_seen_at <= first.last_seen_at) throw new Error("no new report yet");
      expect(row.connected).toBe(1);
    });
    await flush(owner.teamId, sessionId);
    expect(await connectedIds()).toContain(sessionId);
    agent.ws.close(1000, "done");
  });
});
