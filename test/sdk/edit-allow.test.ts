/**
 * "Edit, then allow" end to end against `wrangler dev`: a real ACP SDK agent over stdio behind
 * `tapgate acp` says `acceptsEdits` and runs the input the allow carries
 * (`_meta.tapgate.updatedInput`); `tapgate claude-hook` prints Claude Code's `updatedInput`; a
 * plain ACP agent's request cannot be edited.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { EDIT_AGENT, messageText, prompt, signedInEnv, startProxy, V2_PERMISSION_AGENT } from "./acp-helpers";
import { Person, unique } from "./helpers";
import { answerOf, runHook } from "./hook-helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("edit tests")).key;
});
afterAll(() => worker?.stop());

const decideEdited = (approval: { id: string; requestHash: string }, optionId: string, updatedInput: object) =>
  person.fetch(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    body: JSON.stringify({ optionId, requestHash: approval.requestHash, updatedInput }),
  });

describe("an ACP agent that accepts edits, through tapgate acp", () => {
  it("runs the edited input the allow carries", async () => {
    const { editor, sessionId } = await startProxy(["--", ...EDIT_AGENT], signedInEnv(worker.url, key));
    const turn = prompt(editor, sessionId, "push");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.meta).toMatchObject({ tapgate: { acceptsEdits: true } });
    const updatedInput = { command: "git push origin feature", timeout: 30 };
    expect((await decideEdited(approval, "allow", updatedInput)).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe(`run: ${JSON.stringify(updatedInput)}`);
    editor.child.stdin?.end();
  });

  it("a plain ACP agent's request is not editable: 400 edit_not_supported, then allowed as asked", async () => {
    const { editor, sessionId } = await startProxy(["--", ...V2_PERMISSION_AGENT], signedInEnv(worker.url, key));
    const turn = prompt(editor, sessionId, "command");
    const approval = await person.waitForOne(sessionId);
    const refused = await decideEdited(approval, "yes", { command: "ls", cwd: "/srv/app" });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: "edit_not_supported" });
    expect((await person.decide(approval, "yes")).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe("outcome: selected yes");
    editor.child.stdin?.end();
  });
});

describe("tapgate claude-hook", () => {
  it.each(["PreToolUse", "PermissionRequest"] as const)("%s: an edited allow prints updatedInput", async (event) => {
    const sessionId = unique("claude-edit");
    const input = {
      session_id: sessionId,
      cwd: "/home/ada/demo",
      hook_event_name: event,
      tool_name: "Bash",
      tool_input: { command: "git push origin main", description: "Push" },
      ...(event === "PreToolUse" && { tool_use_id: unique("toolu") }),
    };
    const run = runHook("claude-hook", input, { env: { TAPGATE_URL: worker.url, TAPGATE_API_KEY: key } });
    const approval = await person.waitForOne(sessionId);
    const updatedInput = { command: "git push origin feature", description: "Push the branch" };
    expect((await decideEdited(approval, "allow", updatedInput)).status).toBe(200);
    const answer = answerOf(await run) as { hookSpecificOutput: Record<string, unknown> };
    if (event === "PreToolUse") {
      expect(answer.hookSpecificOutput).toMatchObject({ permissionDecision: "allow", updatedInput });
    } else {
      expect(answer.hookSpecificOutput).toMatchObject({ decision: { behavior: "allow", updatedInput } });
    }
  });
});
