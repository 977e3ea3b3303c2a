/**
 * Private mode in worker tests: a team switched to `privacy: "private"` (written in D1 and told to
 * its hub, as `PUT /v1/policy` would), and sealed requests built the way the SDK builds them
 * (`sealRequest` to real device keys), with a canary in every content field so a test can scan
 * what the service holds or emits for it.
 */
import { env } from "cloudflare:test";
import type { Risk } from "../../sdk/src/approval";
import {
  SEALED_ELICITATION_MESSAGE,
  SEALED_TOOL_CALL_ID,
  type SealedPlaintext,
  sealedOptionName,
} from "../../sdk/src/private/contract";
import { newDeviceKeyPair, sealRequest } from "../../sdk/src/private/envelope";
import { parsePolicy } from "../../worker/policy";
import { hubStub, type Member, unique } from "./helpers";

/** In every content field of a sealed request's plaintext; never in anything the service holds or emits. */
export const CANARY = "CANARY-7f3a9c-secret-token";

/** Sets the team's `privacy` in D1 (a new policy version) and has its hub hand the policy to live gates. */
export async function setPrivacy(member: Member, privacy: "private" | "standard" = "private"): Promise<void> {
  const row = await env.DB.prepare("SELECT policy FROM teams WHERE id = ?")
    .bind(member.teamId)
    .first<{ policy: string }>();
  const policy = { ...parsePolicy(row?.policy), privacy };
  await env.DB.prepare("UPDATE teams SET policy = ?, policy_version = policy_version + 1 WHERE id = ?")
    .bind(JSON.stringify(policy), member.teamId)
    .run();
  await hubStub(member.teamId).policyChanged();
}

const OPTIONS = [
  { optionId: "allow", kind: "allow_once" },
  { optionId: "always", kind: "allow_always" },
  { optionId: "deny", kind: "reject_once" },
];

/** A device of the team's, as the PWA would make one. */
export const device = () => newDeviceKeyPair();

/** The plaintext of a private permission request, with the canary in every content field. */
export function plaintextOf(extra: { fingerprint?: string; command?: string } = {}): SealedPlaintext {
  const command = extra.command ?? `curl -H 'Authorization: ${CANARY}' https://example.com`;
  return {
    v: 1,
    snapshot: {
      toolCall: { toolCallId: unique("call"), title: command, kind: "execute", rawInput: { command } },
      session: { title: "deploy bot", agent: { name: "claude-code" }, host: "ada-laptop", cwd: `/home/${CANARY}` },
      meta: { note: CANARY },
    },
    options: OPTIONS.map((o) => ({ ...o, name: `${CANARY} ${o.kind}` })),
    ...(extra.fingerprint && { fingerprint: extra.fingerprint }),
  };
}

/** A sealed `session/request_permission`'s params: the wire a private team's SDK sends. */
export async function sealedPermission(
  sessionId: string,
  a: { risk?: Risk; fingerprint?: string; command?: string; to?: Array<{ deviceId: string; publicKey: string }> } = {},
) {
  const plaintext = plaintextOf(a);
  const to = a.to ?? [await device()];
  const sealed = await sealRequest({ plaintext, risk: a.risk ?? "normal", to });
  return {
    params: {
      sessionId,
      toolCall: { toolCallId: SEALED_TOOL_CALL_ID, kind: "execute" },
      options: OPTIONS.map((o) => ({ ...o, name: sealedOptionName(o.kind) })),
      _meta: { tapgate: { sealed } },
    },
    sealed,
    plaintext,
  };
}

/** A sealed `elicitation/create`'s params: the fixed placeholder and an empty form. */
export async function sealedElicitation(sessionId: string) {
  const plaintext: SealedPlaintext = {
    v: 1,
    snapshot: {
      toolCall: { toolCallId: "" },
      session: { title: "deploy bot", agent: null, host: null, cwd: null },
      elicitation: {
        mode: "form",
        message: `What is the ${CANARY}?`,
        requestedSchema: { type: "object", properties: {} },
      },
    },
    options: [],
  };
  const sealed = await sealRequest({ plaintext, risk: "normal", to: [await device()] });
  return {
    sessionId,
    mode: "form",
    message: SEALED_ELICITATION_MESSAGE,
    requestedSchema: { type: "object", properties: {} },
    _meta: { tapgate: { sealed } },
  };
}
