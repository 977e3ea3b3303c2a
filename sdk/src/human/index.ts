/**
 * The human-API contract, as `../protocol.ts` is for agents: zod schemas for every human route's
 * body and answer, the live-feed event, the team policy, roles, the push payload, the history
 * filter and the device-code status. The Worker validates with them, the PWA's client and its
 * service worker parse answers with them, and the types are inferred from them, never copied.
 * Error answers are `errorBodySchema` from `../errors.ts`.
 */
export * from "../approval.js";
export { type ErrorBody, type ErrorCode, errorBodySchema, isErrorCode } from "../errors.js";
export * from "./approvals.js";
export * from "./audit.js";
export * from "./auth.js";
export * from "./common.js";
export * from "./device-code.js";
export * from "./history.js";
export * from "./live.js";
export * from "./policy.js";
export * from "./push.js";
export * from "./roles.js";
export * from "./rules.js";
export * from "./sessions.js";
export * from "./step-up.js";
export * from "./team.js";
export * from "./webhooks.js";
