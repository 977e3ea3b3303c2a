/**
 * The card's rule choices in real headless Chromium against `wrangler dev` (issue 35): before
 * the click, each choice with its sentence and what it would have allowed; the one picked is
 * the rule made. And the card's colours, measured by axe-core (WCAG 2.1 AA, 4.5:1), in light
 * and dark: the allow button's agent-name line, the rule offer and its choices included.
 */

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type GateSession, Tapgate, tapgateAnswerMeta } from "../../sdk/src/index";
import type { RequestPermissionParams } from "../../sdk/src/protocol";
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

interface ContrastFinding {
  target: string;
  ratio: number | undefined;
}

/** axe-core's `color-contrast` rule over `selector`: what it passed and what it failed. */
async function contrast(page: Page, selector: string): Promise<{ passes: string[]; violations: ContrastFinding[] }> {
  const source = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  // Evaluated over DevTools, not as a page script: the app's CSP stays as shipped.
  await page.evaluate(source);
  return page.evaluate(async (include) => {
    type Node = { target: string[]; any: Array<{ data?: { contrastRatio?: number } }> };
    type Result = { nodes: Node[] };
    const axe = (window as unknown as { axe: { run: (...a: unknown[]) => Promise<Record<string, Result[]>> } }).axe;
    const results = await axe.run(
      { include: [include] },
      { runOnly: { type: "rule", values: ["color-contrast"] }, resultTypes: ["passes", "violations"] },
    );
    const nodes = (kind: string) => (results[kind] ?? []).flatMap((r) => r.nodes);
    return {
      passes: nodes("passes").map((n) => n.target.join(" ")),
      violations: nodes("violations").map((n) => ({
        target: n.target.join(" "),
        ratio: n.any[0]?.data?.contrastRatio,
      })),
    };
  }, selector);
}

describe.skipIf(!browserAvailable)("the card's rule choices in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let phone: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  let sessionId: string;
  const errors: string[] = [];

  const ask = (command: string, cwd: string) =>
    session.requestPermission({
      sessionId,
      toolCall: { toolCallId: unique("t"), title: command, kind: "execute", rawInput: { command, cwd } },
      // The agent's own words differ from the card's: each button shows them on a second line.
      options: [
        { optionId: "allow", name: "Yes, run it", kind: "allow_once" },
        { optionId: "deny", name: "No, stop", kind: "reject_once" },
      ],
    } satisfies RequestPermissionParams);

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    phone = await phoneContext(browser, app, errors);
    page = await phone.newPage();
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("shows each choice with its sentence and count before the click, and makes the one picked", async () => {
    await signUpByEmail(page, app, "Ada");
    human = await Human.of(app, phone);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    sessionId = unique("choices");
    session = await tapgate.session(sessionId, { title: "Build", host: "ada-laptop", cwd: "/home/ada/api" });

    // Two earlier requests the program-wide rule would have allowed, one of them the same command.
    for (const command of ["npm test", "npm run lint"]) {
      const earlier = ask(command, "/home/ada/api");
      const held = await human.waitForOne(sessionId);
      await human.json(`/v1/approvals/${held.id}/decision`, {
        method: "POST",
        body: JSON.stringify({ optionId: "allow", requestHash: held.requestHash }),
      });
      await earlier;
    }

    // The index is written just after each answer: the counts are read once both are in it.
    await vi.waitFor(
      async () => {
        const { approvals } = await human.json<{ approvals: Approval[] }>("/v1/approvals?state=resolved&scope=mine");
        expect(approvals.filter((a) => a.sessionId === sessionId)).toHaveLength(2);
      },
      { timeout: 15_000, interval: 100 },
    );
    const first = ask("npm test", "/home/ada/api");
    const approval: Approval = await human.waitForOne(sessionId);
    await page.goto(`/approvals/${approval.id}`);
    await page.getByTestId("rule-choices").waitFor();
    const exact = page.getByTestId("rule-choice-exact");
    const program = page.getByTestId("rule-choice-program");
    expect(await page.getByTestId("rule-choice-folder").count()).toBe(0);
    expect(await exact.getByTestId("rule-choice-sentence").textContent()).toBe(
      "Allows execute requests running exactly “npm test” in /home/ada/api (or below) on host “ada-laptop”, in your own sessions, unless high-risk.",
    );
    expect(await exact.getByTestId("rule-choice-count").textContent()).toBe(
      "Would have allowed 1 request of yours in the last 7 days",
    );
    expect(await program.getByTestId("rule-choice-sentence").textContent()).toContain(
      "running a command matching “npm *”",
    );
    expect(await program.getByTestId("rule-choice-count").textContent()).toBe(
      "Would have allowed 2 requests of yours in the last 7 days",
    );
    const offer = page.getByTestId("option-allow-rule");
    expect(await offer.getByTestId("option-label").textContent()).toBe("Allow “npm test” for 1 h");

    await program.locator("input").check();
    expect(await offer.getByTestId("option-label").textContent()).toBe("Allow “npm” with any arguments for 1 h");
    expect(await offer.getByTestId("rule-preview").textContent()).toContain("matching “npm *”");
    await screenshot(page, "rule-choices.png");

    await offer.click();
    expect(await first).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
    await page.getByTestId("outcome").waitFor();
    const { rules } = await human.json<{ rules: Array<{ match: { command?: string } }> }>("/v1/rules");
    expect(rules.map((r) => r.match.command)).toEqual(["npm *"]);

    // The program-wide rule answers another npm command in a subfolder at once.
    const next = await ask("npm run build", "/home/ada/api/web");
    expect(tapgateAnswerMeta(next)?.reason).toBe("rule");
  });

  it("the card's buttons, the agent's words under them and the rule choices pass WCAG AA contrast, light and dark", async () => {
    const pending = ask("make build", "/home/ada/api");
    const approval: Approval = await human.waitForOne(sessionId);
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      await page.goto(`/approvals/${approval.id}`);
      await page.getByTestId("rule-choices").waitFor();
      await page.getByTestId("option-agent-name").first().waitFor();
      const { passes, violations } = await contrast(page, "[data-testid=decide]");
      expect(violations, colorScheme).toEqual([]);
      // The allow button's agent-name line was measured, not skipped.
      expect(passes.some((target) => target.includes("option-agent"))).toBe(true);
    }
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByTestId("option-deny").click();
    await pending;
  });
});
