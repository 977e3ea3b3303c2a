/**
 * JSON-RPC dispatch for socket agents: one parsed message in, at most one reply out.
 *
 * Owns: method → handler, params validation, the JSON-RPC replies and error codes. Does not own:
 * framing (`sdk/src/jsonrpc.ts`), what a request does (state-machine.ts via socket-agents.ts) or the
 * session's metadata (presence.ts).
 */

import type { Approval } from "../../sdk/src/approval";
import {
  type AgentAsk,
  completeElicitationParamsSchema,
  createElicitationParamsSchema,
} from "../../sdk/src/elicitation-protocol";
import { type RpcMessage, rpcError, rpcIdKey, rpcResult } from "../../sdk/src/jsonrpc";
import {
  cancelRequestParamsSchema,
  helloParamsSchema,
  METHODS,
  RPC_ERROR,
  type RpcId,
  requestPermissionParamsSchema,
  sessionCancelParamsSchema,
  sessionUpdateParamsSchema,
} from "../../sdk/src/protocol";
import { completes } from "./elicitation";
import type { Presence } from "./presence";
import type { SocketIdentity } from "./sockets";
import type { StateMachine } from "./state-machine";
import type { GateStore } from "./store";

export interface RpcHost {
  store: GateStore;
  machine: StateMachine;
  presence: Presence;
  /** Holds a socket's permission request or elicitation once admitted; the error reply if it is refused, else null. */
  request(identity: SocketIdentity, id: RpcId, params: AgentAsk): Promise<object | null>;
}

/**
 * The reply to one message from `identity`'s socket, or null when none is due. Only a permission
 * request waits (for the team's quotas, admission.ts); everything else answers at once.
 */
export function dispatch(
  host: RpcHost,
  identity: SocketIdentity,
  m: RpcMessage,
): object | null | Promise<object | null> {
  if (m.kind === "response") return null;
  const id = m.kind === "request" ? m.id : null;
  const invalidParams = (issues: unknown) =>
    id === null ? null : rpcError(id, RPC_ERROR.invalidParams, `invalid params for ${m.method}`, { issues });
  switch (m.method) {
    case METHODS.requestPermission: {
      if (id === null) return null; // a notification cannot be answered, so it cannot be held
      const params = requestPermissionParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      return host.request(identity, id, params.data);
    }
    case METHODS.elicitationCreate: {
      if (id === null) return null; // like a permission request: only a request can be answered
      const params = createElicitationParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      return host.request(identity, id, params.data);
    }
    case METHODS.elicitationComplete: {
      // The URL-mode interaction is over: its card, if still open on this socket, closes; the agent is answered `cancel`.
      const params = completeElicitationParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      const rows = host.store
        .pendingOnSocket(identity.socketId)
        .filter((row) => completes(JSON.parse(row.record) as Approval, params.data.elicitationId));
      host.machine.resolveAll(rows, { state: "cancelled", reason: "agent_cancelled" }, Date.now());
      return id === null ? null : rpcResult(id, null);
    }
    case METHODS.hello: {
      const params = helloParamsSchema.safeParse(m.params ?? {});
      if (!params.success) return invalidParams(params.error.issues);
      host.presence.hello(params.data);
      return id === null ? null : rpcResult(id, {});
    }
    case METHODS.sessionUpdate: {
      const params = sessionUpdateParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      // Route by session: another session's tool calls never decorate this one's cards.
      if (params.data.sessionId !== host.store.meta()?.sessionId) return invalidParams("sessionId is not this session");
      host.presence.mergeToolCall(identity.socketId, params.data.update);
      return id === null ? null : rpcResult(id, null);
    }
    case METHODS.cancelRequest: {
      const params = cancelRequestParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      const rows = host.store.pendingForRpc(identity.socketId, rpcIdKey(params.data.requestId));
      host.machine.resolveAll(rows, { state: "cancelled", reason: "agent_cancelled" }, Date.now());
      return id === null ? null : rpcResult(id, null);
    }
    case METHODS.sessionCancel: {
      const params = sessionCancelParamsSchema.safeParse(m.params);
      if (!params.success) return invalidParams(params.error.issues);
      if (params.data.sessionId !== host.store.meta()?.sessionId) return invalidParams("sessionId is not this session");
      host.machine.resolveAll(host.store.pendingAll(), { state: "cancelled", reason: "session_cancelled" }, Date.now());
      return id === null ? null : rpcResult(id, null);
    }
    default:
      return id === null ? null : rpcError(id, RPC_ERROR.methodNotFound, `method not found: ${m.method}`);
  }
}
