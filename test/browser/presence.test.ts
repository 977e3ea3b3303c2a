/**
 * Presence, in real headless Chromium against `wrangler dev`: a person whose dashboard is open
 * and visible gets a new request on the board and no push for it (the page said it is visible
 * over the live socket, and the board reported the card shown, so it counts as seen); once the
 * page reports `visibilitychange` to hidden, the next request is pushed to their device.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalDetail } from "../../sdk/src/approval";
import { type Progress, Tapgate } from "../../sdk/src/index";
import {
  browserAvailable,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";
import { fakeSubscription } from "./push-harness";

const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 });
const OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" as const },
  { optionId: "deny", name: "Deny", kind: "reject_once" as const },
];

describe.skipIf(!browserAvailable)("presence in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let deviceId = "";
  const errors: string[] = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    ctx = await desktopContext(browser, app, errors);
    page = await ctx.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
    human = await Human.of(app, ctx);
    // A push device of Ada's (the push service itself is outside this machine).
    const saved = await human.json<{ id: string }>("/v1/devices", {
      method: "POST",
      body: JSON.stringify({ name: "Pixel 8", subscription: fakeSubscription() }),
    });
    deviceId = saved.id;
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey("presence"), onLog: () => undefined });
  });
  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  const ask = async () => {
    const sessionId = unique("presence");
    const session = await tapgate.session(sessionId, { title: "presence" });
    const progress: Progress[] = [];
    const answer = session.requestPermission(
      { sessionId, toolCall: { toolCallId: unique("call"), title: "Deploy", kind: "execute" }, options: OPTIONS },
      { onProgress: (p) => progress.push(p) },
    );
    return { approval: await human.waitForOne(sessionId), progress, answer };
  };

  it("a visible dashboard gets the card and no push; the card shown counts as seen", async () => {
    const { approval, progress, answer } = await ask();
    await page.getByTestId(`board-row-${approval.id}`).waitFor();
    // The agent hears it was shown on Ada's open Tapgate and seen there.
    await poll(() => progress.at(-1)?.seenBy.map((s) => s.name)).toEqual(["Ada"]);
    expect(progress.at(-1)?.deliveredTo).toEqual([expect.objectContaining({ name: "Ada", device: "app" })]);
    const detail = await human.json<ApprovalDetail>(`/v1/approvals/${approval.id}`);
    expect(detail.escalations?.[0]).toMatchObject({ step: 0, via: "push", shownLive: ["Ada"] });
    // No push went to the device: no delivery row for it.
    expect(detail.delivery).toEqual([]);
    await human.fetch(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ optionId: "deny", requestHash: approval.requestHash }),
    });
    expect((await answer).outcome).toEqual({ outcome: "selected", optionId: "deny" });
  });

  it("once the page reports it is hidden, the next request is pushed to the device", async () => {
    await page.evaluate(() => {
      Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
      document.dispatchEvent(new Event("visibilitychange"));
    });
    const { approval } = await ask();
    await poll(async () => (await human.approval(approval.id)).delivery?.map((d) => d.deviceId)).toEqual([deviceId]);
    const detail = await human.json<ApprovalDetail>(`/v1/approvals/${approval.id}`);
    expect(detail.escalations?.[0]).toMatchObject({ step: 0, shownLive: [] });
    expect(detail.delivery[0]?.sentAt).toBeTypeOf("number");
  });
});
