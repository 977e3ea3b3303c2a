/**
 * Richer permission prompts on the phone, in real headless Chromium: an adapter's
 * `_meta.permission` words shown as the agent's, codex-acp's `decline` as "Skip, continue without
 * it" and the Codex hook's `deny_stop` as "Deny and stop the turn" (rejects, never styled as an
 * allow); the agent (the SDK) gets the option id it offered. A request carrying `matchedAskRule`
 * offers no "Allow for 1 h". "Dismiss" answers the agent `cancelled`.
 */
import { describe, expect, it } from "vitest";
import type { RequestPermissionRequest } from "../../sdk/src/protocol";
import { browserAvailable, phoneWithAgent, screenshot, unique } from "./harness";

describe.skipIf(!browserAvailable)("prompt words, Skip, Deny and stop, and Dismiss in headless Chromium", () => {
  const s = phoneWithAgent("Ada");

  /** An SDK agent asks once with these options and `_meta`; the card of that request, opened. */
  async function ask(options: RequestPermissionRequest["options"], meta?: Record<string, unknown>) {
    const sessionId = unique("prompt");
    const { page, human, tapgate } = s;
    const session = await tapgate.session(sessionId, { title: "Release", agent: { name: "codex" } });
    const answer = session.requestPermission({
      sessionId,
      toolCall: {
        toolCallId: unique("call"),
        title: "Bash: npm …",
        kind: "execute",
        rawInput: { command: "npm test" },
      },
      options,
      ...(meta && { _meta: meta }),
    });
    const approval = await human.waitForOne(sessionId);
    // The card asks the server which rules it may offer: that answer, fully read, comes before "Allow for 1 h" or its absence.
    const ruleChoices = page.waitForResponse((r) => r.url().endsWith(`/v1/approvals/${approval.id}/rule-choices`));
    await page.goto(`/approvals/${encodeURIComponent(approval.id)}`);
    const card = page.getByTestId("screen-approval");
    await card.waitFor();
    return { answer, card, ruleChoices: ruleChoices.then((r) => r.json() as Promise<{ choices: unknown[] }>) };
  }

  it("shows the adapter's words as the agent's; Deny and stop the turn is a deny beside the plain one", async () => {
    const { answer, card } = await ask(
      [
        {
          optionId: "allow",
          name: "Allow once",
          kind: "allow_once",
          _meta: { permission: { description: "Only this run" } },
        },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
        { optionId: "deny_stop", name: "Deny and stop the turn", kind: "reject_once" },
      ],
      { permission: { version: 1, title: "Run command?", description: "The tests need the network" } },
    );
    expect(await card.getByTestId("agent-prompt-title").textContent()).toBe("Run command?");
    expect(await card.getByTestId("agent-prompt-description").textContent()).toBe("The tests need the network");
    const allow = card.getByTestId("option-allow");
    expect(await allow.getByTestId("option-agent-description").textContent()).toBe("the agent says “Only this run”");
    const stop = card.getByTestId("option-deny_stop");
    expect(await stop.getByTestId("option-label").textContent()).toBe("Deny and stop the turn");
    expect(await stop.getAttribute("class")).toBe("option reject");
    expect(await card.getByTestId("option-deny").getByTestId("option-label").textContent()).toBe("Deny");
    await screenshot(s.page, "prompt-deny-stop.png");
    await stop.click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("denied");
    expect(await answer).toMatchObject({ outcome: { outcome: "selected", optionId: "deny_stop" } });
    expect(await card.getByTestId("outcome").textContent()).toContain("(Deny and stop the turn)");
  });

  it("a request carrying matchedAskRule offers no Allow for 1 h, where the same request without it does", async () => {
    const options: RequestPermissionRequest["options"] = [
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "deny", name: "Deny", kind: "reject_once" },
    ];
    const plain = await ask(options);
    await plain.card.getByTestId("option-allow-rule").waitFor();
    await plain.card.getByTestId("option-deny").click();
    await plain.answer;

    const asking = await ask(options, { claudeCode: { matchedAskRule: { source: "userSettings", toolName: "Bash" } } });
    expect((await asking.ruleChoices).choices).toEqual([]);
    // The page has read the same answer and rendered from it by its next frame.
    await s.page.evaluate(() => new Promise((done) => requestAnimationFrame(() => done(null))));
    expect(await asking.card.getByTestId("rule-offer").count()).toBe(0);
    expect(await asking.card.getByTestId("option-allow-rule").count()).toBe(0);
    await asking.card.getByTestId("option-allow").click();
    await expect.poll(() => asking.card.getAttribute("data-state")).toBe("allowed");
    expect(await asking.answer).toMatchObject({ outcome: { outcome: "selected", optionId: "allow" } });
  });

  it("Dismiss is neither allow nor deny, says what it means, and the agent gets cancelled", async () => {
    const { answer, card } = await ask([
      { optionId: "allow", name: "Allow once", kind: "allow_once" },
      { optionId: "deny", name: "Deny", kind: "reject_once" },
    ]);
    const dismiss = card.getByTestId("option-dismiss");
    expect(await dismiss.getAttribute("class")).toBe("option dismiss");
    expect(await dismiss.getByTestId("dismiss-note").textContent()).toBe(
      "The agent is told the question was dismissed, and treats that as not allowed.",
    );
    await dismiss.click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("cancelled");
    expect(await answer).toMatchObject({
      outcome: { outcome: "cancelled" },
      _meta: { tapgate: { reason: "dismissed", decidedBy: { name: "Ada" } } },
    });
    expect(await card.getByTestId("outcome").textContent()).toContain(
      "Dismissed by you — the agent was told, and treats it as not allowed",
    );
  });

  it("codex-acp's decline is Skip, continue without it, styled as neither allow nor deny", async () => {
    const { answer, card } = await ask([
      { optionId: "allow_once", name: "Yes, proceed", kind: "allow_once" },
      { optionId: "decline", name: "No, continue without running it", kind: "reject_once" },
      { optionId: "cancel", name: "No, and tell Codex what to do differently", kind: "reject_once" },
    ]);
    const skip = card.getByTestId("option-decline");
    expect(await skip.getByTestId("option-label").textContent()).toBe("Skip, continue without it");
    expect(await skip.getAttribute("class")).toBe("option skip");
    expect(await card.getByTestId("option-cancel").getByTestId("option-label").textContent()).toBe("Deny");
    await screenshot(s.page, "prompt-skip.png");
    await skip.click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("denied");
    expect(await answer).toMatchObject({ outcome: { outcome: "selected", optionId: "decline" } });
  });
});
