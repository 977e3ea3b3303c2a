/**
 * The phone, end to end, in real headless Chromium against `wrangler dev`: passkey sign-up and
 * sign-in, a push device, a live card, a push delivered to the service worker, Allow, and a
 * second (paired) device that taps a stale card. The steps build on each other, in order.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type GateSession, type RequestPermissionResponse, Tapgate } from "../../sdk/src/index";
import {
  addVirtualAuthenticator,
  browserAvailable,
  credentials,
  Human,
  type LocalApp,
  launchChromium,
  phoneContext,
  screenshot,
  signUpWithPasskey,
  startApp,
  unique,
  type VirtualAuthenticator,
  watchErrors,
} from "./harness";
import {
  fakeSubscription,
  shownNotifications,
  stubPushService,
  subscribeCall,
  watchServiceWorkers,
} from "./push-harness";

const DEVICE_NAME = "Pixel 8";
const OLD_TEXT = [
  'import { serve } from "./server";',
  "",
  "const port = 8080;",
  "serve({ port });",
  'console.log("listening");',
  "",
].join("\n");
const NEW_TEXT = [
  'import { serve } from "./server";',
  'import { env } from "./env";',
  "",
  "const port = Number(env.PORT ?? 8080);",
  "serve({ port, host: env.HOST });",
  'console.log("listening");',
  "",
].join("\n");
const COMMAND = 'npm test -- --run && echo "<b>done</b>"';

describe.skipIf(!browserAvailable)("the phone app in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let phone: BrowserContext;
  let page: Page;
  let authenticator: VirtualAuthenticator;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  let sessionId: string;
  let sw: Awaited<ReturnType<typeof watchServiceWorkers>>;
  const subscription = fakeSubscription();
  const errors: string[] = [];
  // Filled in as the steps go.
  let deviceId = "";
  let diffApproval: Approval;
  let diffAnswer: Promise<RequestPermissionResponse>;
  let shellApproval: Approval;
  let shellAnswer: Promise<RequestPermissionResponse>;

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    phone = await phoneContext(browser, app, errors);
    await phone.grantPermissions(["notifications"], { origin: app.origin });
    await stubPushService(phone, subscription);
    page = await phone.newPage();
    authenticator = await addVirtualAuthenticator(page);
    sw = await watchServiceWorkers(page);
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("signs up with a passkey on the Sign-up screen, confirms the mailed link, then signs in with the passkey alone", async () => {
    await signUpWithPasskey(page, app, "Ada");
    await expect.poll(() => page.getByTestId("team-name").textContent()).toBe("Ada's team");
    human = await Human.of(app, phone);
    const me = await human.me();

    // The authenticator holds one discoverable credential, verified by the user.
    const [credential, ...others] = await credentials(authenticator);
    expect(others).toEqual([]);
    expect(credential).toMatchObject({ isResidentCredential: true, rpId: "localhost" });
    const passkeys = await human.json<{ passkeys: Array<{ id: string }> }>("/v1/auth/passkeys");
    // CDP reports ids in base64, the API in base64url.
    const credentialId = Buffer.from(credential?.credentialId ?? "", "base64").toString("base64url");
    expect(passkeys.passkeys.map((p) => p.id)).toEqual([credentialId]);

    // A fresh browser context (no cookies) whose authenticator holds the same passkey.
    const fresh = await browser.newContext({ viewport: { width: 390, height: 844 }, baseURL: app.origin });
    try {
      const other = await fresh.newPage();
      watchErrors(other, errors);
      const auth2 = await addVirtualAuthenticator(other);
      await auth2.cdp.send("WebAuthn.addCredential", {
        authenticatorId: auth2.authenticatorId,
        credential: credential as NonNullable<typeof credential>,
      });
      await other.goto("/");
      await other.getByTestId("screen-signin").waitFor();
      expect(await fresh.cookies(app.origin)).toEqual([]);
      await other.getByTestId("passkey-signin").click();
      await other.getByTestId("screen-pending").waitFor();
      expect((await (await Human.of(app, fresh)).me()).user).toEqual(me.user);
    } finally {
      await fresh.close();
    }
  });

  it("registers this phone for push from the Devices screen", async () => {
    await page.getByTestId("nav-devices").click();
    await page.getByTestId("screen-devices").waitFor();
    await page.getByTestId("devices-empty").waitFor();
    // The field is prefilled with a guessed name: replace it once it is there, not while it arrives.
    const name = page.getByTestId("device-name");
    await expect.poll(() => name.inputValue()).not.toBe("");
    await name.fill(DEVICE_NAME);
    await page.getByTestId("enable-notifications-button").click();
    await page.getByTestId("notifications-on").waitFor();
    expect(await page.evaluate(() => Notification.permission)).toBe("granted");

    // The page asked the push service with our VAPID key, for user-visible pushes only.
    const { publicKey } = await human.json<{ publicKey: string }>("/v1/push/key");
    expect(await subscribeCall(page)).toEqual({ serverKey: publicKey, userVisibleOnly: true });

    const { devices } = await human.json<{ devices: Array<{ id: string; name: string }> }>("/v1/devices");
    expect(devices).toHaveLength(1);
    expect(devices[0]?.name).toBe(DEVICE_NAME);
    deviceId = devices[0]?.id ?? "";
    await page.getByTestId(`device-row-${deviceId}`).getByTestId("this-device").waitFor();
  });

  it("shows an agent's requests live on Pending, and the card renders the diff and the command as text", async () => {
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    sessionId = unique("browser");
    session = await tapgate.session(sessionId, {
      title: "Make the port configurable",
      agent: { name: "claude-code", version: "2.1" },
      host: "ada-laptop",
      cwd: "/home/ada/src/api",
    });

    await page.getByTestId("nav-pending").click();
    await page.getByTestId("pending-empty").waitFor();
    // A reload would lose this flag: the rows must arrive over the live feed.
    await page.evaluate(() => {
      (window as { noReload?: boolean }).noReload = true;
    });
    const notReloaded = () => page.evaluate(() => (window as { noReload?: boolean }).noReload === true);

    diffAnswer = session.requestPermission({
      sessionId,
      toolCall: {
        toolCallId: "edit-1",
        title: "Edit src/main.ts",
        kind: "edit",
        rawInput: { command: COMMAND },
        content: [{ type: "diff", path: "src/main.ts", oldText: OLD_TEXT, newText: NEW_TEXT }],
        locations: [{ path: "src/main.ts", line: 4 }],
      },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    });
    diffApproval = await human.waitForOne(sessionId);
    const row = page.getByTestId(`pending-row-${diffApproval.id}`);
    await row.waitFor();
    expect(await row.textContent()).toContain("Edit src/main.ts");

    // A second request, from another session, for the Pending screenshot and the paired device.
    const shellSessionId = unique("browser-shell");
    const shell = await tapgate.session(shellSessionId, { title: "Clean up build output", agent: { name: "codex" } });
    shellAnswer = shell.requestPermission({
      sessionId: shellSessionId,
      toolCall: { toolCallId: "rm-1", title: "rm -r dist/", kind: "delete", rawInput: { command: "rm -r dist/" } },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    });
    shellApproval = await human.waitForOne(shellSessionId);
    await page.getByTestId(`pending-row-${shellApproval.id}`).waitFor();
    await expect.poll(() => page.getByTestId("pending-mine").locator("li").count()).toBe(2);
    expect(await notReloaded()).toBe(true);
    await screenshot(page, "pending.png");

    await row.click();
    const card = page.getByTestId("screen-approval");
    await card.waitFor();
    expect(await card.getAttribute("data-state")).toBe("pending");
    expect(await page.getByTestId("card-title").textContent()).toBe("Edit src/main.ts");
    const diff = page.getByTestId("diff");
    await diff.waitFor();
    expect(await diff.locator("figcaption").textContent()).toContain("src/main.ts");
    const inserted = await page.getByTestId("diff-insert").allTextContents();
    const deleted = await page.getByTestId("diff-delete").allTextContents();
    expect(inserted.join("\n")).toContain('import { env } from "./env";');
    expect(inserted.join("\n")).toContain("const port = Number(env.PORT ?? 8080);");
    expect(deleted.join("\n")).toContain("const port = 8080;");
    expect(await page.getByTestId("diff-equal").first().textContent()).toContain('import { serve } from "./server";');
    // The command is text: its markup shows as typed and makes no element.
    const command = page.getByTestId("card-command");
    expect(await command.textContent()).toBe(COMMAND);
    expect(await command.locator("b").count()).toBe(0);
    expect(await page.getByTestId("card-locations").textContent()).toContain("src/main.ts:4");
    expect(await page.getByTestId("card-session").textContent()).toContain("claude-code 2.1");
    expect(await page.getByTestId("option-allow").getAttribute("class")).toContain("allow");
    expect(await page.getByTestId("option-deny").getAttribute("class")).toContain("reject");
    await screenshot(page, "approval-diff.png");
    expect(await notReloaded()).toBe(true); // the card opened inside the app
  });

  it("a push delivered to the service worker shows a Deny-only notification and reports it seen", async () => {
    const registrationId = await sw.activeRegistration(`${app.origin}/`);
    const title = "Edit src/main.ts";
    // As the hub sends it: the service worker's fields and, beside them, the declarative
    // notification (Safari, iOS 18.4+); a service worker that runs still shows its own.
    await sw.deliver(app.origin, registrationId, {
      v: 1,
      type: "approval",
      approvalId: diffApproval.id,
      title,
      expiresAt: diffApproval.expiresAt,
      web_push: 8030,
      notification: {
        title,
        body: "Open it in Tapgate to decide.",
        navigate: `${app.origin}/approvals/${diffApproval.id}`,
        tag: diffApproval.id,
      },
      mutable: true,
    });
    await expect.poll(async () => (await shownNotifications(page, diffApproval.id)).length).toBe(1);
    const [notification] = await shownNotifications(page, diffApproval.id);
    expect(notification).toMatchObject({
      title,
      tag: diffApproval.id,
      actions: [{ action: "deny", title: "Deny" }],
      data: { approvalId: diffApproval.id, url: `/approvals/${diffApproval.id}` },
    });
    expect(notification?.body).toMatch(/^Expires at /);

    // The service worker told the server the push arrived and showNotification resolved (displayed,
    // so seen); the open card shows it live.
    const mine = async () => (await human.approval(diffApproval.id)).delivery?.find((d) => d.deviceId === deviceId);
    await expect.poll(async () => (await mine())?.displayedAt).toBeTypeOf("number");
    expect(await mine()).toMatchObject({ receivedAt: expect.any(Number), seenAt: expect.any(Number), openedAt: null });
    await expect.poll(() => page.getByTestId(`delivery-${deviceId}`).textContent()).toContain("shown");
  });

  it("tapping Allow resolves the SDK's promise with that option and the card shows the outcome", async () => {
    await page.getByTestId("option-allow").click();
    expect(await diffAnswer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
    const outcome = page.getByTestId("outcome");
    await outcome.waitFor();
    expect(await outcome.textContent()).toMatch(/^Allowed \(Allow once\) by you on Pixel 8/);
    expect(await page.getByTestId("screen-approval").getAttribute("data-state")).toBe("allowed");
    expect(await page.getByTestId("options").count()).toBe(0);
    expect(await human.approval(diffApproval.id)).toMatchObject({
      state: "allowed",
      optionId: "allow",
      decidedBy: { device: DEVICE_NAME },
    });

    // The `resolved` push closes the notification on this device.
    const registrationId = await sw.activeRegistration(`${app.origin}/`);
    await sw.deliver(app.origin, registrationId, {
      v: 1,
      type: "resolved",
      approvalId: diffApproval.id,
      state: "allowed",
    });
    await expect.poll(async () => (await shownNotifications(page, diffApproval.id)).length).toBe(0);
  });

  it("a paired second device tapping a card resolved elsewhere is told who decided, not ignored", async () => {
    // The "desktop" (the phone's session, from Node) makes a pairing link; a second context opens it.
    const { url } = await human.json<{ url: string }>("/v1/pairing", { method: "POST", body: "{}" });
    expect(new URL(url).origin).toBe(app.origin);
    const second = await phoneContext(browser, app, errors);
    try {
      const tablet = await second.newPage();
      // This device's live feed stays silent (as on a phone that was asleep), so its card goes stale.
      await tablet.routeWebSocket("**/v1/live", (ws) => {
        ws.onMessage((m) => {
          if (m === "ping") ws.send("pong");
        });
      });
      await tablet.goto(url);
      // Opening the link signs nothing in: the page names the account, and only the tap signs in.
      const account = tablet.getByTestId("pair-account");
      await account.waitFor();
      expect(await account.textContent()).toContain((await human.me()).user.email);
      expect((await second.cookies(app.origin)).some((c) => c.name.startsWith("__Host-tapgate"))).toBe(false);
      await screenshot(tablet, "pair-confirm.png");
      await tablet.getByTestId("pair-confirm").click();
      await tablet.getByTestId("screen-pair-setup").waitFor();
      expect(new URL(tablet.url()).search).toBe("?step=setup"); // the spent token left the address bar
      expect((await (await Human.of(app, second)).me()).user.id).toBe((await human.me()).user.id);

      await tablet.goto(`/approvals/${encodeURIComponent(shellApproval.id)}`);
      await tablet.getByTestId("option-allow").waitFor();

      // The phone allows it first.
      await page.goto(`/approvals/${encodeURIComponent(shellApproval.id)}`);
      await page.getByTestId("option-allow").click();
      expect(await shellAnswer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });

      // The stale card still offers the buttons; the tap answers with what happened.
      await tablet.getByTestId("option-allow").click();
      const outcome = tablet.getByTestId("outcome");
      await outcome.waitFor();
      expect(await outcome.textContent()).toMatch(/^Allowed \(Allow once\) by you on Pixel 8/);
      expect(await tablet.getByTestId("options").count()).toBe(0);
      expect(await human.approval(shellApproval.id)).toMatchObject({ state: "allowed", optionId: "allow" });
    } finally {
      await second.close();
    }
  });

  it("lists the signed-in browsers on the Devices screen and signs out everywhere else", async () => {
    const { url } = await human.json<{ url: string }>("/v1/pairing", { method: "POST", body: "{}" });
    const other = await phoneContext(browser, app, errors);
    try {
      const laptop = await other.newPage();
      await laptop.goto(url);
      await laptop.getByTestId("pair-confirm").click();
      await laptop.getByTestId("screen-pair-setup").waitFor();
      const elsewhere = await Human.of(app, other);
      expect((await elsewhere.fetch("/v1/me")).status).toBe(200);

      await page.goto("/devices");
      const list = page.getByTestId("web-sessions");
      await list.getByTestId("this-browser").waitFor();
      await expect.poll(() => list.getByTestId("web-session-end").count()).toBeGreaterThanOrEqual(2);
      await list.getByTestId("web-sessions-end-others").click();
      await list.getByTestId("web-sessions-status").waitFor();
      await expect.poll(() => list.getByTestId("web-session-end").count()).toBe(1);
      expect((await elsewhere.fetch("/v1/me")).status).toBe(401);
      expect((await human.fetch("/v1/me")).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});
