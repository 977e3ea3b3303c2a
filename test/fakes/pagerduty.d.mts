/** A fake PagerDuty Events API v2 on 127.0.0.1 (see pagerduty.mjs). */
export function startFakePagerDuty(): Promise<{ url: string }>;
