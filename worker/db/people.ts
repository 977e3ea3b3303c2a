/** D1 access: people, teams, sign-in links (web sessions: `web-sessions.ts`). */

import { type AuditEntry, type AuditEvent, chainEvents, GENESIS_HASH } from "../audit-chain";
import { newId } from "../crypto";
import { parsePolicy, type TeamPolicy, type VersionedPolicy } from "../policy";
import { auditEntryStatement, auditOutboxStatements } from "./audit";
import { type NewPasskey, sweepExpired } from "./passkeys";

export async function findUserByEmail(db: D1Database, email: string): Promise<{ id: string } | null> {
  return db.prepare("SELECT id FROM users WHERE email = ?").bind(email).first<{ id: string }>();
}

/** The team a user signs in to: the first they joined. */
export async function firstMembership(db: D1Database, userId: string): Promise<{ teamId: string } | null> {
  const row = await db
    .prepare("SELECT team_id FROM memberships WHERE user_id = ? ORDER BY created_at LIMIT 1")
    .bind(userId)
    .first<{ team_id: string }>();
  return row ? { teamId: row.team_id } : null;
}

export async function createUserWithTeam(
  db: D1Database,
  u: { email: string; name: string; teamName: string; now: number },
): Promise<{ userId: string; teamId: string }> {
  const userId = newId("usr");
  const teamId = newId("team");
  await db.batch([
    db
      .prepare("INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?)")
      .bind(userId, u.email, u.name, u.now),
    ...newTeamStatements(db, { teamId, userId, name: u.teamName, now: u.now }),
  ]);
  return { userId, teamId };
}

/**
 * Another team for an existing user, who owns it, while they made fewer than `ceiling` teams
 * (counted in the statement that inserts the team); null when they did not.
 */
export async function createTeam(
  db: D1Database,
  t: { userId: string; name: string; now: number; ceiling: number },
): Promise<string | null> {
  const teamId = newId("team");
  const [, ...rest] = newTeamStatements(db, { teamId, ...t });
  const team = db
    .prepare(
      `INSERT INTO teams (id, name, created_at, created_by) SELECT ?1, ?2, ?3, ?4
        WHERE (SELECT COUNT(*) FROM teams WHERE created_by = ?4) < ?5`,
    )
    .bind(teamId, t.name, t.now, t.userId, t.ceiling);
  try {
    await db.batch([team, ...rest]);
    return teamId;
  } catch (err) {
    // With no team row, the owner's membership (a foreign key to it) fails, and the batch with it.
    if ((await teamsMadeBy(db, t.userId)) >= t.ceiling) return null;
    throw err;
  }
}

/** How many teams the person made (`teams.created_by`). */
export async function teamsMadeBy(db: D1Database, userId: string): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM teams WHERE created_by = ?")
    .bind(userId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/**
 * A team, its owner, and the first link of its audit chain, in one batch. Written here rather
 * than through the team's TeamHub because nothing else can write for a team that does not exist
 * yet; the hub reads its chain head from D1 on first use.
 */
function newTeamStatements(db: D1Database, t: { teamId: string; userId: string; name: string; now: number }) {
  const [genesis] = chainEvents(GENESIS_HASH, [
    {
      eventId: `team_created:${t.teamId}`,
      teamId: t.teamId,
      at: t.now,
      actor: `user:${t.userId}`,
      action: "team.created",
      subject: t.teamId,
    },
  ]);
  return [
    db
      .prepare("INSERT INTO teams (id, name, created_at, created_by) VALUES (?, ?, ?, ?)")
      .bind(t.teamId, t.name, t.now, t.userId),
    db
      .prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)")
      .bind(t.teamId, t.userId, t.now),
    auditEntryStatement(db, genesis as AuditEntry),
  ];
}

export async function getTeamPolicy(db: D1Database, teamId: string): Promise<VersionedPolicy> {
  const row = await db
    .prepare("SELECT policy, policy_version FROM teams WHERE id = ?")
    .bind(teamId)
    .first<{ policy: string; policy_version: number }>();
  return { policy: parsePolicy(row?.policy), version: row?.policy_version ?? 0 };
}

export interface PolicyChange {
  before: TeamPolicy;
  after: TeamPolicy;
  version: number;
}

/** Attempts at replacing the policy while concurrent changes keep bumping its version. */
const POLICY_ATTEMPTS = 3;

/**
 * Replaces the policy and bumps its version (compare-and-swap on the version); returns the one
 * it replaced, the one stored and the new version. With `keepLimits` the stored `limits` stay
 * as they are (the swap fails if they changed meanwhile, so a change of the other settings never
 * undoes a concurrent change of the limits). `check` sees each attempt's change before it is
 * written (throwing refuses it), so it judges the very policy replaced. `audit` builds the event
 * that records the change, queued in the same batch, so the change and its record commit together.
 */
export async function setTeamPolicy(
  db: D1Database,
  teamId: string,
  policy: TeamPolicy,
  opts: {
    keepLimits?: boolean;
    check?: (change: PolicyChange) => void;
    audit?: (change: PolicyChange) => AuditEvent;
  } = {},
): Promise<PolicyChange> {
  for (let attempt = 0; attempt < POLICY_ATTEMPTS; attempt++) {
    const current = await getTeamPolicy(db, teamId);
    const after = opts.keepLimits ? { ...policy, limits: current.policy.limits } : policy;
    const text = JSON.stringify(after);
    const change = { before: current.policy, after, version: current.version + 1 };
    opts.check?.(change);
    const applied = {
      sql: "EXISTS (SELECT 1 FROM teams WHERE id = ?5 AND policy_version = ?6 AND policy = ?7)",
      binds: [teamId, change.version, text],
    };
    const [updated] = await db.batch([
      db
        .prepare(
          "UPDATE teams SET policy = ?, policy_version = policy_version + 1 WHERE id = ? AND policy_version = ? RETURNING policy_version",
        )
        .bind(text, teamId, current.version),
      ...auditOutboxStatements(db, opts.audit?.(change), applied),
    ]);
    if ((updated?.results.length ?? 0) > 0) return change;
  }
  throw new Error("the team policy kept changing; try again");
}

// ── sign-in links ───────────────────────────────────────────────────────────

export interface SignInLink {
  purpose: "signup" | "signin";
  email: string;
  name: string | null;
  team_name: string | null;
  /** A passkey made during passkey sign-up, stored once the link is confirmed. */
  passkey?: ParkedPasskey | null;
}

/**
 * A passkey waiting on a sign-up link, with the SHA-256 of the nonce that the browser which made
 * it holds in a cookie (kept in the same JSON column; rows without it never attach).
 */
export type ParkedPasskey = NewPasskey & { browserHash: string };

export async function createSignInLink(
  db: D1Database,
  l: SignInLink & { tokenHash: string; now: number; ttlMs: number },
): Promise<void> {
  await db.batch([
    sweepExpired(db, "sign_in_links", l.now),
    db
      .prepare(
        `INSERT INTO sign_in_links (token_hash, purpose, email, name, team_name, passkey, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        l.tokenHash,
        l.purpose,
        l.email,
        l.name,
        l.team_name,
        l.passkey ? JSON.stringify(l.passkey) : null,
        l.now,
        l.now + l.ttlMs,
      ),
  ]);
}

/** Marks the link used and returns it, in one statement: a link works once, even under races. */
export async function consumeSignInLink(db: D1Database, tokenHash: string, now: number): Promise<SignInLink | null> {
  const row = await db
    .prepare(
      `UPDATE sign_in_links SET used_at = ?1
        WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?1
        RETURNING purpose, email, name, team_name, passkey`,
    )
    .bind(now, tokenHash)
    .first<Omit<SignInLink, "passkey"> & { passkey: string | null }>();
  return row && { ...row, passkey: row.passkey ? (JSON.parse(row.passkey) as ParkedPasskey) : null };
}

/** Whom an unused, unexpired link signs in, without using it up (its page says so first). */
export async function findSignInLink(
  db: D1Database,
  tokenHash: string,
  now: number,
): Promise<Pick<SignInLink, "purpose" | "email" | "name"> | null> {
  return db
    .prepare(
      "SELECT purpose, email, name FROM sign_in_links WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
    )
    .bind(tokenHash, now)
    .first<Pick<SignInLink, "purpose" | "email" | "name">>();
}

// ── local mode outbox ───────────────────────────────────────────────────────

export interface DevMessage {
  to: string;
  subject: string;
  text: string;
  link: string | null;
  sentAt: number;
  /** As the provider does, the outbox keeps one message per key. */
  idempotencyKey?: string;
}

export async function saveDevMessage(db: D1Database, m: DevMessage): Promise<void> {
  await db
    .prepare(
      `INSERT OR IGNORE INTO dev_outbox (recipient, subject, body, link, sent_at, idempotency_key)
       VALUES (?, ?, ?, ?, ?, ?)`,
    )
    .bind(m.to, m.subject, m.text, m.link, m.sentAt, m.idempotencyKey ?? null)
    .run();
}

export async function listDevMessages(db: D1Database, to: string | undefined): Promise<DevMessage[]> {
  const { results } = await db
    .prepare(
      `SELECT "to", subject, text, link, sentAt FROM (
         SELECT seq, recipient AS "to", subject, body AS text, link, sent_at AS sentAt FROM dev_outbox
          WHERE ?1 IS NULL OR recipient = ?1 ORDER BY seq DESC LIMIT 500)
        ORDER BY seq`,
    )
    .bind(to ?? null)
    .all<DevMessage>();
  return results;
}
