/** The approval as the human API returns it (docs/state-machine.md, docs/human-api.md "Approval"). */

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

/** Per-device push delivery of an approval, as `GET /v1/approvals/:id` and the live feed report it. */
export interface Delivery {
  deviceId: string;
  deviceName: string;
  userId: string;
  sentAt: number | null;
  deliveredAt: number | null;
  seenAt: number | null;
  failedAt: number | null;
}

/** The approval as the human API returns it (docs/human-api.md, "Approval"). */
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

/** An agent session as the dashboard shows it (`GET /v1/sessions` and the live feed). */
export interface AgentSession {
  sessionId: string;
  owner: { userId: string; name: string };
  title: string | null;
  agent: SessionInfo["agent"];
  host: string | null;
  cwd: string | null;
  connectedAt: number | null;
  disconnectedAt: number | null;
  lastSeenAt: number;
  pending: number;
}
