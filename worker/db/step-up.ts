/**
 * D1 access: step-up challenges (migrations 0012, 0021, 0028). Each is single-use, short-lived, scoped
 * to one person and team, and for one purpose and subject: an allow of one approval with one
 * option (`decision`), or one change of the team policy (`policy`). Does not own what a challenge
 * commits to (sdk/src/human/step-up.ts).
 */

/** What a challenge is for: an allow of a high-risk request, or a weakening of the team policy. */
export type StepUpPurpose = "decision" | "policy";

export interface StepUpChallengeRow {
  challenge: string;
  purpose: StepUpPurpose;
  /** The approval id (`decision`) or the team id (`policy`). */
  subject: string;
  /** The approval's `requestHash` (`decision`) or the new policy's hash (`policy`). */
  subjectHash: string;
  /** The option the allow chooses (`decision`); null for `policy`. */
  optionId: string | null;
  /** The edited input the allow carries (`decision`, migration 0028): its hash; null for none. */
  editedInputHash: string | null;
  nonce: string;
  expiresAt: number;
  usedAt: number | null;
}

/** Stores a new challenge (sweeping expired ones first). */
export async function createStepUpChallenge(
  db: D1Database,
  ch: Omit<StepUpChallengeRow, "usedAt" | "editedInputHash"> & {
    editedInputHash?: string | null;
    teamId: string;
    userId: string;
    now: number;
  },
): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM step_up_challenges WHERE expires_at < ?").bind(ch.now),
    db
      .prepare(
        `INSERT INTO step_up_challenges (challenge, purpose, subject, subject_hash, option_id, team_id, user_id, nonce,
                                         created_at, expires_at, edited_input_hash)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        ch.challenge,
        ch.purpose,
        ch.subject,
        ch.subjectHash,
        ch.optionId,
        ch.teamId,
        ch.userId,
        ch.nonce,
        ch.now,
        ch.expiresAt,
        ch.editedInputHash ?? null,
      ),
  ]);
}

/** A challenge of this person in this team, used or not (so a replay can be told from a stranger). */
export async function findStepUpChallenge(
  db: D1Database,
  q: { challenge: string; teamId: string; userId: string },
): Promise<StepUpChallengeRow | null> {
  return db
    .prepare(
      `SELECT challenge, purpose, subject, subject_hash AS subjectHash, option_id AS optionId,
              edited_input_hash AS editedInputHash, nonce,
              expires_at AS expiresAt, used_at AS usedAt
         FROM step_up_challenges WHERE challenge = ? AND team_id = ? AND user_id = ?`,
    )
    .bind(q.challenge, q.teamId, q.userId)
    .first<StepUpChallengeRow>();
}

/** Uses a challenge up, in one statement: true for exactly one caller, and only before it expires. */
export async function useStepUpChallenge(db: D1Database, challenge: string, now: number): Promise<boolean> {
  const row = await db
    .prepare(
      `UPDATE step_up_challenges SET used_at = ?2 WHERE challenge = ?1 AND used_at IS NULL AND expires_at > ?2
       RETURNING challenge`,
    )
    .bind(challenge, now)
    .first();
  return row !== null;
}
