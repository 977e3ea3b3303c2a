/**
 * The ACP stdio proxy behind `tapgate acp`: sits between an editor and an agent, forwards every
 * line unchanged, and takes over the agent's `session/request_permission` and `elicitation/create`
 * requests (routed to the Tapgate session named by their `sessionId`, and in race mode also offered
 * to the editor). The one line it changes is the editor's `initialize`: the agent is told the
 * client renders the elicitation modes Tapgate renders (`ELICITATION_CAPABILITIES`) and takes
 * subagents. A subagent's requests go to its own Tapgate session, which names its parent; when
 * the agent reports the subagent's work ended, its open requests are answered `cancelled` (and
 * their cards withdrawn) before that update reaches the editor.
 */
import { randomBytes } from "node:crypto";
import { basename } from "node:path";
import type { Writable } from "node:stream";
import type { SessionMeta, Tapgate } from "../client.js";
import {
  type AgentAnswer,
  type AgentAsk,
  type CreateElicitationParams,
  createElicitationResponseSchema,
  ELICITATION_CANCELLED,
  ELICITATION_CAPABILITIES,
} from "../elicitation-protocol.js";
import { isRecord, rpcError, rpcIdKey, rpcNotification, rpcRequest, rpcResult } from "../jsonrpc.js";
import { agentOptionsOf } from "../params.js";
import { progressLine } from "../progress-line.js";
import {
  CANCELLED_ANSWER,
  failClosedAnswer,
  METHODS,
  type Progress,
  type RequestPermissionParams,
  RPC_ERROR,
  requestPermissionResponseSchema,
} from "../protocol.js";
import { expiredError } from "./expiry.js";
import { classifyLine, type Message, writeLine, writeMessage } from "./ndjson.js";
import { type GateSessions, sessionsOf } from "./sessions.js";
import { Subagents } from "./subagents.js";

export type DecideMode = "phone" | "race";

/**
 * What `tapgate acp` and `tapgate run` tell an agent the client does: render Tapgate's elicitation
 * modes, take subagents (their requests arrive under their own session ids; ACP 2.x needs no
 * capability for that, the earlier draft asked for `subagents`), and show codex-acp's `decline`
 * ("Skip, continue without it": `_meta.continueOnReject`, codex-acp's `permissions/capabilities.ts`).
 */
export const TAPGATE_CLIENT_CAPABILITIES = {
  elicitation: ELICITATION_CAPABILITIES,
  subagents: {},
  _meta: { continueOnReject: true },
};

/**
 * How long after `session/cancel` has left for the agent its pending requests are answered
 * `cancelled`. ACP orders the notification first but gives no acknowledgement of it, and an SDK
 * agent that reads both in one chunk may see the answer before its own cancel signal fires (and
 * end the turn `end_turn`); a moment between them lets it read the cancel on its own. The
 * requests are claimed at once, so nothing else can answer them meanwhile.
 */
export const CANCEL_ANSWER_GRACE_MS = 250;

export interface ProxyOptions {
  gate: Tapgate;
  decide: DecideMode;
  timeoutMs?: number;
  /** The agent's command, named on cards when the agent does not name itself. */
  command: string[];
  log: (message: string) => void;
}

interface Ask {
  /** The agent's id, echoed as it came. */
  id: unknown;
  method: typeof METHODS.requestPermission | typeof METHODS.elicitationCreate;
  params: AgentAsk;
  sessionId: unknown;
  /** Aborting withdraws the request at Tapgate (the SDK sends `$/cancel_request`). */
  gate: AbortController;
  /** The id of the copy offered to the editor (race mode), while the editor may still answer it. */
  editorId?: string;
  /** Tapgate could not be asked; only the editor can still answer. */
  gateDown?: boolean;
  done?: boolean;
}

export class AcpProxy {
  readonly #opts: ProxyOptions;
  readonly #sessions: GateSessions;
  readonly #toAgent: Writable;
  readonly #toEditor: Writable;
  /** Keyed by the agent's request id. */
  readonly #asks = new Map<string, Ask>();
  /** Offered copies by the id the proxy gave them; random, so they cannot collide with the agent's ids. */
  readonly #offered = new Map<string, Ask>();
  /** Copies the editor lost: their late answers are swallowed, never forwarded to the agent. */
  readonly #withdrawn = new Set<string>();
  readonly #offerPrefix = `tapgate-${randomBytes(12).toString("hex")}-`;
  #offers = 0;
  /** The editor's `initialize` / `session/new` calls, awaiting the agent's answer. */
  readonly #editorCalls = new Map<string, { method: string; cwd?: unknown }>();
  readonly #cwds = new Map<string, string>();
  #agentInfo: { name: string; version?: string } | undefined;
  #agentGone = false;
  readonly #subagents = new Subagents();

  constructor(toAgent: Writable, toEditor: Writable, opts: ProxyOptions) {
    this.#toAgent = toAgent;
    this.#toEditor = toEditor;
    this.#opts = opts;
    this.#sessions = sessionsOf(opts.gate);
  }

  fromAgent(line: Buffer): void {
    const msg = classifyLine(line);
    if (
      msg?.kind === "request" &&
      (msg.method === METHODS.requestPermission || msg.method === METHODS.elicitationCreate)
    ) {
      this.#intercept(msg.id, msg.method, msg.params);
      return;
    }
    if (msg?.kind === "notification" && msg.method === METHODS.elicitationComplete) this.#completed(msg.params);
    if (msg?.kind === "notification" && msg.method === METHODS.cancelRequest && this.#agentWithdrew(msg.params)) return;
    if (msg?.kind === "notification" && msg.method === METHODS.sessionUpdate) {
      this.#sessions.mirror(msg.params, (id) => this.#meta(id));
      const child = this.#subagents.observe(msg.params);
      if (child?.ended) this.#endSubagent(child.childId);
    }
    if (msg?.kind === "response") this.#observeAnswer(msg);
    writeLine(this.#toEditor, line);
  }

  fromEditor(line: Buffer): void {
    const msg = classifyLine(line);
    if (msg?.kind === "response" && this.#editorAnswered(msg)) return;
    if (msg?.kind === "request") this.#observeCall(msg);
    if (msg?.kind === "request" && msg.method === "initialize") {
      writeMessage(this.#toAgent, withClientCapabilities(msg));
      return;
    }
    if (msg?.kind === "notification" && msg.method === METHODS.sessionCancel) {
      // ACP cancellation: the session's pending requests are claimed now (no later answer, a human's
      // allow included, can reach the agent) and their cards withdrawn; the agent gets
      // `session/cancel` first and their `cancelled` answers only after it (see CANCEL_ANSWER_GRACE_MS).
      const answers = this.#cancelSession(msg.params);
      writeLine(this.#toAgent, line, () => setTimeout(answers, CANCEL_ANSWER_GRACE_MS));
      return;
    }
    writeLine(this.#toAgent, line);
  }

  /**
   * Closing the sockets (rather than withdrawing each request) is what lets the cards resolve
   * `agent_disconnected`; the offered copies are withdrawn from the editor as the answers settle.
   */
  agentExited(): void {
    this.#agentGone = true;
    this.#opts.gate.close();
  }

  #intercept(id: unknown, method: Ask["method"], params: unknown): void {
    if (this.#asks.has(rpcIdKey(id))) {
      // Two requests with one id could only ever get one answer between them: refuse the second.
      writeMessage(this.#toAgent, rpcError(id, RPC_ERROR.invalidRequest, "this id is already pending"));
      return;
    }
    const ask: Ask = {
      id,
      method,
      params: params as AgentAsk,
      sessionId: isRecord(params) ? params.sessionId : undefined,
      gate: new AbortController(),
    };
    this.#asks.set(rpcIdKey(id), ask);
    if (this.#opts.decide === "race") this.#offer(ask);
    const meta = this.#meta(String(ask.sessionId));
    const log = (_: string, message: string) => this.#opts.log(message);
    const onProgress = (progress: Progress) => this.#opts.log(progressLine(progress));
    const asked = { meta, signal: ask.gate.signal, timeoutMs: this.#opts.timeoutMs, log, onProgress };
    const answered: Promise<AgentAnswer | undefined> =
      method === METHODS.elicitationCreate
        ? this.#sessions.elicit(ask.params as CreateElicitationParams, asked)
        : this.#sessions.ask(ask.params as RequestPermissionParams, asked);
    void answered.then((answer) => this.#gateAnswered(ask, answer));
  }

  #offer(ask: Ask): void {
    ask.editorId = `${this.#offerPrefix}${++this.#offers}`;
    this.#offered.set(ask.editorId, ask);
    writeMessage(this.#toEditor, rpcRequest(ask.editorId, ask.method, ask.params));
  }

  #gateAnswered(ask: Ask, answer: AgentAnswer | undefined): void {
    if (ask.done) return;
    if (answer) this.#settle(ask, answer, "gate");
    else if (ask.editorId && !this.#agentGone) ask.gateDown = true;
    else this.#settle(ask, deniedAnswer(ask), "gate");
  }

  #editorAnswered(msg: Extract<Message, { kind: "response" }>): boolean {
    if (typeof msg.id !== "string") return false;
    if (this.#withdrawn.delete(msg.id)) return true;
    const ask = this.#offered.get(msg.id);
    if (!ask) return false;
    const answer = this.#validEditorAnswer(ask, msg);
    if (answer) {
      this.#settle(ask, answer, "editor");
      return true;
    }
    this.#offered.delete(msg.id);
    ask.editorId = undefined;
    this.#opts.log("the editor could not answer a request; Tapgate decides it alone");
    if (ask.gateDown) this.#settle(ask, deniedAnswer(ask), "gate");
    return true;
  }

  #validEditorAnswer(ask: Ask, msg: { result: unknown; error: unknown }): AgentAnswer | undefined {
    if (ask.method === METHODS.elicitationCreate) {
      const elicited = createElicitationResponseSchema.safeParse(msg.result);
      return msg.error === undefined && elicited.success ? elicited.data : undefined;
    }
    const parsed = requestPermissionResponseSchema.safeParse(msg.result);
    if (msg.error !== undefined || !parsed.success) return undefined;
    const { outcome } = parsed.data;
    if (outcome.outcome === "cancelled") return parsed.data;
    return agentOptionsOf(ask.params).some((o) => o.optionId === outcome.optionId) ? parsed.data : undefined;
  }

  /** The agent gave up on a request: the card closes, and the agent still gets its one answer. */
  #agentWithdrew(params: unknown): boolean {
    const ask = isRecord(params) ? this.#asks.get(rpcIdKey(params.requestId)) : undefined;
    if (!ask) return false;
    this.#settle(ask, cancelledAnswer(ask), "cancel");
    return true;
  }

  /** A URL-mode interaction is over: its card closes at Tapgate (which answers the request `cancel`). */
  #completed(params: unknown): void {
    if (!isRecord(params) || typeof params.elicitationId !== "string") return;
    for (const ask of this.#asks.values()) {
      const asked = ask.params as Partial<CreateElicitationParams>;
      if (asked.mode === "url" && asked.elicitationId === params.elicitationId && typeof ask.sessionId === "string") {
        this.#sessions.complete(ask.sessionId, params.elicitationId);
      }
    }
  }

  /** A subagent's work ended: its requests (and its own subagents') still open are answered `cancelled` now. */
  #endSubagent(childId: string): void {
    for (const ask of [...this.#asks.values()]) {
      if (typeof ask.sessionId !== "string") continue;
      if (ask.sessionId === childId || this.#subagents.descendsFrom(ask.sessionId, childId)) {
        this.#settle(ask, cancelledAnswer(ask), "cancel");
      }
    }
  }

  /** ACP: the client answers every pending permission request of a cancelled session `cancelled`. */
  /** Claims the session's pending requests; what it returns writes their `cancelled` answers. */
  #cancelSession(params: unknown): () => void {
    const sessionId = isRecord(params) ? params.sessionId : undefined;
    const writes = [...this.#asks.values()]
      .filter((ask) => ask.sessionId === sessionId)
      .map((ask) => this.#settle(ask, cancelledAnswer(ask), "cancel", { later: true }));
    return () => {
      for (const write of writes) write();
    };
  }

  /**
   * Exactly one answer per request; whoever did not give it is withdrawn. With `later`, the
   * request is claimed now and the answer written when the returned function is called.
   */
  #settle(ask: Ask, answer: AgentAnswer, by: "gate" | "editor" | "cancel", opts: { later?: boolean } = {}): () => void {
    ask.done = true;
    this.#asks.delete(rpcIdKey(ask.id));
    const write = () => {
      if (!this.#agentGone) writeMessage(this.#toAgent, expiredError(ask.id, answer) ?? rpcResult(ask.id, answer));
    };
    if (!opts.later) write();
    if (ask.editorId) {
      this.#offered.delete(ask.editorId);
      if (by !== "editor") this.#withdrawOffer(ask.editorId);
    }
    if (by !== "gate") ask.gate.abort();
    return opts.later ? write : () => undefined;
  }

  #withdrawOffer(editorId: string): void {
    this.#withdrawn.add(editorId);
    writeMessage(this.#toEditor, rpcNotification(METHODS.cancelRequest, { requestId: editorId }));
  }

  #observeCall(msg: Extract<Message, { kind: "request" }>): void {
    const params = isRecord(msg.params) ? msg.params : {};
    if (msg.method === "initialize" || msg.method === "session/new") {
      this.#editorCalls.set(rpcIdKey(msg.id), { method: msg.method, cwd: params.cwd });
    } else if (typeof params.sessionId === "string" && typeof params.cwd === "string") {
      this.#cwds.set(params.sessionId, params.cwd); // session/load, session/resume
    }
  }

  #observeAnswer(msg: Extract<Message, { kind: "response" }>): void {
    const call = this.#editorCalls.get(rpcIdKey(msg.id));
    if (!call) return;
    this.#editorCalls.delete(rpcIdKey(msg.id));
    if (!isRecord(msg.result)) return;
    const { agentInfo, sessionId } = msg.result;
    if (call.method === "initialize" && isRecord(agentInfo) && typeof agentInfo.name === "string" && agentInfo.name) {
      const version = typeof agentInfo.version === "string" ? agentInfo.version.slice(0, 64) : undefined;
      this.#agentInfo = { name: agentInfo.name.slice(0, 128), ...(version ? { version } : {}) };
    }
    if (call.method === "session/new" && typeof sessionId === "string" && typeof call.cwd === "string") {
      this.#cwds.set(sessionId, call.cwd);
    }
  }

  #meta(sessionId: string): SessionMeta {
    const parentId = this.#subagents.parentOf(sessionId)?.parentId;
    if (parentId === undefined) return this.#ownMeta(sessionId);
    const parentMeta = this.#ownMeta(parentId);
    const parent = this.#subagents.parentMeta(sessionId, parentMeta.title);
    // A subagent works where its parent does unless the agent said otherwise.
    return { ...this.#ownMeta(sessionId, parentMeta.cwd), ...(parent ? { parent } : {}) };
  }

  #ownMeta(sessionId: string, inheritedCwd?: string): SessionMeta {
    const agent = this.#agentInfo ?? { name: basename(this.#opts.command[0] ?? "agent").slice(0, 128) || "agent" };
    const cwd = this.#cwds.get(sessionId) ?? inheritedCwd;
    return { title: cwd ? `${agent.name} in ${basename(cwd)}` : agent.name, agent, ...(cwd ? { cwd } : {}) };
  }
}

/** The answer to a request nobody could answer: fail-closed for its kind. */
function deniedAnswer(ask: Ask): AgentAnswer {
  return ask.method === METHODS.elicitationCreate
    ? ELICITATION_CANCELLED
    : failClosedAnswer(agentOptionsOf(ask.params));
}

/** The answer to a request its asker gave up on. */
function cancelledAnswer(ask: Ask): AgentAnswer {
  return ask.method === METHODS.elicitationCreate ? ELICITATION_CANCELLED : CANCELLED_ANSWER;
}

/** The editor's `initialize` with `TAPGATE_CLIENT_CAPABILITIES` over its own (its `_meta` keys kept beside ours). */
function withClientCapabilities(msg: Extract<Message, { kind: "request" }>) {
  const params = isRecord(msg.params) ? msg.params : {};
  const capabilities = isRecord(params.clientCapabilities) ? params.clientCapabilities : {};
  const editorMeta = isRecord(capabilities._meta) ? capabilities._meta : {};
  const _meta = { ...editorMeta, ...TAPGATE_CLIENT_CAPABILITIES._meta };
  const clientCapabilities = { ...capabilities, ...TAPGATE_CLIENT_CAPABILITIES, _meta };
  return rpcRequest(msg.id, msg.method, { ...params, clientCapabilities });
}
