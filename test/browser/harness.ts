/**
 * The browser suite's harness: Debian's Chromium driven by playwright-core, a Worker under
 * `wrangler dev` per test file, a person's API seen from Node (with the browser's cookie), a
 * virtual passkey authenticator (CDP WebAuthn), screens and sign-up flows. The push service's
 * stand-in is `push-harness.ts`.
 */

import { existsSync, writeSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, type CDPSession, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, vi } from "vitest";
import { executeD1, ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { Approval, Delivery } from "../../sdk/src/approval";
import { Tapgate } from "../../sdk/src/index";

export const CHROMIUM = process.env.TAPGATE_CHROMIUM ?? "/usr/bin/chromium";
const REQUIRED = process.env.TAPGATE_REQUIRE_BROWSER === "1";

/**
 * Whether the suite can run. Without Chromium it says so and skips, except where
 * TAPGATE_REQUIRE_BROWSER=1 (CI): there a missing browser fails the run.
 */
export const browserAvailable: boolean = (() => {
  if (existsSync(CHROMIUM)) return true;
  const message = `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) or set TAPGATE_CHROMIUM.`;
  if (REQUIRED) throw new Error(`${message} TAPGATE_REQUIRE_BROWSER=1 forbids skipping the browser suite.`);
  // Straight to the terminal: the reporter hides console output (silent: "passed-only").
  writeSync(2, `\n[browser] ${message} Skipping the browser suite.\n`);
  return false;
})();

export const ARTIFACTS = join(ROOT, "test", "artifacts");
export const PHONE = { width: 390, height: 844 };
/** The team dashboard's wide layout (≥ 1024 px) on a laptop. */
export const DESKTOP = { width: 1440, height: 900 };

/** Headless Chromium with a fresh profile (playwright makes a new temporary user-data dir per launch). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

export interface LocalApp {
  /** What the browser opens: http://localhost:<port> (a secure context, and a valid WebAuthn rpID). */
  origin: string;
  /** Where Node connects: the same Worker on 127.0.0.1 (wrangler dev listens there only). */
  direct: string;
  /** Runs one SQL command on the app's local D1, while it serves (a fault a test injects). */
  d1: (sql: string) => Promise<void>;
  stop: () => Promise<void>;
}

/**
 * A Worker of our own, configured for the origin the browser uses (and `vars`, e.g. a channel's
 * settings). It serves its own copy of the
 * built PWA: any other `vitest run` in this checkout rebuilds `pwa/dist` in its global setup, and
 * `wrangler dev` reloads when its assets change, which would drop every socket mid-test.
 * `settings`: more of the Worker's settings (a channel's, pointed at a fake on 127.0.0.1).
 */
export async function startApp(settings: Record<string, string> = {}): Promise<LocalApp> {
  const assets = await snapshotPwa();
  // The origin names the port, so it is derived from whichever port the Worker finally binds.
  const worker = await startLocalWorker({
    assets,
    vars: (port) => ({ APP_ORIGIN: `http://localhost:${port}`, RP_ID: "localhost", ...settings }),
  });
  return {
    origin: worker.url.replace("127.0.0.1", "localhost"),
    direct: worker.url,
    d1: (sql) => executeD1(worker.persistTo, sql),
    stop: async () => {
      await worker.stop();
      await rm(assets, { recursive: true, force: true });
    },
  };
}

/** A complete copy of `pwa/dist`: the service worker and every file its precache list names (retried while a build rewrites it). */
async function snapshotPwa(): Promise<string> {
  const dist = join(ROOT, "pwa", "dist");
  return vi.waitFor(
    async () => {
      const copy = await mkdtemp(join(tmpdir(), "tapgate-pwa-"));
      try {
        await cp(dist, copy, { recursive: true });
        const sw = await readFile(join(copy, "sw.js"), "utf8");
        const list = /const PRECACHE = (\[.*?\]);/.exec(sw)?.[1];
        if (!list) throw new Error("pwa/dist/sw.js has no precache list yet");
        const files = (JSON.parse(list) as string[]).map((f) => (f === "/" ? "/index.html" : f));
        for (const f of files) await stat(join(copy, f));
        return copy;
      } catch (e) {
        await rm(copy, { recursive: true, force: true });
        throw e;
      }
    },
    { timeout: 60_000, interval: 250 },
  );
}

let counter = 0;
export const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

/** A signed-in person's human API, from Node, using the cookie a browser context holds. */
export class Human {
  constructor(
    readonly app: LocalApp,
    readonly cookie: string,
  ) {}

  static async of(app: LocalApp, context: BrowserContext): Promise<Human> {
    const cookies = await context.cookies(app.origin);
    const session = cookies.find((c) => c.name.startsWith("__Host-"));
    if (!session) throw new Error(`no session cookie in the browser context: ${cookies.map((c) => c.name).join(", ")}`);
    return new Human(app, `${session.name}=${session.value}`);
  }

  fetch(path: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${this.app.direct}${path}`, {
      ...init,
      headers: { Cookie: this.cookie, Origin: this.app.origin, "Content-Type": "application/json", ...init.headers },
    });
  }

  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const res = await this.fetch(path, init);
    const text = await res.text();
    if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path} → ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  me() {
    return this.json<{ user: { id: string; email: string; name: string }; team: { id: string; name: string } }>(
      "/v1/me",
    );
  }

  async createKey(label = "browser tests"): Promise<string> {
    return (await this.json<{ key: string }>("/v1/keys", { method: "POST", body: JSON.stringify({ label }) })).key;
  }

  approval(id: string) {
    return this.json<Approval & { delivery?: Delivery[] }>(`/v1/approvals/${encodeURIComponent(id)}`);
  }

  /** Waits until the session has exactly one pending request (the index is written just after it). */
  async waitForOne(sessionId: string): Promise<Approval> {
    return vi.waitFor(
      async () => {
        const { approvals } = await this.json<{ approvals: Approval[] }>(
          "/v1/approvals?state=pending&scope=mine&limit=200",
        );
        const mine = approvals.filter((a) => a.sessionId === sessionId);
        if (mine.length !== 1 || !mine[0]) throw new Error(`${mine.length} pending in ${sessionId}, waiting for 1`);
        return mine[0];
      },
      { timeout: 15_000, interval: 50 },
    );
  }
}

/** The mailed link, from the local outbox. */
export async function mailedLink(app: LocalApp, to: string): Promise<string> {
  return vi.waitFor(
    async () => {
      const res = await fetch(`${app.direct}/v1/dev/outbox?to=${encodeURIComponent(to)}`);
      const { messages } = (await res.json()) as { messages: Array<{ link?: string }> };
      const link = messages.at(-1)?.link;
      if (!link) throw new Error(`no mail to ${to} yet`);
      return link;
    },
    { timeout: 10_000, interval: 50 },
  );
}

// ── passkeys ────────────────────────────────────────────────────────────────

export interface VirtualAuthenticator {
  cdp: CDPSession;
  authenticatorId: string;
}

/** A platform authenticator with user verification, as on a phone: CDP `WebAuthn.addVirtualAuthenticator`. */
export async function addVirtualAuthenticator(page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

export async function credentials(a: VirtualAuthenticator) {
  return (await a.cdp.send("WebAuthn.getCredentials", { authenticatorId: a.authenticatorId })).credentials;
}

// ── screens ─────────────────────────────────────────────────────────────────

/** A phone-sized context; every page error fails the test that owns `errors`. */
export async function phoneContext(browser: Browser, app: LocalApp, errors: string[]): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 2, baseURL: app.origin });
  context.on("page", (page) => watchErrors(page, errors));
  return context;
}

/** A desktop-sized context (the dashboard's wide layout); every page error fails the test that owns `errors`. */
export async function desktopContext(browser: Browser, app: LocalApp, errors: string[]): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1, baseURL: app.origin });
  context.on("page", (page) => watchErrors(page, errors));
  return context;
}

/**
 * Marks the page's window: a reload (or any full navigation) loses the mark, so a later
 * `stillSamePage` proves that what changed since arrived over the live feed.
 */
export async function markPage(page: Page): Promise<void> {
  await page.evaluate(() => {
    (window as { tapgateNoReload?: boolean }).tapgateNoReload = true;
  });
}

export function stillSamePage(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as { tapgateNoReload?: boolean }).tapgateNoReload === true);
}

export function watchErrors(page: Page, errors: string[]): void {
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/** Signs a new person up through the Sign-up screen with the page's passkey, and confirms the mailed link. */
export async function signUpWithPasskey(page: Page, app: LocalApp, name: string) {
  const email = `${unique(name.toLowerCase())}@example.com`;
  await page.goto("/signup");
  await page.getByTestId("signup-email").fill(email);
  await page.getByTestId("signup-name").fill(name);
  await page.getByTestId("signup-team").fill(`${name}'s team`);
  await page.getByTestId("signup-passkey").click();
  await page.getByTestId("check-email").waitFor();
  const link = await mailedLink(app, email);
  expect(new URL(link).origin).toBe(app.origin);
  await page.goto(link);
  await page.getByTestId("confirm-link").click();
  await page.getByTestId("screen-pending").waitFor();
  return { email };
}

/**
 * Signs a new person up over HTTP, and signs this browser in by opening the mailed link. The
 * home screen is Pending on a phone, the Pending board (`screen-board`) on a wide screen.
 */
export async function signUpByEmail(page: Page, app: LocalApp, name: string, home = "screen-pending") {
  const email = `${unique(name.toLowerCase())}@example.com`;
  const res = await fetch(`${app.direct}/v1/auth/signup`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: app.origin },
    body: JSON.stringify({ email, name, team: `${name}'s team` }),
  });
  expect(res.status).toBe(202);
  await page.goto(await mailedLink(app, email));
  await page.getByTestId("confirm-link").click();
  await page.getByTestId(home).waitFor();
  return { email };
}

/**
 * A signed-out invitee opens the invite link, creates an account on the Sign-up screen (email
 * only), confirms the mailed link, is brought back to the invite and accepts it. Returns on the
 * home screen (`home`), in the inviting team.
 */
export async function signUpThroughInvite(
  page: Page,
  app: LocalApp,
  inviteUrl: string,
  name: string,
  home = "screen-board",
) {
  const email = `${unique(name.toLowerCase())}@example.com`;
  await page.goto(inviteUrl);
  await page.getByTestId("invite-preview").waitFor();
  await page.getByTestId("invite-signup").click();
  await page.getByTestId("screen-signup").waitFor();
  await page.getByTestId("signup-email").fill(email);
  await page.getByTestId("signup-name").fill(name);
  await page.getByTestId("signup-team").fill(`${name}'s team`);
  await page.getByTestId("signup-email-only").click();
  await page.getByTestId("check-email").waitFor();
  await page.goto(await mailedLink(app, email));
  await page.getByTestId("confirm-link").click();
  // The confirmed link returns to the invite, now signed in.
  await page.getByTestId("invite-accept").waitFor();
  expect(new URL(page.url()).pathname).toBe("/invite");
  await page.getByTestId("invite-accept").click();
  await page.getByTestId(home).waitFor();
  return { email };
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (!signature.every((b, i) => bytes[i] === b)) throw new Error("not a PNG");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** What a phone test file works with: its Worker and Chromium, a signed-up person's phone page, and an SDK agent on their key. */
export interface PhoneWithAgent {
  app: LocalApp;
  browser: Browser;
  phone: BrowserContext;
  page: Page;
  human: Human;
  tapgate: Tapgate;
  /** The passkey's authenticator, when signed up with one. */
  authenticator?: VirtualAuthenticator;
  /** Page errors seen; the file fails if any. */
  errors: string[];
}

/**
 * The preamble a phone test file shares, as its `beforeAll`/`afterAll`: start the Worker and
 * Chromium, open a phone context, sign `name` up (by email, or with a passkey), and give an SDK
 * agent their key; at the end close everything and expect no page error. The object's fields are
 * there once `beforeAll` ran.
 */
export function phoneWithAgent(name: string, signUp: "email" | "passkey" = "email"): PhoneWithAgent {
  const fixture = { errors: [] as string[] } as PhoneWithAgent;
  beforeAll(async () => {
    [fixture.app, fixture.browser] = await Promise.all([startApp(), launchChromium()]);
    fixture.phone = await phoneContext(fixture.browser, fixture.app, fixture.errors);
    fixture.page = await fixture.phone.newPage();
    if (signUp === "passkey") {
      fixture.authenticator = await addVirtualAuthenticator(fixture.page);
      await signUpWithPasskey(fixture.page, fixture.app, name);
    } else {
      await signUpByEmail(fixture.page, fixture.app, name);
    }
    fixture.human = await Human.of(fixture.app, fixture.phone);
    const apiKey = await fixture.human.createKey();
    fixture.tapgate = new Tapgate({ url: fixture.app.direct, apiKey, onLog: () => undefined });
  });
  afterAll(async () => {
    fixture.tapgate?.close();
    await fixture.browser?.close();
    await fixture.app?.stop();
    expect(fixture.errors).toEqual([]);
  });
  return fixture;
}
