/**
 * Property test: random sequences of request / decide / cancel / session cancel / disconnect /
 * time passing / restart, checking the invariants of docs/state-machine.md against a model after every step.
 */
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { Approval, ApprovalState, ResolutionReason } from "../../sdk/src/approval";
import {
  type AgentSocket,
  api,
  connectAgent,
  createKey,
  decide,
  gateStub,
  json,
  type Member,
  pendingApprovals,
  permissionParams,
  settled,
  signUp,
  unique,
} from "./helpers";

type Action =
  | { kind: "request" }
  | { kind: "decide"; pick: number; option: "allow" | "deny" | "always" | "bogus"; staleHash: boolean }
  | { kind: "cancel"; pick: number }
  | { kind: "sessionCancel" }
  | { kind: "disconnect" }
  | { kind: "timePasses" }
  | { kind: "restart" };

const action: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.constant({ kind: "request" as const }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant("decide" as const),
      pick: fc.nat(),
      option: fc.constantFrom("allow" as const, "deny" as const, "always" as const, "bogus" as const),
      staleHash: fc.boolean(),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }), weight: 1 },
  { arbitrary: fc.constant({ kind: "sessionCancel" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "disconnect" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "timePasses" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "restart" as const }), weight: 1 },
);

interface Modelled {
  approval: Approval;
  rpcId: number;
  socket: AgentSocket;
  state: ApprovalState;
  reason: ResolutionReason | null;
  /** What the agent must have received, once resolved on a live socket. */
  answer: unknown;
}

const selected = (optionId: string) => ({ outcome: { outcome: "selected", optionId } });
const CANCELLED = { outcome: { outcome: "cancelled" } };

class Run {
  items: Modelled[] = [];
  socket!: AgentSocket;
  nextId = 1;
  /** Every answer each socket received, by JSON-RPC id. */
  answers = new Map<AgentSocket, Map<unknown, unknown[]>>();

  constructor(
    readonly owner: Member,
    readonly key: string,
    readonly sessionId: string,
  ) {}

  async connect() {
    this.socket = await connectAgent(this.key, this.sessionId);
    this.answers.set(this.socket, new Map());
  }

  pending(socket?: AgentSocket) {
    return this.items.filter((i) => i.state === "pending" && (!socket || i.socket === socket));
  }

  resolve(item: Modelled, state: ApprovalState, reason: ResolutionReason, answer: unknown) {
    Object.assign(item, { state, reason, answer });
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

  async step(a: Action) {
    const pick = (n: number) => this.items[n % Math.max(1, this.items.length)];
    switch (a.kind) {
      case "request": {
        const rpcId = this.nextId++;
        await this.socket.ask(rpcId, permissionParams(this.sessionId));
        const known = new Set(this.items.map((i) => i.approval.id));
        const fresh = (await pendingApprovals(this.owner, this.sessionId)).filter((p) => !known.has(p.id));
        expect(fresh).toHaveLength(1);
        this.items.push({
          approval: fresh[0] as Approval,
          rpcId,
          socket: this.socket,
          state: "pending",
          reason: null,
          answer: null,
        });
        return;
      }
      case "decide": {
        const item = pick(a.pick);
        if (!item) return;
        const hash = a.staleHash ? "f".repeat(64) : item.approval.requestHash;
        const response = await decide(this.owner, item.approval, a.option, hash);
        const offered = a.option === "allow" || a.option === "deny";
        const expected =
          item.state !== "pending" ? (item.reason === "decided" ? 409 : 410) : !offered ? 400 : a.staleHash ? 409 : 200;
        expect(response.status).toBe(expected);
        if (expected === 200)
          this.resolve(item, a.option === "allow" ? "allowed" : "denied", "decided", selected(a.option));
        return;
      }
      case "cancel": {
        const item = pick(a.pick);
        if (!item) return;
        if (item.socket !== this.socket) return; // ids are per socket: another socket's id means nothing here
        await this.socket.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: item.rpcId } });
        if (item.state === "pending") this.resolve(item, "cancelled", "agent_cancelled", CANCELLED);
        return;
      }
      case "sessionCancel":
        await this.socket.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: this.sessionId } });
        for (const item of this.pending()) this.resolve(item, "cancelled", "session_cancelled", CANCELLED);
        return;
      case "disconnect": {
        const old = this.socket;
        old.ws.close(1000, "bye");
        await old.closed;
        for (const item of this.pending(old)) {
          await settled(this.owner, item.approval.id); // the gate learns of a close on its own time
          this.resolve(item, "denied", "agent_disconnected", null);
        }
        await this.drain(old, false);
        await this.connect();
        return;
      }
      case "timePasses": {
        // Eleven minutes later: everything pending has expired, and the silent socket is closed.
        const old = this.socket;
        await runInDurableObject(gateStub(this.owner.teamId, this.sessionId), (gate) =>
          gate.sweep(Date.now() + 11 * 60_000),
        );
        for (const item of this.pending()) this.resolve(item, "expired", "expired", selected("deny"));
        expect((await old.closed).code).toBe(4000);
        await this.drain(old, false);
        await this.connect();
        return;
      }
      case "restart": {
        const old = this.socket;
        await abortAllDurableObjects();
        await old.closed;
        for (const item of this.pending()) this.resolve(item, "denied", "service_restart", null);
        await this.drain(old, false);
        await this.connect();
        return;
      }
    }
  }

  /** The invariants of docs/state-machine.md ("Invariants"), checked against the gate's own answers. */
  async check() {
    await this.drain(this.socket, true);
    for (const item of this.items) {
      const read = await json<Approval>(await api(`/v1/approvals/${item.approval.id}`, { cookie: this.owner.cookie }));
      // 1. exactly one terminal state, the one the model expects; at most one answer to the agent
      expect({ state: read.state, reason: read.reason }).toEqual({ state: item.state, reason: item.reason });
      const received = this.answers.get(item.socket)?.get(item.rpcId) ?? [];
      expect(received.length).toBeLessThanOrEqual(1);
      if (item.state === "pending") expect(received).toEqual([]);
      else if (item.answer !== null) {
        expect(received).toHaveLength(1);
        const [answer] = received as Array<{ outcome: unknown; _meta: unknown }>;
        expect(answer?.outcome).toEqual((item.answer as { outcome: unknown }).outcome);
        // ACP `_meta` on the result: which approval, and why it ended.
        expect(answer?._meta).toMatchObject({ tapgate: { approvalId: item.approval.id, reason: item.reason } });
      }
      // 2 and 3. allowed only after a human's decision naming an offered allow option; nothing fails open
      if (read.state === "allowed") expect(read).toMatchObject({ reason: "decided", optionId: "allow" });
      for (const answer of received) {
        const chosen = (answer as { outcome: { optionId?: string } }).outcome.optionId;
        if (chosen === "allow") expect(read.state).toBe("allowed");
        expect(chosen).not.toBe("always");
      }
    }
  }
}

describe("invariants under random sequences", () => {
  let owner: Member;
  let key: string;
  beforeAll(async () => {
    owner = await signUp("Prop");
    key = (await createKey(owner, "property")).key;
    // Hundreds of requests a minute on one key: lift the team's rate quota (quotas.test.ts tests it).
    const limits = { requestsPerKeyPerMinute: 6000, burstPerKey: 1000 };
    await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ limits }) });
  });

  it("hold after every step", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 12 }), async (actions) => {
        const run = new Run(owner, key, unique("prop"));
        await run.connect();
        for (const a of actions) {
          await run.step(a);
          await run.check();
        }
        // 6. whatever happened, nothing stays pending once its socket is gone
        run.socket.ws.close(1000);
        await run.socket.closed;
        for (const item of run.pending()) {
          await settled(owner, item.approval.id);
          run.resolve(item, "denied", "agent_disconnected", null);
        }
        await run.connect();
        await run.check();
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
