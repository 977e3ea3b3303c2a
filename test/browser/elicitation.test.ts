/**
 * Elicitation on the phone, in real headless Chromium against `wrangler dev`: an agent (the real
 * SDK over its socket) asks a form; the human fills it in on the card, the inline check catches
 * a bad value, and the agent receives exactly the content sent. A URL question shows the whole
 * URL with its host, is never fetched, and opens only on tap.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tapgate } from "../../sdk/src/index";
import {
  browserAvailable,
  Human,
  type LocalApp,
  launchChromium,
  phoneContext,
  screenshot,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";

describe.skipIf(!browserAvailable)("elicitation on the phone", () => {
  let app: LocalApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  const errors: string[] = [];
  /** Every URL the browser asked for: the elicitation's own URL must never be among them. */
  const requested: string[] = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    context = await phoneContext(browser, app, errors);
    context.on("request", (r) => requested.push(r.url()));
    page = await context.newPage();
    await signUpByEmail(page, app, "Hedy");
    human = await Human.of(app, context);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("a form answered on the phone: labels, defaults, choices, inline validation, and the agent gets the content", async () => {
    const sessionId = unique("elicit");
    const session = await tapgate.session(sessionId, { title: "project setup" });
    const answer = session.elicit({
      sessionId,
      mode: "form",
      message: "How should I set the project up?",
      requestedSchema: {
        type: "object",
        properties: {
          name: { type: "string", title: "Project name", description: "Lowercase, no spaces", minLength: 2 },
          port: { type: "integer", title: "Port", minimum: 1024, maximum: 65535, default: 3000 },
          strategy: {
            type: "string",
            title: "Strategy",
            oneOf: [
              { const: "safe", title: "Conservative" },
              { const: "bold", title: "Aggressive" },
            ],
          },
          logging: { type: "boolean", title: "Enable logging", default: true },
        },
        required: ["name", "port"],
      },
    });
    const approval = await human.waitForOne(sessionId);
    const row = page.getByTestId(`pending-row-${approval.id}`);
    await row.waitFor();
    expect(await row.textContent()).toContain("How should I set the project up?");
    await row.click();
    await page.getByTestId("elicitation-form").waitFor();
    expect(await page.getByTestId("elicitation-message").textContent()).toContain("How should I set the project up?");
    expect(await page.getByTestId("elicitation-no-secrets").textContent()).toContain("Never type passwords");
    expect(await page.getByTestId("field-name").textContent()).toContain("Lowercase, no spaces");
    expect(await page.getByTestId("field-name").textContent()).toContain("(required)");
    expect(await page.getByLabel("Port").inputValue()).toBe("3000");
    expect(await page.getByLabel("Enable logging").isChecked()).toBe(true);
    const choices = await page.getByLabel("Strategy").locator("option").allTextContents();
    expect(choices).toEqual(["(none)", "Conservative", "Aggressive"]);

    // Sending with a required field empty and a port out of range: caught here, nothing sent.
    await page.getByLabel("Port").fill("80");
    await page.getByTestId("elicitation-submit").click();
    expect(await page.getByTestId("problem-name").textContent()).toBe("Project name is required");
    expect(await page.getByTestId("problem-port").textContent()).toBe("Port must be at least 1024");
    expect((await human.approval(approval.id)).state).toBe("pending");

    await page.getByLabel("Project name").fill("tapgate");
    await page.getByLabel("Port").fill("8080");
    await page.getByLabel("Strategy").selectOption("bold");
    await page.getByLabel("Enable logging").uncheck();
    await screenshot(page, "elicitation-form.png");
    await page.getByTestId("elicitation-submit").click();

    const got = await answer;
    expect(got).toMatchObject({
      action: "accept",
      content: { name: "tapgate", port: 8080, strategy: "bold", logging: false },
    });
    await page.getByTestId("outcome").waitFor();
    expect(await page.getByTestId("outcome").textContent()).toContain("Allowed (Answered) by you");
    expect(await page.getByLabel("Project name").isDisabled()).toBe(true);
  });

  it("a URL question shows the whole URL and its host, is never fetched, and Decline answers decline", async () => {
    const sessionId = unique("elicit-url");
    const session = await tapgate.session(sessionId, { title: "sign in" });
    const url = "https://github.com/login/oauth/authorize?client_id=abc&state=xyz";
    const answer = session.elicit({
      sessionId,
      mode: "url",
      message: "Authorize access to your repositories",
      url,
      elicitationId: "oauth-1",
    });
    const approval = await human.waitForOne(sessionId);
    await page.goto(`/approvals/${approval.id}`);
    await page.getByTestId("elicitation").waitFor();
    expect(await page.getByTestId("elicitation-host").textContent()).toBe("github.com");
    expect(await page.getByTestId("elicitation-url").textContent()).toBe(url);
    const link = page.getByTestId("elicitation-open");
    expect(await link.getAttribute("href")).toBe(url);
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
    expect(await link.getAttribute("target")).toBe("_blank");
    await screenshot(page, "elicitation-url.png");
    await page.getByTestId("elicitation-decline").click();
    expect(await answer).toMatchObject({ action: "decline" });
    expect(requested.some((r) => r.startsWith("https://github.com"))).toBe(false);
  });
});
