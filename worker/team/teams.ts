/**
 * A person's teams as use cases: make another team, and move a web session to another team.
 *
 * Owns: what moving a session must also end (the cached identity, the old team's live feed).
 * Does not own: the SQL (`db/teams.ts`, `db/people.ts`), the identity cache (`auth.ts`).
 */
import { forgetWebSession, webSessionTeams } from "../auth";
import { ceilingsOf, overCeiling } from "../ceilings";
import { createTeam, switchWebSession } from "../db";
import { closeWebSessionAtHub } from "../hub/api";
import type { Env, WebIdentity } from "../types";

/**
 * Moves the caller's web session to a team they belong to; false when they do not. The cached
 * identity names the old team and role, so it is dropped; other isolates catch up within the
 * cache's lifetime.
 */
export async function switchTeam(env: Env, web: WebIdentity, teamId: string): Promise<boolean> {
  const left = await webSessionTeams(env.DB, web);
  const switched = await switchWebSession(env.DB, { tokenHash: web.tokenHash, userId: web.userId, teamId });
  if (!switched) return false;
  forgetWebSession(web.tokenHash);
  // The old team's feed must stop, and its hub vouch for the session no more; the app opens the new team's.
  await Promise.all(left.map((t) => closeWebSessionAtHub(env, t, web.tokenHash)));
  return true;
}

/** Another team, owned by the caller, who moves to it; `429 quota_exceeded` past the server's ceiling. */
export async function createTeamAndSwitch(env: Env, web: WebIdentity, name: string): Promise<string> {
  const ceiling = ceilingsOf(env).teamsPerPerson;
  const teamId = await createTeam(env.DB, { userId: web.userId, name, now: Date.now(), ceiling });
  if (!teamId) throw overCeiling("teamsPerPerson", ceiling, "teams made by one person");
  await switchTeam(env, web, teamId);
  return teamId;
}
