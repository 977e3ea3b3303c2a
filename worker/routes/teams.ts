/** A person's teams: list, create another, switch the current one (the web session's team). */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { forgetWebSession, requireSameOrigin, requireWeb } from "../auth";
import { createTeam, listMyTeams, switchWebSession } from "../db";
import { apiError, validate } from "../http";
import { hubFor } from "../hub/api";
import type { AppEnv } from "../types";

const createBody = z.object({ name: z.string().trim().min(1).max(100) });
const switchBody = z.object({ teamId: z.string().min(1).max(100) });

export const teamRoutes = new Hono<AppEnv>()
  .use("/v1/teams", requireWeb, requireSameOrigin)
  .use("/v1/teams/*", requireWeb, requireSameOrigin)
  .get("/v1/teams", async (c) => c.json({ teams: await listMyTeams(c.env.DB, c.get("web").userId) }))
  .post("/v1/teams", validate("json", createBody), async (c) => {
    const w = c.get("web");
    const name = c.req.valid("json").name;
    const teamId = await createTeam(c.env.DB, { userId: w.userId, name, now: Date.now() });
    await switchTo(c, teamId);
    return c.json({ team: { id: teamId, name }, role: "owner" }, 201);
  })
  .post("/v1/teams/switch", validate("json", switchBody), async (c) => {
    const teamId = c.req.valid("json").teamId;
    if (!(await switchTo(c, teamId))) return apiError(c, "not_found", "no such team");
    const team = (await listMyTeams(c.env.DB, c.get("web").userId)).find((t) => t.id === teamId);
    return team
      ? c.json({ team: { id: team.id, name: team.name }, role: team.role })
      : apiError(c, "not_found", "no such team");
  });

/**
 * Moves the caller's web session to a team they belong to. The cached identity names the old
 * team and role, so it is dropped; other isolates catch up within the cache's lifetime.
 */
export async function switchTo(c: Context<AppEnv>, teamId: string): Promise<boolean> {
  const w = c.get("web");
  const switched = await switchWebSession(c.env.DB, { tokenHash: w.tokenHash, userId: w.userId, teamId });
  if (!switched) return false;
  forgetWebSession(w.tokenHash);
  // The old team's feed must stop; the app opens the new team's.
  await hubFor(c.env, w.teamId).closeWebSession(w.tokenHash);
  return true;
}
