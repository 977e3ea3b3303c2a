/**
 * The human API's client, derived from its contract (`sdk/src/human`): every call names the
 * schema of its answer, the answer is parsed with it at runtime, and its type is the schema's.
 * No answer shape is written here; change a schema and the screens that use it stop compiling.
 * Failures carry the server's error code (an `ErrorCode`) and message.
 */
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/browser";
import { config, z } from "zod";
import type { ElicitationAction, ElicitationContent } from "../../sdk/src/elicitation-protocol";
import {
  type Channel,
  channelLinkCodeSchema,
  channelListSchema,
  channelStatusSchema,
} from "../../sdk/src/human/channels";
import {
  type Approval,
  type ApprovalDetail,
  type ApprovalListQuery,
  acceptedInviteSchema,
  approvalAnswerSchema,
  approvalPageSchema,
  auditPageSchema,
  auditVerdictSchema,
  type CreateRuleBody,
  challengeAnswerSchema,
  claimSchema,
  createdInviteSchema,
  createdKeySchema,
  currentTeamSchema,
  type DecisionBatchItem,
  type DecisionRule,
  type DeviceBody,
  decisionAnswerSchema,
  decisionBatchAnswerSchema,
  deviceCodeInfoSchema,
  deviceListSchema,
  endedSessionsSchema,
  type HistoryFilter,
  historyPageSchema,
  inviteListSchema,
  invitePreviewSchema,
  keyListSchema,
  linkPreviewSchema,
  mailSentAnswerSchema,
  memberListSchema,
  memberRemovedSchema,
  memberSchema,
  meSchema,
  type OwnedApproval,
  okAnswerSchema,
  type PolicyBody,
  pairingAnswerSchema,
  passkeyRegisteredSchema,
  policyStepUpAnswerSchema,
  pushKeyAnswerSchema,
  type Role,
  replayAnswerSchema,
  revokedKeySchema,
  ruleAnswerSchema,
  ruleChoicesSchema,
  ruleListSchema,
  type SignupBody,
  savedDeviceSchema,
  sessionDetailSchema,
  sessionListSchema,
  statsSchema,
  stepUpOptionsAnswerSchema,
  stepUpProofSchema,
  stopAnswerSchema,
  teamListSchema,
  teamPolicySchema,
  type WebhookEvent,
  webhookDeletedSchema,
  webhookListSchema,
  webhookSecretSchema,
  webSessionListSchema,
} from "../../sdk/src/human/index";
import { slackTargetBodySchema } from "../../sdk/src/human/slack";
import type { deviceKeyRegisterBodySchema } from "../../sdk/src/private/contract";
import { deviceKeyListSchema, deviceKeyOptionsAnswerSchema } from "../../sdk/src/private/routes";
import { ApiError, del, enc, get, post, request } from "./api-request";

export type {
  AgentSession,
  ApiKey,
  Approval,
  ApprovalDetail,
  ApprovalState,
  ApproverFigures,
  AuditEntry,
  AuditVerdict,
  Claim,
  ConfirmRequired,
  CreatedInvite,
  DecisionBatchResult,
  Delivery,
  Device,
  DeviceCodeInfo as DeviceCode,
  HighRiskPattern,
  HistoryItem,
  Invite,
  InvitePreview,
  LinkPreview,
  Me,
  Member,
  OversightFigures,
  OwnedApproval,
  PushSubscriptionBody,
  ResolutionReason,
  Role,
  Rule,
  RuleChoice,
  RuleChoices,
  RuleMatch,
  SignedInAsOther,
  Stats,
  Team,
  TeamPolicy,
  Webhook,
  WebhookDelivery,
  WebhookEvent,
  WebSessionInfo,
} from "../../sdk/src/human/index";
export {
  DEFAULT_HIGH_RISK,
  fastAllowsFilter,
  ROLES,
  roleRank,
  rubberStamping,
  WEBHOOK_EVENTS,
} from "../../sdk/src/human/index";

// The site's CSP has no 'unsafe-eval': zod must not try to compile its parsers (nor log that it cannot).
config({ jitless: true });

export {
  ApiError,
  type ApiErrorCode,
  confirmRequired,
  setDecisionDeviceName,
  setUnauthenticatedHandler,
  signedInAsOther,
} from "./api-request";

/** Any approval a screen shows: owner and delivery are there when the answer carried them. */
export type ApprovalView = Approval & Partial<Pick<ApprovalDetail, "owner" | "delivery" | "escalations">>;
/** A row of the pending list: from the list (owner) or the live feed (owner and delivery). */
export type PendingApproval = OwnedApproval & Partial<Pick<ApprovalDetail, "delivery">>;
export type HistoryFilters = HistoryFilter;

export const APPROVAL_STATES_RESOLVED = ["allowed", "denied", "cancelled", "expired"] as const;

export { isAdminRole as isAdmin } from "../../sdk/src/human/index";
export const canDecide = (role: Role | undefined) => role !== "viewer";

/** Filters as query parameters, empty ones left out (the export links use the same). */
export function historyQuery(f: HistoryFilters, extra: Record<string, string | null | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...f, ...extra })) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  return params.toString();
}

/** A challenge answer whose WebAuthn options are typed by the WebAuthn library. */
const challenge = <O>(path: string, body: unknown) =>
  post(challengeAnswerSchema, path, body) as Promise<{ challengeId: string; options: O }>;

export const api = {
  /** Null when signed out: callers decide whether that is an error. */
  async me() {
    try {
      return await request(meSchema, "GET", "/v1/me", undefined, true);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return null;
      throw e;
    }
  },
  signIn: (email: string) => post(mailSentAnswerSchema, "/v1/auth/signin", { email }),
  signUp: (b: SignupBody) => post(mailSentAnswerSchema, "/v1/auth/signup", b),
  linkPreview: (token: string) => post(linkPreviewSchema, "/v1/auth/link/preview", { token }),
  /** `confirm`: switch from the account this browser is signed in as (else `409 signed_in_as_other`). */
  confirmLink: (token: string, confirm = false) =>
    post(okAnswerSchema, "/v1/auth/link", confirm ? { token, confirm } : { token }),
  signOut: () => post(okAnswerSchema, "/v1/auth/signout"),
  webSessions: () => get(webSessionListSchema, "/v1/auth/sessions"),
  endWebSession: (id: string) => del(okAnswerSchema, `/v1/auth/sessions/${enc(id)}`),
  endOtherWebSessions: () => post(endedSessionsSchema, "/v1/auth/sessions/end-others"),

  passkeyLoginOptions: () => challenge<PublicKeyCredentialRequestOptionsJSON>("/v1/auth/passkey/login/options", {}),
  passkeyLoginVerify: (challengeId: string, response: AuthenticationResponseJSON) =>
    post(okAnswerSchema, "/v1/auth/passkey/login/verify", { challengeId, response }),
  /** Signed in: adds a passkey to me (body `{}`); signed out: passkey sign-up. */
  passkeyRegisterOptions: (signup?: SignupBody) =>
    challenge<PublicKeyCredentialCreationOptionsJSON>("/v1/auth/passkey/register/options", signup ?? {}),
  passkeyRegisterVerify: (challengeId: string, response: RegistrationResponseJSON, deviceName: string) =>
    post(passkeyRegisteredSchema, "/v1/auth/passkey/register/verify", { challengeId, response, deviceName }),

  approvals: (q: Omit<ApprovalListQuery, "cursor"> & { cursor?: string | null }) => {
    const params = new URLSearchParams({ state: q.state ?? "pending", scope: q.scope ?? "team" });
    params.set("limit", String(q.limit ?? 50));
    if (q.cursor) params.set("cursor", q.cursor);
    return get(approvalPageSchema, `/v1/approvals?${params}`);
  },
  approval: (id: string) => get(approvalAnswerSchema, `/v1/approvals/${enc(id)}`),
  /**
   * `rule`: also make a standing `me` rule from this request (the card's "Allow for 1 h").
   * `stepUp`: the passkey assertion over `stepUpOptions`' challenge, to allow a high-risk request.
   * `reason`: the decider's words to the agent (≤ 500 characters).
   * `updatedInput`: allow with this tool input instead (a request whose agent `acceptsEdits`).
   */
  decide: (
    id: string,
    optionId: string,
    requestHash: string,
    extra: {
      rule?: DecisionRule;
      stepUp?: AuthenticationResponseJSON;
      reason?: string;
      updatedInput?: Record<string, unknown>;
    } = {},
  ) => post(decisionAnswerSchema, `/v1/approvals/${enc(id)}/decision`, { optionId, requestHash, ...extra }),
  /** Dismiss the card: the request ends `cancelled` and the agent is told so (not allowed). `reason`: words for the agent. */
  dismiss: (id: string, requestHash: string, reason?: string) =>
    post(decisionAnswerSchema, `/v1/approvals/${enc(id)}/decision`, {
      dismiss: true,
      requestHash,
      ...(reason !== undefined && { reason }),
    }),
  /** Several at once: each item answered as its single decision would be. */
  decideBatch: (decisions: DecisionBatchItem[]) =>
    post(decisionBatchAnswerSchema, "/v1/approvals/decisions", { decisions }),
  /** What the card's "Allow for 1 h" may make from this request, and what each choice would have allowed. */
  ruleChoices: (id: string) => get(ruleChoicesSchema, `/v1/approvals/${enc(id)}/rule-choices`),
  /** "I am looking at this" for teammates (2 minutes; not a lock). */
  claim: (id: string) => post(claimSchema, `/v1/approvals/${enc(id)}/claim`),

  /** An elicitation's answer: `accept` (with a form's content), `decline` or `cancel`. */
  answer: (id: string, answer: { action: ElicitationAction; content?: ElicitationContent }, requestHash: string) =>
    post(decisionAnswerSchema, `/v1/approvals/${enc(id)}/decision`, { ...answer, requestHash }),

  rules: () => get(ruleListSchema, "/v1/rules"),
  createRule: (body: CreateRuleBody) => post(ruleAnswerSchema, "/v1/rules", body),
  endRule: (id: string) => del(ruleAnswerSchema, `/v1/rules/${enc(id)}`),
  /** Options around a challenge bound to this request, the option the allow will choose and its edited input, if any. */
  stepUpOptions: (id: string, optionId: string, updatedInput?: Record<string, unknown>) =>
    post(stepUpOptionsAnswerSchema, `/v1/approvals/${enc(id)}/step-up`, {
      optionId,
      ...(updatedInput && { updatedInput }),
    }),
  proof: (id: string) => get(stepUpProofSchema, `/v1/approvals/${enc(id)}/proof`),

  pushKey: () => get(pushKeyAnswerSchema, "/v1/push/key"),
  devices: () => get(deviceListSchema, "/v1/devices"),
  addDevice: (body: DeviceBody) => post(savedDeviceSchema, "/v1/devices", body),
  removeDevice: (id: string) => del(okAnswerSchema, `/v1/devices/${enc(id)}`),
  testDevice: (id: string) => post(okAnswerSchema, `/v1/devices/${enc(id)}/test`),
  /** Private mode: this person's device keys in the team, and endorsing a new one with the passkey. */
  deviceKeys: () => get(deviceKeyListSchema, "/v1/devices/keys"),
  deviceKeyOptions: (publicKey: string) =>
    post(deviceKeyOptionsAnswerSchema, "/v1/devices/keys/options", { publicKey }),
  registerDeviceKey: (
    body: Omit<z.input<typeof deviceKeyRegisterBodySchema>, "assertion"> & { assertion: AuthenticationResponseJSON },
  ) => request(z.unknown(), "POST", "/v1/devices/keys", body),
  removeDeviceKey: (deviceId: string) => request(z.unknown(), "DELETE", `/v1/devices/keys/${enc(deviceId)}`),

  createPairing: () => post(pairingAnswerSchema, "/v1/pairing"),
  claimPairing: (token: string, confirm = false) =>
    post(okAnswerSchema, "/v1/pairing/claim", confirm ? { token, confirm } : { token }),

  teams: () => get(teamListSchema, "/v1/teams"),
  switchTeam: (teamId: string) => post(currentTeamSchema, "/v1/teams/switch", { teamId }),
  createTeam: (name: string) => post(currentTeamSchema, "/v1/teams", { name }),

  members: () => get(memberListSchema, "/v1/members"),
  changeRole: (userId: string, role: Role) => request(memberSchema, "PATCH", `/v1/members/${enc(userId)}`, { role }),
  removeMember: (userId: string) => del(memberRemovedSchema, `/v1/members/${enc(userId)}`),
  invites: () => get(inviteListSchema, "/v1/invites"),
  createInvite: (role: Role, email?: string) =>
    post(createdInviteSchema, "/v1/invites", email ? { role, email } : { role }),
  revokeInvite: (id: string) => del(okAnswerSchema, `/v1/invites/${enc(id)}`),
  previewInvite: (token: string) => request(invitePreviewSchema, "POST", "/v1/invites/preview", { token }, true),
  acceptInvite: (token: string) => post(acceptedInviteSchema, "/v1/invites/accept", { token }),

  channels: () => get(channelListSchema, "/v1/channels"),
  connectPagerDuty: (routingKey: string) =>
    request(channelStatusSchema, "PUT", "/v1/channels/pagerduty", { routingKey }),
  removeChannel: (channel: Channel) => del(okAnswerSchema, `/v1/channels/${channel}`),
  linkChannel: (channel: Channel) => post(channelLinkCodeSchema, `/v1/channels/${channel}/link`),
  unlinkChannel: (channel: Channel) => del(okAnswerSchema, `/v1/channels/${channel}/link`),
  setSlackTarget: (channelId: string | null) =>
    request(slackTargetBodySchema, "PUT", "/v1/channels/slack/target", { channelId }),

  keys: (scope: "mine" | "team") => get(keyListSchema, `/v1/keys?scope=${scope}`),
  createKey: (label: string) => post(createdKeySchema, "/v1/keys", { label }),
  revokeKey: (id: string) => del(revokedKeySchema, `/v1/keys/${enc(id)}`),

  policy: () => get(teamPolicySchema, "/v1/policy"),
  /** With `stepUp` (an owner's passkey over `policyStepUp`'s challenge) for a change that weakens the policy. */
  setPolicy: (p: PolicyBody, stepUp?: AuthenticationResponseJSON) =>
    request(teamPolicySchema, "PUT", "/v1/policy", stepUp ? { ...p, stepUp } : p),
  /** Options around a challenge bound to this team and this exact policy body. */
  policyStepUp: (policy: PolicyBody) => post(policyStepUpAnswerSchema, "/v1/policy/step-up", { policy }),

  sessions: (state: "connected" | "recent") => get(sessionListSchema, `/v1/sessions?state=${state}`),
  session: (id: string) => get(sessionDetailSchema, `/v1/sessions/${enc(id)}`),
  replayDeadLetters: (id: string) => post(replayAnswerSchema, `/v1/sessions/${enc(id)}/replay`),
  /** Denies every pending request of the session and refuses new ones until resumed; `reason`: words to the agent. */
  stopSession: (id: string, reason?: string) =>
    post(stopAnswerSchema, `/v1/sessions/${enc(id)}/stop`, reason ? { reason } : {}),
  resumeSession: (id: string) => post(stopAnswerSchema, `/v1/sessions/${enc(id)}/resume`),

  history: (f: HistoryFilters, cursor: string | null, limit = 50) =>
    get(historyPageSchema, `/v1/history?${historyQuery(f, { cursor, limit: String(limit) })}`),
  audit: (cursor: string | null, limit = 50) =>
    get(auditPageSchema, `/v1/audit?${historyQuery({}, { cursor, limit: String(limit) })}`),
  verifyAudit: () => get(auditVerdictSchema, "/v1/audit/verify"),
  stats: (days: 7 | 30) => get(statsSchema, `/v1/stats?days=${days}`),

  webhooks: () => get(webhookListSchema, "/v1/webhooks"),
  createWebhook: (url: string, events: WebhookEvent[]) => post(webhookSecretSchema, "/v1/webhooks", { url, events }),
  rotateWebhook: (id: string) => post(webhookSecretSchema, `/v1/webhooks/${enc(id)}/rotate`),
  deleteWebhook: (id: string) => del(webhookDeletedSchema, `/v1/webhooks/${enc(id)}`),

  deviceCode: (userCode: string) => get(deviceCodeInfoSchema, `/v1/device/${enc(userCode)}`),
  decideDeviceCode: (userCode: string, decision: "approve" | "deny") =>
    post(deviceCodeInfoSchema, `/v1/device/${enc(userCode)}/${decision}`),
};
