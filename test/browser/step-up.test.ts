/**
 * Step-up in real headless Chromium with a virtual passkey authenticator (CDP WebAuthn): a
 * high-risk card is marked, its Allow asks the passkey (the authenticator signs once more), the
 * agent is allowed, and the proof names that credential; a high-risk push offers no action.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StepUpProof } from "../../sdk/src/human/step-up";
import { Tapgate } from "../../sdk/src/index";
import {
  addVirtualAuthenticator,
  browserAvailable,
  credentials,
  DESKTOP,
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
import { shownNotifications, watchServiceWorkers } from "./push-harness";

describe.skipIf(!browserAvailable)("step-up for a high-risk request in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let phone: BrowserContext;
  let page: Page;
  let authenticator: VirtualAuthenticator;
  let human: Human;
  let tapgate: Tapgate;
  const errors: string[] = [];

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    phone = await phoneContext(browser, app, errors);
    await phone.grantPermissions(["notifications"], { origin: app.origin });
    page = await phone.newPage();
    authenticator = await addVirtualAuthenticator(page);
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("a high-risk card asks for the passkey, then allows; the proof names the passkey", async () => {
    const sw = await watchServiceWorkers(page);
    await signUpWithPasskey(page, app, "Ada");
    human = await Human.of(app, phone);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    const sessionId = unique("step-up");
    const session = await tapgate.session(sessionId, { title: "Release", agent: { name: "codex" } });
    const answer = session.requestPermission({
      sessionId,
      toolCall: {
        toolCallId: "push-1",
        title: "git push --force origin main",
        kind: "execute",
        rawInput: { command: "git push --force origin main" },
      },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    });
    const approval = await human.waitForOne(sessionId);
    expect(approval.risk).toBe("high");

    // Marked on the pending list and on the card.
    await page.getByTestId(`pending-row-${approval.id}`).getByTestId("risk-tag").waitFor();
    await page.getByTestId(`pending-row-${approval.id}`).click();
    const card = page.getByTestId("screen-approval");
    await card.waitFor();
    expect(await card.getByTestId("risk-tag").textContent()).toBe("High risk");
    expect(await card.getByTestId("risk-banner").textContent()).toContain("asks for your passkey");
    await screenshot(page, "step-up-card.png");

    // The lock screen: a high-risk push shows no action at all.
    const registrationId = await sw.activeRegistration(`${app.origin}/`);
    await sw.deliver(app.origin, registrationId, {
      v: 1,
      type: "approval",
      approvalId: approval.id,
      title: "git push --force origin main",
      expiresAt: approval.expiresAt,
      risk: "high",
    });
    await expect.poll(async () => (await shownNotifications(page, approval.id)).length).toBe(1);
    expect((await shownNotifications(page, approval.id))[0]).toMatchObject({
      title: "High risk: git push --force origin main",
      actions: [],
    });

    // Allow: the passkey signs (its counter moves), and only then is the request allowed.
    const [before] = await credentials(authenticator);
    await card.getByTestId("option-allow").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("allowed");
    const [after] = await credentials(authenticator);
    expect(after?.signCount ?? 0).toBeGreaterThan(before?.signCount ?? 0);
    expect(await answer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });

    const proof = await human.json<StepUpProof>(`/v1/approvals/${encodeURIComponent(approval.id)}/proof`);
    expect(proof).toMatchObject({ approvalId: approval.id, requestHash: approval.requestHash, state: "allowed" });
    const credentialId = Buffer.from(after?.credentialId ?? "", "base64").toString("base64url");
    expect(proof.assertions.map((a) => a.credentialId)).toEqual([credentialId]);
    expect(proof.assertions[0]?.rpId).toBe("localhost");
  });

  it("the Policy screen edits the high-risk patterns and the quorum; lowering it takes the owner's passkey", async () => {
    const desk = await browser.newContext({
      viewport: DESKTOP,
      baseURL: app.origin,
      storageState: await phone.storageState(),
    });
    try {
      const dash = await desk.newPage();
      watchErrors(dash, errors);
      await dash.goto("/policy");
      await dash.getByTestId("policy-high-risk").waitFor();
      const rows = dash.getByTestId("policy-high-risk-patterns").locator("tbody tr");
      const defaults = await rows.count();
      expect(await dash.getByTestId("policy-high-risk-0-command").inputValue()).toBe("git push --force*");
      await dash.getByTestId("policy-high-risk-add").click();
      await dash.getByTestId(`policy-high-risk-${defaults}-command`).fill("make deploy-prod*");
      await dash.getByTestId("policy-high-risk-add").click(); // left empty: dropped on save
      await dash.getByTestId("policy-high-risk-quorum").selectOption("2");
      await screenshot(dash, "step-up-policy.png");
      await dash.getByTestId("policy-save").click();
      await expect.poll(() => dash.getByTestId("policy-result").textContent()).toContain("Saved");
      const policy = await human.json<{ highRisk: Array<Record<string, string>>; highRiskQuorum: number }>(
        "/v1/policy",
      );
      expect(policy.highRiskQuorum).toBe(2);
      expect(policy.highRisk).toHaveLength(defaults + 1);
      expect(policy.highRisk.at(-1)).toEqual({ command: "make deploy-prod*" });

      // Lowering the quorum weakens the policy: the owner's passkey signs it, and only then is it saved.
      // The same passkey on this desktop page (a synced passkey, as a phone's would be).
      const deskKey = await addVirtualAuthenticator(dash);
      for (const credential of await credentials(authenticator)) {
        await deskKey.cdp.send("WebAuthn.addCredential", { authenticatorId: deskKey.authenticatorId, credential });
      }
      const [before] = await credentials(deskKey);
      await dash.getByTestId("policy-high-risk-quorum").selectOption("1");
      await dash.getByTestId("policy-save").click();
      await expect.poll(() => dash.getByTestId("policy-result").textContent()).toContain("Saved");
      const [after] = await credentials(deskKey);
      expect(after?.signCount ?? 0).toBeGreaterThan(before?.signCount ?? 0);
      expect((await human.json<{ highRiskQuorum: number }>("/v1/policy")).highRiskQuorum).toBe(1);
    } finally {
      await desk.close();
    }
  });
});
