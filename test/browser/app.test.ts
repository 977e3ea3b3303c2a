/**
 * The app around the card, in real headless Chromium against `wrangler dev`: installability
 * (manifest, icons, service worker) and the offline shell, agent text that tries to hide,
 * reorder or run something, and the `tapgate login` approval page.
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
  pngSize,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";
import { shownNotifications, watchServiceWorkers } from "./push-harness";

describe.skipIf(!browserAvailable)("the installable app in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let human: Human;
  const errors: string[] = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    context = await phoneContext(browser, app, errors);
    await context.grantPermissions(["notifications"], { origin: app.origin });
    page = await context.newPage();
    await signUpByEmail(page, app, "Grace");
    human = await Human.of(app, context);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("agent text with bidi overrides, zero-width, blank-letter, tag and ANSI characters, a 50 KB line or markup is shown, never obeyed", async () => {
    await page.evaluate(() => {
      (window as { pwned?: boolean }).pwned = false;
    });
    const tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    try {
      const sessionId = unique("unsafe");
      const session = await tapgate.session(sessionId, { title: "innocent\u200B session" });
      // Hidden ASCII in tag characters ("rm"), blank Hangul letters, a variation selector, a line separator.
      const tags = "\u{E0072}\u{E006D}";
      const title =
        'Open invoice\u202Efdp.exe\u202C \u200Bnow \u001b[31mred <img src=x onerror="window.pwned=true">' +
        ` ok${tags}\u3164\u115F\u1160\uFFA0\u180E\u034F\uFE0F\u{E0100}\u2028\u2029`;
      const longLine = "A".repeat(50_000);
      const answer = session.requestPermission({
        sessionId,
        toolCall: {
          toolCallId: "t1",
          title,
          kind: "execute",
          rawInput: { command: "cat notes.txt\u001b[2J\u001b[1;1H# all clear", padding: longLine },
        },
        options: [
          { optionId: "allow", name: "Allow once", kind: "allow_once" },
          { optionId: "deny", name: "Deny", kind: "reject_once" },
        ],
      });
      const approval = await human.waitForOne(sessionId);

      // In the list: the tokens, not the characters.
      const row = page.getByTestId(`pending-row-${approval.id}`);
      await row.waitFor();
      const rowText = (await row.textContent()) ?? "";
      expect(rowText).toContain("⟨U+202E⟩");
      expect(rowText).not.toContain("\u202E");
      expect(rowText).not.toContain("\u200B");

      await row.click();
      await page.getByTestId("screen-approval").waitFor();
      const titleText = (await page.getByTestId("card-title").textContent()) ?? "";
      for (const token of ["⟨U+202E⟩", "⟨U+202C⟩", "⟨U+200B⟩", "⟨ESC⟩"]) expect(titleText).toContain(token);
      expect(titleText).toContain(
        "ok⟨U+E0072⟩⟨U+E006D⟩⟨U+3164⟩⟨U+115F⟩⟨U+1160⟩⟨U+FFA0⟩⟨U+180E⟩⟨U+034F⟩⟨U+FE0F⟩⟨U+E0100⟩⟨U+2028⟩⟨U+2029⟩",
      );
      // Hovering a tag token says what it hides.
      expect(
        await page
          .getByTestId("card-title")
          .getByTestId("escaped-char")
          .filter({ hasText: "U+E0072" })
          .getAttribute("title"),
      ).toBe('U+E0072 tag character (a hidden "r")');
      expect(titleText).toContain('<img src=x onerror="window.pwned=true">'); // as text
      await page.getByTestId("unsafe-warning").waitFor();
      expect(await page.getByTestId("card-session").textContent()).toContain("innocent⟨U+200B⟩ session");

      const raw = page.getByTestId("card-raw-input");
      const rawText = (await raw.textContent()) ?? "";
      // The command is shown with tokens; the full input is JSON, whose own escapes keep it visible.
      expect(await page.getByTestId("card-command").textContent()).toBe("cat notes.txt⟨ESC⟩[2J⟨ESC⟩[1;1H# all clear");
      expect(rawText).toContain(String.raw`"cat notes.txt\u001b[2J\u001b[1;1H# all clear"`);
      expect(rawText).toContain("more characters"); // the 50 KB line is cut…
      expect(rawText.length).toBeLessThan(10_000);
      expect(await page.getByTestId("show-all").count()).toBeGreaterThan(0); // …behind a button

      // Nowhere on the page does a raw control or invisible character survive, and nothing ran.
      const body = await page.evaluate(() => document.body.textContent ?? "");
      // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for them is the point
      expect(body).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B-\u200F\u001b]/);
      expect(body).not.toMatch(/[\u3164\u115F\u1160\uFFA0\u180E\u2028\u2029]/);
      expect(body).not.toMatch(/\u034F|\uFE0F|\uDB40[\uDC00-\uDDEF]/);
      expect(await page.locator("img[src='x']").count()).toBe(0);
      expect(await page.evaluate(() => (window as { pwned?: boolean }).pwned)).toBe(false);

      // The lock screen gets the same treatment: the service worker makes the title visible too.
      const sw = await watchServiceWorkers(page);
      const registrationId = await sw.activeRegistration(`${app.origin}/`);
      await sw.deliver(app.origin, registrationId, {
        v: 1,
        type: "approval",
        approvalId: approval.id,
        title,
        expiresAt: approval.expiresAt,
      });
      await expect.poll(async () => (await shownNotifications(page, approval.id)).length).toBe(1);
      const [shown] = await shownNotifications(page, approval.id);
      expect(shown?.title).toContain("⟨U+202E⟩");
      expect(shown?.title).not.toMatch(/[\u202E\u200B\u3164]/);
      expect(shown?.title).toContain("⟨U+3164⟩");

      await page.getByTestId("option-deny").click();
      expect(await answer).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });
      await page.getByTestId("outcome").waitFor();
      expect(await page.evaluate(() => (window as { pwned?: boolean }).pwned)).toBe(false);
    } finally {
      tapgate.close();
    }
  });

  const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  it("buttons say what an option does (its kind), not what the agent calls it; the agent's _meta and withheld old text are labelled", async () => {
    const tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    try {
      const sessionId = unique("labels");
      const session = await tapgate.session(sessionId, { title: "labels" });
      const answer = session.requestPermission({
        sessionId,
        toolCall: {
          toolCallId: "t1",
          title: "Write: .env",
          kind: "edit",
          content: [
            {
              type: "diff",
              path: "/home/grace/demo/.env",
              oldText: null,
              newText: "TOKEN=new\n",
              _meta: { tapgate: { oldTextWithheld: "the path looks like it holds secrets" } },
            },
          ],
        },
        // An agent that names its allow "Deny" and its deny "Allow".
        options: [
          { optionId: "yes", name: "Deny\u200B (safe)", kind: "allow_once" },
          { optionId: "no", name: "Allow", kind: "reject_once" },
        ],
        _meta: { policy: "pre-approved by security", traceparent: TRACEPARENT },
      });
      const approval = await human.waitForOne(sessionId);
      await page.goto(`/approvals/${approval.id}`);
      await page.getByTestId("screen-approval").waitFor();

      const allow = page.getByTestId("option-yes");
      const deny = page.getByTestId("option-no");
      expect(await allow.getByTestId("option-label").textContent()).toBe("Allow once");
      expect(await allow.getAttribute("class")).toContain("allow");
      expect(await allow.getByTestId("option-agent-name").textContent()).toBe(
        "the agent calls it “Deny⟨U+200B⟩ (safe)”",
      );
      expect(await deny.getByTestId("option-label").textContent()).toBe("Deny");
      expect(await deny.getAttribute("class")).toContain("reject");
      expect(await deny.getByTestId("option-agent-name").textContent()).toBe("the agent calls it “Allow”");
      // The accessible name leads with Tapgate's words.
      expect(await page.getByRole("button", { name: /^Allow once/ }).getAttribute("data-testid")).toBe("option-yes");

      const meta = page.getByTestId("card-meta");
      expect(await meta.textContent()).toContain("pre-approved by security");
      // The agent's trace id, from its W3C traceparent, among the card's facts.
      expect(await page.getByTestId("card-session").textContent()).toContain("Trace4bf92f3577b34da6a3ce929d0e0e4736");
      expect(await page.getByRole("heading", { name: "From the agent (unverified)" }).count()).toBe(1);
      expect(await page.getByText("Policy metadata").count()).toBe(0);

      await page.getByTestId("diff-withheld").waitFor();
      expect(await page.getByTestId("diff-withheld-reason").textContent()).toContain(
        "the path looks like it holds secrets",
      );
      expect(await page.getByTestId("diff").textContent()).not.toContain("new file");

      await deny.click();
      expect(await answer).toMatchObject({ outcome: { outcome: "selected", optionId: "no" } });
      expect(await page.getByTestId("outcome").textContent()).toMatch(/^Denied \(Deny\) by you/);
    } finally {
      tapgate.close();
    }
  });

  it("approves a terminal's sign-in code on the /device page, which says where and when it was asked", async () => {
    const res = await fetch(`${app.direct}/v1/device/code`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": "203.0.113.45" },
      body: JSON.stringify({ clientName: "grace-laptop" }),
    });
    expect(res.status).toBe(200);
    const code = (await res.json()) as { deviceCode: string; userCode: string; verificationUriComplete: string };
    expect(new URL(code.verificationUriComplete).origin).toBe(app.origin);

    await page.goto(code.verificationUriComplete);
    await page.getByTestId("screen-device").waitFor();
    expect(await page.getByTestId("device-user-code").textContent()).toBe(code.userCode);
    expect(await page.getByTestId("device-client-name").textContent()).toBe("grace-laptop");
    expect(await page.getByTestId("screen-device").textContent()).toContain("its own words, not checked");
    const requested = (await page.getByTestId("device-requested").textContent()) ?? "";
    expect(requested).toMatch(/^Requested (just now|\d+ s ago) from 203\.0\.113\.0\/24( \(.+\))?\./);
    expect(requested).not.toContain("203.0.113.45");
    await page.getByTestId("device-approve").click();
    expect(await page.getByTestId("device-result").textContent()).toContain("Approved");

    // The terminal's next poll gets a working agent key, listed for the person who approved.
    const token = await fetch(`${app.direct}/v1/device/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ deviceCode: code.deviceCode }),
    });
    expect(token.status).toBe(200);
    const { keyId, user } = (await token.json()) as { keyId: string; user: { id: string } };
    expect(user.id).toBe((await human.me()).user.id);
    const { keys } = await human.json<{ keys: Array<{ id: string }> }>("/v1/keys");
    expect(keys.map((k) => k.id)).toContain(keyId);
  });

  it("is installable: manifest, icons and an active service worker; offline, Pending says so instead of an error page", async () => {
    await page.goto("/");
    await page.getByTestId("screen-pending").waitFor();

    const href = await page.locator('link[rel="manifest"]').getAttribute("href");
    expect(href).toBeTruthy();
    const manifestUrl = new URL(href as string, app.origin);
    const served = await fetch(`${app.direct}${manifestUrl.pathname}`);
    expect(served.status).toBe(200);
    const manifest = (await served.json()) as {
      name: string;
      short_name: string;
      theme_color: string;
      background_color: string;
      display: string;
      start_url: string;
      icons: Array<{ src: string; sizes: string; type: string; purpose?: string }>;
    };
    expect(manifest).toMatchObject({ name: "Tapgate", short_name: "Tapgate", display: "standalone" });
    expect(manifest.theme_color).toMatch(/^#[0-9a-f]{6}$/i);
    expect(manifest.background_color).toMatch(/^#[0-9a-f]{6}$/i);
    const icon = (size: string, purpose: string) =>
      manifest.icons.find((i) => i.sizes === size && (i.purpose ?? "any").split(" ").includes(purpose));
    for (const [size, purpose] of [
      ["192x192", "any"],
      ["512x512", "any"],
      ["512x512", "maskable"],
    ] as const) {
      const entry = icon(size, purpose);
      expect(entry, `${size} ${purpose} icon`).toBeDefined();
      const png = await fetch(`${app.direct}${new URL(entry?.src ?? "", app.origin).pathname}`);
      expect(png.status).toBe(200);
      expect(png.headers.get("content-type")).toBe("image/png");
      const { width, height } = pngSize(new Uint8Array(await png.arrayBuffer()));
      expect(`${width}x${height}`).toBe(size);
    }

    // Chromium parses it without complaint.
    const cdp = await context.newCDPSession(page);
    const parsed = await cdp.send("Page.getAppManifest", {});
    expect(parsed.url).toBe(manifestUrl.href);
    expect(parsed.errors).toEqual([]);

    // An active service worker controls the page.
    const worker = await page.evaluate(async () => {
      const registration = await navigator.serviceWorker.ready;
      return { state: registration.active?.state, script: registration.active?.scriptURL, scope: registration.scope };
    });
    expect(worker).toEqual({ state: "activated", script: `${app.origin}/sw.js`, scope: `${app.origin}/` });
    if (!(await page.evaluate(() => navigator.serviceWorker.controller !== null))) {
      await page.reload();
      await page.getByTestId("screen-pending").waitFor();
    }
    expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${app.origin}/sw.js`);

    // Offline: the reload is answered by the service worker's shell, and Pending says "Offline".
    await context.setOffline(true);
    try {
      const response = await page.reload();
      expect(response?.fromServiceWorker()).toBe(true);
      const banner = page.getByTestId("offline-banner");
      await banner.waitFor();
      expect(await banner.textContent()).toMatch(/^Offline/);
      expect(await page.getByTestId("screen-pending").count()).toBe(1);
      // …and it really is offline: the API is out of reach.
      expect(
        await page.evaluate(() =>
          fetch("/v1/health").then(
            () => "reached",
            () => "unreachable",
          ),
        ),
      ).toBe("unreachable");
    } finally {
      await context.setOffline(false);
    }
    // Back online. (Playwright's offline emulation fires no `online` event here, which is what the
    // app listens for, so the recovery is a reload.)
    await page.reload();
    await page.getByTestId("pending-empty").waitFor();
    expect(await page.getByTestId("offline-banner").count()).toBe(0);
  });
});
