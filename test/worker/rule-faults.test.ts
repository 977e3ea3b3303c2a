/**
 * A human's stop is obeyed even when a notice is lost: standing rules under faults, inside
 * workerd with real D1 and the real hub and gates. The hub fails the rule route's notice, a
 * removal races the hub's read of the rules, a hub answers an admission after a rule expired.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Rule } from "../../sdk/src/human/rules";
import { RULES_MAX_AGE_MS } from "../../worker/hub/rules";
import { TeamHub } from "../../worker/hub/team-hub";
import { api, hubStub, json, signUp } from "./helpers";
import { simulatedClock } from "./outbox-faults";
import { makeRule, npmTest, session, teamRule } from "./rule-helpers";
import { addMember } from "./team-helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

const queuedChanges = async (teamId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM rule_changes WHERE team_id = ?").bind(teamId).first<{ n: number }>())
    ?.n;

/** When the hub's copy of the rules was read (null: not loaded). */
const copyReadAt = (teamId: string) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    const v = state.storage.sql.exec("SELECT v FROM meta WHERE k = 'rules'").toArray()[0]?.v;
    return v === undefined ? null : Number(v);
  });

/** Time passes for the hub's copy: it was read `ms` earlier than it was. */
const ageCopy = (teamId: string, ms: number) =>
  runInDurableObject(hubStub(teamId), (_hub, state) => {
    state.storage.sql.exec("UPDATE meta SET v = CAST(v AS INTEGER) - ? WHERE k = 'rules'", ms);
  });

describe("a rule ended while its notice is lost", () => {
  it("allows nothing once the hub's copy is 30 s old, and the hub drains the queued end", async () => {
    const owner = await signUp();
    const rule = await makeRule(owner, teamRule);
    const s = await session(owner);
    expect((await s.ask(npmTest())).approval.state).toBe("allowed");
    expect(await queuedChanges(owner.teamId)).toBe(0); // the make's notice reached the hub, which drained it

    // The hub fails the end's notice (down for a moment): the end stands in D1, queued for the hub.
    vi.spyOn(TeamHub.prototype, "rulesChanged").mockImplementationOnce(async () => {
      throw new Error("hub down");
    });
    const ended = await api(`/v1/rules/${rule.id}`, { method: "DELETE", cookie: owner.cookie });
    expect(ended.status).toBe(503);
    expect(await json(ended)).toMatchObject({ error: "rules_unavailable", message: expect.stringContaining("30 s") });
    expect(await queuedChanges(owner.teamId)).toBe(1);

    // 30 s after the copy was read, it allows nothing, whoever asks.
    await ageCopy(owner.teamId, RULES_MAX_AGE_MS);
    expect((await s.ask(npmTest())).approval.state).toBe("pending");
    // The hub's alarm (or the admission that found the copy old) reads it again and drains the queue.
    await runDurableObjectAlarm(hubStub(owner.teamId));
    expect(await queuedChanges(owner.teamId)).toBe(0);
    expect(await copyReadAt(owner.teamId)).toBeGreaterThan(Date.now() - RULES_MAX_AGE_MS);
    expect((await s.ask(npmTest())).approval.state).toBe("pending");
  });

  it("a copy that holds rules is read again by the hub's alarm, so an idle team's rules keep applying", async () => {
    const owner = await signUp();
    await makeRule(owner, teamRule);
    const s = await session(owner);
    const before = await copyReadAt(owner.teamId);
    await ageCopy(owner.teamId, RULES_MAX_AGE_MS);
    expect(await runDurableObjectAlarm(hubStub(owner.teamId))).toBe(true);
    expect(await copyReadAt(owner.teamId)).toBeGreaterThanOrEqual(before as number);
    expect((await s.ask(npmTest())).approval.state).toBe("allowed");
  });
});

describe("a removal racing the hub's read of the rules", () => {
  it("does not bring the removed creator's rule back", async () => {
    const owner = await signUp();
    const admin = await addMember(owner, "admin");
    await makeRule(admin, teamRule);
    const s = await session(owner);
    expect((await s.ask(npmTest())).approval.state).toBe("allowed");

    // The hub's next read of the rules happens in D1 (the admin still a member), and its answer
    // comes back only after the admin's removal reached D1 and the hub.
    // (Watched by polling, not a promise: the hub settling one of the test's would carry the test
    // on in the hub's I/O context.)
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const proto = Object.getPrototypeOf(env.DB) as D1Database;
    const batch = proto.batch;
    let held = false;
    vi.spyOn(proto, "batch").mockImplementation(async function (this: D1Database, statements) {
      const result = await batch.call(this, statements);
      const first = statements[0] as unknown as { statement?: string };
      if (!held && first?.statement?.includes("FROM rule_changes")) {
        held = true;
        await released;
      }
      return result;
    });
    await hubStub(owner.teamId).forgetDirectory(); // a role changed elsewhere: the copy is read again
    await vi.waitFor(() => expect(held).toBe(true));
    const removed = await api(`/v1/members/${admin.userId}`, { method: "DELETE", cookie: owner.cookie });
    expect(removed.status).toBe(200);
    release();

    await vi.waitFor(async () => expect(await copyReadAt(owner.teamId)).not.toBeNull());
    expect((await s.ask(npmTest())).approval.state).toBe("pending");
  });
});

describe("a rule that expires while the hub admits the request", () => {
  it("allows nothing: its expiry is checked with the time after the admission", async () => {
    const owner = await signUp();
    const rule: Rule = await makeRule(owner, teamRule);
    const s = await session(owner);
    expect((await s.ask(npmTest())).approval.state).toBe("allowed");

    // The rule ends 5 s from now (well inside a heartbeat), in the record and in the hub's copy.
    const endsAt = Date.now() + 5_000;
    await env.DB.prepare("UPDATE standing_rules SET expires_at = ? WHERE id = ?").bind(endsAt, rule.id).run();
    await runInDurableObject(hubStub(owner.teamId), (_hub, state) => {
      state.storage.sql.exec("UPDATE standing_rules SET expires_at = ? WHERE id = ?", endsAt, rule.id);
    });
    // A slow hub: it admits before the rule's end (handing the rule over) but answers after it,
    // on the simulated clock the gate reads too.
    const clock = simulatedClock();
    const handed: number[] = [];
    const admit = TeamHub.prototype.admitRequest;
    vi.spyOn(TeamHub.prototype, "admitRequest").mockImplementation(async function (this: TeamHub, ...args) {
      const verdict = await admit.apply(this, args);
      handed.push(verdict.ok ? (verdict.rules?.length ?? 0) : -1);
      clock.advanceTo(endsAt + 1);
      return verdict;
    });
    try {
      expect((await s.ask(npmTest())).approval.state).toBe("pending");
    } finally {
      clock.restore();
    }
    expect(handed).toEqual([1]);
  });
});
