export {
  type AcpElicitationHandler,
  type AcpPermissionHandler,
  type AcpPermissionHandlerOptions,
  acpElicitationHandler,
  acpPermissionHandler,
} from "./acp/handler.js";
export {
  type GateSession,
  type LogLevel,
  type RequestPermissionOptions,
  type SessionMeta,
  type SessionState,
  Tapgate,
  TapgateError,
  type TapgateErrorCode,
  type TapgateOptions,
} from "./client.js";
export {
  type CreateElicitationParams,
  type CreateElicitationResponse,
  createElicitationParamsSchema,
  createElicitationResponseSchema,
  ELICITATION_CANCELLED,
  ELICITATION_CAPABILITIES,
} from "./elicitation-protocol.js";
export { fileKnownApprovers } from "./private/node-known-approvers.js";
export {
  fetchRecipients,
  type KnownApprovers,
  type RefusedRecipient,
  refusalWarning,
  type TrustedRecipients,
  trustRecipients,
} from "./private/recipients.js";
export {
  type SealedElicitationParams,
  type SealedPermissionParams,
  type SealingContext,
  type SealingSession,
  sealElicitation,
  sealPermissionRequest,
} from "./private/seal-params.js";
export { progressLine } from "./progress-line.js";
export {
  failClosedAnswer,
  HEARTBEAT_INTERVAL_MS,
  type HelloParams,
  LIMITS,
  METHODS,
  type PermissionOption,
  type PermissionOptionKind,
  type Progress,
  permissionOptionSchema,
  progressParamsSchema,
  type RequestPermissionParams,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  requestPermissionParamsSchema,
  requestPermissionResponseSchema,
  type SessionUpdateParams,
  sessionIdSchema,
  sessionUpdateParamsSchema,
  type TapgateAnswerMeta,
  type ToolCallUpdate,
  tapgateAnswerMeta,
  tapgateAnswerMetaSchema,
  toolCallUpdateSchema,
} from "./protocol.js";
