/**
 * Requests per day by outcome (stacked bars), decision latency p50/p90, and rubber-stamping
 * (`Oversight.tsx`), over 7 or 30 days. Hand-made SVG.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, type Stats as StatsData } from "../api";
import { Oversight } from "./Oversight";
import { Empty, LoadError, latency, PageHead, useLoad } from "./ui";

type Day = StatsData["days"][number];
const OUTCOMES = ["allowed", "denied", "expired", "cancelled"] as const;
const LABEL: Record<(typeof OUTCOMES)[number], string> = {
  allowed: "Allowed",
  denied: "Denied",
  expired: "Expired",
  cancelled: "Cancelled",
};

export function Stats() {
  const [days, setDays] = useState<7 | 30>(7);
  const stats = useLoad(() => api.stats(days), [days]);
  const series = stats.data ? fillDays(stats.data.days, days) : [];
  const totals = Object.fromEntries(OUTCOMES.map((o) => [o, series.reduce((n, d) => n + d[o], 0)])) as Record<
    (typeof OUTCOMES)[number],
    number
  >;
  const total = OUTCOMES.reduce((n, o) => n + totals[o], 0);
  const lat = stats.data?.latency;

  return (
    <section class="screen dash" data-testid="screen-stats">
      <PageHead
        title="Stats"
        sub={`The team's requests over the last ${days} days.`}
        actions={
          <fieldset class="segmented">
            <legend class="visually-hidden">Period</legend>
            {([7, 30] as const).map((n) => (
              <button
                key={n}
                type="button"
                aria-pressed={days === n}
                onClick={() => setDays(n)}
                data-testid={`stats-${n}`}
              >
                {n} days
              </button>
            ))}
          </fieldset>
        }
      />
      {stats.error && <LoadError error={stats.error} testId="stats-error" onRetry={() => void stats.reload()} />}
      {stats.data && (
        <>
          <div class="kpis" data-testid="stats-kpis">
            <Kpi label="Requests" value={total.toLocaleString()} testId="kpi-total" />
            <Kpi
              label="Allowed"
              value={total ? `${Math.round((totals.allowed / total) * 100)} %` : "—"}
              note={`${totals.allowed.toLocaleString()} request${totals.allowed === 1 ? "" : "s"}`}
              testId="kpi-allowed"
            />
            <Kpi
              label="Decision time, median"
              value={latency(lat?.p50)}
              note={
                lat?.count
                  ? `p50 of ${lat.count.toLocaleString()} human decision${lat.count === 1 ? "" : "s"}`
                  : "no human decisions yet"
              }
              testId="latency-p50"
            />
            <Kpi
              label="Decision time, p90"
              value={latency(lat?.p90)}
              note="9 in 10 decisions were faster"
              testId="latency-p90"
            />
          </div>
          <section class="panel chart-panel">
            <div class="chart-head">
              <h2>Requests per day by outcome</h2>
              <ul class="legend" data-testid="chart-legend">
                {OUTCOMES.map((o) => (
                  <li key={o}>
                    <span class={`swatch fill-${o}`} aria-hidden="true" />
                    {LABEL[o]} <span class="muted">{totals[o].toLocaleString()}</span>
                  </li>
                ))}
              </ul>
            </div>
            {total === 0 ? (
              <Empty title="No requests in this period" testId="stats-empty">
                The chart fills in as agents ask and people answer.
              </Empty>
            ) : (
              <BarChart days={series} />
            )}
          </section>
          <Oversight stats={stats.data} days={days} />
        </>
      )}
      {!stats.data && stats.loading && <p class="muted">Loading…</p>}
    </section>
  );
}

function Kpi({ label, value, note, testId }: { label: string; value: string; note?: string; testId: string }) {
  return (
    <div class="kpi" data-testid={testId}>
      <span class="kpi-label">{label}</span>
      <span class="kpi-value">{value}</span>
      {note && <span class="kpi-note muted">{note}</span>}
    </div>
  );
}

const H = 260;
const PAD = { top: 12, right: 8, bottom: 28, left: 40 };

function BarChart({ days }: { days: Day[] }) {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(720);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(([entry]) => entry && setWidth(Math.max(280, Math.floor(entry.contentRect.width))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const { max, ticks } = scale(Math.max(1, ...days.map((d) => OUTCOMES.reduce((n, o) => n + d[o], 0))));
  const plotW = width - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const band = plotW / days.length;
  const barW = Math.min(40, band * 0.64);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const every = days.length > 14 ? Math.ceil(days.length / 8) : 1;

  return (
    <div ref={ref} class="chart">
      <svg
        width={width}
        height={H}
        viewBox={`0 0 ${width} ${H}`}
        role="img"
        aria-label={`Requests per day by outcome, last ${days.length} days`}
        data-testid="stats-chart"
      >
        {ticks.map((t) => (
          <g key={t}>
            <line class="grid" x1={PAD.left} x2={width - PAD.right} y1={y(t)} y2={y(t)} />
            <text class="axis" x={PAD.left - 8} y={y(t)} dy="0.32em" text-anchor="end">
              {t}
            </text>
          </g>
        ))}
        {days.map((d, i) => {
          const x = PAD.left + i * band + (band - barW) / 2;
          let acc = 0;
          const sum = OUTCOMES.reduce((n, o) => n + d[o], 0);
          return (
            <g key={d.date} data-testid={`bar-${d.date}`} data-total={sum}>
              <title>
                {`${dayLabel(d.date, true)}: ${sum} request${sum === 1 ? "" : "s"}${OUTCOMES.filter((o) => d[o])
                  .map((o) => `\n${LABEL[o]}: ${d[o]}`)
                  .join("")}`}
              </title>
              <rect class="hit" x={PAD.left + i * band} y={PAD.top} width={band} height={plotH} />
              {OUTCOMES.map((o) => {
                if (!d[o]) return null;
                const top = y(acc + d[o]);
                const h = y(acc) - top;
                acc += d[o];
                return (
                  <rect key={o} class={`fill-${o}`} x={x} y={top} width={barW} height={Math.max(1, h - 1)} rx={2} />
                );
              })}
              {i % every === 0 && (
                <text class="axis" x={x + barW / 2} y={H - 8} text-anchor="middle">
                  {dayLabel(d.date, days.length <= 7)}
                </text>
              )}
            </g>
          );
        })}
        <line class="baseline" x1={PAD.left} x2={width - PAD.right} y1={y(0)} y2={y(0)} />
      </svg>
    </div>
  );
}

/** The server may leave out empty days: draw every day of the period, oldest first. */
function fillDays(given: Day[], n: number): Day[] {
  const byDate = new Map(given.map((d) => [d.date, d]));
  const out: Day[] = [];
  const today = new Date();
  for (let i = n - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i));
    const date = d.toISOString().slice(0, 10);
    out.push(byDate.get(date) ?? { date, allowed: 0, denied: 0, cancelled: 0, expired: 0 });
  }
  // Days the server knows but our clock does not (time zones at the edges) are kept, in order.
  for (const d of given) if (!out.some((o) => o.date === d.date)) out.push(d);
  return out.sort((a, b) => a.date.localeCompare(b.date)).slice(-n);
}

/** Whole-number ticks at 1, 2 or 5 × 10ⁿ, about four of them, the top one at or above `v`. */
function scale(v: number): { max: number; ticks: number[] } {
  const rough = Math.max(1, v / 4);
  const pow = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= rough) ?? 10 * pow;
  const max = Math.max(step, Math.ceil(v / step) * step);
  const ticks: number[] = [];
  for (let t = 0; t <= max; t += step) ticks.push(t);
  return { max, ticks };
}

function dayLabel(date: string, withWeekday: boolean): string {
  const d = new Date(`${date}T00:00:00Z`);
  return d.toLocaleDateString(
    [],
    withWeekday
      ? { weekday: "short", day: "numeric", timeZone: "UTC" }
      : { day: "numeric", month: "short", timeZone: "UTC" },
  );
}
