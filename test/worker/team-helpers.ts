/** Helpers for the dashboard tests: members of any role (with a passkey), seeded history rows, the live feed. */

import { env, SELF } from "cloudflare:test";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from "@simplewebauthn/server";
import { expect } from "vitest";
import type { Approval, DecidedBy } from "../../sdk/src/approval";
import type { Role } from "../../sdk/src/human/roles";
import {
  policyStepUpAnswerSchema,
  type StepUpOptionsAnswer,
  stepUpOptionsAnswerSchema,
} from "../../sdk/src/human/step-up";
import { newId, randomToken, sha256Hex } from "../../worker/crypto";
import { SoftAuthenticator, type Tweaks } from "./authenticator";
import { api, json, type Member, ORIGIN, unique } from "./helpers";

/** A member of `team` with `role`, made in D1 directly, signed in with their own web session. */
export async function addMember(team: Member, role: Role, name = `${role}-user`): Promise<Member> {
  const userId = `usr_${unique(role).replace(/[^A-Za-z0-9]/g, "")}`;
  const email = `${unique(name)}@example.com`;
  const token = randomToken();
  const now = Date.now();
  await env.DB.batch([
    env.DB.prepare("INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?)").bind(
      userId,
      email,
      name,
      now,
    ),
    env.DB.prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, ?, ?)").bind(
      team.teamId,
      userId,
      role,
      now,
    ),
    env.DB.prepare(
      `INSERT INTO web_sessions (token_hash, id, user_id, team_id, method, created_at, signed_in_at, expires_at,
                                 last_seen_at)
       VALUES (?1, ?2, ?3, ?4, 'test', ?5, ?5, ?6, ?5)`,
    ).bind(sha256Hex(token), newId("wss"), userId, team.teamId, now, now + 86_400_000),
  ]);
  return { cookie: `__Host-tapgate=${token}`, email, userId, teamId: team.teamId };
}

export interface SeedRow {
  id?: string;
  sessionId?: string;
  ownerUserId: string;
  state: "pending" | "allowed" | "denied" | "cancelled" | "expired";
  reason?: string | null;
  title?: string;
  kind?: string;
  createdAt: number;
  latencyMs?: number;
  decidedBy?: DecidedBy | null;
  risk?: "high" | "normal";
}

/** Inserts approvals straight into the D1 index, as a SessionGate's outbox would have. */
export async function seedApprovals(teamId: string, rows: SeedRow[]): Promise<string[]> {
  const ids = rows.map((r) => r.id ?? `apr_seed_${unique("x").replace(/[^A-Za-z0-9]/g, "")}`);
  await env.DB.batch(
    rows.map((r, i) =>
      env.DB.prepare(
        `INSERT INTO approvals (id, team_id, session_id, owner_user_id, state, reason, snapshot, request_hash,
           options, tool_title, tool_kind, created_at, expires_at, resolved_at, decided_by, option_id, risk)
         VALUES (?, ?, ?, ?, ?, ?, '{"toolCall":{"toolCallId":"t"},"session":{}}', ?, '[]', ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).bind(
        ids[i],
        teamId,
        r.sessionId ?? "seeded",
        r.ownerUserId,
        r.state,
        r.reason ?? (r.state === "pending" ? null : "decided"),
        "0".repeat(64),
        r.title ?? "ls",
        r.kind ?? "execute",
        r.createdAt,
        r.createdAt + 600_000,
        r.state === "pending" ? null : r.createdAt + (r.latencyMs ?? 1000),
        r.decidedBy ? JSON.stringify(r.decidedBy) : null,
        r.state === "allowed" ? "allow" : null,
        r.risk ?? null,
      ),
    ),
  );
  return ids;
}

/** The team's live feed, as a browser holds it: frames collected, `next` waits for a matching one. */
export async function openLive(member: Member) {
  const response = await SELF.fetch(`${ORIGIN}/v1/live`, {
    headers: { Upgrade: "websocket", Origin: ORIGIN, Cookie: member.cookie },
  });
  const ws = response.webSocket;
  if (!ws) throw new Error(`live answered ${response.status}`);
  ws.accept();
  type Frame = Record<string, unknown>;
  const frames: Frame[] = [];
  const waiters = new Set<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }>();
  ws.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data as string) as Frame;
    frames.push(frame);
    for (const w of waiters) {
      if (!w.match(frame)) continue;
      waiters.delete(w);
      w.resolve(frame);
    }
  });
  return {
    ws,
    frames,
    /** The first frame, already received or still to come, that matches: woken by the frame itself. */
    next(match: (f: Frame) => boolean): Promise<Frame> {
      const found = frames.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.add({ match, resolve }));
    },
  };
}

/** A member with a passkey on a software authenticator (added within the sign-in's 10 minutes). */
export async function withPasskey(member: Member) {
  const authenticator = await SoftAuthenticator.create();
  const post = (path: string, body: unknown) =>
    api(path, { method: "POST", cookie: member.cookie, body: JSON.stringify(body) });
  const { challengeId, options: creation } = await json<{
    challengeId: string;
    options: PublicKeyCredentialCreationOptionsJSON;
  }>(await post("/v1/auth/passkey/register/options", {}));
  const response = await authenticator.register(creation);
  const verify = await post("/v1/auth/passkey/register/verify", { challengeId, response });
  expect(verify.status).toBe(201);
  return { ...member, authenticator };
}
export type Approver = Awaited<ReturnType<typeof withPasskey>>;

/** `POST /v1/policy/step-up` for `policy` (the very body the change will send). */
export const policyStepUpOptions = (m: Member, policy: unknown) =>
  api("/v1/policy/step-up", { method: "POST", cookie: m.cookie, body: JSON.stringify({ policy }) });

/** An owner's passkey assertion over `policy`, from `POST /v1/policy/step-up`. */
export async function confirmPolicy(owner: Approver, policy: object): Promise<AuthenticationResponseJSON> {
  const answer = await policyStepUpOptions(owner, policy);
  expect(answer.status).toBe(200);
  const { options } = policyStepUpAnswerSchema.parse(await json(answer));
  return owner.authenticator.assert(options as unknown as PublicKeyCredentialRequestOptionsJSON);
}

/** `PUT /v1/policy` with `body`, confirmed by the owner's passkey (what a weakening needs). */
export async function putPolicyConfirmed(owner: Approver, body: object): Promise<Response> {
  const stepUp = await confirmPolicy(owner, body);
  return api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ ...body, stepUp }) });
}

/** A step-up for allowing `approval` with `optionId`: the challenge's options, and the member's passkey assertion over them. */
export async function stepUpFor(member: Approver, approval: Approval, tweaks: Tweaks = {}, optionId = "allow") {
  const response = await api(`/v1/approvals/${approval.id}/step-up`, {
    method: "POST",
    cookie: member.cookie,
    body: JSON.stringify({ optionId }),
  });
  expect(response.status).toBe(200);
  const answer = stepUpOptionsAnswerSchema.parse(await json(response)) as StepUpOptionsAnswer;
  const assertion = await member.authenticator.assert(
    answer.options as unknown as PublicKeyCredentialRequestOptionsJSON,
    tweaks,
  );
  return { answer, assertion };
}
