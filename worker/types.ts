/**
 * The Worker's environment and who is calling: `Env` (bindings and settings), the signed-in
 * human (`WebIdentity`) and the agent key (`AgentIdentity`). Nothing else lives here. The object
 * bindings are typed by the objects' API interfaces, which never import this file, so there is
 * no import cycle through it.
 */
import type { Role } from "../sdk/src/human/roles";
import type { KeyStanding, SessionGateApi } from "./gate/api";
import type { TeamHubApi } from "./hub/api";

export interface Env {
  DB: D1Database;
  SESSION_GATE: DurableObjectNamespace<SessionGateApi>;
  TEAM_HUB: DurableObjectNamespace<TeamHubApi>;
  /** Web Push (VAPID): secrets in production; `npm start` writes local ones into .dev.vars. */
  VAPID_PUBLIC_KEY?: string;
  VAPID_PRIVATE_KEY?: string;
  VAPID_SUBJECT?: string;
  /** Keys the hashes behind rate limits (IP addresses); `npm start` writes a local one into .dev.vars. */
  RATE_LIMIT_SECRET?: string;
  /** Local mode: mail goes to the console and `GET /v1/dev/outbox`. Never set in production. */
  DEV_OUTBOX?: string;
  /**
   * Local mode on a listener other than loopback (`npm start -- --ip 0.0.0.0`): the token the
   * outbox also asks for (`Authorization: Bearer` or `?token=`), which `npm start` prints.
   */
  DEV_OUTBOX_TOKEN?: string;
  /** The public origin, e.g. https://tapgate.example.com; defaults to the request's origin. */
  APP_ORIGIN?: string;
  /** The WebAuthn relying party id (a registrable domain); defaults to APP_ORIGIN's hostname. */
  RP_ID?: string;
  /** HTTP mail provider (production): a JSON POST endpoint, its bearer key, the sender. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  MAIL_FROM?: string;
  /**
   * Operator ceilings (`worker/ceilings.ts`, docs/limits.md): whole numbers as text, in
   * wrangler.toml `[vars]`; unset or not a whole number ≥ 1, the documented default.
   */
  MAX_STORED_BYTES_PER_TEAM_PER_DAY?: string;
  MAX_KEYS_PER_TEAM?: string;
  MAX_TEAMS_PER_PERSON?: string;
  MAX_MEMBERS_PER_TEAM?: string;
  MAX_RETENTION_DAYS?: string;
  /**
   * Outside channels (`worker/channels/settings.ts`, docs/guides/channels.md): secrets, all
   * optional; a channel whose settings are missing is "not set up" and its endpoints answer 404.
   */
  SLACK_CLIENT_ID?: string;
  SLACK_CLIENT_SECRET?: string;
  SLACK_SIGNING_SECRET?: string;
  TELEGRAM_BOT_TOKEN?: string;
  TELEGRAM_WEBHOOK_SECRET?: string;
  /**
   * The key stored channel tokens are sealed with (AES-256-GCM, `channels/secret-box.ts`); webhook
   * secrets (`webhooks/secret-box.ts`) use it when set, else `RATE_LIMIT_SECRET`, else `VAPID_PRIVATE_KEY`.
   */
  CHANNEL_SECRET_KEY?: string;
  /** The platforms' API base URLs; unset, the real ones. Tests point them at loopback fakes. */
  SLACK_API_URL?: string;
  TELEGRAM_API_URL?: string;
  PAGERDUTY_EVENTS_URL?: string;
}

/** A signed-in human, from the session cookie. */
export interface WebIdentity {
  userId: string;
  email: string;
  name: string;
  teamId: string;
  teamName: string;
  role: Role;
  tokenHash: string;
  /** The session's public id (`wss_…`), for the sessions API. */
  sessionId: string;
  /** The last real sign-in on this session (link, passkey, pairing): the reauth window counts from it. */
  signedInAt: number;
  /** When the session ends unless seen again (idle expiry), or at its absolute lifetime. */
  validUntil: number;
}

/** An agent, from its API key. Agent keys can open sessions and ask; nothing else. */
export interface AgentIdentity {
  keyId: string;
  userId: string;
  teamId: string;
}

export type AppEnv = {
  Bindings: Env;
  /** `keyStanding`: set by `requireCurrentDecider`, the hub's word on the decided request's key. */
  Variables: { web: WebIdentity; agent: AgentIdentity; keyStanding?: KeyStanding };
};
