/** Typed client for the human API. Every state change sends JSON; failures carry the server's message. */
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/browser";
import type { AgentSession, Approval, Delivery } from "../../sdk/src/approval";

export type { AgentSession, Approval, ApprovalState, Delivery, ResolutionReason } from "../../sdk/src/approval";

/** The approval plus what the card and live feed add to it. */
export type ApprovalView = Approval & {
  delivery?: Delivery[];
  ownerUserId?: string;
  /** The dashboard routes name the session's owner. */
  owner?: { userId: string; name: string };
};

/** Whose session asked: the feed says `ownerUserId`, the dashboard routes `owner`. */
export function ownerId(a: ApprovalView): string | undefined {
  return a.ownerUserId ?? a.owner?.userId;
}

export interface Me {
  user: { id: string; email: string; name: string };
  team: { id: string; name: string };
  role: string;
}

export interface Device {
  id: string;
  name: string;
  createdAt: number;
  lastSeenAt: number | null;
  current?: boolean;
}

export interface DeviceCode {
  userCode: string;
  clientName: string;
  createdAt: number;
  expiresAt: number;
  status: "pending" | "approved" | "denied" | "consumed";
}

export interface Page<T> {
  approvals: T[];
  cursor: string | null;
}

export const APPROVAL_STATES_RESOLVED = ["allowed", "denied", "cancelled", "expired"] as const;

export type Role = "owner" | "admin" | "approver" | "viewer";
export const ROLES: Role[] = ["owner", "admin", "approver", "viewer"];
/** owner > admin > approver > viewer. */
export function roleRank(role: string): number {
  const i = ROLES.indexOf(role as Role);
  return i < 0 ? 0 : ROLES.length - i;
}
export const isAdmin = (role: string | undefined) => role === "owner" || role === "admin";
export const canDecide = (role: string | undefined) => role !== "viewer";

export interface Team {
  id: string;
  name: string;
  role: Role;
}

export interface Member {
  userId: string;
  name: string;
  email: string;
  role: Role;
  joinedAt: number;
}

export interface Invite {
  id: string;
  role: Role;
  email: string | null;
  createdAt: number;
  expiresAt: number;
  createdBy: string | { userId: string; name: string } | null;
}

export interface CreatedInvite {
  id: string;
  url: string;
  role: Role;
  expiresAt: number;
}

export interface InvitePreview {
  team: { name: string };
  role: Role;
  invitedBy: { name: string };
  expiresAt: number;
}

export interface ApiKey {
  id: string;
  label: string;
  prefix: string;
  userId?: string;
  owner?: { userId: string; name: string };
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface TeamPolicy {
  lifetimeMs: number;
  onceOnlyOptions: boolean;
  notify: "session_owner" | "all_approvers";
  deciders: "any_approver" | "session_owner";
  lockScreen: "tool_title" | "generic";
}

/** A resolved request as the team history lists it. */
export type HistoryItem = ApprovalView & { latencyMs?: number | null };

export interface HistoryFilters {
  state?: string;
  reason?: string;
  member?: string;
  session?: string;
  kind?: string;
  from?: number;
  to?: number;
}

export interface AuditEntry {
  seq?: number;
  eventId: string;
  at: number;
  actor: string;
  action: string;
  subject: string | null;
  detail?: unknown;
  hash?: string;
  prevHash?: string;
}

export type AuditVerdict =
  | { ok: true; entries: number }
  | { ok: false; entries: number; brokenAt: { seq: number; eventId: string; reason: string } };

export interface Stats {
  days: Array<{ date: string; allowed: number; denied: number; cancelled: number; expired: number }>;
  latency: { p50: number | null; p90: number | null; count: number };
}

export interface PushSubscriptionBody {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The request never reached the server. */
  get offline(): boolean {
    return this.status === 0;
  }
}

let onUnauthenticated: () => void = () => {};
/** The app decides where a lapsed session goes (the sign-in screen, then back). */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

/** The name decisions are attributed to ("Allowed by Sam on Pixel 8"), once this device has one. */
let deviceName = "web";
export function setDecisionDeviceName(name: string | null): void {
  deviceName = name ?? "web";
}

async function request<T>(method: string, path: string, body?: unknown, quiet401 = false): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method === "POST" && path.endsWith("/decision")) headers["X-Tapgate-Device"] = encodeURIComponent(deviceName);
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "offline", "You're offline. Nothing was sent.");
  }
  const text = await res.text();
  const parsed = parseJson(text);
  if (res.ok) return parsed as T;
  const fields = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const code = typeof fields.error === "string" ? fields.error : `http_${res.status}`;
  const message = typeof fields.message === "string" ? fields.message : `The server answered ${res.status}.`;
  if (res.status === 401 && !quiet401) onUnauthenticated();
  throw new ApiError(res.status, code, message, fields);
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const enc = encodeURIComponent;
const get = <T>(path: string) => request<T>("GET", path);
const post = <T>(path: string, body: unknown = {}) => request<T>("POST", path, body);
const del = <T>(path: string) => request<T>("DELETE", path);
const patch = <T>(path: string, body: unknown) => request<T>("PATCH", path, body);
const put = <T>(path: string, body: unknown) => request<T>("PUT", path, body);

/** Filters as query parameters, empty ones left out (the export links use the same). */
export function historyQuery(f: HistoryFilters, extra: Record<string, string | null | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...f, ...extra })) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  return params.toString();
}

interface ChallengeOf<O> {
  challengeId: string;
  options: O;
}

export const api = {
  /** Null when signed out: callers decide whether that is an error. */
  async me(): Promise<Me | null> {
    try {
      return await request<Me>("GET", "/v1/me", undefined, true);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return null;
      throw e;
    }
  },
  signIn: (email: string) => post<{ message: string }>("/v1/auth/signin", { email }),
  signUp: (b: { email: string; name: string; team: string }) => post<{ message: string }>("/v1/auth/signup", b),
  confirmLink: (token: string) => post<{ ok: true }>("/v1/auth/link", { token }),
  signOut: () => post<{ ok: true }>("/v1/auth/signout"),

  passkeyLoginOptions: () => post<ChallengeOf<PublicKeyCredentialRequestOptionsJSON>>("/v1/auth/passkey/login/options"),
  passkeyLoginVerify: (challengeId: string, response: AuthenticationResponseJSON) =>
    post<unknown>("/v1/auth/passkey/login/verify", { challengeId, response }),
  /** Signed in: adds a passkey to me (body `{}`); signed out: passkey sign-up. */
  passkeyRegisterOptions: (signup?: { email: string; name: string; team: string }) =>
    post<ChallengeOf<PublicKeyCredentialCreationOptionsJSON>>("/v1/auth/passkey/register/options", signup ?? {}),
  passkeyRegisterVerify: (challengeId: string, response: RegistrationResponseJSON, deviceName: string) =>
    post<unknown>("/v1/auth/passkey/register/verify", { challengeId, response, deviceName }),

  approvals: (q: { state: "pending" | "resolved"; scope: "mine" | "team"; cursor?: string | null; limit?: number }) => {
    const params = new URLSearchParams({ state: q.state, scope: q.scope, limit: String(q.limit ?? 50) });
    if (q.cursor) params.set("cursor", q.cursor);
    return get<Page<ApprovalView>>(`/v1/approvals?${params}`);
  },
  approval: (id: string) => get<ApprovalView>(`/v1/approvals/${enc(id)}`),
  decide: (id: string, optionId: string, requestHash: string) =>
    post<ApprovalView>(`/v1/approvals/${enc(id)}/decision`, { optionId, requestHash }),

  pushKey: () => get<{ publicKey: string }>("/v1/push/key"),
  devices: () => get<{ devices: Device[] }>("/v1/devices"),
  addDevice: (name: string, subscription: PushSubscriptionBody) =>
    post<{ id: string; name: string; createdAt: number }>("/v1/devices", { name, subscription }),
  removeDevice: (id: string) => del<unknown>(`/v1/devices/${enc(id)}`),
  testDevice: (id: string) => post<unknown>(`/v1/devices/${enc(id)}/test`),

  createPairing: () => post<{ url: string; expiresAt: number }>("/v1/pairing"),
  claimPairing: (token: string) => post<unknown>("/v1/pairing/claim", { token }),

  teams: () => get<{ teams: Team[] }>("/v1/teams"),
  switchTeam: (teamId: string) => post<unknown>("/v1/teams/switch", { teamId }),
  createTeam: (name: string) => post<Team>("/v1/teams", { name }),

  members: () => get<{ members: Member[] }>("/v1/members"),
  changeRole: (userId: string, role: Role) => patch<unknown>(`/v1/members/${enc(userId)}`, { role }),
  removeMember: (userId: string) => del<unknown>(`/v1/members/${enc(userId)}`),
  invites: () => get<{ invites: Invite[] }>("/v1/invites"),
  createInvite: (role: Role, email?: string) => post<CreatedInvite>("/v1/invites", email ? { role, email } : { role }),
  revokeInvite: (id: string) => del<unknown>(`/v1/invites/${enc(id)}`),
  previewInvite: (token: string) =>
    request<InvitePreview>("GET", `/v1/invites/preview?token=${enc(token)}`, undefined, true),
  acceptInvite: (token: string) => post<unknown>("/v1/invites/accept", { token }),

  keys: (scope: "mine" | "team") => get<{ keys: ApiKey[] }>(`/v1/keys?scope=${scope}`),
  createKey: (label: string) =>
    post<{ id: string; key: string; prefix: string; label: string; createdAt: number }>("/v1/keys", { label }),
  revokeKey: (id: string) => del<unknown>(`/v1/keys/${enc(id)}`),

  policy: () => get<TeamPolicy>("/v1/policy"),
  setPolicy: (p: TeamPolicy) => put<TeamPolicy>("/v1/policy", p),

  sessions: (state: "connected" | "recent") => get<{ sessions: AgentSession[] }>(`/v1/sessions?state=${state}`),
  session: (id: string) => get<AgentSession & { approvals: ApprovalView[] }>(`/v1/sessions/${enc(id)}`),

  history: (f: HistoryFilters, cursor: string | null, limit = 50) =>
    get<Page<HistoryItem>>(`/v1/history?${historyQuery(f, { cursor, limit: String(limit) })}`),
  audit: (cursor: string | null, limit = 50) =>
    get<{ entries: AuditEntry[]; cursor: string | null }>(
      `/v1/audit?${historyQuery({}, { cursor, limit: String(limit) })}`,
    ),
  verifyAudit: () => get<AuditVerdict>("/v1/audit/verify"),
  stats: (days: 7 | 30) => get<Stats>(`/v1/stats?days=${days}`),

  deviceCode: (userCode: string) => get<DeviceCode>(`/v1/device/${enc(userCode)}`),
  decideDeviceCode: (userCode: string, decision: "approve" | "deny") =>
    post<DeviceCode>(`/v1/device/${enc(userCode)}/${decision}`),
};
