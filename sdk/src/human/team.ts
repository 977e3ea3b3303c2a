/** Teams, members, invites and agent API keys. */
import { z } from "zod";
import { ownerSchema } from "../approval.js";
import { roleSchema } from "./roles.js";

// ── teams ───────────────────────────────────────────────────────────────────

export const teamSchema = z.object({ id: z.string(), name: z.string(), role: roleSchema });
export type Team = z.infer<typeof teamSchema>;
/** `GET /v1/teams`: the teams I belong to, with my role in each. */
export const teamListSchema = z.object({ teams: z.array(teamSchema) });
/** `POST /v1/teams`. */
export const createTeamBodySchema = z.object({ name: z.string().trim().min(1).max(100) });
/** `POST /v1/teams/switch`. */
export const switchTeamBodySchema = z.object({ teamId: z.string().min(1).max(100) });
/** `POST /v1/teams` (201) and `POST /v1/teams/switch`: the web session's team now. */
export const currentTeamSchema = z.object({ team: z.object({ id: z.string(), name: z.string() }), role: roleSchema });

// ── members ─────────────────────────────────────────────────────────────────

export const memberSchema = z.object({
  userId: z.string(),
  name: z.string(),
  email: z.string(),
  role: roleSchema,
  joinedAt: z.number(),
});
export type Member = z.infer<typeof memberSchema>;
export const memberListSchema = z.object({ members: z.array(memberSchema) });
export const memberParamSchema = z.object({ userId: z.string().min(1).max(100) });
/** `PATCH /v1/members/:userId`; answers the member with the new role. */
export const roleBodySchema = z.object({ role: roleSchema });
/** `DELETE /v1/members/:userId`. */
export const memberRemovedSchema = z.object({ ok: z.literal(true), userId: z.string() });

// ── invites ─────────────────────────────────────────────────────────────────

export const inviteTokenSchema = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not an invite token");
export const inviteParamSchema = z.object({ id: z.string().regex(/^inv_[0-9A-Za-z]{22}$/, "not an invite id") });
/** `POST /v1/invites`. */
export const inviteBodySchema = z.object({
  role: roleSchema,
  email: z
    .email()
    .max(254)
    .transform((e) => e.toLowerCase())
    .optional(),
});
export const createdInviteSchema = z.object({
  id: z.string(),
  url: z.string(),
  role: roleSchema,
  expiresAt: z.number(),
});
export type CreatedInvite = z.infer<typeof createdInviteSchema>;
/** `GET /v1/invites`: the pending ones. */
export const inviteSchema = z.object({
  id: z.string(),
  role: roleSchema,
  email: z.string().nullable(),
  createdAt: z.number(),
  expiresAt: z.number(),
  createdBy: ownerSchema,
});
export type Invite = z.infer<typeof inviteSchema>;
export const inviteListSchema = z.object({ invites: z.array(inviteSchema) });
/** `POST /v1/invites/preview {token}` (signed out; a body, since URLs are logged). */
export const invitePreviewBodySchema = z.object({ token: inviteTokenSchema });
export const invitePreviewSchema = z.object({
  team: z.object({ name: z.string() }),
  role: roleSchema,
  invitedBy: z.object({ name: z.string() }),
  expiresAt: z.number(),
});
export type InvitePreview = z.infer<typeof invitePreviewSchema>;
/** `POST /v1/invites/accept`. */
export const acceptInviteBodySchema = z.object({ token: inviteTokenSchema });
export const acceptedInviteSchema = z.object({ team: z.object({ id: z.string() }), role: roleSchema });

// ── agent API keys ──────────────────────────────────────────────────────────

export const keyParamSchema = z.object({ id: z.string().regex(/^key_[0-9A-Za-z]{22}$/, "not a key id") });
/** `GET /v1/keys?scope=mine|team` (team: owners and admins). */
export const keyListQuerySchema = z.object({ scope: z.enum(["mine", "team"]).default("mine") });
export const apiKeySchema = z.object({
  id: z.string(),
  label: z.string(),
  prefix: z.string(),
  userId: z.string(),
  owner: ownerSchema,
  createdAt: z.number(),
  lastUsedAt: z.number().nullable(),
  revokedAt: z.number().nullable(),
});
export type ApiKey = z.infer<typeof apiKeySchema>;
export const keyListSchema = z.object({ keys: z.array(apiKeySchema) });
/** `POST /v1/keys`: the key itself is in this answer only. */
export const createKeyBodySchema = z.object({ label: z.string().trim().min(1).max(100) });
export const createdKeySchema = z.object({
  id: z.string(),
  key: z.string(),
  prefix: z.string(),
  label: z.string(),
  createdAt: z.number(),
});
/** `DELETE /v1/keys/:id` (and an agent's `DELETE /v1/agent/me`). */
export const revokedKeySchema = z.object({
  id: z.string(),
  revokedAt: z.number(),
  deniedRequests: z.number(),
  unreachedSessions: z.number().optional(),
});
