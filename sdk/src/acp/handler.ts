import { type ClientRequestHandlersByMethod, RequestError } from "@agentclientprotocol/sdk";
import type { LogLevel, SessionMeta, Tapgate } from "../client.js";
import { type CreateElicitationParams, ELICITATION_CANCELLED } from "../elicitation-protocol.js";
import { failClosedAnswer, type Progress, type RequestPermissionParams, tapgateAnswerMeta } from "../protocol.js";
import { EXPIRED_MESSAGE, REQUEST_CANCELLED } from "./expiry.js";
import { sessionsOf } from "./sessions.js";

/** The `session/request_permission` handler of an `@agentclientprotocol/sdk` 2.x `client()` app. */
export type AcpPermissionHandler = ClientRequestHandlersByMethod["session/request_permission"];
/** The `elicitation/create` handler of an `@agentclientprotocol/sdk` 2.x `client()` app. */
export type AcpElicitationHandler = ClientRequestHandlersByMethod["elicitation/create"];

export interface AcpPermissionHandlerOptions {
  /** What the card shows about the session; used when the handler opens it. */
  meta?: SessionMeta | ((sessionId: string) => SessionMeta);
  /** Expire requests sooner than the team's lifetime. */
  timeoutMs?: number;
  /** Default: warnings and errors to `console.warn`. */
  onLog?: (level: LogLevel, message: string) => void;
  /** Where each request stands, each time it changes (`_tapgate/progress`). */
  onProgress?: (progress: Progress) => void;
}

/**
 * Routes each permission request to the Tapgate session named by its `sessionId` (one per ACP
 * session, shared by every handler of this gate) and honours the request's cancellation signal
 * (the agent's `$/cancel_request`, or the connection closing), which withdraws the card.
 * Without an answer from a human it resolves to the fail-closed answer; an expired request is
 * the one exception: it throws ACP's `-32800` Request Cancelled error (see `expiry.ts`).
 *
 * @example
 * acp.client().onRequest("session/request_permission", acpPermissionHandler(gate)).connect(stream)
 */
export function acpPermissionHandler(gate: Tapgate, options: AcpPermissionHandlerOptions = {}): AcpPermissionHandler {
  const sessions = sessionsOf(gate);
  const { log, metaOf } = resolved(options);
  return async ({ params, signal }) => {
    const asked = params as RequestPermissionParams;
    const answer = await sessions.ask(asked, {
      meta: metaOf(asked.sessionId) ?? {},
      signal,
      timeoutMs: options.timeoutMs,
      log,
      onProgress: options.onProgress,
    });
    const meta = answer && tapgateAnswerMeta(answer);
    if (meta?.reason === "expired") throw new RequestError(REQUEST_CANCELLED, EXPIRED_MESSAGE, { tapgate: meta });
    return answer ?? failClosedAnswer(asked.options);
  };
}

/**
 * Routes each elicitation (`elicitation/create`: a form, or a URL to open) to the Tapgate session
 * named by its `sessionId`, like `acpPermissionHandler`. Advertise it to the agent with
 * `clientCapabilities.elicitation: ELICITATION_CAPABILITIES`. Never throws: without a human's
 * answer it resolves to `{action: "cancel"}`. Request-scoped elicitations (no `sessionId`) and
 * schemas Tapgate does not render are answered `cancel` without asking.
 *
 * @example
 * acp.client().onRequest("elicitation/create", acpElicitationHandler(gate)).connect(stream)
 */
export function acpElicitationHandler(gate: Tapgate, options: AcpPermissionHandlerOptions = {}): AcpElicitationHandler {
  const sessions = sessionsOf(gate);
  const { log, metaOf } = resolved(options);
  return async ({ params, signal }) => {
    const asked = params as CreateElicitationParams;
    const meta = typeof asked.sessionId === "string" ? (metaOf(asked.sessionId) ?? {}) : {};
    return (
      (await sessions.elicit(asked, {
        meta,
        signal,
        timeoutMs: options.timeoutMs,
        log,
        onProgress: options.onProgress,
      })) ?? ELICITATION_CANCELLED
    );
  };
}

function resolved(options: AcpPermissionHandlerOptions) {
  const log =
    options.onLog ?? ((level: LogLevel, message: string) => level !== "debug" && console.warn(`[tapgate] ${message}`));
  const metaOf = typeof options.meta === "function" ? options.meta : () => options.meta as SessionMeta;
  return { log, metaOf };
}
