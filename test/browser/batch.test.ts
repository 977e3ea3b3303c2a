/**
 * Less friction for the routine, in real headless Chromium against `wrangler dev`: an approver
 * opens a request and the owner's board says "Grace is looking"; the owner selects two requests,
 * checks the pre-flight table (tool, command, session, owner, the option applied), adds a reason
 * and confirms; the agent gets both denies with the reason, the open card shows it, the third
 * request stays; Grace denies that one from its card with a reason, which History shows. Steps
 * build on each other.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type RequestPermissionResponse, Tapgate } from "../../sdk/src/index";
import {
  browserAvailable,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  signUpByEmail,
  signUpThroughInvite,
  startApp,
  unique,
} from "./harness";

const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 });

const OPTIONS: Array<{ optionId: string; name: string; kind: "allow_once" | "reject_once" }> = [
  { optionId: "ok", name: "Run it", kind: "allow_once" },
  { optionId: "no", name: "Skip it", kind: "reject_once" },
];

describe.skipIf(!browserAvailable)("batch decisions, reasons and claims in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  const errors: string[] = [];
  let ownerCtx: BrowserContext;
  let owner: Page;
  let ownerApi: Human;
  let graceCtx: BrowserContext;
  let grace: Page;
  let tapgate: Tapgate;
  let sessionId: string;
  const asked: Array<{ approval: Approval; answer: Promise<RequestPermissionResponse> }> = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    ownerCtx = await desktopContext(browser, app, errors);
    owner = await ownerCtx.newPage();
    await signUpByEmail(owner, app, "Ada", "screen-board");
    ownerApi = await Human.of(app, ownerCtx);
    const { url } = await ownerApi.json<{ url: string }>("/v1/invites", {
      method: "POST",
      body: JSON.stringify({ role: "approver" }),
    });
    graceCtx = await desktopContext(browser, app, errors);
    grace = await graceCtx.newPage();
    await signUpThroughInvite(grace, app, url, "Grace");
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  const row = (page: Page, a: Approval) => page.getByTestId(`board-row-${a.id}`);

  it("three requests from one agent session reach both boards", async () => {
    await owner.locator(".live-dot.live-live").waitFor();
    await grace.locator(".live-dot.live-live").waitFor();
    tapgate = new Tapgate({ url: app.direct, apiKey: await ownerApi.createKey("ada-laptop"), onLog: () => undefined });
    sessionId = unique("batch");
    const session = await tapgate.session(sessionId, { title: "Tidy the repo", agent: { name: "claude-code" } });
    for (const command of ["rm -rf dist", "rm -rf coverage", "git clean -fdx"]) {
      const answer = session.requestPermission({
        sessionId,
        toolCall: { toolCallId: unique("call"), title: `Bash: ${command}`, kind: "execute", rawInput: { command } },
        options: OPTIONS,
      });
      const approval = await vi.waitFor(
        async () => {
          const { approvals } = await ownerApi.json<{ approvals: Approval[] }>("/v1/approvals?state=pending&limit=200");
          const found = approvals.find(
            (a) =>
              a.sessionId === sessionId && (a.snapshot.toolCall.rawInput as { command?: string }).command === command,
          );
          if (!found) throw new Error(`${command} is not pending yet`);
          return found;
        },
        { timeout: 15_000, interval: 50 },
      );
      asked.push({ approval, answer });
    }
    for (const page of [owner, grace]) {
      for (const { approval } of asked) await row(page, approval).waitFor();
    }
  });

  it("Grace opens a request: Ada's board says Grace is looking, and nothing is locked", async () => {
    const first = asked[0]?.approval as Approval;
    await grace.getByTestId(`board-open-${first.id}`).click();
    await grace.getByTestId("board-panel").getByTestId("options").waitFor();
    await poll(() => row(owner, first).getByTestId("board-lookers").textContent()).toBe("Grace is looking");
    // Grace does not see herself as a looker.
    expect(await row(grace, first).getByTestId("board-lookers").count()).toBe(0);
  });

  it("Ada selects two, checks the pre-flight table, adds a reason and confirms: each is denied once, with the reason", async () => {
    const [first, second, third] = asked.map((a) => a.approval) as [Approval, Approval, Approval];
    await row(owner, first).getByRole("checkbox").check();
    await row(owner, second).getByRole("checkbox").check();
    await poll(() => owner.getByTestId("batch-count").textContent()).toBe("2 selected");
    await owner.getByTestId("batch-deny").click();

    const preflight = owner.getByTestId("batch-preflight");
    await preflight.waitFor();
    expect(await preflight.locator("tbody tr").count()).toBe(2);
    const line = preflight.getByTestId(`preflight-${first.id}`);
    const text = (await line.textContent()) ?? "";
    for (const s of ["Bash: rm -rf dist", "rm -rf dist", "Tidy the repo", "You", "Deny", "Skip it"]) {
      expect(text).toContain(s);
    }
    expect(await preflight.getByTestId(`preflight-${third.id}`).count()).toBe(0);
    // Nothing was sent yet.
    expect((await ownerApi.approval(first.id)).state).toBe("pending");

    const reason = "<b>keep</b> the build output: the release job reads it";
    await preflight.getByTestId("reason").locator("summary").click();
    await preflight.getByTestId("reason-input").fill(reason);
    await owner.getByTestId("batch-confirm").click();

    const results = owner.getByTestId("batch-results");
    await results.waitFor();
    for (const a of [first, second]) {
      expect(await results.getByTestId(`batch-result-${a.id}`).getAttribute("data-status")).toBe("200");
    }
    for (const { answer } of asked.slice(0, 2)) {
      expect(await answer).toMatchObject({
        outcome: { outcome: "selected", optionId: "no" },
        _meta: { tapgate: { reason: "decided", message: reason } },
      });
    }
    // Grace's open card shows the reason as text, never as markup.
    const outcome = grace.getByTestId("board-panel").getByTestId("outcome-message");
    await poll(() => outcome.textContent()).toBe(`“${reason}”`);
    expect(await grace.getByTestId("board-panel").locator("b").count()).toBe(0);
    // The rows leave both boards; the third stays, and nothing selects it.
    for (const page of [owner, grace]) {
      await poll(() => row(page, first).count()).toBe(0);
      await poll(() => row(page, second).count()).toBe(0);
      await row(page, third).waitFor();
    }
    expect(await owner.getByTestId("batch-bar").count()).toBe(0);
    expect((await ownerApi.approval(third.id)).state).toBe("pending");
  });
  it("Grace denies the third from its card with a reason; the agent gets it and Ada's History shows it as text", async () => {
    const third = asked[2] as (typeof asked)[number];
    await grace.getByTestId(`board-open-${third.approval.id}`).click();
    const panel = grace.getByTestId("board-panel");
    await panel.getByTestId("options").waitFor();
    const reason = "git clean -fdx also deletes .env: use `npm run clean`";
    await panel.getByTestId("reason").locator("summary").click();
    await panel.getByTestId("reason-input").fill(reason);
    await panel.getByTestId("option-no").click();
    expect(await third.answer).toMatchObject({
      outcome: { outcome: "selected", optionId: "no" },
      _meta: { tapgate: { decidedBy: { name: "Grace" }, message: reason } },
    });
    await poll(() => panel.getByTestId("outcome-message").textContent()).toBe(`“${reason}”`);

    await poll(async () => {
      const { approvals } = await ownerApi.json<{ approvals: Approval[] }>("/v1/history");
      return approvals.find((a) => a.id === third.approval.id)?.message;
    }).toBe(reason);
    await owner.getByTestId("nav-history").click();
    await owner.getByTestId("screen-team-history").waitFor();
    const line = owner.getByTestId(`history-row-${third.approval.id}`);
    await line.waitFor();
    expect(await line.getByTestId("history-message").textContent()).toBe(`“${reason}”`);
  });
});
