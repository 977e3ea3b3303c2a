/**
 * The team's agent sessions as the dashboard sees them: D1's index, with the dead letters each
 * session's gate reported to the team's hub (outbox rows that could not be written, so D1 may
 * lack them). A session counts as connected only while its gate keeps reporting.
 *
 * An admin can have a session's dead letters replayed now (`replayDeadLetters`): its gate
 * delivers them again, each alone. A decider stops a session (`stopSession`: its gate denies
 * every pending request and refuses new ones); its owner or an admin resumes it.
 *
 * Owns: merging the two, asking for a replay, and who may resume a stop. Does not own: the SQL (`db/sessions.ts`), the counts or what "live"
 * means (`hub/sessions.ts`, `SESSION_LIVE_MS`).
 */
import type { AgentSession } from "../../sdk/src/approval";
import type { ReplayAnswer, StopAnswer } from "../../sdk/src/human/sessions";
import { getSession, listSessions } from "../db";
import { REQUEST_BUDGET_MS, withDeadline } from "../deadline";
import { DomainError } from "../errors";
import { type StopInput, type StopResult, sessionGate } from "../gate/api";
import { type DeadLetteredSession, hubFor, SESSION_LIVE_MS } from "../hub/api";
import { ADMIN_ROLES } from "../roles";
import type { Env, WebIdentity } from "../types";

/** Connected or recent sessions, and every session of the team with dead letters. */
export async function listTeamSessions(
  env: Env,
  q: { teamId: string; state: "connected" | "recent"; limit: number },
): Promise<{ sessions: AgentSession[]; deadLettered: DeadLetteredSession[] }> {
  const [sessions, deadLettered] = await Promise.all([
    listSessions(env.DB, { ...q, liveSince: Date.now() - SESSION_LIVE_MS }),
    deadLetteredAtHub(env, q.teamId),
  ]);
  return { sessions: withDeadLetters(sessions, deadLettered), deadLettered };
}

/** One session of the team, with its dead letters; null when the team has no such session. */
export async function teamSession(env: Env, teamId: string, sessionId: string): Promise<AgentSession | null> {
  const [session, deadLettered] = await Promise.all([
    getSession(env.DB, teamId, sessionId),
    deadLetteredAtHub(env, teamId),
  ]);
  return session ? (withDeadLetters([session], deadLettered)[0] ?? null) : null;
}

/** The team's sessions with dead letters, as its hub counts them (503 when it does not answer in time). */
function deadLetteredAtHub(env: Env, teamId: string): Promise<DeadLetteredSession[]> {
  return withDeadline(hubFor(env, teamId).deadLettered(teamId), REQUEST_BUDGET_MS, "hub.deadLettered");
}

function withDeadLetters(sessions: AgentSession[], deadLettered: DeadLetteredSession[]): AgentSession[] {
  const counts = new Map(deadLettered.map((d) => [d.sessionId, d.deadLetters]));
  return sessions.map((s) => {
    const deadLetters = counts.get(s.sessionId);
    return deadLetters ? { ...s, deadLetters } : s;
  });
}

/** Replays a session's dead letters now; null when the team has no such session. */
export async function replayDeadLetters(env: Env, teamId: string, sessionId: string): Promise<ReplayAnswer | null> {
  if (!(await getSession(env.DB, teamId, sessionId))) return null;
  return sessionGate(env, teamId, sessionId).replayDeadLetters(teamId);
}

/** Stops a session of the team: its pending requests are denied, new ones refused (`404` for none of the team's). */
export async function stopSession(env: Env, teamId: string, sessionId: string, input: StopInput): Promise<StopAnswer> {
  if (!(await getSession(env.DB, teamId, sessionId))) throw noSuchSession();
  return stopAnswer(sessionId, await sessionGate(env, teamId, sessionId).stop(teamId, input));
}

/** Resumes a stopped session: its owner or an admin (`403 forbidden` for others, `404` for none of the team's). */
export async function resumeSession(env: Env, web: WebIdentity, sessionId: string): Promise<StopAnswer> {
  const session = await getSession(env.DB, web.teamId, sessionId);
  if (!session) throw noSuchSession();
  if (session.owner.userId !== web.userId && !ADMIN_ROLES.includes(web.role)) {
    throw new DomainError("forbidden", "only the session's owner or an admin may resume it");
  }
  const by = { userId: web.userId, name: web.name };
  return stopAnswer(sessionId, await sessionGate(env, web.teamId, sessionId).resume(web.teamId, by));
}

function stopAnswer(sessionId: string, result: StopResult | null): StopAnswer {
  // D1 knows the session but its gate never served it: nothing to stop, and nothing to show.
  if (!result) throw noSuchSession();
  return { sessionId, ...result };
}

const noSuchSession = () => new DomainError("not_found", "no such session");
