/**
 * Standing rules in real headless Chromium against `wrangler dev`: a person signed up with a
 * passkey (virtual authenticator) taps "Allow for 1 h" on a real agent's card, and the agent's
 * next matching request is allowed with no card; the Rules screen lists the rule and ends it.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type GateSession, Tapgate, tapgateAnswerMeta } from "../../sdk/src/index";
import type { RequestPermissionParams } from "../../sdk/src/protocol";
import {
  addVirtualAuthenticator,
  browserAvailable,
  Human,
  type LocalApp,
  launchChromium,
  phoneContext,
  screenshot,
  signUpWithPasskey,
  startApp,
  unique,
} from "./harness";

describe.skipIf(!browserAvailable)("standing rules in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let phone: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  let sessionId: string;
  const errors: string[] = [];

  const ask = (toolCallId: string, command: string) =>
    session.requestPermission({
      sessionId,
      toolCall: { toolCallId, title: command, kind: "execute", rawInput: { command } },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    } satisfies RequestPermissionParams);

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    phone = await phoneContext(browser, app, errors);
    page = await phone.newPage();
    await addVirtualAuthenticator(page);
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("Allow for 1 h on a card allows it, and the next matching request is allowed with no card", async () => {
    await signUpWithPasskey(page, app, "Ada");
    human = await Human.of(app, phone);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    sessionId = unique("rules");
    session = await tapgate.session(sessionId, { title: "Run the tests", host: "ada-laptop", cwd: "/home/ada/api" });

    const first = ask("t-1", "npm test -- --run");
    const approval: Approval = await human.waitForOne(sessionId);
    await page.goto(`/approvals/${approval.id}`);
    const offer = page.getByTestId("option-allow-rule");
    await offer.waitFor();
    expect(await page.getByTestId("rule-preview").textContent()).toBe(
      "Allows execute requests running exactly “npm test -- --run” in /home/ada/api (or below) on host “ada-laptop”, in your own sessions, unless high-risk.",
    );
    await screenshot(page, "rule-offer.png");
    await offer.click();
    expect(await first).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
    await page.getByTestId("outcome").waitFor();
    expect(await page.getByTestId("decision-notice").textContent()).toContain("Allowed, and for 1 h");

    // The same request again: answered by the rule, never held for a human.
    const second = await ask("t-2", "npm test -- --run");
    expect(second.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    const meta = tapgateAnswerMeta(second);
    expect(meta?.reason).toBe("rule");
    const { rules } = await human.json<{ rules: Array<{ id: string; createdBy: { name: string } }> }>("/v1/rules");
    expect(rules).toHaveLength(1);
    expect((meta as { rule?: unknown } | undefined)?.rule).toEqual({
      id: rules[0]?.id,
      createdBy: expect.objectContaining({ name: "Ada" }),
    });
    const resolved = await human.approval(meta?.approvalId ?? "");
    expect(resolved).toMatchObject({ state: "allowed", reason: "rule", decidedBy: null });

    // A request that differs is held for a human, and has no offer when it is high-risk.
    const risky = ask("t-3", "git push --force origin main");
    const held = await human.waitForOne(sessionId);
    await page.goto(`/approvals/${held.id}`);
    await page.getByTestId("option-allow").waitFor();
    expect(await page.getByTestId("option-allow-rule").count()).toBe(0);
    await page.getByTestId("option-deny").click();
    expect(await risky).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });
  });

  it("the Rules screen lists the rule with its count, and ending it sends the next request to a human", async () => {
    const ruleId = (await human.json<{ rules: Array<{ id: string }> }>("/v1/rules")).rules[0]?.id ?? "";
    await page.goto("/rules");
    const row = page.getByTestId(`rule-row-${ruleId}`);
    await row.waitFor();
    expect(await row.getByTestId("rule-match").textContent()).toContain("exactly “npm test -- --run”");
    // The count comes from the gate's outbox, written just after the agent's answer.
    await expect
      .poll(async () => {
        await page.reload();
        return row.getByTestId("rule-allowed").textContent();
      })
      .toBe("1");
    await screenshot(page, "rules.png");
    await row.getByTestId(`rule-end-${ruleId}`).click();
    await row.getByTestId(`rule-end-confirm-${ruleId}`).click();
    await expect.poll(() => row.getAttribute("data-state")).toBe("ended");

    const third = ask("t-4", "npm test -- --run");
    const held = await human.waitForOne(sessionId);
    expect(held.snapshot.toolCall.toolCallId).toBe("t-4");
    await page.goto(`/approvals/${held.id}`);
    await page.getByTestId("option-allow").click();
    expect(tapgateAnswerMeta(await third)?.reason).toBe("decided");
  });
});
