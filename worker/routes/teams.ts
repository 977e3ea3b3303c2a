/** A person's teams: list, create another, switch the current one (the web session's team). */
import { Hono } from "hono";
import { createTeamBodySchema, switchTeamBodySchema } from "../../sdk/src/human/team";
import { requireSameOrigin, requireWeb } from "../auth";
import { listMyTeams } from "../db";
import { DomainError } from "../errors";
import { validate } from "../http";
import { createTeamAndSwitch, switchTeam } from "../team/teams";
import type { AppEnv } from "../types";

export const teamRoutes = new Hono<AppEnv>()
  .use("/v1/teams", requireWeb, requireSameOrigin)
  .use("/v1/teams/*", requireWeb, requireSameOrigin)
  .get("/v1/teams", async (c) => c.json({ teams: await listMyTeams(c.env.DB, c.get("web").userId) }))
  .post("/v1/teams", validate("json", createTeamBodySchema), async (c) => {
    const name = c.req.valid("json").name;
    const teamId = await createTeamAndSwitch(c.env, c.get("web"), name);
    return c.json({ team: { id: teamId, name }, role: "owner" }, 201);
  })
  .post("/v1/teams/switch", validate("json", switchTeamBodySchema), async (c) => {
    const teamId = c.req.valid("json").teamId;
    const switched = await switchTeam(c.env, c.get("web"), teamId);
    const team = switched && (await listMyTeams(c.env.DB, c.get("web").userId)).find((t) => t.id === teamId);
    if (!team) throw new DomainError("not_found", "no such team");
    return c.json({ team: { id: team.id, name: team.name }, role: team.role });
  });
