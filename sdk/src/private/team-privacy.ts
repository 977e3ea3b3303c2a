/**
 * What a session knows of its team's privacy: whether requests must be sealed, to which trusted
 * devices, and with which high-risk patterns. Learned from `GET /v1/agent/recipients` when the
 * session opens, again once it is a minute old, and at once when the gate refuses an unsealed
 * request (`private_required`).
 *
 * Owns: the cached answer, its refresh, the warnings about refused recipients (each once). Does
 * not own: the trust decision (`recipients.ts`) or sealing (`seal-params.ts`). Environment-neutral.
 */
import type { Recipient, RecipientsResponse } from "./contract.js";
import {
  fetchRecipients,
  type KnownApprovers,
  refusalWarning,
  serviceOf,
  type TrustedRecipients,
  trustRecipients,
} from "./recipients.js";

/** How long an answer counts as current. */
export const RECIPIENTS_FRESH_MS = 60_000;

export type TeamPrivacyState =
  | { privacy: "standard" }
  | { privacy: "private"; recipients: Recipient[]; highRisk: unknown[] };

export interface TeamPrivacyConfig {
  baseUrl: string;
  apiKey: string;
  known: KnownApprovers;
  /** Bounds one fetch of the recipients. */
  timeoutMs: number;
  log: (level: "debug" | "info" | "warn" | "error", message: string) => void;
  now?: () => number;
}

export class TeamPrivacy {
  readonly #cfg: TeamPrivacyConfig;
  readonly #warned = new Set<string>();
  #state: TeamPrivacyState = { privacy: "standard" };
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<TeamPrivacyState> | undefined;

  constructor(cfg: TeamPrivacyConfig) {
    this.#cfg = cfg;
  }

  /** The last known state, without fetching: what the hello and `session/update` go by. */
  get known(): TeamPrivacyState {
    return this.#state;
  }

  /** The current state: fetched again when a minute old, or when `refresh` says the gate asked for it. */
  current(refresh = false): Promise<TeamPrivacyState> {
    const now = this.#cfg.now?.() ?? Date.now();
    if (!refresh && now - this.#fetchedAt < RECIPIENTS_FRESH_MS) return Promise.resolve(this.#state);
    this.#refreshing ??= this.#fetch(now).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #fetch(now: number): Promise<TeamPrivacyState> {
    const { baseUrl, apiKey, timeoutMs, log } = this.#cfg;
    let answer: RecipientsResponse | null;
    try {
      answer = await fetchRecipients(baseUrl, apiKey, AbortSignal.timeout(timeoutMs));
    } catch (err) {
      // Keep what was known: a team seen private stays private. Never seen: the gate refuses what it must.
      // Tried again in a minute, or at once when the gate asks for a sealed request.
      this.#fetchedAt = now;
      log("debug", `team privacy not refreshed: ${err instanceof Error ? err.message : String(err)}`);
      return this.#state;
    }
    this.#fetchedAt = now;
    if (!answer || answer.privacy === "standard") {
      this.#state = { privacy: "standard" };
      return this.#state;
    }
    const { trusted } = await this.#trust(answer, now);
    this.#state = { privacy: "private", recipients: trusted, highRisk: answer.highRisk };
    return this.#state;
  }

  /** The trusted recipients; an unreadable pin file trusts nobody (every request then fails closed). */
  async #trust(answer: RecipientsResponse, now: number): Promise<Pick<TrustedRecipients, "trusted">> {
    try {
      const result = await trustRecipients(answer, serviceOf(this.#cfg.baseUrl), this.#cfg.known, now);
      for (const refused of result.refused)
        this.#warnOnce(`${refused.deviceId}:${refused.why}`, refusalWarning(refused));
      return result;
    } catch (err) {
      this.#cfg.log(
        "error",
        `cannot check the team's device keys: ${err instanceof Error ? err.message : String(err)}`,
      );
      return { trusted: [] };
    }
  }

  #warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#cfg.log("warn", message);
  }
}
