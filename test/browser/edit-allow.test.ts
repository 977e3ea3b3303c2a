/**
 * "Edit and allow" in real headless Chromium: a request whose agent takes edited input offers it;
 * the decider edits the command (a text field) or the tool input (JSON, checked before sending),
 * sees the diff, and allows; the agent (the SDK) gets `_meta.tapgate.updatedInput`; an edit that
 * makes the request high-risk asks the passkey; the decided card shows what was asked against
 * what was allowed.
 */
import { describe, expect, it } from "vitest";
import type { RequestPermissionRequest } from "../../sdk/src/protocol";
import {
  browserAvailable,
  credentials,
  phoneWithAgent,
  screenshot,
  unique,
  type VirtualAuthenticator,
} from "./harness";

describe.skipIf(!browserAvailable)("Edit and allow in headless Chromium", () => {
  const s = phoneWithAgent("Ada", "passkey");

  /** An SDK agent that takes edits asks once with `rawInput`; the card of that request, opened. */
  async function ask(rawInput: Record<string, unknown>, title: string) {
    const sessionId = unique("edit");
    const { page, human, tapgate } = s;
    const session = await tapgate.session(sessionId, { title: "Release", agent: { name: "my-agent" } });
    const params: RequestPermissionRequest = {
      sessionId,
      toolCall: { toolCallId: unique("call"), title, kind: "execute", rawInput },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
      _meta: { tapgate: { acceptsEdits: true } },
    };
    const answer = session.requestPermission(params);
    const approval = await human.waitForOne(sessionId);
    await page.goto(`/approvals/${encodeURIComponent(approval.id)}`);
    const card = page.getByTestId("screen-approval");
    await card.waitFor();
    return { answer, card };
  }

  it("edits a command, shows the diff, and the agent gets the edited input", async () => {
    const { answer, card } = await ask({ command: "git push origin main", timeout: 60 }, "Bash: git push");
    await card.getByTestId("edit-allow").click();
    const field = card.getByTestId("edit-input");
    expect(await field.inputValue()).toBe("git push origin main");
    await field.fill("git push origin feature");
    const editor = card.getByTestId("edit-editor");
    expect(await editor.getByTestId("diff-delete").textContent()).toContain("git push origin main");
    expect(await editor.getByTestId("diff-insert").textContent()).toContain("git push origin feature");
    await screenshot(s.page, "edit-allow-command.png");
    await card.getByTestId("edit-allow-send").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("allowed");
    expect(await answer).toMatchObject({
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { tapgate: { updatedInput: { command: "git push origin feature", timeout: 60 } } },
    });
    const record = card.getByTestId("edited-diff");
    expect(await record.getByTestId("diff-insert").textContent()).toContain("git push origin feature");
  });

  it("any tool input as JSON: input of another shape cannot be sent; a valid edit is allowed", async () => {
    const { answer, card } = await ask({ repo: "web", replicas: 2 }, "deploy");
    await card.getByTestId("edit-allow").click();
    const field = card.getByTestId("edit-input");
    expect(JSON.parse(await field.inputValue())).toEqual({ repo: "web", replicas: 2 });
    await field.fill('{"repo": "web", "replicas": 2, "force": true}');
    expect(await card.getByTestId("edit-problem").textContent()).toContain("updatedInput.force is not in the request");
    expect(await card.getByTestId("edit-allow-send").isDisabled()).toBe(true);
    await field.fill('{"repo": "web", "replicas": "two"}');
    expect(await card.getByTestId("edit-problem").textContent()).toContain("updatedInput.replicas must be a number");
    await field.fill("{not json");
    expect(await card.getByTestId("edit-problem").textContent()).toContain("not valid JSON");
    await field.fill('{"repo": "web", "replicas": 1}');
    expect(await card.getByTestId("edit-problem").count()).toBe(0);
    await card.getByTestId("edit-allow-send").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("allowed");
    expect(await answer).toMatchObject({ _meta: { tapgate: { updatedInput: { repo: "web", replicas: 1 } } } });
  });

  it("an edit that makes the request high-risk asks the passkey, bound to that edit", async () => {
    const { answer, card } = await ask({ command: "git push origin main" }, "Bash: git push");
    await card.getByTestId("edit-allow").click();
    await card.getByTestId("edit-input").fill("git push --force origin main");
    const [before] = await credentials(s.authenticator as VirtualAuthenticator);
    await card.getByTestId("edit-allow-send").click();
    await expect.poll(() => card.getAttribute("data-state")).toBe("allowed");
    const [after] = await credentials(s.authenticator as VirtualAuthenticator);
    expect(after?.signCount ?? 0).toBeGreaterThan(before?.signCount ?? 0);
    expect(await answer).toMatchObject({
      _meta: { tapgate: { updatedInput: { command: "git push --force origin main" } } },
    });
  });
});
