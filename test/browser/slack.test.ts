/**
 * The Channels screen's Slack part in headless Chromium against `wrangler dev`, with Slack set up
 * against the fake Slack on 127.0.0.1 (test/fakes/slack.ts): an owner clicks "Add to Slack",
 * approves on the fake Slack's page and lands back on Channels with Slack connected, picks a team
 * channel, and gets a link code to send the bot.
 */
import { randomBytes } from "node:crypto";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeSlack } from "../fakes/slack";
import { browserAvailable, desktopContext, type LocalApp, launchChromium, signUpByEmail, startApp } from "./harness";

describe.skipIf(!browserAvailable)("the Channels screen's Slack part", () => {
  let fake: Awaited<ReturnType<typeof startFakeSlack>>;
  let app: LocalApp;
  let browser: Browser;
  const errors: string[] = [];

  beforeAll(async () => {
    const client = { clientId: "1234.5678", clientSecret: randomBytes(16).toString("hex") };
    fake = await startFakeSlack(client);
    app = await startApp({
      SLACK_CLIENT_ID: client.clientId,
      SLACK_CLIENT_SECRET: client.clientSecret,
      SLACK_SIGNING_SECRET: randomBytes(16).toString("hex"),
      SLACK_API_URL: `${fake.url}/api`,
      CHANNEL_SECRET_KEY: randomBytes(32).toString("base64"),
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    fake?.close();
  });

  it("an owner adds Slack, picks a team channel, and gets a link code for the bot", async () => {
    const context = await desktopContext(browser, app, errors);
    const page = await context.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
    await page.goto("/channels");
    await page.getByTestId("slack-add").click();
    // The fake Slack's page approves at once and sends the browser back to the callback.
    await page.waitForURL(/\/channels\?slack=installed$/);
    await expect.poll(() => page.getByTestId("slack-install-outcome").textContent()).toContain("Slack is added");
    await expect.poll(() => page.getByTestId("channel-slack-state").textContent()).toBe("Connected");
    expect(await page.getByTestId("slack-add").count()).toBe(0);

    await page.getByTestId("slack-target").fill("C0123456789");
    await page.getByTestId("slack-target-save").click();
    await page.reload();
    await expect.poll(() => page.getByTestId("slack-target").inputValue()).toBe("C0123456789");

    await expect.poll(() => page.getByTestId("slack-link-hint").textContent()).toContain("direct message");
    await page.getByTestId("channel-slack-link-start").click();
    await expect.poll(() => page.getByTestId("channel-slack-code").textContent()).toMatch(/[A-Z0-9]{12}/);
    expect(errors).toEqual([]);
  });
});
