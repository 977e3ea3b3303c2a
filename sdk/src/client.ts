/**
 * The Tapgate agent SDK's entry point: `new Tapgate()` reads the URL and key, and `session()`
 * opens one `GateSession` per agent session, which relays ACP `session/request_permission` to the
 * gate over one WebSocket and answers the agent fail-closed on every path that is not a human
 * decision.
 *
 * Owns the options, the session metadata sent in the hello, and the set of open sessions (so
 * `close()` closes them all). Does not own requests (`gate-session.ts`) or sockets
 * (`connection.ts`).
 */
import { hostname } from "node:os";
import { type LogLevel, toWebSocketBase } from "./connection.js";
import { GateSession } from "./gate-session.js";
import { describeIssues } from "./params.js";
import { fileKnownApprovers } from "./private/node-known-approvers.js";
import type { KnownApprovers } from "./private/recipients.js";
import { TeamPrivacy } from "./private/team-privacy.js";
import { type HelloParams, helloParamsSchema, type SessionParent, sessionIdSchema } from "./protocol.js";
import { TapgateError } from "./tapgate-error.js";

export type { LogLevel, SessionState } from "./connection.js";
export { GateSession, type RequestPermissionOptions } from "./gate-session.js";
export { TapgateError, type TapgateErrorCode } from "./tapgate-error.js";

export interface TapgateOptions {
  /** Default: env `TAPGATE_URL`, else `http://localhost:8787`. */
  url?: string;
  /** Default: env `TAPGATE_API_KEY`. */
  apiKey?: string;
  /** Default 10 000. */
  connectTimeoutMs?: number;
  /** Consecutive failed reconnects after which a session closes for good. Default 20 (about two minutes). */
  maxReconnectAttempts?: number;
  /** Never receives tool arguments or the API key. Default: warnings and errors to `console.warn`. */
  onLog?: (level: LogLevel, message: string) => void;
  /**
   * The team's rule key (private mode: a rule made from a private card matches its keyed
   * fingerprint). Default: env `TAPGATE_RULE_KEY`; without one, no rule can be made from a private card.
   */
  ruleKey?: string;
  /**
   * Where each approver's passkey is pinned on first use (private mode). Default: the file
   * `$XDG_CONFIG_HOME/tapgate/known-approvers.json`, which `tapgate trust` edits.
   */
  knownApprovers?: KnownApprovers;
}

export interface SessionMeta {
  title?: string;
  agent?: { name: string; version?: string };
  /** Default `os.hostname()`. */
  host?: string;
  /** Default `process.cwd()`. */
  cwd?: string;
  /** A subagent's session: its parent session, and what the parent calls it. */
  parent?: SessionParent;
}

export class Tapgate {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #options: TapgateOptions;
  readonly #sessions = new Set<GateSession>();

  constructor(options: TapgateOptions = {}) {
    this.url = options.url ?? process.env.TAPGATE_URL ?? "http://localhost:8787";
    toWebSocketBase(this.url); // a bad URL should fail here, not on the first session
    this.#apiKey = options.apiKey || process.env.TAPGATE_API_KEY || undefined;
    this.#options = options;
  }

  /** Opens (or rejoins) a gate session; resolves once its socket is open. */
  async session(sessionId: string, meta: SessionMeta = {}): Promise<GateSession> {
    if (!sessionIdSchema.safeParse(sessionId).success) {
      throw new TypeError(
        `invalid session id ${JSON.stringify(String(sessionId).slice(0, 140))}: use 1-128 of [A-Za-z0-9._:-]`,
      );
    }
    if (!this.#apiKey) throw new TapgateError("no_api_key", "no API key: set TAPGATE_API_KEY or run `tapgate login`");
    const log = this.#options.onLog ?? defaultLog;
    const connectTimeoutMs = this.#options.connectTimeoutMs ?? 10_000;
    const privacy = new TeamPrivacy({
      baseUrl: this.url.replace(/\/+$/, ""),
      apiKey: this.#apiKey,
      known: this.#options.knownApprovers ?? fileKnownApprovers(),
      timeoutMs: connectTimeoutMs,
      log,
    });
    // The hello depends on it: a private team's service is not told the title or the working directory.
    await privacy.current();
    const hello = buildHello(meta);
    const ruleKey = this.#options.ruleKey ?? (process.env.TAPGATE_RULE_KEY || undefined);
    const session = new GateSession(sessionId, {
      sessionId,
      baseUrl: this.url,
      target: `${toWebSocketBase(this.url)}/v1/agent/sessions/${encodeURIComponent(sessionId)}`,
      apiKey: this.#apiKey,
      connectTimeoutMs,
      maxReconnectAttempts: this.#options.maxReconnectAttempts ?? 20,
      hello: () => (privacy.known.privacy === "private" ? privateHello(hello) : hello),
      log,
      onClosed: (s) => this.#sessions.delete(s),
      privacy,
      sessionInfo: hello,
      ...(ruleKey && { ruleKey }),
    });
    this.#sessions.add(session); // so that gate.close() also aborts a session still connecting
    await session.open();
    return session;
  }

  close(): void {
    for (const session of [...this.#sessions]) session.close();
  }
}

function buildHello(meta: SessionMeta): HelloParams {
  const parsed = helloParamsSchema.safeParse({
    ...(meta.title === undefined ? {} : { title: meta.title.slice(0, 256) }),
    ...(meta.agent === undefined ? {} : { agent: meta.agent }),
    host: (meta.host ?? hostname()).slice(0, 256),
    cwd: (meta.cwd ?? process.cwd()).slice(0, 4096),
    ...(meta.parent === undefined ? {} : { parent: parentWithin(meta.parent) }),
  });
  if (!parsed.success) throw new TypeError(`invalid session metadata: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * What a private team's service is told of a session: who runs it and where, never its title,
 * directory or a parent's title and task (a title is often the prompt, a directory names the
 * project). The cards get them from each request's sealed plaintext instead.
 */
function privateHello({ title: _title, cwd: _cwd, parent, ...hello }: HelloParams): HelloParams {
  if (!parent) return hello;
  return { ...hello, parent: { sessionId: parent.sessionId, ...(parent.name && { name: parent.name }) } };
}

/** An agent's names for its subagent, cut to what the hello takes rather than refused. */
function parentWithin(parent: SessionParent): SessionParent {
  return {
    sessionId: parent.sessionId,
    ...(parent.title === undefined ? {} : { title: parent.title.slice(0, 256) }),
    ...(parent.name === undefined ? {} : { name: parent.name.slice(0, 128) }),
    ...(parent.task === undefined ? {} : { task: parent.task.slice(0, 512) }),
  };
}

function defaultLog(level: LogLevel, message: string): void {
  if (level === "warn" || level === "error") console.warn(`[tapgate] ${message}`);
}
