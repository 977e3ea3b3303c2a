/**
 * Which devices an agent seals a private request to: the team's recipients
 * (`GET /v1/agent/recipients`), each kept only if its endorsement verifies (`endorsement.ts`) and
 * was made by the passkey pinned for its person. A person seen for the first time is pinned
 * (trust on first use); a person whose endorsement comes from another passkey is refused, by
 * name, until `tapgate trust` accepts the new one.
 *
 * Owns: fetching recipients, the trust decision, the pins' shape. Does not own: where pins are
 * kept (`node-known-approvers.ts` on Node) or sealing (`seal-params.ts`). Environment-neutral.
 */
import { z } from "zod";
import { type Recipient, type RecipientsResponse, recipientsResponseSchema } from "./contract.js";
import { endorsementProblem } from "./endorsement.js";

/** A person's pinned passkey. */
export const pinnedPasskeySchema = z.object({
  name: z.string(),
  credentialId: z.string(),
  credentialPublicKey: z.string(),
  pinnedAt: z.number(),
});
export type PinnedPasskey = z.infer<typeof pinnedPasskeySchema>;

/** The pins of one team at one service: userId → passkey. */
export type TeamPins = Record<string, PinnedPasskey>;

/** Where pins are kept, keyed by the service's origin and the team id. */
export interface KnownApprovers {
  pins(service: string, teamId: string): TeamPins;
  pin(service: string, teamId: string, userId: string, passkey: PinnedPasskey): void;
}

/** A recipient not sealed to, and why (never its key material). */
export interface RefusedRecipient {
  userId: string;
  name: string;
  deviceId: string;
  /** `changed`: a valid endorsement by another passkey than the pinned one (`tapgate trust` accepts it). */
  why: "changed" | "unendorsed";
  detail: string;
}

export interface TrustedRecipients {
  trusted: Recipient[];
  refused: RefusedRecipient[];
}

/** `GET /v1/agent/recipients` with the agent key; throws on anything but a valid answer. */
export async function fetchRecipients(
  baseUrl: string,
  apiKey: string,
  signal?: AbortSignal,
): Promise<RecipientsResponse | null> {
  const response = await fetch(`${baseUrl}/v1/agent/recipients`, {
    headers: { Authorization: `Bearer ${apiKey}`, Accept: "application/json" },
    signal,
  });
  // A service without private mode: its teams are all standard.
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`GET /v1/agent/recipients answered ${response.status}`);
  const parsed = recipientsResponseSchema.safeParse(await response.json());
  if (!parsed.success) throw new Error("GET /v1/agent/recipients answered an invalid body");
  return parsed.data;
}

/**
 * The recipients to seal to: endorsed, and by the passkey pinned for their person (pinning the
 * first one seen of a person not pinned yet). `now` dates new pins.
 */
export async function trustRecipients(
  answer: RecipientsResponse,
  service: string,
  known: KnownApprovers,
  now = Date.now(),
): Promise<TrustedRecipients> {
  const result: TrustedRecipients = { trusted: [], refused: [] };
  const pins = known.pins(service, answer.teamId);
  for (const recipient of answer.recipients) {
    const problem = await endorsementProblem(answer.teamId, answer, recipient);
    const who = { userId: recipient.userId, name: recipient.name, deviceId: recipient.deviceId };
    if (problem) {
      result.refused.push({ ...who, why: "unendorsed", detail: problem });
      continue;
    }
    const pinned = pins[recipient.userId];
    if (!pinned) {
      const passkey = passkeyOf(recipient, now);
      pins[recipient.userId] = passkey;
      known.pin(service, answer.teamId, recipient.userId, passkey);
    } else if (!samePasskey(pinned, recipient)) {
      result.refused.push({ ...who, why: "changed", detail: `endorsed by a passkey other than the one pinned` });
      continue;
    }
    result.trusted.push(recipient);
  }
  return result;
}

/** What the warning says of a refused recipient: whose key, and what to do about it. */
export function refusalWarning(r: RefusedRecipient): string {
  if (r.why === "changed") {
    return `${r.name}'s passkey changed: run \`tapgate trust ${r.name}\` if ${r.name} really made a new one (device ${r.deviceId} not sealed to)`;
  }
  return `${r.name}'s device ${r.deviceId} is not sealed to: ${r.detail}`;
}

export function passkeyOf(recipient: Recipient, now: number): PinnedPasskey {
  const { credentialId, credentialPublicKey } = recipient.endorsement;
  return { name: recipient.name, credentialId, credentialPublicKey, pinnedAt: now };
}

function samePasskey(pinned: PinnedPasskey, recipient: Recipient): boolean {
  const e = recipient.endorsement;
  return pinned.credentialId === e.credentialId && pinned.credentialPublicKey === e.credentialPublicKey;
}

/** The service a pin belongs to: the origin of the URL the SDK talks to (never what the service says). */
export function serviceOf(baseUrl: string): string {
  return new URL(baseUrl).origin;
}
