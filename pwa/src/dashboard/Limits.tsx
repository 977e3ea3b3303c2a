/**
 * The team's limits (quotas) on the policy page, and their names for people (the board's
 * refusal notices use them too). Only owners change them; everyone else sees them.
 */
import type { QuotaLimit, TeamLimits } from "../../../sdk/src/human/index";

/** What each limit is called where people read it. */
export const LIMIT_LABELS: Record<keyof TeamLimits, string> = {
  requestsPerKeyPerMinute: "requests per key per minute",
  burstPerKey: "burst per key",
  pendingPerTeam: "pending requests per team",
  pendingPerKey: "pending requests per key",
  storedBytesPerRequest: "stored bytes per request",
  retentionDays: "history retention (days)",
};

/** A refusal's limit: one of the team's, or the server's daily ceiling. */
export const limitLabel = (limit: QuotaLimit) =>
  limit === "storedBytesPerTeamPerDay" ? "stored bytes per team per day (this server's ceiling)" : LIMIT_LABELS[limit];

const FIELDS: Array<{ key: keyof TeamLimits; min: number; max: number; help: string }> = [
  { key: "requestsPerKeyPerMinute", min: 1, max: 6000, help: "How fast one API key may create requests." },
  { key: "burstPerKey", min: 1, max: 1000, help: "How many a key may create at once before that rate applies." },
  { key: "pendingPerTeam", min: 1, max: 10000, help: "Requests waiting at once, across every session of the team." },
  { key: "pendingPerKey", min: 1, max: 10000, help: "Requests waiting at once for one API key." },
  {
    key: "storedBytesPerRequest",
    min: 4096,
    max: 262144,
    help: "Larger requests are stored cut, and their card says how much was not stored.",
  },
  {
    key: "retentionDays",
    min: 1,
    max: 3650,
    help: "Resolved requests and idle sessions are deleted after this; the audit log is kept.",
  },
];

export function LimitsFields({ limits, onChange }: { limits: TeamLimits; onChange: (limits: TeamLimits) => void }) {
  return (
    <div class="limits" data-testid="policy-limits">
      {FIELDS.map((f) => (
        <label key={f.key} class="setting">
          <div>
            <p class="setting-title">{LIMIT_LABELS[f.key]}</p>
            <p class="muted small">{f.help}</p>
          </div>
          <div class="setting-control">
            <input
              type="number"
              min={f.min}
              max={f.max}
              step={1}
              required
              value={limits[f.key]}
              onInput={(e) => onChange({ ...limits, [f.key]: Math.round(Number(e.currentTarget.value) || f.min) })}
              data-testid={`policy-limit-${f.key}`}
            />
          </div>
        </label>
      ))}
    </div>
  );
}
