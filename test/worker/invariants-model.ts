/**
 * The model behind the property test (invariants.test.ts): the actions it draws, and a `Run`
 * that applies each one to the real Worker (agent socket, HTTP agent, two deciding members) and
 * to a model of what every approval must be, then checks the invariants of docs/state-machine.md
 * against the gate's own answers, the agent's answers, the D1 index and the audit log.
 */
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import fc from "fast-check";
import { expect, vi } from "vitest";
import type { Approval, ApprovalDetail, ApprovalState, ResolutionReason } from "../../sdk/src/approval";
import {
  type AgentSocket,
  api,
  connectAgent,
  flush,
  gateStub,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  settled,
} from "./helpers";
import { hubThrows, refuseTeamWrites } from "./outbox-faults";

type Option = "allow" | "deny" | "always" | "bogus";
type Device = "web" | "phone" | "laptop";

export type Action =
  | { kind: "request" }
  | { kind: "httpRequest" }
  | { kind: "decide"; pick: number; option: Option; staleHash: boolean; byColleague: boolean; device: Device }
  /** A decided request decided again: by its decider or the other member, with its option or the other. */
  | { kind: "repeat"; pick: number; sameOption: boolean; sameDecider: boolean; device: Device }
  /** A human decides an HTTP-held request while the agent's long poll waits for it. */
  | { kind: "longPoll"; pick: number; option: "allow" | "deny" }
  | { kind: "cancel"; pick: number }
  | { kind: "httpCancel"; pick: number }
  | { kind: "sessionCancel" }
  | { kind: "disconnect" }
  /** A human allows or denies a socket-held request while its agent's socket closes, in either order. */
  | { kind: "decideWhileClosing"; pick: number; option: "allow" | "deny"; closeFirst: boolean }
  | { kind: "timePasses" }
  | { kind: "restart" }
  /**
   * D1 refusing the team's writes, or the hub's `gateReport` throwing, while a human decides and
   * the gate's alarm wakes `wakes` times (as it does every 15 s for a held request); then the
   * fault lifts. Nothing may be lost: the next check finds D1 and the audit log agreeing.
   */
  | { kind: "outage"; of: "d1" | "hub"; wakes: number; decide: { pick: number; option: "allow" | "deny" } | null };

const device = fc.constantFrom<Device>("web", "phone", "laptop");

export const action: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.constant({ kind: "request" as const }), weight: 3 },
  { arbitrary: fc.constant({ kind: "httpRequest" as const }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant("decide" as const),
      pick: fc.nat(),
      option: fc.constantFrom<Option>("allow", "deny", "always", "bogus"),
      staleHash: fc.boolean(),
      byColleague: fc.boolean(),
      device,
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("repeat" as const),
      pick: fc.nat(),
      sameOption: fc.boolean(),
      sameDecider: fc.boolean(),
      device,
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant("longPoll" as const),
      pick: fc.nat(),
      option: fc.constantFrom("allow" as const, "deny" as const),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("httpCancel" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.constant({ kind: "sessionCancel" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "disconnect" as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant("decideWhileClosing" as const),
      pick: fc.nat(),
      option: fc.constantFrom("allow" as const, "deny" as const),
      closeFirst: fc.boolean(),
    }),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: "timePasses" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "restart" as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant("outage" as const),
      of: fc.constantFrom("d1" as const, "hub" as const),
      wakes: fc.integer({ min: 1, max: 15 }),
      decide: fc.option(fc.record({ pick: fc.nat(), option: fc.constantFrom("allow" as const, "deny" as const) }), {
        nil: null,
      }),
    }),
    weight: 1,
  },
);

type Outcome = { outcome: { outcome: string; optionId?: string } };
type Observed = { read: Approval; polled: { status: number; body: unknown } | null };

interface Modelled {
  approval: Pick<Approval, "id" | "requestHash">;
  /** The socket that asked, or null for an HTTP-held request. */
  socket: AgentSocket | null;
  rpcId: number | null;
  state: ApprovalState;
  reason: ResolutionReason | null;
  /** What the agent must have received once resolved (null: its socket was gone, nobody heard). */
  answer: Outcome | null;
  /** The first `200` of a decision: what every repeat of it must answer, and what the gate keeps. */
  decided: Approval | null;
  /** The first final body an HTTP poll got: every later poll must get the same. */
  finalBody: unknown;
}

const selected = (optionId: string): Outcome => ({ outcome: { outcome: "selected", optionId } });
const CANCELLED: Outcome = { outcome: { outcome: "cancelled" } };
/** The fail-closed answer for `permissionParams`' options: its first `reject_once`. */
const FAIL_CLOSED = selected("deny");
const LEASE_MS = 60_000;

/** Who a run's actors are: the session's owner (with the agent's key) and a colleague who approves. */
export interface Cast {
  owner: Member;
  colleague: Member;
  key: string;
  keyId: string;
}

const pickFrom = <T>(list: T[], n: number): T | undefined => list[n % Math.max(1, list.length)];

export class Run {
  items: Modelled[] = [];
  socket!: AgentSocket;
  nextId = 1;
  /** Every answer each socket received, by JSON-RPC id. */
  answers = new Map<AgentSocket, Map<unknown, unknown[]>>();

  constructor(
    readonly cast: Cast,
    readonly sessionId: string,
  ) {}

  get owner() {
    return this.cast.owner;
  }

  /** A new socket numbers its requests from 1 again, so ids of the sockets before it are reused. */
  async connect() {
    this.socket = await connectAgent(this.cast.key, this.sessionId);
    this.answers.set(this.socket, new Map());
    this.nextId = 1;
  }

  pending(filter: (i: Modelled) => boolean = () => true) {
    return this.items.filter((i) => i.state === "pending" && filter(i));
  }

  resolve(item: Modelled, state: ApprovalState, reason: ResolutionReason, answer: Outcome | null) {
    Object.assign(item, { state, reason, answer });
  }

  private asAgent(path: string, init: RequestInit = {}) {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${this.cast.key}`);
    if (init.body !== undefined) headers.set("Content-Type", "application/json");
    return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
  }

  private poll(item: Modelled, wait = 0) {
    return this.asAgent(`/v1/agent/approvals/${item.approval.id}?wait=${wait}`);
  }

  private waitingPolls() {
    return runInDurableObject(gateStub(this.owner.teamId, this.sessionId), (gate) => gate.http.polls.size);
  }

  private member(userId: string): Member {
    return userId === this.cast.owner.userId ? this.cast.owner : this.cast.colleague;
  }

  /** Reads every frame the socket has received so far (the barrier orders them). */
  async drain(socket: AgentSocket, open: boolean) {
    if (open) await socket.barrier();
    const byId = this.answers.get(socket) as Map<unknown, unknown[]>;
    while (socket.pending() > 0) {
      const frame = await socket.next<{ id: unknown; result?: unknown }>();
      if (!("result" in frame)) continue;
      byId.set(frame.id, [...(byId.get(frame.id) ?? []), frame.result]);
    }
  }

  /** A human's decision and the answer the model expects for it; a `200` is applied to the model. */
  private async decideAs(item: Modelled, who: Member, option: Option, staleHash: boolean, device: Device) {
    const headers: Record<string, string> = device === "web" ? {} : { "X-Tapgate-Device": device };
    const requestHash = staleHash ? "f".repeat(64) : item.approval.requestHash;
    const response = await api(`/v1/approvals/${item.approval.id}/decision`, {
      method: "POST",
      cookie: who.cookie,
      headers,
      body: JSON.stringify({ optionId: option, requestHash }),
    });
    const expected = expectedDecision(item, who.userId, option, staleHash);
    expect(response.status).toBe(expected);
    if (expected !== 200) return;
    const body = await json<Approval>(response);
    if (item.decided) {
      // 2. a repeat is answered the stored result, and changes nothing (check() sees the rest)
      expect(body).toEqual(item.decided);
      return;
    }
    expect(body).toMatchObject({ optionId: option, decidedBy: { userId: who.userId, device } });
    item.decided = body;
    this.resolve(item, option === "allow" ? "allowed" : "denied", "decided", selected(option));
  }

  /** An HTTP final body: the model's answer, and the same every time it is asked. */
  private expectFinal(item: Modelled, body: unknown) {
    expect(body).toMatchObject({
      approvalId: item.approval.id,
      state: item.state,
      reason: item.reason,
      outcome: item.answer?.outcome,
      _meta: { tapgate: { approvalId: item.approval.id, reason: item.reason } },
    });
    if (item.finalBody === undefined) item.finalBody = body;
    expect(body).toEqual(item.finalBody);
  }

  async step(a: Action) {
    switch (a.kind) {
      case "request": {
        const rpcId = this.nextId++;
        await this.socket.ask(rpcId, permissionParams(this.sessionId));
        const known = new Set(this.items.map((i) => i.approval.id));
        const fresh = (await pendingApprovals(this.owner, this.sessionId)).filter((p) => !known.has(p.id));
        expect(fresh).toHaveLength(1);
        this.items.push(newItem(fresh[0] as Approval, this.socket, rpcId));
        return;
      }
      case "httpRequest": {
        const path = `/v1/agent/sessions/${this.sessionId}/permissions`;
        const body = JSON.stringify(permissionParams(this.sessionId));
        const created = await this.asAgent(path, { method: "POST", body });
        expect(created.status).toBe(201);
        const { approvalId } = await json<{ approvalId: string }>(created);
        const read = await json<Approval>(await api(`/v1/approvals/${approvalId}`, { cookie: this.owner.cookie }));
        this.items.push(newItem(read, null, null));
        return;
      }
      case "decide": {
        const item = pickFrom(this.items, a.pick);
        if (!item) return;
        const who = a.byColleague ? this.cast.colleague : this.owner;
        await this.decideAs(item, who, a.option, a.staleHash, a.device);
        return;
      }
      case "repeat": {
        const item = pickFrom(
          this.items.filter((i) => i.decided),
          a.pick,
        );
        const first = item?.decided;
        if (!item || !first?.decidedBy || !first.optionId) return;
        const decider = this.member(first.decidedBy.userId);
        const who = a.sameDecider ? decider : decider === this.owner ? this.cast.colleague : this.owner;
        const option = a.sameOption ? first.optionId : first.optionId === "allow" ? "deny" : "allow";
        await this.decideAs(item, who, option as Option, false, a.device);
        return;
      }
      case "longPoll": {
        const item = pickFrom(
          this.pending((i) => i.socket === null),
          a.pick,
        );
        if (!item) return;
        const answered = this.poll(item, 50);
        await vi.waitFor(async () => expect(await this.waitingPolls()).toBe(1), { timeout: 20_000, interval: 5 });
        await this.decideAs(item, this.owner, a.option, false, "web");
        const response = await answered;
        expect(response.status).toBe(200);
        this.expectFinal(item, await response.json());
        expect(await this.waitingPolls()).toBe(0); // each waiter leaves exactly once
        return;
      }
      case "cancel": {
        const item = pickFrom(this.items, a.pick);
        if (!item || item.socket !== this.socket) return; // ids are per socket: another's id means nothing here
        await this.socket.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: item.rpcId } });
        if (item.state === "pending") this.resolve(item, "cancelled", "agent_cancelled", CANCELLED);
        return;
      }
      case "httpCancel": {
        const item = pickFrom(
          this.items.filter((i) => i.socket === null),
          a.pick,
        );
        if (!item) return;
        const response = await this.asAgent(`/v1/agent/approvals/${item.approval.id}`, { method: "DELETE" });
        expect(response.status).toBe(200);
        if (item.state === "pending") this.resolve(item, "cancelled", "agent_cancelled", CANCELLED);
        this.expectFinal(item, await response.json());
        return;
      }
      case "sessionCancel":
        // Every pending request of the session, the HTTP-held ones too.
        await this.socket.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: this.sessionId } });
        for (const item of this.pending()) this.resolve(item, "cancelled", "session_cancelled", CANCELLED);
        return;
      case "disconnect": {
        const old = this.socket;
        old.ws.close(1000, "bye");
        await old.closed;
        await this.endSocketHeld(old);
        await this.connect();
        return;
      }
      case "decideWhileClosing": {
        const old = this.socket;
        const item = pickFrom(
          this.pending((i) => i.socket === old),
          a.pick,
        );
        if (!item) return;
        const close = async () => {
          old.ws.close(1000, "bye");
          await old.closed;
        };
        const decision = () =>
          api(`/v1/approvals/${item.approval.id}/decision`, {
            method: "POST",
            cookie: this.owner.cookie,
            body: JSON.stringify({ optionId: a.option, requestHash: item.approval.requestHash }),
          });
        const [response] = a.closeFirst ? [await close().then(decision)] : await Promise.all([decision(), close()]);
        // Either the decision came first (200, and the agent must have its answer) or the close did
        // (410: the request ended agent_disconnected, and nobody heard): never a decision the agent missed.
        expect([200, 410]).toContain(response.status);
        if (response.status === 200) {
          item.decided = await json<Approval>(response);
          this.resolve(item, a.option === "allow" ? "allowed" : "denied", "decided", selected(a.option));
        }
        await this.endSocketHeld(old);
        await this.connect();
        return;
      }
      case "timePasses": {
        // Eleven minutes later: everything pending has expired, and the silent socket is closed.
        const old = this.socket;
        await this.sweep(Date.now() + 11 * 60_000);
        for (const item of this.pending()) this.resolve(item, "expired", "expired", FAIL_CLOSED);
        expect((await old.closed).code).toBe(4000);
        await this.drain(old, false);
        await this.connect();
        return;
      }
      case "outage": {
        const lift = a.of === "d1" ? await refuseTeamWrites(this.owner.teamId) : hubThrows();
        try {
          const item = a.decide && pickFrom(this.pending(), a.decide.pick);
          if (a.decide && item) await this.decideAs(item, this.owner, a.decide.option, false, "web");
          const gate = gateStub(this.owner.teamId, this.sessionId);
          for (let i = 0; i < a.wakes; i++) await runDurableObjectAlarm(gate);
        } finally {
          await lift();
        }
        return;
      }
      case "restart": {
        // Socket-held requests end service_restart; HTTP-held ones survive (their lease holds them).
        const old = this.socket;
        await abortAllDurableObjects();
        await old.closed;
        for (const item of this.pending((i) => i.socket !== null))
          this.resolve(item, "denied", "service_restart", null);
        await this.drain(old, false);
        await this.connect();
        return;
      }
    }
  }

  private sweep(now: number) {
    return runInDurableObject(gateStub(this.owner.teamId, this.sessionId), (gate) => gate.sweep(now));
  }

  /** A closed socket's requests end agent_disconnected, on the gate's own time; nobody hears them. */
  private async endSocketHeld(old: AgentSocket) {
    for (const item of this.pending((i) => i.socket === old)) {
      await settled(this.owner, item.approval.id);
      this.resolve(item, "denied", "agent_disconnected", null);
    }
    await this.drain(old, false);
  }

  /** 6. Whatever happened, nothing stays pending once its holder is gone: the socket closes, leases lapse. */
  async finish() {
    this.socket.ws.close(1000);
    await this.socket.closed;
    await this.endSocketHeld(this.socket);
    const held = this.pending((i) => i.socket === null);
    if (held.length > 0) {
      await this.sweep(Date.now() + LEASE_MS + 1);
      for (const item of held) this.resolve(item, "denied", "agent_disconnected", FAIL_CLOSED);
    }
    await this.connect();
    await this.check(true);
  }

  /** Each approval as the human API shows it, and for HTTP-held ones what the agent's poll answers. */
  private observeOverApi(): Promise<Observed[]> {
    return Promise.all(
      this.items.map(async (item) => {
        const path = `/v1/approvals/${item.approval.id}`;
        const {
          owner: _o,
          delivery: _d,
          escalations: _e,
          ...read
        } = await json<ApprovalDetail>(await api(path, { cookie: this.owner.cookie }));
        const polled = item.socket === null ? await this.poll(item) : null;
        return { read, polled: polled && { status: polled.status, body: await polled.json() } };
      }),
    );
  }

  /** The same, asked of the gate directly (the routes are thin; one call instead of two per item). */
  private observeInGate(): Promise<Observed[]> {
    const { teamId, userId } = this.owner;
    const caller = { teamId, userId, keyId: this.cast.keyId };
    return runInDurableObject(gateStub(teamId, this.sessionId), (gate) =>
      Promise.all(
        this.items.map(async ({ approval: { id }, socket }) => {
          const read = (await gate.getApproval(teamId, id)) as Approval;
          const polled = socket === null ? await gate.poll(caller, id, 0) : null;
          if (!polled) return { read, polled };
          if (!polled.ok) return { read, polled: { status: 404, body: polled } };
          return { read, polled: { status: polled.body.state === "pending" ? 202 : 200, body: polled.body } };
        }),
      ),
    );
  }

  /**
   * The invariants of docs/state-machine.md ("Invariants"), checked against the gate's own
   * answers: asked of the gate after every step, over the routes at the end of a run.
   */
  async check(overApi = false) {
    await this.drain(this.socket, true);
    const observed = await (overApi ? this.observeOverApi() : this.observeInGate());
    for (const [i, item] of this.items.entries()) {
      const { read, polled } = observed[i] as Observed;
      // 1. exactly one terminal state, the one the model expects; at most one answer to the agent
      expect({ state: read.state, reason: read.reason }).toEqual({ state: item.state, reason: item.reason });
      if (item.decided) expect(read).toEqual(item.decided); // the gate keeps the first decision's result
      const received = item.socket ? this.socketAnswers(item) : [];
      if (polled && item.state === "pending") expect(polled.status).toBe(202);
      else if (polled) {
        expect(polled.status).toBe(200);
        this.expectFinal(item, polled.body);
        received.push(polled.body as Outcome);
      }
      // 2 and 3. allowed only after a human's decision naming an offered allow option; nothing fails open
      if (read.state === "allowed") expect(read).toMatchObject({ reason: "decided", optionId: "allow" });
      for (const answer of received) {
        const chosen = answer.outcome.optionId;
        if (chosen === "allow") expect(read.state).toBe("allowed");
        expect(chosen).not.toBe("always");
      }
    }
    await this.checkWritten();
  }

  /** What a socket-held request's agent received: nothing while pending, its one answer after. */
  private socketAnswers(item: Modelled): Outcome[] {
    const received = (this.answers.get(item.socket as AgentSocket)?.get(item.rpcId) ?? []) as Outcome[];
    expect(received.length).toBeLessThanOrEqual(1);
    if (item.state === "pending") expect(received).toEqual([]);
    else if (item.answer !== null) {
      expect(received).toHaveLength(1);
      const [answer] = received as Array<Outcome & { _meta: unknown }>;
      expect(answer?.outcome).toEqual(item.answer.outcome);
      // ACP `_meta` on the result: which approval, and why it ended.
      expect(answer?._meta).toMatchObject({ tapgate: { approvalId: item.approval.id, reason: item.reason } });
    }
    return [...received];
  }

  /**
   * Once the outbox is flushed, D1 agrees with the gate, and the audit log holds exactly one
   * `approval.requested` and at most one resolution per request, by who ended it: a repeated
   * decision adds no event.
   */
  private async checkWritten() {
    if (this.items.length === 0) return;
    await flush(this.owner.teamId, this.sessionId);
    const ids = this.items.map((i) => i.approval.id);
    const marks = ids.map(() => "?").join(", ");
    const [index, audit] = await env.DB.batch<{ id?: string; subject?: string; [k: string]: unknown }>([
      env.DB.prepare(`SELECT id, state, reason FROM approvals WHERE id IN (${marks})`).bind(...ids),
      env.DB.prepare(
        `SELECT subject, action, actor FROM audit_log WHERE subject IN (${marks}) AND action <> 'approval.escalated' ORDER BY seq`,
      ).bind(...ids),
    ]);
    for (const item of this.items) {
      const row = index?.results.find((r) => r.id === item.approval.id);
      expect(row).toEqual({ id: item.approval.id, state: item.state, reason: item.reason });
      const events = (audit?.results ?? []).filter((r) => r.subject === item.approval.id);
      const ended = item.state === "pending" ? [] : [{ action: `approval.${item.state}`, actor: endedBy(item) }];
      expect(events.map(({ action, actor }) => ({ action, actor }))).toEqual([
        { action: "approval.requested", actor: `key:${this.cast.keyId}` },
        ...ended,
      ]);
    }
  }
}

function newItem(approval: Approval, socket: AgentSocket | null, rpcId: number | null): Modelled {
  const { id, requestHash } = approval;
  const base = { state: "pending" as const, reason: null, answer: null, decided: null, finalBody: undefined };
  return { approval: { id, requestHash }, socket, rpcId, ...base };
}

const endedBy = (item: Modelled) => (item.decided?.decidedBy ? `user:${item.decided.decidedBy.userId}` : "system");

/**
 * The status a decision must get (docs/state-machine.md, "A decision, step by step"): on a
 * decided request only its decider's same option and hash is `200` again (idempotent), else
 * `409`; after an end without a human `410`; on a pending one `400` for an unoffered option,
 * `409` for a stale hash, else `200`.
 */
export function expectedDecision(item: Modelled, userId: string, option: Option, staleHash: boolean): number {
  if (item.state !== "pending") {
    if (item.reason !== "decided") return 410;
    const repeat = item.decided?.decidedBy?.userId === userId && item.decided.optionId === option && !staleHash;
    return repeat ? 200 : 409;
  }
  if (option !== "allow" && option !== "deny") return 400;
  return staleHash ? 409 : 200;
}
