/**
 * Members and invites (rules in team/members.ts). Owners and admins invite, change roles and
 * remove members; anyone may list members and leave.
 */
import { Hono } from "hono";
import {
  acceptInviteBodySchema,
  inviteBodySchema,
  inviteParamSchema,
  invitePreviewBodySchema,
  memberParamSchema,
  roleBodySchema,
} from "../../sdk/src/human/team";
import { requireFreshWeb, requireRole, requireSameOrigin, requireWeb } from "../auth";
import { sha256Hex } from "../crypto";
import { listInvites, listMembers, previewInvite } from "../db";
import { DomainError } from "../errors";
import { appOrigin, validate } from "../http";
import { deliverMail } from "../mail";
import { limitMail } from "../rate-limits";
import { ADMIN_ROLES } from "../roles";
import { acceptInvite, changeRole, inviteMember, removeMember, revokeInvite } from "../team/members";
import type { AppEnv } from "../types";

export const memberRoutes = new Hono<AppEnv>()
  // Signed out on purpose: the invite page shows whom it is from before the invitee signs in.
  // The token in the body, never the URL: request URLs are what logs keep.
  .post("/v1/invites/preview", validate("json", invitePreviewBodySchema), async (c) => {
    const preview = await previewInvite(c.env.DB, sha256Hex(c.req.valid("json").token), Date.now());
    if (!preview) throw new DomainError("not_found", "this invite is invalid, used or expired");
    return c.json(preview);
  })
  .post("/v1/invites/accept", requireWeb, requireSameOrigin, validate("json", acceptInviteBodySchema), async (c) => {
    const { teamId, role } = await acceptInvite(c.env, c.get("web"), c.req.valid("json").token);
    return c.json({ team: { id: teamId }, role });
  })
  // Admin routes read the role from D1, never the cached copy: a demoted admin is refused at once.
  .use("/v1/invites", requireWeb, requireSameOrigin, requireFreshWeb, requireRole(...ADMIN_ROLES))
  .use("/v1/invites/:id", requireWeb, requireSameOrigin, requireFreshWeb, requireRole(...ADMIN_ROLES))
  .post("/v1/invites", validate("json", inviteBodySchema), async (c) => {
    const w = c.get("web");
    const { role, email } = c.req.valid("json");
    if (email) await limitMail(c, email);
    const { id, token, expiresAt } = await inviteMember(c.env, w, { role, email: email ?? null });
    const url = `${appOrigin(c)}/invite?token=${token}`;
    if (email) {
      await deliverMail(c, {
        to: email,
        subject: `${w.name} invited you to ${w.teamName} on Tapgate`,
        text: `${w.name} invited you to join ${w.teamName} on Tapgate as ${role}. The link works once, for 7 days:\n\n${url}\n\nIf you did not expect it, ignore this message.`,
        link: url,
      });
    }
    return c.json({ id, url, role, expiresAt }, 201);
  })
  .get("/v1/invites", async (c) => c.json({ invites: await listInvites(c.env.DB, c.get("web").teamId, Date.now()) }))
  .delete("/v1/invites/:id", validate("param", inviteParamSchema), async (c) => {
    const { id } = c.req.valid("param");
    await revokeInvite(c.env, c.get("web"), id);
    return c.json({ ok: true, id });
  })
  .use("/v1/members", requireWeb)
  .use("/v1/members/*", requireWeb, requireSameOrigin, requireFreshWeb)
  .get("/v1/members", async (c) => c.json({ members: await listMembers(c.env.DB, c.get("web").teamId) }))
  .patch(
    "/v1/members/:userId",
    requireRole(...ADMIN_ROLES),
    validate("param", memberParamSchema),
    validate("json", roleBodySchema),
    async (c) => {
      const { userId } = c.req.valid("param");
      return c.json(await changeRole(c.env, c.get("web"), userId, c.req.valid("json").role));
    },
  )
  .delete("/v1/members/:userId", validate("param", memberParamSchema), async (c) => {
    const { userId } = c.req.valid("param");
    await removeMember(c.env, c.get("web"), userId);
    return c.json({ ok: true, userId });
  });
