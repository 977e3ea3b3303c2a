/**
 * The state machine over the gate's real SQLite store (a fresh SessionGate's storage, in workerd):
 * the transitions out of `pending`, each exactly once, with what every exit writes (answer,
 * outbox rows, hub news). The store is the one the gate runs on, so the claim tested here is the
 * real `UPDATE … WHERE state = 'pending'`, not a copy of it.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { RequestPermissionResponse } from "../../sdk/src/protocol";
import type { OutboxOp } from "../../worker/db";
import { Admission, type AdmissionHost } from "../../worker/gate/admission";
import type { DecisionInput } from "../../worker/gate/api";
import type { QuotaAsk, QuotaVerdict } from "../../worker/gate/hub";
import type { Refusal } from "../../worker/gate/intake";
import type { Outbox } from "../../worker/gate/outbox";
import { OutboxStore } from "../../worker/gate/outbox-store";
import { EMPTY_INFO } from "../../worker/gate/rules";
import { StateMachine } from "../../worker/gate/state-machine";
import { GateStore, type Holder, type PendingRow, type ServedSession } from "../../worker/gate/store";
import { DEFAULT_POLICY } from "../../worker/policy";
import { gateStub, unique } from "./helpers";

/** The machine over a fresh gate's own storage (the gate itself stays idle: no socket, no alarm). */
function machine(storage: DurableObjectStorage, policy = DEFAULT_POLICY) {
  const sql = storage.sql;
  const meta: ServedSession = { teamId: "team", sessionId: "sess", ownerUserId: "owner", policy, info: EMPTY_INFO };
  const store = new GateStore(sql);
  const outboxStore = new OutboxStore(sql);
  store.saveMeta(meta);
  const news: string[] = [];
  const delivered: Array<{ id: string; answer: RequestPermissionResponse }> = [];
  const m = new StateMachine({
    store,
    // The outbox's rows land in the gate's own `outbox` table; sending them is the outbox's job, not tested here.
    outbox: { enqueue: (op: OutboxOp) => outboxStore.enqueue(op) } as unknown as Outbox,
    objectId: "a".repeat(64),
    tellHub: (_teamId, n) => void news.push(n.kind),
    deliver: (row: PendingRow, answer) => delivered.push({ id: row.id, answer: answer as RequestPermissionResponse }),
    // No socket here: every holder counts as heard from (gate-faults.test.ts tests the check).
    reachable: () => true,
    transaction: (work) => storage.transactionSync(work),
    quarantine: (_row, error) => {
      throw error;
    },
  });
  const open = (holder: Partial<Holder> = {}, now = 1_000, options = OPTIONS) => {
    const opened = m.open(
      meta,
      { socketId: "s1", rpcKey: "1", keyId: "k1", leaseUntil: null, ...holder },
      { sessionId: "sess", toolCall: { toolCallId: "t1", title: "ls" }, options },
      now,
    );
    if ("refused" in opened) throw new Error(opened.message);
    return opened;
  };
  const decide = (a: Approval, d: Partial<DecisionInput> = {}, now = 2_000) =>
    m.decide(
      {
        approvalId: a.id,
        teamId: "team",
        userId: "owner",
        name: "Ada",
        role: "approver",
        device: "web",
        optionId: "allow",
        requestHash: a.requestHash,
        ...d,
      },
      now,
    );
  /** The stored state of a row, read from SQLite. */
  const stateOf = (id: string) => store.row(id)?.state;
  const rowCount = () => Number(sql.exec("SELECT count(*) AS n FROM approvals").one().n);
  const recordOf = (id: string) => store.row(id)?.record;
  /** What the changes queued for D1 and the audit chain, as stored. */
  const ops = (): OutboxOp[] => outboxStore.batch(1_000, Number.POSITIVE_INFINITY, 0).map((row) => row.op);
  return { m, meta, store, ops, news, delivered, open, decide, stateOf, rowCount, recordOf };
}
type Machine = ReturnType<typeof machine>;

/** Runs `test` inside a fresh gate, over its storage. */
function onGate<T>(test: (t: Machine, sql: SqlStorage) => T | Promise<T>): Promise<T> {
  return runInDurableObject(gateStub("team", unique("sess")), (_gate, state) =>
    test(machine(state.storage), state.storage.sql),
  );
}

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" as const },
  { optionId: "deny", name: "Deny", kind: "reject_once" as const },
];

describe("the approval state machine, on the gate's SQLite store", () => {
  it("open: a pending approval in the store, its D1 row and audit event queued, the hub told", () =>
    onGate(({ open, stateOf, ops, news }) => {
      const a = open();
      expect(a.id).toMatch(/^apr_a{64}_[0-9A-Za-z]{22}$/);
      expect(stateOf(a.id)).toBe("pending");
      expect(ops().map((o) => (o.op === "audit" ? o.action : o.op))).toEqual(["approval", "approval.requested"]);
      expect(news).toEqual(["created"]);
    }));

  it("refuses another session's request and a malformed _meta.tapgate, holding nothing", () =>
    onGate(({ m, meta, rowCount }) => {
      const holder = { socketId: "s1", rpcKey: "1", keyId: "k1", leaseUntil: null };
      const toolCall = { toolCallId: "t1" };
      const other = m.open(meta, holder, { sessionId: "other", toolCall, options: OPTIONS }, 1) as Refusal;
      expect(other.refused).toBe("invalid_params");
      const badMeta = m.open(
        meta,
        holder,
        { sessionId: "sess", toolCall, options: OPTIONS, _meta: { tapgate: { timeoutMs: "soon" } } },
        1,
      ) as Refusal;
      expect(badMeta.refused).toBe("invalid_params");
      expect(rowCount()).toBe(0);
    }));

  it("a request whose every option the policy hides is denied at once (invalid)", () =>
    onGate(({ open, stateOf, delivered }) => {
      const a = open({}, 1_000, [{ optionId: "always", name: "Always", kind: "allow_always" as never }]);
      expect(stateOf(a.id)).toBe("denied");
      expect(delivered[0]?.answer._meta?.tapgate).toMatchObject({ reason: "invalid" });
    }));

  it("decide: the one resolve claims the row once; a second decision is told it was decided", () =>
    onGate(({ open, decide, delivered, ops, news, stateOf }) => {
      const a = open();
      const first = decide(a);
      expect(first).toMatchObject({ ok: true, approval: { state: "allowed", reason: "decided", resolvedAt: 2_000 } });
      expect(decide(a, { optionId: "deny" })).toMatchObject({ ok: false, error: "already_decided" });
      expect(stateOf(a.id)).toBe("allowed");
      expect(delivered).toHaveLength(1);
      expect(delivered[0]?.answer.outcome).toEqual({ outcome: "selected", optionId: "allow" });
      expect(
        ops()
          .filter((o) => o.op === "audit")
          .map((o) => o.op === "audit" && o.action),
      ).toEqual(["approval.requested", "approval.allowed"]);
      expect(news).toEqual(["created", "resolved"]);
    }));

  it("the claim is the store's: a row resolved behind the machine's back is never resolved again", () =>
    onGate(({ open, decide, delivered, ops, stateOf }, sql) => {
      const a = open();
      // Another path (an expiry in another turn, say) ended it in storage first.
      sql.exec("UPDATE approvals SET state = 'expired' WHERE id = ?", a.id);
      expect(decide(a)).toMatchObject({ ok: false });
      expect(stateOf(a.id)).toBe("expired");
      expect(delivered).toEqual([]);
      expect(
        ops()
          .filter((o) => o.op === "audit")
          .map((o) => o.op === "audit" && o.action),
      ).toEqual(["approval.requested"]);
    }));

  it("the same person repeating their decision gets the stored result and changes nothing", () =>
    onGate(({ open, decide, delivered, ops, news, recordOf }) => {
      const a = open();
      const first = decide(a, { device: "phone" });
      const before = { ops: ops().length, news: [...news], record: recordOf(a.id) };
      // Later, from another device of theirs: the same approval as the first answer, decidedBy intact.
      expect(decide(a, { device: "laptop" }, 9_000)).toEqual(first);
      expect(decide(a, { optionId: "deny" })).toMatchObject({ ok: false, error: "already_decided" });
      expect(decide(a, { userId: "bob", name: "Bob" })).toMatchObject({ ok: false, error: "already_decided" });
      expect(decide(a, { requestHash: "0".repeat(64) })).toMatchObject({ ok: false, error: "already_decided" });
      expect({ ops: ops().length, news, record: recordOf(a.id) }).toEqual(before);
      expect(delivered).toHaveLength(1);
    }));

  it("a repeat after the request ended without a human is still 'already resolved'", () =>
    onGate(({ open, decide, m }) => {
      const a = open({}, 1_000);
      m.lapseDue(a.expiresAt);
      expect(decide(a, {}, a.expiresAt + 1)).toMatchObject({ ok: false, error: "already_resolved" });
    }));

  it("a decision after the lifetime ended expires the request instead (fail closed)", () =>
    onGate(({ open, decide, delivered, stateOf }) => {
      const a = open({}, 1_000);
      const late = decide(a, {}, a.expiresAt);
      expect(late).toMatchObject({ ok: false, error: "already_resolved", approval: { state: "expired" } });
      expect(stateOf(a.id)).toBe("expired");
      expect(delivered[0]?.answer.outcome).toEqual({ outcome: "selected", optionId: "deny" });
      expect(decide(a, {}, a.expiresAt + 1)).toMatchObject({ ok: false, error: "already_resolved" });
    }));

  it("refusals leave the request pending; unknown ids and other teams are not found", () =>
    onGate(({ open, decide, stateOf }) => {
      const a = open();
      expect(decide(a, { role: "viewer" })).toEqual({ ok: false, error: "role_may_not_decide" });
      expect(decide(a, { requestHash: "0".repeat(64) })).toMatchObject({ ok: false, error: "request_changed" });
      expect(decide(a, { teamId: "other" })).toEqual({ ok: false, error: "not_found" });
      expect(decide({ ...a, id: "apr_nope" })).toEqual({ ok: false, error: "not_found" });
      expect(stateOf(a.id)).toBe("pending");
    }));

  it("lapseDue ends expired requests and lapsed leases, and nothing else", () =>
    onGate(({ m, open, stateOf }) => {
      const expiring = open({}, 1_000);
      const leased = open({ socketId: "", rpcKey: "null", leaseUntil: 5_000 }, 1_000);
      const held = open({ rpcKey: "2" }, 1_000);
      m.lapseDue(5_000);
      expect(stateOf(leased.id)).toBe("denied");
      expect(stateOf(expiring.id)).toBe("pending");
      m.lapseDue(expiring.expiresAt);
      expect(stateOf(expiring.id)).toBe("expired");
      expect(stateOf(held.id)).toBe("expired"); // same lifetime
    }));

  it("revoking a key denies its pending requests and only those", () =>
    onGate(({ m, open, stateOf, store }) => {
      const mine = open({ keyId: "k1" });
      const other = open({ keyId: "k2", rpcKey: "2" });
      expect(m.revokeKey("k1", 2_000)).toBe(1);
      expect(stateOf(mine.id)).toBe("denied");
      expect(stateOf(other.id)).toBe("pending");
      expect(store.isRevoked("k1")).toBe(true);
      expect(store.isRevoked("k2")).toBe(false);
    }));
});

describe("admission: what changed while the hub was asked", () => {
  const HOLDER = { socketId: "s1", rpcKey: "1", keyId: "k1", leaseUntil: null };
  const PARAMS = { sessionId: "sess", toolCall: { toolCallId: "t1", title: "ls" }, options: OPTIONS };

  /** The real admission over the machine, with a hub whose verdict the test gives when it likes. */
  function admission(t: Machine, session = () => t.meta, newerPolicy: AdmissionHost["newerPolicy"] = () => undefined) {
    let verdict: (v: QuotaVerdict) => void = () => undefined;
    const released: string[] = [];
    const asks: QuotaAsk[] = [];
    const hub = {
      admitRequest: (_teamId: string, ask: QuotaAsk) => {
        asks.push(ask);
        return new Promise<QuotaVerdict>((resolve) => (verdict = resolve));
      },
    };
    const a = new Admission({
      machine: t.m,
      session,
      isRevoked: (keyId) => t.store.isRevoked(keyId),
      hub: () => hub as never,
      tellHub: (_teamId, n) => void (n.kind === "released" && released.push(n.approvalId)),
      newerPolicy,
    });
    const open = (params: typeof PARAMS = PARAMS) => a.open(t.meta, HOLDER, params, 1_000);
    return { a, open, admit: (v: QuotaVerdict = { ok: true }) => verdict(v), released, asks };
  }

  it("the ask carries the request as it will be held, and a read of it waits until it is", () =>
    onGate(async (t) => {
      const { a, open, admit, asks } = admission(t);
      const opening = open();
      const card = asks[0]?.card as Approval;
      expect(card).toMatchObject({ state: "pending", expiresAt: asks[0]?.expiresAt });
      let settled = false;
      const waited = a.settled(card.id)?.then(() => {
        settled = true;
        // Held by the time the read goes on: never "not found" in between.
        expect(t.stateOf(card.id)).toBe("pending");
      });
      await Promise.resolve();
      expect(settled).toBe(false);
      admit();
      expect(await opening).toEqual(card);
      await waited;
      expect(settled).toBe(true);
      expect(a.settled(card.id)).toBeUndefined();
    }));

  it("a request nobody could decide (the policy hides every option) is not handed over to be shown", () =>
    onGate(async (t) => {
      const { open, admit, asks } = admission(t);
      const opening = open({
        ...PARAMS,
        options: [{ optionId: "always", name: "Always", kind: "allow_always" as never }],
      });
      expect(asks[0]).not.toHaveProperty("card");
      admit();
      const held = (await opening) as Approval;
      expect(t.stateOf(held.id)).toBe("denied");
    }));

  it("a key revoked during the wait is refused, holds nothing and frees its slot", () =>
    onGate(async (t) => {
      const { open, admit, released } = admission(t);
      const opening = open();
      t.store.revoke("k1", Date.now());
      admit();
      expect(await opening).toMatchObject({ refused: "key_revoked" });
      expect(t.rowCount()).toBe(0);
      expect(released).toHaveLength(1);
    }));

  it("a failure to store the request is a refusal that frees its slot, never an unanswered request", () =>
    onGate(async (t, sql) => {
      // Storage refuses the insert, as a full or failing disk would.
      sql.exec(
        "CREATE TRIGGER refuse_insert BEFORE INSERT ON approvals BEGIN SELECT RAISE(ABORT, 'storage failed'); END",
      );
      const { open, admit, released } = admission(t);
      const opening = open();
      admit();
      expect(await opening).toMatchObject({ refused: "not_held" });
      expect(t.rowCount()).toBe(0);
      expect(released).toHaveLength(1);
    }));

  it("a newer policy the gate cannot take up is a refusal that frees its slot, never a hold under the older one", () =>
    onGate(async (t) => {
      const storageFails = () => {
        throw new Error("storage failed");
      };
      const { open, admit, released } = admission(t, () => t.meta, storageFails);
      const opening = open();
      admit({ ok: true, policy: { policy: DEFAULT_POLICY, version: 2 } });
      expect(await opening).toMatchObject({ refused: "not_held" });
      expect(t.rowCount()).toBe(0);
      expect(released).toHaveLength(1);
    }));

  it("a policy changed during the wait applies to the request it holds", () =>
    onGate(async (t) => {
      const newer = { ...t.meta, policy: { ...DEFAULT_POLICY, lifetimeMs: 120_000 } };
      const { open, admit, released } = admission(t, () => newer);
      const opening = open();
      admit();
      const held = (await opening) as Approval;
      expect(held.expiresAt).toBe(1_000 + 120_000);
      expect(released).toEqual([]);
    }));
});
