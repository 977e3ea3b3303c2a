/**
 * One session's sealing (docs/agent-protocol.md "Private requests"): in a private team, a
 * request's params sealed to the trusted devices with what this session knows (its own words,
 * the tool calls its `session/update`s described, kept here since the service is not told them).
 * `GateSession` asks it for every request, so every way in is sealed the same way.
 *
 * Owns: the session's tool-call memory and the choice standard / sealed / refused. Does not own:
 * the team's state (`team-privacy.ts`), the plaintext (`seal-params.ts`) or frames and answers
 * (`gate-session.ts`). Environment-neutral.
 */
import type { CreateElicitationParams } from "../elicitation-protocol.js";
import { isRecord } from "../jsonrpc.js";
import { type RequestPermissionRequest, toolCallUpdateSchema } from "../protocol.js";
import { withoutNullish } from "../request-snapshot.js";
import {
  type SealedElicitationParams,
  type SealedPermissionParams,
  type SealingSession,
  sealElicitation,
  sealPermissionRequest,
} from "./seal-params.js";
import type { TeamPrivacy } from "./team-privacy.js";

/** Tool calls remembered from `session/update`, for the cards of later requests (the gate keeps as many per socket). */
const TOOL_CALLS_KEPT = 256;

export type Sealing =
  /** The team is standard: send the request as it is. */
  | { standard: true }
  | { standard: false; params: SealedPermissionParams | SealedElicitationParams }
  /** Private, and it cannot be sealed (no trusted device, invalid params): answer it fail-closed here. */
  | { error: string };

export class SessionSealer {
  readonly #privacy: TeamPrivacy;
  readonly #session: SealingSession;
  readonly #ruleKey: string | undefined;
  /** `tool_call` / `tool_call_update` merged by id, as the gate merges them (worker/gate/presence.ts). */
  readonly #toolCalls = new Map<string, Record<string, unknown>>();

  constructor(privacy: TeamPrivacy, session: SealingSession, ruleKey?: string) {
    this.#privacy = privacy;
    this.#session = session;
    this.#ruleKey = ruleKey;
  }

  /** Whether the team was private when last asked: then `session/update`s and `elicitation/complete` are not sent. */
  get private(): boolean {
    return this.#privacy.known.privacy === "private";
  }

  /** Remembers what an update says of a tool call (a no-op for every other kind of update). */
  remember(update: unknown): void {
    if (!isRecord(update) || (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update"))
      return;
    const parsed = toolCallUpdateSchema.safeParse(update);
    if (!parsed.success) return;
    const { sessionUpdate: _, ...fields } = withoutNullish(parsed.data) as Record<string, unknown>;
    const id = parsed.data.toolCallId;
    const merged = { ...this.#toolCalls.get(id), ...fields };
    this.#toolCalls.delete(id);
    this.#toolCalls.set(id, merged);
    if (this.#toolCalls.size > TOOL_CALLS_KEPT) this.#toolCalls.delete(this.#toolCalls.keys().next().value as string);
  }

  /** `refresh`: the gate said the team is private, so ask the service again before deciding. */
  async seal(ask: RequestPermissionRequest | CreateElicitationParams, refresh: boolean): Promise<Sealing> {
    const state = await this.#privacy.current(refresh);
    if (state.privacy === "standard") return { standard: true };
    if (state.recipients.length === 0) {
      return { error: "the team is private and none of its devices is trusted to seal to (see the warnings above)" };
    }
    const context = {
      recipients: state.recipients,
      highRisk: state.highRisk,
      session: this.#session,
      ...(this.#ruleKey && { ruleKey: this.#ruleKey }),
    };
    const params = isElicitation(ask)
      ? await sealElicitation(ask, { ...context, knownToolCall: this.#known(ask.toolCallId) })
      : await sealPermissionRequest(ask, { ...context, knownToolCall: this.#known(toolCallIdOf(ask)) });
    return { standard: false, params };
  }

  #known(toolCallId: unknown): Record<string, unknown> | undefined {
    return typeof toolCallId === "string" ? this.#toolCalls.get(toolCallId) : undefined;
  }
}

const isElicitation = (ask: RequestPermissionRequest | CreateElicitationParams): ask is CreateElicitationParams =>
  "mode" in ask;

/** A v1 request's tool call id (a v2 request names none). */
function toolCallIdOf(params: RequestPermissionRequest): unknown {
  const toolCall = (params as { toolCall?: unknown }).toolCall;
  return isRecord(toolCall) ? toolCall.toolCallId : undefined;
}
