/** Fixed-window rate-limit counters (`rate_limits`). Keys arrive hashed; nothing here knows what they count. */

export interface WindowHit {
  key: string;
  windowStart: number;
  windowMs: number;
}

/**
 * Counts one hit in each window and returns each window's count including it. One batch (a
 * transaction), one upsert per window: parallel requests cannot both see the last free slot.
 * Windows that are over are swept first.
 */
export async function countHits(db: D1Database, hits: WindowHit[], now: number): Promise<number[]> {
  const results = await db.batch<{ hits: number }>([
    db.prepare("DELETE FROM rate_limits WHERE expires_at <= ?").bind(now),
    ...hits.map((h) =>
      db
        .prepare(
          `INSERT INTO rate_limits (key, window_start, expires_at, hits) VALUES (?1, ?2, ?3, 1)
           ON CONFLICT (key, window_start) DO UPDATE SET hits = hits + 1
           RETURNING hits`,
        )
        .bind(h.key, h.windowStart, h.windowStart + h.windowMs),
    ),
  ]);
  return results.slice(1).map((r) => r.results[0]?.hits ?? Number.POSITIVE_INFINITY);
}
