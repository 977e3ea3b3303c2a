/**
 * One builder per audited action: the event id (what makes a retry a replay, not a second
 * entry), the action name, the subject and the detail an auditor reads. Pure.
 *
 * Owns: the shape of every audit event the use cases append. Does not own: appending
 * (`audit.ts`), the chain (the hub), or the team-created genesis entry (`db/people.ts`, which
 * writes it in the same batch as the team).
 */

import type { Role } from "../../sdk/src/human/roles";
import type { AuditEvent } from "../audit-chain";
import { randomBase62 } from "../crypto";
import type { TeamPolicy } from "../policy";

/** Who did it, in which team, when: `actor` is `user:<id>` or `key:<id>`. */
export interface AuditContext {
  teamId: string;
  actor: string;
  at: number;
}

export const userActor = (userId: string) => `user:${userId}`;
export const keyActor = (keyId: string) => `key:${keyId}`;

export const auditEvents = {
  keyCreated: (
    a: AuditContext,
    k: { keyId: string; label: string; prefix: string; via?: "device_code" },
  ): AuditEvent => ({
    ...a,
    eventId: `key_created:${k.keyId}`,
    action: "key.created",
    subject: k.keyId,
    detail: { label: k.label, prefix: k.prefix, ...(k.via ? { via: k.via } : {}) },
  }),

  keyRevoked: (a: AuditContext, keyId: string): AuditEvent => ({
    ...a,
    eventId: `key_revoked:${keyId}`,
    action: "key.revoked",
    subject: keyId,
  }),

  deviceCodeDecided: (
    a: AuditContext,
    d: { codeId: string; decision: "approved" | "denied"; clientName: string },
  ): AuditEvent => ({
    ...a,
    eventId: `device_${d.decision}:${d.codeId}`,
    action: `device.${d.decision}`,
    subject: d.codeId,
    detail: { clientName: d.clientName },
  }),

  /** With `weakened` (what it gave away) and `confirmedWith` (the owner's passkey) when it weakened the policy. */
  policyChanged: (
    a: AuditContext,
    p: { before: TeamPolicy; after: TeamPolicy; version: number; weakened?: string[]; confirmedWith?: string },
  ): AuditEvent => ({
    ...a,
    eventId: `policy_changed:${a.teamId}:${p.version}`,
    action: "team.policy_changed",
    subject: a.teamId,
    detail: {
      before: p.before,
      after: p.after,
      version: p.version,
      ...(p.weakened?.length && { weakened: p.weakened, confirmedWith: p.confirmedWith }),
    },
  }),

  memberInvited: (a: AuditContext, i: { inviteId: string; role: Role; email: string | null }): AuditEvent => ({
    ...a,
    eventId: `member_invited:${i.inviteId}`,
    action: "member.invited",
    subject: i.inviteId,
    detail: { role: i.role, email: i.email },
  }),

  inviteRevoked: (a: AuditContext, inviteId: string): AuditEvent => ({
    ...a,
    eventId: `invite_revoked:${inviteId}`,
    action: "member.invite_revoked",
    subject: inviteId,
  }),

  memberJoined: (a: AuditContext, j: { userId: string; inviteId: string; role: Role }): AuditEvent => ({
    ...a,
    eventId: `member_joined:${j.inviteId}`,
    action: "member.joined",
    subject: j.userId,
    detail: { inviteId: j.inviteId, role: j.role },
  }),

  memberRoleChanged: (a: AuditContext, m: { userId: string; before: Role; after: Role }): AuditEvent => ({
    ...a,
    // A role may change back and forth: each change is its own entry.
    eventId: `member_role:${a.teamId}:${m.userId}:${a.at}:${randomBase62(8)}`,
    action: "member.role_changed",
    subject: m.userId,
    detail: { before: m.before, after: m.after },
  }),

  memberRemoved: (
    a: AuditContext,
    m: { userId: string; role: Role; left: boolean; revokedKeys: number },
  ): AuditEvent => ({
    ...a,
    eventId: `member_removed:${a.teamId}:${m.userId}:${a.at}`,
    action: "member.removed",
    subject: m.userId,
    detail: { role: m.role, left: m.left, revokedKeys: m.revokedKeys },
  }),

  /** A channel connected (Slack added to a workspace, a PagerDuty routing key) or removed; never the token. */
  channelConnected: (a: AuditContext, c: { channel: string; externalId: string | null }): AuditEvent => ({
    ...a,
    eventId: `channel_connected:${a.teamId}:${c.channel}:${a.at}`,
    action: "channel.connected",
    subject: c.channel,
    detail: { externalId: c.externalId },
  }),

  /** Where a channel's cards go for the whole team changed (a Slack channel, or DMs: null). */
  channelTargetChanged: (a: AuditContext, c: { channel: string; target: string | null }): AuditEvent => ({
    ...a,
    eventId: `channel_target:${a.teamId}:${c.channel}:${a.at}`,
    action: "channel.target_changed",
    subject: c.channel,
    detail: { target: c.target },
  }),

  channelRemoved: (a: AuditContext, channel: string): AuditEvent => ({
    ...a,
    eventId: `channel_removed:${a.teamId}:${channel}:${a.at}`,
    action: "channel.removed",
    subject: channel,
  }),

  /** A member linked (or unlinked) their account on a channel: which platform user it was. */
  channelLinked: (a: AuditContext, l: { channel: string; userId: string; externalUserId: string }): AuditEvent => ({
    ...a,
    eventId: `channel_linked:${a.teamId}:${l.channel}:${l.userId}:${a.at}`,
    action: "channel.linked",
    subject: l.userId,
    detail: { channel: l.channel, externalUserId: l.externalUserId },
  }),

  channelUnlinked: (a: AuditContext, l: { channel: string; userId: string }): AuditEvent => ({
    ...a,
    eventId: `channel_unlinked:${a.teamId}:${l.channel}:${l.userId}:${a.at}`,
    action: "channel.unlinked",
    subject: l.userId,
    detail: { channel: l.channel },
  }),

  passkeyAdded: (
    a: AuditContext,
    p: { userId: string; credentialId: string; deviceName: string | null },
  ): AuditEvent => ({
    ...a,
    eventId: `passkey_added:${p.credentialId}:${a.at}`,
    action: "passkey.added",
    subject: p.userId,
    detail: { credentialId: p.credentialId, deviceName: p.deviceName },
  }),

  passkeyRemoved: (a: AuditContext, p: { userId: string; credentialId: string }): AuditEvent => ({
    ...a,
    eventId: `passkey_removed:${p.credentialId}:${a.at}`,
    action: "passkey.removed",
    subject: p.userId,
    detail: { credentialId: p.credentialId },
  }),

  /** A device key registered (or registered again) with the passkey that endorsed it: its browser can read private requests. */
  deviceKeyAdded: (
    a: AuditContext,
    k: { userId: string; deviceId: string; name: string; credentialId: string },
  ): AuditEvent => ({
    ...a,
    eventId: `device_key_added:${a.teamId}:${k.deviceId}:${a.at}`,
    action: "device_key.added",
    subject: k.userId,
    detail: { deviceId: k.deviceId, name: k.name, credentialId: k.credentialId },
  }),

  /** A device key removed by someone; removals that follow another (a sign-out, a member removed) are queued by D1's triggers (migration 0038). */
  deviceKeyRemoved: (a: AuditContext, k: { userId: string; deviceId: string; name: string }): AuditEvent => ({
    ...a,
    eventId: `device_key_removed:${a.teamId}:${k.deviceId}:${a.at}`,
    action: "device_key.removed",
    subject: k.userId,
    detail: { deviceId: k.deviceId, name: k.name },
  }),

  /** A sign-in (link, passkey, pairing) or a reauth on a session: never the token or its hash. */
  signedIn: (a: AuditContext, s: { userId: string; sessionId: string; method: string }): AuditEvent => ({
    ...a,
    eventId: `signed_in:${a.teamId}:${s.sessionId}:${a.at}`,
    action: "auth.signed_in",
    subject: s.userId,
    detail: { sessionId: s.sessionId, method: s.method },
  }),

  ruleCreated: (
    a: AuditContext,
    r: {
      ruleId: string;
      scope: string;
      fields: string[];
      matchHash: string;
      expiresAt: number;
      fromApproval: string | null;
    },
  ): AuditEvent => ({
    ...a,
    eventId: `rule_created:${r.ruleId}`,
    action: "rule.created",
    subject: r.ruleId,
    // Tool arguments never enter the chain: which fields the match names and a hash committing to it.
    detail: {
      scope: r.scope,
      fields: r.fields,
      matchHash: r.matchHash,
      expiresAt: r.expiresAt,
      fromApproval: r.fromApproval,
    },
  }),

  ruleEnded: (a: AuditContext, ruleId: string): AuditEvent => ({
    ...a,
    eventId: `rule_ended:${ruleId}`,
    action: "rule.ended",
    subject: ruleId,
  }),

  // The URL's origin only (its path and query often carry a token: the chain is streamed to
  // every `audit.appended` endpoint); the secret never enters the chain.
  webhookCreated: (a: AuditContext, w: { id: string; url: string; events: string[] }): AuditEvent => ({
    ...a,
    eventId: `webhook_created:${w.id}`,
    action: "webhook.created",
    subject: w.id,
    detail: { origin: new URL(w.url).origin, events: w.events },
  }),

  webhookRotated: (a: AuditContext, id: string): AuditEvent => ({
    ...a,
    eventId: `webhook_rotated:${id}:${a.at}:${randomBase62(6)}`,
    action: "webhook.rotated",
    subject: id,
  }),

  webhookDeleted: (a: AuditContext, id: string): AuditEvent => ({
    ...a,
    eventId: `webhook_deleted:${id}`,
    action: "webhook.deleted",
    subject: id,
  }),

  pairingCreated: (a: AuditContext, p: { userId: string; tokenHash: string }): AuditEvent => ({
    ...a,
    eventId: `pairing_created:${p.tokenHash}`,
    action: "pairing.created",
    subject: p.userId,
  }),

  pairingClaimed: (
    a: AuditContext,
    p: { userId: string; tokenHash: string; userAgent: string | null },
  ): AuditEvent => ({
    ...a,
    eventId: `pairing_claimed:${p.tokenHash}`,
    action: "pairing.claimed",
    subject: p.userId,
    detail: { userAgent: p.userAgent },
  }),
};
