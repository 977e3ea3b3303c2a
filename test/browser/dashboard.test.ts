/**
 * The team dashboard, end to end, in real headless Chromium against `wrangler dev`: an owner at
 * 1440×900 invites an approver from the Members screen; the approver signs up through the invite
 * in a second browser context and joins; an agent (the SDK, with the owner's key) asks from two
 * sessions; the requests appear live on both Pending boards and on the owner's phone-width
 * view; the approver decides inline in the side panel and the agent gets that answer; every
 * view drops the row live; History names the approver with the latency; a viewer sees the board
 * without decision buttons; the board and Stats are screenshotted; the owner lowers the team
 * limits, a cut request's card says so and a refused request shows on the board. Steps build on
 * each other.
 */
import { readFile } from "node:fs/promises";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type RequestPermissionResponse, Tapgate } from "../../sdk/src/index";
import {
  browserAvailable,
  DESKTOP,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  markPage,
  PHONE,
  phoneContext,
  pngSize,
  screenshot,
  signUpByEmail,
  signUpThroughInvite,
  startApp,
  stillSamePage,
  unique,
} from "./harness";

/** Waits on a condition, long enough for a loaded machine: `wrangler dev` and three Chromium contexts. */
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 15_000, interval: 50 });

const OPTIONS: Array<{ optionId: string; name: string; kind: "allow_once" | "reject_once" }> = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

describe.skipIf(!browserAvailable)("the team dashboard in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  const errors: string[] = [];
  // The owner on a laptop, the invited approver on theirs, the owner's phone, the invited viewer.
  let ownerCtx: BrowserContext;
  let owner: Page;
  let ownerApi: Human;
  let approverCtx: BrowserContext;
  let approver: Page;
  let approverApi: Human;
  let phoneCtx: BrowserContext;
  let phone: Page;
  let viewerCtx: BrowserContext;
  let viewer: Page;
  let tapgate: Tapgate;
  let ownerMe: Awaited<ReturnType<Human["me"]>>;
  let approverMe: Awaited<ReturnType<Human["me"]>>;
  // Filled in as the steps go.
  let editApproval: Approval;
  let editAnswer: Promise<RequestPermissionResponse>;
  let shellApproval: Approval;
  let shellAnswer: Promise<RequestPermissionResponse>;

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    ownerCtx = await desktopContext(browser, app, errors);
    owner = await ownerCtx.newPage();
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  /** The owner's Members screen creates a one-time invite link for `role`. */
  async function invite(role: "approver" | "viewer"): Promise<string> {
    await owner.getByTestId("nav-members").click();
    await owner.getByTestId("screen-members").waitFor();
    await owner.getByTestId("invite-role").selectOption(role);
    await owner.getByTestId("invite-create").click();
    const created = owner.getByTestId("invite-created");
    await created.waitFor();
    await poll(() => created.textContent()).toContain(`new ${role}`);
    const url = await owner.getByTestId("invite-url").inputValue();
    expect(url).toMatch(new RegExp(`^${app.origin}/invite\\?token=[A-Za-z0-9_-]{43}$`));
    return url;
  }

  /**
   * The resolved request as the History API lists it. D1 gets its copy from the gate's outbox
   * just after the decision, so wait for it before a screen that reads history loads.
   */
  const historyItem = (id: string) =>
    vi.waitFor(
      async () => {
        const { approvals } = await ownerApi.json<{ approvals: Array<Approval & { latencyMs: number | null }> }>(
          "/v1/history",
        );
        const item = approvals.find((a) => a.id === id);
        if (!item) throw new Error(`${id} is not in the history yet`);
        return item;
      },
      { timeout: 10_000, interval: 50 },
    );

  /** The person's board row for `id` (present or not). */
  const row = (page: Page, id: string) => page.getByTestId(`board-row-${id}`);

  it("an owner signs up and opens the dashboard at 1440×900: the wide layout with its sidebar", async () => {
    await signUpByEmail(owner, app, "Ada", "screen-board");
    ownerApi = await Human.of(app, ownerCtx);
    ownerMe = await ownerApi.me();
    expect(owner.viewportSize()).toEqual(DESKTOP);
    await owner.getByTestId("side-nav").waitFor();
    await owner.getByTestId("board-empty").waitFor();
    expect(await owner.getByTestId("team-name").textContent()).toBe("Ada's team");
    expect(await owner.getByTestId("user-name").textContent()).toContain("owner");
    // The phone's bottom navigation is not there on a wide screen.
    expect(await owner.locator("nav.bottom-nav").count()).toBe(0);
  });

  it("the owner invites an approver from Members; the invitee signs up through the link and lands in the owner's team", async () => {
    const url = await invite("approver");
    await owner.getByTestId("invites-table").waitFor();
    expect(await owner.getByTestId("invites-table").locator("tbody tr").count()).toBe(1);

    approverCtx = await desktopContext(browser, app, errors);
    approver = await approverCtx.newPage();
    await signUpThroughInvite(approver, app, url, "Grace");
    approverApi = await Human.of(app, approverCtx);
    approverMe = await approverApi.me();
    expect(approverMe.team.id).toBe(ownerMe.team.id);
    expect(await approver.getByTestId("team-name").textContent()).toBe("Ada's team");
    expect(await approver.getByTestId("user-name").textContent()).toContain("approver");
    // Grace has her own team too: the switcher offers both, on Ada's.
    expect(await approver.getByTestId("team-switcher").inputValue()).toBe(ownerMe.team.id);
    const { teams } = await approverApi.json<{ teams: Array<{ id: string; role: string }> }>("/v1/teams");
    expect(teams).toHaveLength(2);
    expect(teams.find((t) => t.id === ownerMe.team.id)?.role).toBe("approver");

    // The owner's Members screen lists her as approver, and the invite is spent.
    await owner.getByTestId("nav-pending").click();
    await owner.getByTestId("screen-board").waitFor();
    await owner.getByTestId("nav-members").click();
    const member = owner.getByTestId(`member-row-${approverMe.user.id}`);
    await member.waitFor();
    expect(await member.getAttribute("data-role")).toBe("approver");
    await owner.getByTestId("invites-empty").waitFor();
    // The link works once.
    const again = await fetch(`${app.direct}/v1/invites/preview`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: new URL(url).searchParams.get("token") }),
    });
    expect(again.status).toBe(404);
  });

  it("requests from two agent sessions appear live on both dashboards and on the owner's phone-width view", async () => {
    // The owner's phone: the same person at 390×844 (the bottom-nav Pending list, not the board).
    phoneCtx = await phoneContext(browser, app, errors);
    await phoneCtx.addCookies(await ownerCtx.cookies(app.origin));
    phone = await phoneCtx.newPage();
    await phone.goto("/");
    await phone.getByTestId("pending-empty").waitFor();
    expect(phone.viewportSize()).toEqual(PHONE);

    await owner.getByTestId("nav-pending").click();
    await owner.getByTestId("board-empty").waitFor();
    await approver.getByTestId("board-empty").waitFor();
    // Every view's live feed is up (the boards' dot, the phone's "Connecting…" banner gone)…
    await owner.locator(".live-dot.live-live").waitFor();
    await approver.locator(".live-dot.live-live").waitFor();
    await poll(() => phone.getByTestId("reconnecting-banner").count()).toBe(0);
    // …and a reload would lose these marks: the rows must arrive over that feed.
    for (const page of [owner, approver, phone]) await markPage(page);

    tapgate = new Tapgate({ url: app.direct, apiKey: await ownerApi.createKey("ada-laptop"), onLog: () => undefined });
    const editSessionId = unique("dash-edit");
    const editSession = await tapgate.session(editSessionId, {
      title: "Make the port configurable",
      agent: { name: "claude-code", version: "2.1" },
      host: "ada-laptop",
      cwd: "/home/ada/src/api",
    });
    editAnswer = editSession.requestPermission({
      sessionId: editSessionId,
      toolCall: {
        toolCallId: "edit-1",
        title: "Edit src/main.ts",
        kind: "edit",
        content: [
          {
            type: "diff",
            path: "src/main.ts",
            oldText: "const port = 8080;\n",
            newText: "const port = Number(process.env.PORT ?? 8080);\n",
          },
        ],
        locations: [{ path: "src/main.ts", line: 3 }],
      },
      options: OPTIONS,
    });
    editApproval = await ownerApi.waitForOne(editSessionId);

    const shellSessionId = unique("dash-shell");
    const shell = await tapgate.session(shellSessionId, {
      title: "Clean up build output",
      agent: { name: "codex", version: "0.9" },
      host: "ada-ci-runner",
      cwd: "/srv/build",
    });
    shellAnswer = shell.requestPermission({
      sessionId: shellSessionId,
      toolCall: { toolCallId: "rm-1", title: "rm -rf dist/", kind: "delete", rawInput: { command: "rm -rf dist/" } },
      options: OPTIONS,
    });
    shellApproval = await ownerApi.waitForOne(shellSessionId);

    for (const page of [owner, approver]) {
      await row(page, editApproval.id).waitFor();
      await row(page, shellApproval.id).waitFor();
      // Grouped by session: one group per agent session.
      await page.getByTestId(`board-group-${editSessionId}`).waitFor();
      await page.getByTestId(`board-group-${shellSessionId}`).waitFor();
      await poll(() => page.getByTestId("board-summary").textContent()).toBe("2 waiting across 2 sessions");
      const text = (await row(page, editApproval.id).textContent()) ?? "";
      for (const s of ["Edit src/main.ts", "Make the port configurable", "claude-code 2.1", "ada-laptop"]) {
        expect(text).toContain(s);
      }
    }
    // The member column: the owner sees her own request as "You", the approver sees Ada's name.
    expect(await row(owner, editApproval.id).getByTestId("board-member").textContent()).toBe("You");
    expect(await row(approver, editApproval.id).getByTestId("board-member").textContent()).toBe("Ada");
    // No push device yet: the delivery column says so (once it has read the card).
    await poll(() => row(owner, editApproval.id).getByTestId("board-delivery").textContent()).toBe("no device reached");

    await phone.getByTestId(`pending-row-${editApproval.id}`).waitFor();
    await phone.getByTestId(`pending-row-${shellApproval.id}`).waitFor();
    for (const page of [owner, approver, phone]) expect(await stillSamePage(page)).toBe(true);

    const path = await screenshot(owner, "dashboard-board.png");
    expect(pngSize(await readFile(path))).toEqual(DESKTOP);
  });

  it("the approver opens the row and decides inline in the side panel; the agent gets that option", async () => {
    await approver.getByTestId(`board-open-${editApproval.id}`).click();
    const panel = approver.getByTestId("board-panel");
    await panel.waitFor();
    expect(new URL(approver.url()).searchParams.get("open")).toBe(editApproval.id);
    expect(await row(approver, editApproval.id).getAttribute("aria-selected")).toBe("true");
    const card = panel.getByTestId("screen-approval");
    await card.waitFor();
    expect(await card.getAttribute("data-state")).toBe("pending");
    expect(await panel.getByTestId("card-title").textContent()).toBe("Edit src/main.ts");
    await panel.getByTestId("diff").waitFor();
    expect(await panel.getByTestId("viewer-note").count()).toBe(0);

    await panel.getByTestId("option-allow").click();
    expect(await editAnswer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
    const outcome = panel.getByTestId("outcome");
    await outcome.waitFor();
    expect(await outcome.textContent()).toMatch(/^Allowed \(Allow once\) by you/);
    expect(await card.getAttribute("data-state")).toBe("allowed");
    expect(await ownerApi.approval(editApproval.id)).toMatchObject({
      state: "allowed",
      reason: "decided",
      optionId: "allow",
      decidedBy: { userId: approverMe.user.id, name: "Grace" },
    });
  });

  it("both dashboards and the owner's phone drop the decided row live; the other request stays", async () => {
    for (const page of [owner, approver]) {
      await poll(() => row(page, editApproval.id).count()).toBe(0);
      await poll(() => page.getByTestId("board-summary").textContent()).toBe("1 waiting across 1 session");
      expect(await row(page, shellApproval.id).count()).toBe(1);
    }
    await poll(() => phone.getByTestId(`pending-row-${editApproval.id}`).count()).toBe(0);
    expect(await phone.getByTestId(`pending-row-${shellApproval.id}`).count()).toBe(1);
    for (const page of [owner, approver, phone]) expect(await stillSamePage(page)).toBe(true);
  });

  it("History shows the decision with the approver's name and its latency", async () => {
    const item = await historyItem(editApproval.id);
    expect(item?.latencyMs).toBeGreaterThan(0);
    expect(item?.latencyMs).toBe((item?.resolvedAt ?? 0) - editApproval.createdAt);

    await owner.getByTestId("nav-history").click();
    await owner.getByTestId("screen-team-history").waitFor();
    const line = owner.getByTestId(`history-row-${editApproval.id}`);
    await line.waitFor();
    // Who, and on which surface: she decided in the web dashboard, not on a push device.
    expect(await line.getByTestId("history-decided-by").textContent()).toBe("Grace · web");
    expect(await line.getByTestId("history-outcome").textContent()).toMatch(/allowed/i);
    const shown = (await line.getByTestId("history-latency").textContent()) ?? "";
    expect(shown).toMatch(/^\d+(\.\d)? (ms|s)$/);
    // The shown latency is the API's, rounded for reading.
    const ms = item?.latencyMs ?? 0;
    const value = Number.parseFloat(shown);
    expect(shown.endsWith(" ms") ? value : value * 1000).toBeCloseTo(ms, ms < 1000 ? -1 : -2);
    // Only the decided request: the one still waiting is not history.
    expect(await owner.getByTestId(`history-row-${shellApproval.id}`).count()).toBe(0);

    // The approver's own history calls her "You".
    await approver.getByTestId("nav-history").click();
    const own = approver.getByTestId(`history-row-${editApproval.id}`);
    await own.waitFor();
    expect(await own.getByTestId("history-decided-by").textContent()).toBe("You · web");
  });

  it("a viewer, invited from Members, sees the board but gets no decision buttons", async () => {
    const url = await invite("viewer");
    viewerCtx = await desktopContext(browser, app, errors);
    viewer = await viewerCtx.newPage();
    await signUpThroughInvite(viewer, app, url, "Linus");
    const viewerMe = await (await Human.of(app, viewerCtx)).me();
    expect(viewerMe.team.id).toBe(ownerMe.team.id);
    expect(await viewer.getByTestId("user-name").textContent()).toContain("viewer");

    await viewer.getByTestId("viewer-hint").waitFor();
    await row(viewer, shellApproval.id).waitFor();
    expect(await row(viewer, editApproval.id).count()).toBe(0);
    // A row loaded with the page names its member too, as one that arrived live does.
    await poll(() => row(viewer, shellApproval.id).getByTestId("board-member").textContent()).toBe("Ada");
    await viewer.getByTestId(`board-open-${shellApproval.id}`).click();
    const panel = viewer.getByTestId("board-panel");
    await panel.getByTestId("viewer-note").waitFor();
    expect(await panel.getByTestId("card-title").textContent()).toBe("rm -rf dist/");
    expect(await panel.getByTestId("options").count()).toBe(0);
    expect(await panel.getByTestId("option-allow").count()).toBe(0);
    // Admin screens are not offered to a viewer.
    expect(await viewer.getByTestId("nav-policy").count()).toBe(0);
    expect(await viewer.getByTestId("nav-audit").count()).toBe(0);
    // And the server refuses a viewer's decision, whatever the page shows.
    const viewerApi = await Human.of(app, viewerCtx);
    const res = await viewerApi.fetch(`/v1/approvals/${encodeURIComponent(shellApproval.id)}/decision`, {
      method: "POST",
      body: JSON.stringify({ optionId: "allow", requestHash: shellApproval.requestHash }),
    });
    expect(res.status).toBe(403);
    expect((await ownerApi.approval(shellApproval.id)).state).toBe("pending");
  });

  it("the owner denies the other request from the board; Stats draws the day at 1440×900", async () => {
    await owner.getByTestId("nav-pending").click();
    await owner.getByTestId(`board-open-${shellApproval.id}`).click();
    const panel = owner.getByTestId("board-panel");
    await panel.getByTestId("option-deny").click();
    expect(await shellAnswer).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });
    await panel.getByTestId("outcome").waitFor();
    // The viewer's open card and board follow live too.
    await poll(() => row(viewer, shellApproval.id).count()).toBe(0);
    await viewer.getByTestId("board-panel").getByTestId("outcome").waitFor();
    await poll(() => phone.getByTestId(`pending-row-${shellApproval.id}`).count()).toBe(0);
    await phone.getByTestId("pending-empty").waitFor();

    await historyItem(shellApproval.id); // Stats reads D1 once, when it opens
    await owner.getByTestId("nav-stats").click();
    await owner.getByTestId("screen-stats").waitFor();
    const chart = owner.getByTestId("stats-chart");
    await chart.waitFor();
    await poll(() => owner.getByTestId("kpi-total").locator(".kpi-value").textContent()).toBe("2");
    expect(await owner.getByTestId("kpi-allowed").locator(".kpi-value").textContent()).toBe("50 %");
    expect(await owner.getByTestId("kpi-allowed").locator(".kpi-note").textContent()).toBe("1 request");
    expect(await owner.getByTestId("latency-p50").locator(".kpi-value").textContent()).not.toBe("—");
    expect(await chart.locator("g[data-total='2']").count()).toBe(1);
    expect(await chart.locator("rect.fill-allowed").count()).toBe(1);
    expect(await chart.locator("rect.fill-denied").count()).toBe(1);
    // Rubber-stamping: the team's two human decisions, one of them an allow.
    const team = owner.getByTestId("oversight-row-team");
    expect(await team.locator("td").nth(1).textContent()).toBe("2");
    expect(await team.locator("td").nth(2).textContent()).toBe("50 %");
    const path = await screenshot(owner, "dashboard-stats.png");
    expect(pngSize(await readFile(path))).toEqual(DESKTOP);
  });
  it("the owner downloads the audit chain's head, and verifying the chain reaches it", async () => {
    await owner.getByTestId("nav-audit").click();
    await owner.getByTestId("screen-audit").waitFor();
    const [download] = await Promise.all([
      owner.waitForEvent("download"),
      owner.getByTestId("audit-download-head").click(),
    ]);
    expect(download.suggestedFilename()).toBe("tapgate-audit-head.json");
    const kept = JSON.parse(await readFile(await download.path(), "utf8"));
    // The file is the head the API serves (which only moves forward: the gate may flush meanwhile).
    const served = await (await ownerApi.fetch("/v1/audit/head")).json();
    expect(kept).toMatchObject({ teamId: ownerMe.team.id, hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(Object.keys(kept).sort()).toEqual(Object.keys(served).sort());
    expect(kept.count).toBeGreaterThan(0);
    expect(kept.count).toBeLessThanOrEqual(served.count);

    await owner.getByTestId("audit-verify").click();
    await poll(() => owner.getByTestId("audit-verify-result").textContent()).toMatch(/^Chain intact/);
    const checked = await ownerApi.fetch("/v1/audit/verify", { method: "POST", body: JSON.stringify(kept) });
    expect(await checked.json()).toMatchObject({ ok: true });
  });

  it("the owner lowers the team limits; a cut request's card says so, and a refused one shows on the board", async () => {
    await owner.getByTestId("nav-policy").click();
    await owner.getByTestId("policy-form").waitFor();
    await owner.getByTestId("policy-limit-pendingPerKey").fill("1");
    await owner.getByTestId("policy-limit-storedBytesPerRequest").fill("4096");
    await owner.getByTestId("policy-save").click();
    await poll(() => owner.getByTestId("policy-result").textContent()).toContain("Saved");
    expect((await ownerApi.json<{ limits: { pendingPerKey: number } }>("/v1/policy")).limits.pendingPerKey).toBe(1);

    await owner.getByTestId("nav-pending").click();
    await owner.getByTestId("board-empty").waitFor();
    await owner.locator(".live-dot.live-live").waitFor();
    const sessionId = unique("dash-quota");
    const session = await tapgate.session(sessionId, { title: "Write the fixtures" });
    const big = session.requestPermission({
      sessionId,
      toolCall: {
        toolCallId: "big-1",
        title: "Write fixtures.json",
        kind: "edit",
        rawInput: { path: "fixtures.json", content: "z".repeat(50_000) },
      },
      options: OPTIONS,
    });
    const bigApproval = await ownerApi.waitForOne(sessionId);
    await owner.getByTestId(`board-open-${bigApproval.id}`).click();
    const panel = owner.getByTestId("board-panel");
    await poll(() => panel.getByTestId("card-truncated").textContent()).toMatch(/truncated: \d+ bytes not stored/);

    // The key's one pending slot is taken: the next request is refused, answered as a deny, and shown.
    const refused = await session.requestPermission({
      sessionId,
      toolCall: { toolCallId: "ls-1", title: "ls", kind: "execute" },
      options: OPTIONS,
    });
    expect(refused).toEqual({ outcome: { outcome: "selected", optionId: "deny" } });
    await poll(() => owner.getByTestId("board-refusal").first().textContent()).toContain(
      "over the team's pending requests per key limit",
    );

    await panel.getByTestId("option-deny").click();
    expect(await big).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });
  });
});
