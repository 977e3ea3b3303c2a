/**
 * How an ACP agent learns that nobody decided in time. An expired request is the client's
 * internal cancellation (an internal timeout), and ACP's cancellation section says the executing
 * party then MUST answer with the same `-32800` (Request Cancelled) error as for
 * `$/cancel_request`. So `tapgate acp` and `tapgate run` answer an expiry with that error (its
 * `data.tapgate` says which approval and why), never a result: no outcome, so nothing to
 * mistake for an approval. Every other end keeps its result (see docs/agent-protocol.md).
 */

import type { AgentAnswer } from "../elicitation-protocol.js";
import { rpcError } from "../jsonrpc.js";
import { tapgateAnswerMeta } from "../protocol.js";

/** JSON-RPC "Request Cancelled" (ACP `ErrorCode`). */
export const REQUEST_CANCELLED = -32800;

export const EXPIRED_MESSAGE = "Request cancelled: nobody decided on Tapgate before it expired";

/** The `-32800` error for an answer that ended `expired`, else undefined. */
export function expiredError(id: unknown, answer: AgentAnswer) {
  const meta = tapgateAnswerMeta(answer);
  return meta?.reason === "expired" ? rpcError(id, REQUEST_CANCELLED, EXPIRED_MESSAGE, { tapgate: meta }) : undefined;
}
