/**
 * The Sessions screen's dead letters, in real headless Chromium against `wrangler dev`: D1
 * refuses one decision's row (a trigger on the local D1, as production's D1 would refuse it), so
 * the session's outbox sets it aside; the screen names the session and its count, an admin's
 * "Replay now" says what still could not be saved, and once D1 takes the row again the replay
 * writes it: the banner goes and the history has the decision.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { DeadLetteredSession } from "../../sdk/src/human/sessions";
import { type GateSession, Tapgate } from "../../sdk/src/index";
import {
  browserAvailable,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  screenshot,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";

describe.skipIf(!browserAvailable)("dead letters on the Sessions screen, in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let desk: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  const sessionId = unique("dead");
  const errors: string[] = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    desk = await desktopContext(browser, app, errors);
    page = await desk.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
    human = await Human.of(app, desk);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => {} });
    session = await tapgate.session(sessionId, { title: "Tidy the repo", host: "ada-laptop" });
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("shows a decision D1 refused, says a replay that still fails, and replays it once D1 takes it", async () => {
    const answer = session.requestPermission({
      sessionId,
      toolCall: { toolCallId: unique("call"), title: "rm -r dist", kind: "execute" },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    });
    const held = await human.waitForOne(sessionId);
    const trigger = `refuse_${held.id.slice(-8)}`;
    await app.d1(
      `CREATE TRIGGER ${trigger} BEFORE UPDATE ON approvals WHEN NEW.id = '${held.id}' BEGIN SELECT RAISE(ABORT, 'row refused'); END`,
    );
    await human.json(`/v1/approvals/${held.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ optionId: "allow", requestHash: held.requestHash }),
    });
    // The agent has its answer; only D1's copy of the decision is set aside.
    expect((await answer).outcome).toEqual({ outcome: "selected", optionId: "allow" });
    await vi.waitFor(
      async () => {
        const { deadLettered } = await human.json<{ deadLettered: DeadLetteredSession[] }>("/v1/sessions");
        expect(deadLettered).toEqual([expect.objectContaining({ sessionId, deadLetters: 1 })]);
      },
      { timeout: 15_000, interval: 100 },
    );

    await page.goto("/sessions");
    const banner = page.getByTestId("dead-letters-banner");
    await banner.waitFor();
    expect(await banner.textContent()).toContain("1 record of 1 session could not be saved");
    expect(await banner.getByTestId("dead-letter-link").textContent()).toBe(sessionId);
    await screenshot(page, "dead-letters-banner.png");

    // Still refused: the replay says so and the banner stays.
    await banner.getByTestId("dead-letter-replay").click();
    expect(await page.getByTestId("dead-letter-replay-error").textContent()).toContain(
      "1 still could not be saved; they are tried again later.",
    );
    expect(await resolvedIds()).not.toContain(held.id);

    await app.d1(`DROP TRIGGER ${trigger}`);
    await banner.getByTestId("dead-letter-replay").click();
    await banner.waitFor({ state: "detached" });
    expect(await resolvedIds()).toContain(held.id);
  });

  /** The resolved requests D1's index has (the history the dashboard lists). */
  async function resolvedIds(): Promise<string[]> {
    const { approvals } = await human.json<{ approvals: Approval[] }>("/v1/approvals?state=resolved&limit=200");
    return approvals.map((a) => a.id);
  }
});
