/**
 * "Link Telegram" on the Devices screen, in real headless Chromium against `wrangler dev` with
 * Telegram set up against the fake Bot API on 127.0.0.1: the button gives the deep link to the
 * bot, the bot's `/start <code>` (posted to the webhook as Telegram would) links the chat, the
 * screen then says so, and Unlink undoes it.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeTelegram } from "../fakes/telegram-bot-api.mjs";
import {
  browserAvailable,
  type LocalApp,
  launchChromium,
  phoneContext,
  screenshot,
  signUpByEmail,
  startApp,
  watchErrors,
} from "./harness";

const TOKEN = "123456:TEST-browser-bot";
const SECRET = "browser-webhook-secret";

describe.skipIf(!browserAvailable)("Link Telegram on the Devices screen", () => {
  let fake: Awaited<ReturnType<typeof startFakeTelegram>>;
  let app: LocalApp;
  let browser: Browser;
  let phone: BrowserContext;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    fake = await startFakeTelegram(TOKEN);
    app = await startApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_WEBHOOK_SECRET: SECRET, TELEGRAM_API_URL: fake.url });
    browser = await launchChromium();
    phone = await phoneContext(browser, app, errors);
    page = await phone.newPage();
    watchErrors(page, errors);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await fake?.close();
  });

  it("links my chat through the bot's deep link, shows it linked, and unlinks", async () => {
    await signUpByEmail(page, app, "Ada");
    await page.goto("/devices");
    await page.getByTestId("telegram-link-start").click();
    const open = page.getByTestId("telegram-open");
    const href = (await open.getAttribute("href")) ?? "";
    expect(href).toMatch(/^https:\/\/t\.me\/tapgate_test_bot\?start=[0-9A-Z]{12}$/);
    expect(await open.getAttribute("rel")).toContain("noopener");

    // The person presses Start in Telegram: the bot's webhook gets `/start <code>`.
    const chat = 1_000_000_000 + Math.floor(Math.random() * 1_000_000);
    const update = {
      update_id: 1,
      message: {
        message_id: 1,
        from: { id: chat, is_bot: false, first_name: "Ada" },
        chat: { id: chat, type: "private" },
        text: `/start ${new URL(href).searchParams.get("start")}`,
      },
    };
    const posted = await fetch(`${app.direct}/v1/channels/telegram/webhook`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: JSON.stringify(update),
    });
    expect(posted.status).toBe(200);

    await page.getByTestId("telegram-link-done").click();
    await page.getByTestId("telegram-linked").waitFor();
    await screenshot(page, "devices-telegram-linked.png");

    await page.getByTestId("telegram-unlink").click();
    await page.getByTestId("telegram-link-start").waitFor();
    expect(errors).toEqual([]);
  });
});
