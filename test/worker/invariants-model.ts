/**
 * The model behind the property test (invariants.test.ts): a `Run` that applies each action to
 * the real Worker (agent socket, HTTP agent, two deciding members with passkeys) and to a model
 * of what every approval must be. This file owns the model's state, the decision plumbing and
 * the core actions (requests, decisions, cancels, disconnects, time, restarts, outages); the
 * newer features' actions are in invariants-features.ts, what a decision must get in invariants-expect.ts,
 * the checks in invariants-checks.ts.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { expect, vi } from "vitest";
import type { Approval, ApprovalState, ResolutionReason } from "../../sdk/src/approval";
import { withDeadline } from "../../worker/deadline";
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
import type { Action, Device } from "./invariants-actions";
import {
  type Answer,
  allows,
  answerOf,
  type Choice,
  cancelled,
  decisionBody,
  expectedDecision,
  failClosed,
  type Modelled,
  pickFrom,
  repeatOf,
  selected,
} from "./invariants-expect";
import { hubThrows, refuseTeamWrites } from "./outbox-faults";
import type { Approver } from "./team-helpers";

/** A standing rule the run made, and the tick its end was answered `200` (null: live). */
export interface ModelRule {
  id: string;
  endedAt: number | null;
}

const LEASE_MS = 60_000;

/** Who a run's actors are: the session's owner (with the agent's key) and a colleague who approves. */
export interface Cast {
  owner: Approver;
  colleague: Approver;
  key: string;
  keyId: string;
  /** The team's `highRiskQuorum`. */
  quorum: 1 | 2;
}

/** How long the runtime gets to close an agent's socket after `abortAllDurableObjects`. */
const ABORT_CLOSE_MS = 10_000;

/**
 * Waits for the runtime to close `socket` after the abort. After one sequence (a revocation that
 * the hub's alarm fanned out to the gate, then a hub outage: the regression "a restart after…")
 * the test runtime's abort leaves it open with no gate holding it (the gate's next instance
 * lists no socket; the runtime's auto-response still answers its pings), so then the agent
 * closes it, as it would a socket that stopped carrying answers.
 */
async function closedAfterAbort(socket: AgentSocket): Promise<void> {
  await withDeadline(socket.closed, ABORT_CLOSE_MS, "the socket's close").catch(() => socket.ws.close(1000));
}

export class Run {
  items: Modelled[] = [];
  rules: ModelRule[] = [];
  /** Revoked keys, by the tick their revocation was answered `200`. */
  revoked = new Map<string, number>();
  /** Advances once per action: orders answers and the requests that came after them. */
  tick = 0;
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

  liveRules() {
    return this.rules.filter((r) => r.endedAt === null);
  }

  resolve(item: Modelled, state: ApprovalState, reason: ResolutionReason, answer: Answer | null) {
    Object.assign(item, { state, reason, answer });
  }

  asAgent(path: string, init: RequestInit = {}, key = this.cast.key) {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${key}`);
    if (init.body !== undefined) headers.set("Content-Type", "application/json");
    return SELF.fetch(`${ORIGIN}${path}`, { ...init, headers });
  }

  poll(item: Modelled, wait = 0) {
    return this.asAgent(`/v1/agent/approvals/${item.approval.id}?wait=${wait}`);
  }

  private waitingPolls() {
    return runInDurableObject(gateStub(this.owner.teamId, this.sessionId), (gate) => gate.http.polls.size);
  }

  member(userId: string): Approver {
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

  /**
   * Takes in the one request the agent just asked: pending, or already allowed by one of the
   * run's live rules (a rule may also miss it: the hub's copy hands out nothing once 30 s old).
   */
  async adopt(socket: AgentSocket | null, rpcId: number | null, approvalId?: string) {
    const known = new Set(this.items.map((i) => i.approval.id));
    const pending = await pendingApprovals(this.owner, this.sessionId);
    const path = "/v1/approvals?state=resolved&limit=200";
    const { approvals: resolved } = await json<{ approvals: Approval[] }>(
      await api(path, { cookie: this.owner.cookie }),
    );
    const fresh = [...pending, ...resolved].filter(
      (a) => a.sessionId === this.sessionId && !known.has(a.id) && (approvalId === undefined || a.id === approvalId),
    );
    expect(fresh).toHaveLength(1);
    const read = fresh[0] as Approval;
    const { id, requestHash } = read;
    const high = read.risk === "high";
    const item: Modelled = {
      approval: { id, requestHash },
      type: read.type ?? "permission",
      risk: high ? "high" : "normal",
      quorum: high ? this.cast.quorum : 1,
      keyId: this.cast.keyId,
      askedAt: this.tick,
      socket,
      rpcId,
      ...{ state: "pending", reason: null, answer: null, decided: null, finalBody: undefined },
      allowedAt: null,
      partialAllows: [],
    };
    this.items.push(item);
    if (read.state === "pending") return item;
    // Only a live rule of the run ends a request as it arrives, and only a request it may allow.
    expect(read).toMatchObject({ state: "allowed", reason: "rule", optionId: "allow", risk: "normal" });
    expect(this.liveRules().map((r) => r.id)).toContain(read.rule?.id);
    this.resolve(item, "allowed", "rule", selected("allow"));
    item.allowedAt = this.tick;
    return item;
  }

  /** Sends one decision; expects the status the model predicts, and applies a `200` (its body, else null). */
  async decideAs(
    item: Modelled,
    who: Member,
    choice: Choice,
    o: { staleHash?: boolean; device?: Device; rule?: boolean; stepUp?: unknown } = {},
  ) {
    const device = o.device ?? "web";
    const headers: Record<string, string> = device === "web" ? {} : { "X-Tapgate-Device": device };
    const response = await api(`/v1/approvals/${item.approval.id}/decision`, {
      method: "POST",
      cookie: who.cookie,
      headers,
      body: JSON.stringify({
        ...decisionBody(item, choice, o.staleHash),
        ...(o.rule && { rule: {} }),
        stepUp: o.stepUp,
      }),
    });
    const expected = expectedDecision(item, who.userId, choice, { ...o, owner: this.owner.userId });
    expect(response.status).toBe(expected);
    if (expected !== 200) return null;
    const body = await json<Approval & { createdRule?: { id: string } }>(response);
    this.decided(item, who.userId, choice, device, body);
    return body;
  }

  /**
   * A `200` decision applied to the model: the first one decides (or, a high-risk allow short of
   * its quorum, is recorded and the request stays pending); a repeat is the stored result again.
   */
  decided(item: Modelled, userId: string, choice: Choice, device: Device, body: Approval & { createdRule?: unknown }) {
    if (item.decided) {
      expect(body).toEqual(item.decided); // a repeat is answered the stored result, and changes nothing
      return;
    }
    const allowed = allows(choice);
    if (allowed && item.partialAllows.length + 1 < item.quorum) {
      expect(body).toMatchObject({ state: "pending", quorum: { required: item.quorum } });
      expect(body.quorum?.allowedBy.map((p) => p.userId)).toEqual([...item.partialAllows, userId]);
      item.partialAllows.push(userId);
      return;
    }
    const { createdRule: _r, ...approval } = body;
    const chosen = "optionId" in choice ? { optionId: choice.optionId } : { action: choice.action };
    expect(approval).toMatchObject({ reason: "decided", decidedBy: { userId, device }, ...chosen });
    item.decided = approval;
    const answer = "optionId" in choice ? selected(choice.optionId) : answerOf(choice.action);
    this.resolve(item, allowed ? "allowed" : "denied", "decided", answer);
    if (allowed) item.allowedAt = this.tick;
  }

  async step(a: Action) {
    switch (a.kind) {
      case "request": {
        const rpcId = this.nextId++;
        await this.socket.ask(rpcId, permissionParams(this.sessionId));
        await this.adopt(this.socket, rpcId);
        return;
      }
      case "httpRequest": {
        const path = `/v1/agent/sessions/${this.sessionId}/permissions`;
        const body = JSON.stringify(permissionParams(this.sessionId));
        const created = await this.asAgent(path, { method: "POST", body });
        expect(created.status).toBe(201);
        await this.adopt(null, null, (await json<{ approvalId: string }>(created)).approvalId);
        return;
      }
      case "decide": {
        const item = pickFrom(this.items, a.pick);
        if (!item) return;
        const who = a.byColleague ? this.cast.colleague : this.owner;
        await this.decideAs(item, who, { optionId: a.option }, { staleHash: a.staleHash, device: a.device });
        return;
      }
      case "repeat": {
        const item = pickFrom(
          this.items.filter((i) => i.decided),
          a.pick,
        );
        const first = item?.decided;
        if (!item || !first?.decidedBy) return;
        const decider = this.member(first.decidedBy.userId);
        const who = a.sameDecider ? decider : decider === this.owner ? this.cast.colleague : this.owner;
        await this.decideAs(item, who, repeatOf(first, a.sameOption), { device: a.device });
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
        await this.decideAs(item, this.owner, { optionId: a.option });
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
        if (item.state === "pending") this.resolve(item, "cancelled", "agent_cancelled", cancelled(item));
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
        if (item.state === "pending") this.resolve(item, "cancelled", "agent_cancelled", cancelled(item));
        this.expectFinal(item, await response.json());
        return;
      }
      case "sessionCancel":
        // Every pending request of the session, the HTTP-held ones too.
        await this.socket.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: this.sessionId } });
        for (const item of this.pending()) this.resolve(item, "cancelled", "session_cancelled", cancelled(item));
        return;
      case "disconnect": {
        const old = this.socket;
        old.ws.close(1000, "bye");
        await old.closed;
        await this.endSocketHeld(old);
        await this.connect();
        return;
      }
      case "decideWhileClosing":
        return this.decideWhileClosing(a);
      case "timePasses": {
        // Eleven minutes later: everything pending has expired, and the silent socket is closed.
        const old = this.socket;
        await this.sweep(Date.now() + 11 * 60_000);
        for (const item of this.pending()) this.resolve(item, "expired", "expired", failClosed(item));
        expect((await old.closed).code).toBe(4000);
        await this.drain(old, false);
        await this.connect();
        return;
      }
      case "outage": {
        const lift = a.of === "d1" ? await refuseTeamWrites(this.owner.teamId) : hubThrows();
        try {
          const item = a.decide && pickFrom(this.pending(), a.decide.pick);
          if (a.decide && item) await this.decideAs(item, this.owner, { optionId: a.decide.option });
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
        await closedAfterAbort(old);
        for (const item of this.pending((i) => i.socket !== null))
          this.resolve(item, "denied", "service_restart", null);
        await this.drain(old, false);
        await this.connect();
        return;
      }
      default:
        throw new Error(`not a core action: ${a.kind}`);
    }
  }

  /** A human allows or denies a socket-held request while its agent's socket closes. */
  private async decideWhileClosing(a: Extract<Action, { kind: "decideWhileClosing" }>) {
    const old = this.socket;
    const item = pickFrom(
      this.pending((i) => i.socket === old && i.type === "permission" && i.risk === "normal"),
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
    if (response.status === 200)
      this.decided(item, this.owner.userId, { optionId: a.option }, "web", await json(response));
    await this.endSocketHeld(old);
    await this.connect();
  }

  /** An HTTP final body: the model's answer, and the same every time it is asked. */
  expectFinal(item: Modelled, body: unknown) {
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

  private sweep(now: number) {
    return runInDurableObject(gateStub(this.owner.teamId, this.sessionId), (gate) => gate.sweep(now));
  }

  /** A closed socket's requests end agent_disconnected, on the gate's own time; nobody hears them. */
  async endSocketHeld(old: AgentSocket) {
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
      for (const item of held) this.resolve(item, "denied", "agent_disconnected", failClosed(item));
    }
    await this.connect();
    await flush(this.owner.teamId, this.sessionId);
  }
}
