/**
 * Login CSRF in real headless Chromium: a pairing or email link for another account, opened in a
 * browser already signed in, asks first and names both accounts; nothing switches until the
 * person says so.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  browserAvailable,
  Human,
  type LocalApp,
  launchChromium,
  mailedLink,
  phoneContext,
  screenshot,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";

/** Someone else, signed up and signed in from Node: their cookie and address. */
async function someoneElse(app: LocalApp, name: string): Promise<{ human: Human; email: string }> {
  const email = `${unique(name.toLowerCase())}@example.com`;
  const post = (path: string, body: unknown) =>
    fetch(`${app.direct}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: app.origin },
      body: JSON.stringify(body),
    });
  expect((await post("/v1/auth/signup", { email, name, team: `${name}'s team` })).status).toBe(202);
  const token = new URL(await mailedLink(app, email)).searchParams.get("token");
  const confirmed = await post("/v1/auth/link", { token });
  expect(confirmed.status).toBe(200);
  return { human: new Human(app, (confirmed.headers.get("Set-Cookie") ?? "").split(";")[0] ?? ""), email };
}

describe.skipIf(!browserAvailable)("switching accounts by link, in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let ada: string;
  const errors: string[] = [];

  const signedInAs = async () => (await (await Human.of(app, context)).me()).user.email;

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    context = await phoneContext(browser, app, errors);
    page = await context.newPage();
    ada = (await signUpByEmail(page, app, "Ada")).email;
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("/pair for another account shows a confirm screen naming both; staying keeps the session, continuing switches", async () => {
    const bob = await someoneElse(app, "Bob");
    const { url } = await bob.human.json<{ url: string }>("/v1/pairing", { method: "POST", body: "{}" });

    await page.goto(url);
    await page.getByTestId("switch-account").waitFor();
    expect(await page.getByTestId("switch-account-to").textContent()).toBe(`Bob (${bob.email})`);
    expect(await page.getByTestId("switch-account-from").textContent()).toBe(`Ada (${ada})`);
    await screenshot(page, "switch-account-pair.png");
    expect(await signedInAs()).toBe(ada);

    await page.getByTestId("switch-stay").click();
    await page.getByTestId("screen-pending").waitFor();
    expect(await signedInAs()).toBe(ada);

    // The token was not used up: the link still works, once the person confirms.
    await page.goto(url);
    await page.getByTestId("switch-continue").click();
    await page.getByTestId("screen-pair-setup").waitFor();
    expect(await signedInAs()).toBe(bob.email);
  });

  it("an email link says whom it signs in, and asks before switching a signed-in browser", async () => {
    // This browser is Bob's now (the test above); Ada asks for a sign-in link.
    const res = await fetch(`${app.direct}/v1/auth/signin`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: app.origin },
      body: JSON.stringify({ email: ada }),
    });
    expect(res.status).toBe(202);
    await page.goto(await mailedLink(app, ada));
    await page.getByTestId("switch-account").waitFor();
    expect(await page.getByTestId("switch-account-to").textContent()).toBe(ada);
    expect(await page.getByTestId("switch-account-from").textContent()).toContain("Bob (");
    await page.getByTestId("switch-continue").click();
    await page.getByTestId("screen-pending").waitFor();
    expect(await signedInAs()).toBe(ada);

    // Signed out, the page still names the account before anything is used.
    await context.clearCookies();
    await fetch(`${app.direct}/v1/auth/signin`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: app.origin },
      body: JSON.stringify({ email: ada }),
    });
    await page.goto(await mailedLink(app, ada));
    expect(await page.getByTestId("link-account").textContent()).toContain(`This link signs you in as ${ada}.`);
  });
});
