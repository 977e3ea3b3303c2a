/**
 * Pushes shown ÷ sent over 7 days (`GET /v1/devices`): a device's line and warning, and the
 * team's figures per push platform, flagged under 95 % with at least 5 sent (`showsTooFew`).
 *
 * Owns: the words and what to do about each. Does not own: the figures (the hub counts them) or
 * the rule (`sdk/src/human/push.ts`).
 */
import {
  DISPLAYED_MIN_SENT,
  DISPLAYED_RATIO_MIN,
  type DisplayFigures,
  type PlatformFigures,
  type PushPlatform,
  showsTooFew,
} from "../../../sdk/src/human/push";
import { Banner } from "./Banner";

/** Floored, so a flagged 94.9 % never reads as 95 %. */
const percent = (ratio: number) => `${Math.floor(ratio * 100)} %`;

/** "7 of 8 pushes shown in 7 days (87 %)", or null with nothing sent. */
export function shownText({ sent7d, displayed7d, displayedRatio }: DisplayFigures): string | null {
  if (sent7d === 0 || displayedRatio === null) return null;
  return `${displayed7d} of ${sent7d} push${sent7d === 1 ? "" : "es"} shown in 7 days (${percent(displayedRatio)})`;
}

const PLATFORMS: Record<PushPlatform, { label: string; advice: string }> = {
  apple: {
    label: "iPhone, iPad and Safari (Apple)",
    advice:
      "On iPhone and iPad, Tapgate must be added to the home screen (Share → Add to Home Screen), opened from that icon, and allowed to notify (Settings → Notifications → Tapgate); Focus modes can hide them too. Then send a test push from the device.",
  },
  fcm: {
    label: "Chrome and Android (Google)",
    advice:
      "On Android, allow notifications for the browser and for Tapgate, and turn off battery optimisation for the browser; on a computer, allow notifications for this site and for the browser in the system settings. Then send a test push.",
  },
  mozilla: {
    label: "Firefox (Mozilla)",
    advice:
      "Allow notifications for this site in Firefox and for Firefox in the system settings; Firefox shows pushes only while it runs. Then send a test push.",
  },
  windows: {
    label: "Edge on Windows (Microsoft)",
    advice:
      "Allow notifications for this site in Edge and for Edge in Windows' notification settings, and check that Do not disturb is off. Then send a test push.",
  },
};

const RULE = `under ${percent(DISPLAYED_RATIO_MIN)} of at least ${DISPLAYED_MIN_SENT} pushes`;

/** A device of mine that shows too few of its pushes: what to do. */
export function DeviceShownWarning({ figures }: { figures: DisplayFigures }) {
  if (!showsTooFew(figures)) return null;
  return (
    <Banner tone="warn" testId="device-shown-low">
      This device showed {shownText(figures)}, {RULE}: some requests may never have reached you. Send a test push; if it
      does not show, check that notifications are allowed for Tapgate (on iPhone: added to the home screen and opened
      from there), or remove the device and turn notifications on again from it.
    </Banner>
  );
}

/** The team's figures per push platform, each flagged with what to do when too few show. */
export function TeamPlatforms({ platforms }: { platforms: PlatformFigures[] }) {
  if (platforms.length === 0) return null;
  return (
    <section class="panel" data-testid="team-platforms">
      <h2>Pushes shown, whole team, last 7 days</h2>
      <ul class="rows">
        {platforms.map((p) => (
          <li key={p.platform} class="row" data-testid={`platform-${p.platform}`}>
            <div class="row-main">
              <span class="row-title">{PLATFORMS[p.platform].label}</span>
              <span class="row-sub muted">{shownText(p)}</span>
            </div>
            {showsTooFew(p) && (
              <Banner tone="warn" testId="platform-shown-low">
                Too few shown ({RULE}). {PLATFORMS[p.platform].advice}
              </Banner>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
