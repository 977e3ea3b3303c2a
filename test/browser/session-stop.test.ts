/**
 * The Stop button, in real headless Chromium against `wrangler dev`: on a request's card it
 * stops the whole session (two taps, with the card's reason for the agent): every pending request
 * of the session is denied `session_stopped`, the agent (the SDK over a real socket) hears who and
 * why, its next request is refused; the Sessions screen shows the stop and its Resume lets new
 * requests in again.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type GateSession, Tapgate, tapgateAnswerMeta } from "../../sdk/src/index";
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

const OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" as const },
  { optionId: "deny", name: "Deny", kind: "reject_once" as const },
];

describe.skipIf(!browserAvailable)("stopping a session from a card, in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let desk: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  let sessionId: string;
  const logs: string[] = [];
  const errors: string[] = [];

  const ask = (title: string) => {
    const toolCallId = unique("call");
    const answer = session.requestPermission({
      sessionId,
      toolCall: { toolCallId, title, kind: "execute" },
      options: OPTIONS,
    });
    const held = vi.waitFor(
      async () => {
        const { approvals } = await human.json<{ approvals: Approval[] }>("/v1/approvals?state=pending&limit=200");
        const found = approvals.find((a) => a.snapshot.toolCall.toolCallId === toolCallId);
        if (!found) throw new Error(`${toolCallId} is not pending yet`);
        return found;
      },
      { timeout: 15_000, interval: 50 },
    );
    return { answer, held };
  };

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    desk = await desktopContext(browser, app, errors);
    page = await desk.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
    human = await Human.of(app, desk);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: (_, m) => logs.push(m) });
    sessionId = unique("stop");
    session = await tapgate.session(sessionId, { title: "Tidy the repo", host: "ada-laptop" });
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("Stop on a card denies every request of the session with the reason; Resume on the Sessions screen lets new ones in", async () => {
    const first = ask("rm -r dist");
    const second = ask("git clean -fdx");
    const opened = await first.held;
    await second.held;

    await page.getByTestId(`board-open-${opened.id}`).click();
    const panel = page.getByTestId("board-panel");
    await panel.getByTestId("options").waitFor();
    await panel.getByTestId("reason").locator("summary").click();
    await panel.getByTestId("reason-input").fill("it is deleting too much");
    await panel.getByTestId("stop-session").click();
    await panel.getByTestId("stop-session-confirm").click();
    expect(await panel.getByTestId("stop-session-done").textContent()).toBe("Session stopped: 2 requests denied.");
    await screenshot(page, "session-stopped-card.png");

    for (const answer of [await first.answer, await second.answer]) {
      expect(answer.outcome).toEqual({ outcome: "selected", optionId: "deny" });
      expect(tapgateAnswerMeta(answer)).toMatchObject({
        reason: "session_stopped",
        message: "it is deleting too much",
        decidedBy: { name: "Ada" },
      });
    }
    expect(logs).toContain("denied, stopped by Ada: it is deleting too much");
    // The card now tells how it ended.
    await expect
      .poll(() => panel.getByTestId("outcome").textContent(), { timeout: 15_000 })
      .toContain("you stopped the session");

    // Refused while stopped: the SDK answers fail-closed and says who stopped it.
    const refused = await session.requestPermission({
      sessionId,
      toolCall: { toolCallId: unique("call"), title: "ls", kind: "read" },
      options: OPTIONS,
    });
    expect(refused.outcome).toEqual({ outcome: "selected", optionId: "deny" });
    expect(logs).toContain("refused, stopped by Ada: it is deleting too much (until someone resumes the session)");

    await page.goto("/sessions");
    const row = page.getByTestId(`session-row-${sessionId}`);
    const note = row.getByTestId("session-stopped");
    await note.waitFor();
    expect(await note.textContent()).toMatch(/^Stopped by Ada .*: it is deleting too much/);
    await screenshot(page, "session-stopped-sessions.png");
    await note.getByTestId("resume-session").click();
    await row.getByTestId("stop-session").waitFor();

    const after = ask("npm test");
    expect((await after.held).state).toBe("pending");
  });
});
