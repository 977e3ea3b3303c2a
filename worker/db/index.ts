/**
 * All D1 access. Every function that reads or changes a team's rows takes the team id from
 * authentication as a parameter; nothing here trusts a team id from a request body.
 */

export * from "./approvals";
export * from "./audit";
export * from "./channels";
export * from "./device-codes";
export * from "./device-keys";
export * from "./devices";
export * from "./history";
export * from "./keys";
export * from "./oversight";
export * from "./passkeys";
export * from "./people";
export * from "./rate-limits";
export * from "./retention";
export * from "./rules";
export * from "./sessions";
export * from "./step-up";
export * from "./teams";
export * from "./web-sessions";
export * from "./webhooks";
