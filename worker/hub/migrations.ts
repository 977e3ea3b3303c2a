/**
 * A TeamHub's own SQLite schema, as versioned migrations. Objects keep their storage across
 * deploys, so the schema only ever moves forward, one step per version: to add a column, append
 * a step (`ALTER TABLE ... ADD COLUMN ...`), never edit one that shipped.
 *
 * Owns: every CREATE/ALTER of the hub's tables and the `meta('schema_version')` row. Does not
 * own: the rows (each table's subsystem does: `directory.ts` devices/members/people,
 * `live-feed.ts` approvals, `push-queue.ts` deliveries/push_queue, `push-budget.ts`
 * push_budget/push_summaries, `sessions.ts` sessions/policy_fanout, `quotas.ts`
 * quota_pending/quota_buckets, `vouching.ts` ended_web_sessions/revoked_keys, `revocations.ts` revocation_fanout/revocations_heard, `daily-bytes.ts` quota_days, `escalation.ts` escalations/live_cards, `claims.ts` claims, `shown-counts.ts` display_days; the
 * shell, `audit-writer.ts` and `sessions.ts` keep keys in `meta`).
 */
import { type MigrationStep, runMigrations } from "../sqlite-migrations";

/** Step n brings a hub from version n to n + 1; hubs from before versioning are at 0. */
const MIGRATIONS: MigrationStep[] = [
  // IF NOT EXISTS: hubs at version 0 already have these tables (they were created at each start).
  `CREATE TABLE IF NOT EXISTS devices (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL,
     endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL);
   CREATE TABLE IF NOT EXISTS members (user_id TEXT PRIMARY KEY, role TEXT NOT NULL);
   CREATE TABLE IF NOT EXISTS approvals (id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, state TEXT NOT NULL,
     expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, record TEXT NOT NULL);
   CREATE TABLE IF NOT EXISTS deliveries (approval_id TEXT NOT NULL, device_id TEXT NOT NULL, user_id TEXT NOT NULL,
     device_name TEXT NOT NULL, sent_at INTEGER, delivered_at INTEGER, seen_at INTEGER, failed_at INTEGER,
     PRIMARY KEY (approval_id, device_id));
   CREATE TABLE IF NOT EXISTS push_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, device_id TEXT NOT NULL,
     approval_id TEXT, payload TEXT NOT NULL, urgency TEXT NOT NULL, expires_at INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL);
   CREATE TABLE IF NOT EXISTS people (user_id TEXT PRIMARY KEY, name TEXT NOT NULL);
   CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL,
     info TEXT NOT NULL, connected INTEGER NOT NULL, connected_at INTEGER, disconnected_at INTEGER,
     last_seen_at INTEGER NOT NULL, pending INTEGER NOT NULL);`,
  // The push budget, per device across the team's sessions: which requests went to which
  // device (pushed or held back), and each device's last summary.
  `CREATE TABLE IF NOT EXISTS push_budget (device_id TEXT NOT NULL, approval_id TEXT NOT NULL, at INTEGER NOT NULL,
     pushed INTEGER NOT NULL, PRIMARY KEY (device_id, approval_id));
   CREATE INDEX IF NOT EXISTS push_budget_at ON push_budget (at);
   CREATE TABLE IF NOT EXISTS push_summaries (device_id TEXT PRIMARY KEY, at INTEGER NOT NULL);`,
  // Sessions stay bounded (stale rows found, idle rows pruned, by last report), and a policy
  // change reaches live sessions a bounded number per invocation: the rest wait here.
  `CREATE INDEX IF NOT EXISTS sessions_seen ON sessions (connected, last_seen_at);
   CREATE TABLE IF NOT EXISTS policy_fanout (session_id TEXT PRIMARY KEY);`,
  // Each session's outbox dead letters, as its gate reports them, for the dashboard.
  `ALTER TABLE sessions ADD COLUMN dead_letters INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN dead_lettered_at INTEGER;`,
  // Team quotas (quotas.ts): each pending request of the team until it ends or expires, and one
  // token bucket per API key (dropped once full again: a full bucket is the same as none).
  `CREATE TABLE IF NOT EXISTS quota_pending (approval_id TEXT PRIMARY KEY, key_id TEXT NOT NULL,
     session_id TEXT NOT NULL, expires_at INTEGER NOT NULL);
   CREATE INDEX IF NOT EXISTS quota_pending_key ON quota_pending (key_id, expires_at);
   CREATE INDEX IF NOT EXISTS quota_pending_expiry ON quota_pending (expires_at);
   CREATE TABLE IF NOT EXISTS quota_buckets (key_id TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL,
     full_at INTEGER NOT NULL);`,
  // Standing rules (rules.ts): the team's rules that stand, copied from D1 on change.
  `CREATE TABLE IF NOT EXISTS standing_rules (id TEXT PRIMARY KEY, scope TEXT NOT NULL, created_by TEXT NOT NULL,
     creator_name TEXT NOT NULL, match TEXT NOT NULL, expires_at INTEGER NOT NULL);`,
  // Claims (claims.ts): who is looking at a pending request, until when; not a lock.
  `CREATE TABLE IF NOT EXISTS claims (approval_id TEXT NOT NULL, user_id TEXT NOT NULL, name TEXT NOT NULL,
     until INTEGER NOT NULL, PRIMARY KEY (approval_id, user_id));`,
  // Delivery you can trust (escalation.ts): the service worker's receipts per device, the
  // escalation steps each request ran (its timeline, once per step and phase), and cards shown
  // on (and seen from) a visible open page.
  `ALTER TABLE deliveries ADD COLUMN received_at INTEGER;
   ALTER TABLE deliveries ADD COLUMN displayed_at INTEGER;
   ALTER TABLE deliveries ADD COLUMN opened_at INTEGER;
   CREATE TABLE IF NOT EXISTS escalations (approval_id TEXT NOT NULL, step INTEGER NOT NULL, phase TEXT NOT NULL,
     at INTEGER NOT NULL, via TEXT NOT NULL, outcome TEXT NOT NULL, PRIMARY KEY (approval_id, step, phase));
   CREATE TABLE IF NOT EXISTS live_cards (approval_id TEXT NOT NULL, user_id TEXT NOT NULL, shown_at INTEGER,
     seen_at INTEGER, PRIMARY KEY (approval_id, user_id));`,
  // Web sessions that ended lately (vouching.ts), so a decision vouched by the hub skips D1.
  `CREATE TABLE IF NOT EXISTS ended_web_sessions (token_hash TEXT PRIMARY KEY, ended_at INTEGER NOT NULL);`,
  // Agent keys revoked lately (vouching.ts), so an agent's key vouched by the hub skips D1.
  `CREATE TABLE IF NOT EXISTS revoked_keys (key_id TEXT PRIMARY KEY, revoked_at INTEGER NOT NULL);`,
  // A revocation's fan-out to the sessions its key opened (revocations.ts): each gate not yet
  // told, retried from the alarm until it acknowledges.
  `CREATE TABLE IF NOT EXISTS revocation_fanout (key_id TEXT NOT NULL, session_id TEXT NOT NULL,
     attempts INTEGER NOT NULL, next_at INTEGER NOT NULL, PRIMARY KEY (key_id, session_id));
   CREATE INDEX IF NOT EXISTS revocation_fanout_next ON revocation_fanout (next_at);`,
  // The bytes the team's admitted requests stored today (daily-bytes.ts), under the operator's ceiling.
  `CREATE TABLE IF NOT EXISTS quota_days (day INTEGER PRIMARY KEY, bytes INTEGER NOT NULL);`,
  // Escalation steps started (escalation.ts): marked before their mails and pushes leave, so a
  // hub evicted mid-step sends none of them again.
  `CREATE TABLE IF NOT EXISTS escalation_starts (approval_id TEXT NOT NULL, step INTEGER NOT NULL,
     phase TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (approval_id, step, phase));`,
  // A stopped session (gate/session-stop.ts): its stop as the gate last reported it, shown live.
  "ALTER TABLE sessions ADD COLUMN stopped TEXT;",
  // Pushes shown ÷ sent per day and device, kept past the deliveries (shown-counts.ts), and
  // the day each delivery was counted as sent (its first send), so its receipt counts there once.
  `CREATE TABLE IF NOT EXISTS display_days (day INTEGER NOT NULL, device_id TEXT NOT NULL, user_id TEXT NOT NULL,
     platform TEXT NOT NULL, sent INTEGER NOT NULL, displayed INTEGER NOT NULL, PRIMARY KEY (day, device_id));
   ALTER TABLE deliveries ADD COLUMN sent_day INTEGER;`,
  // Outside channels' posts (channel-posts.ts): one row per request and place, posted and later
  // updated with how the request ended, each retried with backoff from the alarm while due.
  `CREATE TABLE IF NOT EXISTS channel_posts (approval_id TEXT NOT NULL, channel TEXT NOT NULL, address TEXT NOT NULL,
     user_id TEXT, card TEXT NOT NULL, state TEXT NOT NULL, ref TEXT, ending TEXT, attempts INTEGER NOT NULL,
     next_at INTEGER, posted_at INTEGER, PRIMARY KEY (approval_id, channel, address));
   CREATE INDEX IF NOT EXISTS channel_posts_due ON channel_posts (next_at);`,
  // Revoked keys the hub took up (revocations.ts), kept while its read back of D1 could return
  // them, so a key it was told of is not fanned out again.
  `CREATE TABLE IF NOT EXISTS revocations_heard (key_id TEXT PRIMARY KEY, heard_at INTEGER NOT NULL);
   CREATE INDEX IF NOT EXISTS revocations_heard_at ON revocations_heard (heard_at);`,
  // Each person an escalation step's mail was sent to or refused for (escalation-mail.ts), and
  // how often the step ran: a step whose mail failed for some runs again, a few times, for the rest.
  `CREATE TABLE IF NOT EXISTS escalation_mails (approval_id TEXT NOT NULL, step INTEGER NOT NULL,
     phase TEXT NOT NULL, user_id TEXT NOT NULL, at INTEGER NOT NULL, outcome TEXT NOT NULL,
     PRIMARY KEY (approval_id, step, phase, user_id));
   CREATE TABLE IF NOT EXISTS escalation_mail_runs (approval_id TEXT NOT NULL, step INTEGER NOT NULL,
     phase TEXT NOT NULL, runs INTEGER NOT NULL, PRIMARY KEY (approval_id, step, phase));`,
];

/** The version every hub reaches on its next start. */
export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(storage: DurableObjectStorage): void {
  runMigrations(storage, MIGRATIONS);
}
