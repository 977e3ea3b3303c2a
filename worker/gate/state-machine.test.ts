/**
 * The state machine over an in-memory store: the transitions out of `pending`, each exactly once,
 * with what every exit writes (answer, outbox rows, hub news). Runs under plain Node.
 */
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { RequestPermissionResponse } from "../../sdk/src/protocol";
import type { OutboxOp } from "../db";
import { DEFAULT_POLICY } from "../policy";
import { Admission } from "./admission";
import type { DecisionInput } from "./api";
import type { QuotaAsk, QuotaVerdict } from "./hub";
import type { Outbox } from "./outbox";
import { EMPTY_INFO } from "./rules";
import { type Refusal, StateMachine } from "./state-machine";
import type { GateStore, Holder, PendingRow, ServedSession, StoredRow } from "./store";

/** Just the store methods the state machine uses, over a Map. */
function memoryStore(meta: ServedSession) {
  const rows = new Map<string, StoredRow & { expires_at: number }>();
  const revoked = new Set<string>();
  const stepUps = new Map<string, unknown[]>();
  const pending = (keep: (r: StoredRow & { expires_at: number }) => boolean) =>
    [...rows.values()].filter((r) => r.state === "pending" && keep(r)).sort((a, b) => a.expires_at - b.expires_at);
  const store = {
    meta: () => meta,
    pendingCount: () => pending(() => true).length,
    toolCall: () => ({}),
    insertPending(approval: Approval, holder: Holder, agentOptions: unknown) {
      rows.set(approval.id, {
        id: approval.id,
        rpc_id: holder.rpcKey,
        socket_id: holder.socketId,
        key_id: holder.keyId,
        lease_until: holder.leaseUntil,
        expires_at: approval.expiresAt,
        agent_options: JSON.stringify(agentOptions),
        record: JSON.stringify(approval),
        answer: null,
        state: "pending",
      });
    },
    resolve(id: string, state: string, approval: Approval, answer: unknown) {
      const row = rows.get(id);
      if (row?.state !== "pending") return null;
      row.state = state;
      row.record = JSON.stringify(approval);
      row.answer = JSON.stringify(answer);
      return stepUps.get(id) ?? [];
    },
    row: (id: string) => (rows.has(id) ? { ...(rows.get(id) as StoredRow) } : null),
    pendingById: (id: string) => pending((r) => r.id === id)[0],
    pendingExpiredBy: (now: number) => pending((r) => r.expires_at <= now),
    pendingLeaseLapsedBy: (now: number) => pending((r) => r.lease_until !== null && r.lease_until <= now),
    pendingOfKey: (keyId: string) => pending((r) => r.key_id === keyId),
    revoke: (keyId: string) => revoked.add(keyId),
    isRevoked: (keyId: string) => revoked.has(keyId),
    addStepUp(id: string, stepUp: unknown, record?: Approval) {
      stepUps.set(id, [...(stepUps.get(id) ?? []), stepUp]);
      if (record) (rows.get(id) as StoredRow).record = JSON.stringify(record);
    },
    stepUps: (id: string) => stepUps.get(id) ?? [],
  };
  return { store: store as unknown as GateStore, rows, revoked };
}

function machine(policy = DEFAULT_POLICY) {
  const meta: ServedSession = { teamId: "team", sessionId: "sess", ownerUserId: "owner", policy, info: EMPTY_INFO };
  const { store, rows, revoked } = memoryStore(meta);
  const ops: OutboxOp[] = [];
  const news: string[] = [];
  const delivered: Array<{ id: string; answer: RequestPermissionResponse }> = [];
  const m = new StateMachine({
    store,
    outbox: { enqueue: (op: OutboxOp) => ops.push(op) } as unknown as Outbox,
    objectId: "a".repeat(64),
    tellHub: (_teamId, n) => void news.push(n.kind),
    deliver: (row: PendingRow, answer) => delivered.push({ id: row.id, answer: answer as RequestPermissionResponse }),
    reachable: () => true,
    transaction: (work) => work(),
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
  return { m, meta, store, rows, revoked, ops, news, delivered, open, decide };
}

const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" as const },
  { optionId: "deny", name: "Deny", kind: "reject_once" as const },
];

describe("the approval state machine", () => {
  it("open: a pending approval in the store, its D1 row and audit event queued, the hub told", () => {
    const { open, rows, ops, news } = machine();
    const a = open();
    expect(a.id).toMatch(/^apr_a{64}_[0-9A-Za-z]{22}$/);
    expect(rows.get(a.id)?.state).toBe("pending");
    expect(ops.map((o) => (o.op === "audit" ? o.action : o.op))).toEqual(["approval", "approval.requested"]);
    expect(news).toEqual(["created"]);
  });

  it("refuses another session's request and a malformed _meta.tapgate, holding nothing", () => {
    const { m, meta, rows } = machine();
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
    expect(rows.size).toBe(0);
  });

  it("a request whose every option the policy hides is denied at once (invalid)", () => {
    const { open, rows, delivered } = machine();
    const a = open({}, 1_000, [{ optionId: "always", name: "Always", kind: "allow_always" as never }]);
    expect(rows.get(a.id)?.state).toBe("denied");
    expect(delivered[0]?.answer._meta?.tapgate).toMatchObject({ reason: "invalid" });
  });

  it("decide: the one resolve claims the row once; a second decision is told it was decided", () => {
    const { open, decide, delivered, ops, news } = machine();
    const a = open();
    const first = decide(a);
    expect(first).toMatchObject({ ok: true, approval: { state: "allowed", reason: "decided", resolvedAt: 2_000 } });
    expect(decide(a, { optionId: "deny" })).toMatchObject({ ok: false, error: "already_decided" });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.answer.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    expect(ops.filter((o) => o.op === "audit").map((o) => o.op === "audit" && o.action)).toEqual([
      "approval.requested",
      "approval.allowed",
    ]);
    expect(news).toEqual(["created", "resolved"]);
  });

  it("the same person repeating their decision gets the stored result and changes nothing", () => {
    const { open, decide, delivered, ops, news, rows } = machine();
    const a = open();
    const first = decide(a, { device: "phone" });
    const before = { ops: ops.length, news: [...news], record: rows.get(a.id)?.record };
    // Later, from another device of theirs: the same approval as the first answer, decidedBy intact.
    expect(decide(a, { device: "laptop" }, 9_000)).toEqual(first);
    expect(decide(a, { optionId: "deny" })).toMatchObject({ ok: false, error: "already_decided" });
    expect(decide(a, { userId: "bob", name: "Bob" })).toMatchObject({ ok: false, error: "already_decided" });
    expect(decide(a, { requestHash: "0".repeat(64) })).toMatchObject({ ok: false, error: "already_decided" });
    expect({ ops: ops.length, news, record: rows.get(a.id)?.record }).toEqual(before);
    expect(delivered).toHaveLength(1);
  });

  it("a repeat after the request ended without a human is still 'already resolved'", () => {
    const { open, decide, m } = machine();
    const a = open({}, 1_000);
    m.lapseDue(a.expiresAt);
    expect(decide(a, {}, a.expiresAt + 1)).toMatchObject({ ok: false, error: "already_resolved" });
  });

  it("a decision after the lifetime ended expires the request instead (fail closed)", () => {
    const { open, decide, delivered } = machine();
    const a = open({}, 1_000);
    const late = decide(a, {}, a.expiresAt);
    expect(late).toMatchObject({ ok: false, error: "already_resolved", approval: { state: "expired" } });
    expect(delivered[0]?.answer.outcome).toEqual({ outcome: "selected", optionId: "deny" });
    expect(decide(a, {}, a.expiresAt + 1)).toMatchObject({ ok: false, error: "already_resolved" });
  });

  it("refusals leave the request pending; unknown ids and other teams are not found", () => {
    const { open, decide, rows } = machine();
    const a = open();
    expect(decide(a, { role: "viewer" })).toEqual({ ok: false, error: "role_may_not_decide" });
    expect(decide(a, { requestHash: "0".repeat(64) })).toMatchObject({ ok: false, error: "request_changed" });
    expect(decide(a, { teamId: "other" })).toEqual({ ok: false, error: "not_found" });
    expect(decide({ ...a, id: "apr_nope" })).toEqual({ ok: false, error: "not_found" });
    expect(rows.get(a.id)?.state).toBe("pending");
  });

  it("lapseDue ends expired requests and lapsed leases, and nothing else", () => {
    const { m, open, rows } = machine();
    const expiring = open({}, 1_000);
    const leased = open({ socketId: "", rpcKey: "null", leaseUntil: 5_000 }, 1_000);
    const held = open({ rpcKey: "2" }, 1_000);
    m.lapseDue(5_000);
    expect(rows.get(leased.id)?.state).toBe("denied");
    expect(rows.get(expiring.id)?.state).toBe("pending");
    m.lapseDue(expiring.expiresAt);
    expect(rows.get(expiring.id)?.state).toBe("expired");
    expect(rows.get(held.id)?.state).toBe("expired"); // same lifetime
  });

  it("revoking a key denies its pending requests and only those", () => {
    const { m, open, rows } = machine();
    const mine = open({ keyId: "k1" });
    const other = open({ keyId: "k2", rpcKey: "2" });
    expect(m.revokeKey("k1", 2_000)).toBe(1);
    expect(rows.get(mine.id)?.state).toBe("denied");
    expect(rows.get(other.id)?.state).toBe("pending");
  });
});

describe("admission: what changed while the hub was asked", () => {
  const HOLDER = { socketId: "s1", rpcKey: "1", keyId: "k1", leaseUntil: null };
  const PARAMS = { sessionId: "sess", toolCall: { toolCallId: "t1", title: "ls" }, options: OPTIONS };

  /** The real admission over the machine, with a hub whose verdict the test gives when it likes. */
  function admission(t: ReturnType<typeof machine>, session = () => t.meta) {
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
      isRevoked: (keyId) => t.revoked.has(keyId),
      hub: () => hub as never,
      tellHub: (_teamId, n) => void (n.kind === "released" && released.push(n.approvalId)),
    });
    const open = (params: typeof PARAMS = PARAMS) => a.open(t.meta, HOLDER, params, 1_000);
    return { a, open, admit: () => verdict({ ok: true }), released, asks };
  }

  it("the ask carries the request as it will be held, and a read of it waits until it is", async () => {
    const t = machine();
    const { a, open, admit, asks } = admission(t);
    const opening = open();
    const card = asks[0]?.card as Approval;
    expect(card).toMatchObject({ state: "pending", expiresAt: asks[0]?.expiresAt });
    let settled = false;
    const waited = a.settled(card.id)?.then(() => {
      settled = true;
      // Held by the time the read goes on: never "not found" in between.
      expect(t.rows.get(card.id)?.state).toBe("pending");
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    admit();
    expect(await opening).toEqual(card);
    await waited;
    expect(settled).toBe(true);
    expect(a.settled(card.id)).toBeUndefined();
  });

  it("a request nobody could decide (the policy hides every option) is not handed over to be shown", async () => {
    const t = machine();
    const { open, admit, asks } = admission(t);
    const opening = open({
      ...PARAMS,
      options: [{ optionId: "always", name: "Always", kind: "allow_always" as never }],
    });
    expect(asks[0]).not.toHaveProperty("card");
    admit();
    const held = (await opening) as Approval;
    expect(t.rows.get(held.id)?.state).toBe("denied");
  });

  it("a key revoked during the wait is refused, holds nothing and frees its slot", async () => {
    const t = machine();
    const { open, admit, released } = admission(t);
    const opening = open();
    t.revoked.add("k1");
    admit();
    expect(await opening).toMatchObject({ refused: "key_revoked" });
    expect(t.rows.size).toBe(0);
    expect(released).toHaveLength(1);
  });

  it("a failure to store the request is a refusal that frees its slot, never an unanswered request", async () => {
    const t = machine();
    (t.store as unknown as { insertPending: () => void }).insertPending = () => {
      throw new Error("storage failed");
    };
    const { open, admit, released } = admission(t);
    const opening = open();
    admit();
    expect(await opening).toMatchObject({ refused: "not_held" });
    expect(released).toHaveLength(1);
  });

  it("a policy changed during the wait applies to the request it holds", async () => {
    const t = machine();
    const newer = { ...t.meta, policy: { ...DEFAULT_POLICY, lifetimeMs: 120_000 } };
    const { open, admit, released } = admission(t, () => newer);
    const opening = open();
    admit();
    const held = (await opening) as Approval;
    expect(held.expiresAt).toBe(1_000 + 120_000);
    expect(released).toEqual([]);
  });
});
