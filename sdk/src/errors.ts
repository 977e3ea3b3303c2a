/**
 * Every error code the HTTP API answers with, once: its status and what it means. The Worker
 * renders `{error, message}` bodies from this table (objects and use cases return codes, never
 * statuses); the PWA, the SDK and the tests import the `ErrorCode` union instead of matching
 * strings. Environment-neutral: no Node and no Workers APIs here.
 */
import { z } from "zod";

export const ERRORS = {
  // 400: the input is wrong; the message names the field.
  invalid_request: { status: 400, message: "the request is not valid" },
  bad_request: { status: 400, message: "the request could not be read" },
  invalid_link: { status: 400, message: "this sign-in link is invalid, expired or already used" },
  invalid_pairing: { status: 400, message: "this pairing code is invalid, expired or already used" },
  passkey_failed: { status: 400, message: "the passkey could not be verified" },
  option_not_offered: { status: 400, message: "that option was not offered" },
  invalid_content: { status: 400, message: "the answer does not fit the agent's form" },
  step_up_failed: { status: 400, message: "the passkey step-up could not be verified; ask for a new one" },
  over_ceiling: { status: 400, message: "over a ceiling of this server; its operator sets them" },
  channel_not_set_up: {
    status: 400,
    message: "the escalation uses a channel that is not set up on this server or not connected for this team",
  },
  edit_not_supported: {
    status: 400,
    message:
      "this request cannot be allowed with edited input: its agent does not take edits, or it is not a tool call",
  },
  edit_needs_allow: { status: 400, message: "edited input (updatedInput) goes only with an allow option" },
  rule_from_edit: {
    status: 400,
    message: "no rule is made from an edited decision: send rule or updatedInput, not both",
  },
  step_up_not_needed: {
    status: 400,
    message: "no step-up is needed: the request is not high-risk or no longer pending, or the change weakens nothing",
  },
  webhook_url_not_allowed: {
    status: 400,
    message: "webhooks go to https URLs on public hosts (http://127.0.0.1 or localhost only in local mode)",
  },
  webhook_event_unknown: { status: 400, message: "no such webhook event; see GET /v1/webhooks or docs/human-api.md" },
  // RFC 8628 device-code polling answers (400 by the RFC).
  authorization_pending: { status: 400, message: "waiting for someone to approve the code" },
  slow_down: { status: 400, message: "polling too fast" },
  expired_token: { status: 400, message: "this code is unknown, expired or already used; start again" },
  access_denied: { status: 400, message: "the code was denied" },
  invalid_oauth_state: {
    status: 400,
    message: "this install link is invalid, expired or for someone else; start Add to Slack again",
  },
  // 401: who you are is unknown.
  unauthenticated: { status: 401, message: "sign in first" },
  no_api_key: { status: 401, message: "send Authorization: Bearer <API key>; create one with POST /v1/keys" },
  bad_api_key: { status: 401, message: "the API key is unknown or revoked" },
  key_revoked: { status: 401, message: "this API key was revoked" },
  reauth_required: { status: 401, message: "sign in again to do this" },
  bad_signature: { status: 401, message: "the request's signature is missing, wrong or too old" },
  bad_webhook_secret: { status: 401, message: "the webhook's secret token is missing or wrong" },
  // 403: known, but not allowed.
  forbidden: { status: 403, message: "you may not do this" },
  bad_origin: { status: 403, message: "state-changing requests need this site's Origin header" },
  agent_key_forbidden: { status: 403, message: "agent API keys cannot use the human API; sign in instead" },
  not_session_owner: { status: 403, message: "team policy lets only the session's owner decide" },
  role_may_not_decide: { status: 403, message: "your role may not decide" },
  session_stopped: {
    status: 403,
    message: "someone stopped this session: its requests are refused until it is resumed",
  },
  invite_for_other_address: { status: 403, message: "this invite is for another email address" },
  step_up_required: {
    status: 403,
    message: "this needs a fresh passkey step-up: allowing a high-risk request, or weakening the team policy",
  },
  step_up_replayed: { status: 403, message: "this passkey step-up was already used; ask for a new one" },
  step_up_wrong_request: { status: 403, message: "this passkey step-up is for another request or option" },
  step_up_no_user_verification: {
    status: 403,
    message: "the passkey did not verify you (PIN, fingerprint or face); try again",
  },
  // 404: unknown, or another team's (the same answer, on purpose).
  not_found: { status: 404, message: "no such thing" },
  // 409 / 410: the state moved on.
  already_decided: { status: 409, message: "someone already decided this" },
  already_member: { status: 409, message: "you are already a member of this team" },
  last_owner: { status: 409, message: "a team needs at least one owner" },
  too_many_devices: { status: 409, message: "too many devices; remove one first" },
  device_key_taken: { status: 409, message: "another member of this team registered this device key" },
  request_changed: { status: 409, message: "the request differs from what you saw; reload it" },
  too_many_webhooks: { status: 409, message: "the team has 10 webhooks; delete one first" },
  too_many_rules: { status: 409, message: "the team has 100 active rules; end one first" },
  request_truncated: {
    status: 409,
    message: "this request was too large to show whole, so it cannot be allowed; deny it (the agent can send less)",
  },
  private_not_editable: {
    status: 409,
    message:
      "a private request cannot be allowed with edited input: the service cannot read it; allow or deny it as asked",
  },
  rule_not_possible: { status: 409, message: "no rule can be made from this request; nothing was decided" },
  rule_choice_not_offered: {
    status: 409,
    message: "this rule choice is not offered for this request (GET its rule-choices); nothing was decided",
  },
  second_approver_required: { status: 409, message: "you already allowed this; another person must allow it too" },
  no_passkey: { status: 409, message: "add a passkey to your account first" },
  confirm_required: {
    status: 409,
    message: "this pairing link signs this browser in as the account named; send confirm: true to go on",
  },
  signed_in_as_other: {
    status: 409,
    message: "this browser is signed in as someone else; send confirm: true to switch accounts",
  },
  already_resolved: { status: 410, message: "resolved without a human" },
  // Transport and capacity.
  too_large: { status: 413, message: "the body is too large" },
  misdirected: { status: 421, message: "this server does not answer for that host name" },
  upgrade_required: { status: 426, message: "open this URL as a WebSocket" },
  rate_limited: { status: 429, message: "too many requests; try again later" },
  too_many_pending: { status: 429, message: "this session has too many pending requests" },
  quota_exceeded: { status: 429, message: "over one of the team's limits; retry after Retry-After seconds" },
  internal_error: { status: 500, message: "something went wrong" },
  push_unavailable: { status: 503, message: "Web Push is not configured on this server" },
  rules_unavailable: { status: 503, message: "the team's rules could not be updated everywhere; try again" },
  rule_not_created: { status: 503, message: "the request was allowed once, but the rule could not be made" },
  quota_unavailable: { status: 503, message: "the team's limits could not be checked; nothing was held" },
  policy_unavailable: { status: 503, message: "the team's policy could not be read for this new session; try again" },
  service_unavailable: {
    status: 503,
    message: "a part of the service did not answer in time; what D1 stores stands, try again",
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;
export type ErrorStatus = (typeof ERRORS)[ErrorCode]["status"];

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERRORS, value);
}

/** Every error answer: the code, a sentence for people, and sometimes more (`issues`, `approval`, …). */
export const errorBodySchema = z.looseObject({
  error: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** The sentence of an error answer when the body is one (`{error, message}`), else `undefined`. */
export function errorMessageOf(body: unknown): string | undefined {
  const parsed = errorBodySchema.safeParse(body);
  return parsed.success && parsed.data.message ? parsed.data.message : undefined;
}
