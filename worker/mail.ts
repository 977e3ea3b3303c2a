/**
 * Sending mail. Production posts JSON to an HTTP mail provider configured by secrets
 * (MAIL_API_URL, MAIL_API_KEY, MAIL_FROM; Resend-compatible). Local mode (DEV_OUTBOX="1") prints
 * to the console and keeps messages for `GET /v1/dev/outbox` (served to this machine only: edge.ts).
 * The provider gets ALARM_BUDGET_MS to answer (`deadline.ts`); a mail may carry an idempotency key,
 * which the dev outbox honours as the provider does (one message per key).
 */

import type { Context } from "hono";
import { saveDevMessage } from "./db";
import { ALARM_BUDGET_MS } from "./deadline";
import type { AppEnv, Env } from "./types";

export interface Mail {
  to: string;
  subject: string;
  text: string;
  link: string | null;
  /** Sent as `Idempotency-Key`: the provider sends a mail of the same key once (the escalation mail's step and person). */
  idempotencyKey?: string;
}

/**
 * How a send ended: `sent` (or kept in the dev outbox), or `refused` for good (the provider
 * answered 4xx other than 429, or mail is not configured), logged. A provider that fails for now
 * (5xx, 429, no answer in ALARM_BUDGET_MS) throws, so a caller that can try again does.
 */
export type MailSent = "sent" | "refused";

/** The provider answered 5xx or 429: the mail may be sent again (with its idempotency key). */
export class MailProviderFailed extends Error {
  constructor(readonly status: number) {
    super(`mail provider answered ${status}`);
    this.name = "MailProviderFailed";
  }
}

/** Sends one mail (or keeps it in the dev outbox); for callers without a request, like the hub's escalation mail. */
export async function sendMail(env: Env, mail: Mail): Promise<MailSent> {
  if (env.DEV_OUTBOX === "1") {
    console.log(`[dev outbox] to ${mail.to}: ${mail.subject}\n${mail.text}`);
    await saveDevMessage(env.DB, { ...mail, sentAt: Date.now() });
    return "sent";
  }
  if (!env.MAIL_API_URL || !env.MAIL_API_KEY || !env.MAIL_FROM) {
    console.error("mail is not configured: set MAIL_API_URL, MAIL_API_KEY and MAIL_FROM");
    return "refused";
  }
  const response = await fetch(env.MAIL_API_URL, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${env.MAIL_API_KEY}`,
      "Content-Type": "application/json",
      ...(mail.idempotencyKey && { "Idempotency-Key": mail.idempotencyKey }),
    },
    body: JSON.stringify({ from: env.MAIL_FROM, to: [mail.to], subject: mail.subject, text: mail.text }),
    // A provider that does not answer costs the caller (a hub's escalation step, a sign-in) one budget.
    signal: AbortSignal.timeout(ALARM_BUDGET_MS),
  });
  if (response.ok) return "sent";
  if (response.status >= 500 || response.status === 429) throw new MailProviderFailed(response.status);
  console.error(`mail provider refused the mail: ${response.status}`);
  return "refused";
}

/**
 * A route's mail (a sign-in link, an invite): a provider's failure answer is logged and the route
 * goes on (an invite's link is in its answer; a sign-in link can be asked for again).
 */
export async function deliverMail(c: Context<AppEnv>, mail: Mail): Promise<void> {
  await sendMail(c.env, mail).catch((e: unknown) => {
    if (!(e instanceof MailProviderFailed)) throw e;
    console.error(e.message);
  });
}

/**
 * Work whose duration must not tell anything (does this address have an account?): in
 * production it runs after the response, so every answer takes as long. Locally it finishes
 * before answering, so scripts can read the outbox right away.
 */
export async function afterAnswering(c: Context<AppEnv>, work: () => Promise<void>): Promise<void> {
  if (c.env.DEV_OUTBOX === "1") return work();
  c.executionCtx.waitUntil(
    work().catch((e: unknown) => console.error("mail failed", e instanceof Error ? e.name : "")),
  );
}
