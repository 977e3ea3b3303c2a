import type { SessionGate } from "./session-gate";

export interface Env {
  DB: D1Database;
  SESSION_GATE: DurableObjectNamespace<SessionGate>;
  /** Local mode: mail goes to the console and `GET /v1/dev/outbox`. Never set in production. */
  DEV_OUTBOX?: string;
  /** The public origin, e.g. https://tapgate.example.com; defaults to the request's origin. */
  APP_ORIGIN?: string;
  /** HTTP mail provider (production): a JSON POST endpoint, its bearer key, the sender. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  MAIL_FROM?: string;
}

export const ROLES = ["owner", "admin", "approver", "viewer"] as const;
export type Role = (typeof ROLES)[number];

/** A signed-in human, from the session cookie. */
export interface WebIdentity {
  userId: string;
  email: string;
  name: string;
  teamId: string;
  teamName: string;
  role: Role;
  tokenHash: string;
}

/** An agent, from its API key. Agent keys can open sessions and ask; nothing else. */
export interface AgentIdentity {
  keyId: string;
  userId: string;
  teamId: string;
}

export type AppEnv = {
  Bindings: Env;
  Variables: { web: WebIdentity; agent: AgentIdentity };
};

export const APPROVAL_STATES = ["pending", "allowed", "denied", "cancelled", "expired"] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

export const RESOLUTION_REASONS = [
  "decided",
  "agent_cancelled",
  "session_cancelled",
  "agent_disconnected",
  "expired",
  "key_revoked",
  "service_restart",
  "invalid",
] as const;
export type ResolutionReason = (typeof RESOLUTION_REASONS)[number];

export interface DecidedBy {
  userId: string;
  name: string;
  /** The device or surface the decision came from, e.g. "web" or a device name. */
  device: string;
}

/** The approval as the human API returns it (DESIGN.md, "Human API"). */
export interface Approval {
  id: string;
  sessionId: string;
  state: ApprovalState;
  reason: ResolutionReason | null;
  snapshot: ApprovalSnapshot;
  options: Array<{ optionId: string; name: string; kind: string }>;
  requestHash: string;
  createdAt: number;
  expiresAt: number;
  resolvedAt: number | null;
  optionId: string | null;
  decidedBy: DecidedBy | null;
}

export interface SessionInfo {
  title: string | null;
  agent: { name: string; version?: string } | null;
  host: string | null;
  cwd: string | null;
}

export interface ApprovalSnapshot {
  toolCall: Record<string, unknown> & { toolCallId: string };
  session: SessionInfo;
  /** The request's `_meta` (policy metadata), when the agent sent one. */
  meta?: Record<string, unknown>;
}
