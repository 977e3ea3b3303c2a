/**
 * ACP subagents through `tapgate acp`, with a real ACP SDK 2.x agent over stdio against
 * `wrangler dev`: a child's request goes to its own Tapgate session, shown under its parent; a
 * child whose work ends has its open request answered `cancelled` (card withdrawn) before that
 * update reaches the editor; a child's session ends with its parent's connection.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { sessionsOf } from "../../sdk/src/acp/sessions";
import { Tapgate } from "../../sdk/src/index";
import { messageText, prompt, SUBAGENT_AGENT, signedInEnv, startProxy } from "./acp-helpers";
import { askParams, Person, unique } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("subagents")).key;
});
afterAll(() => worker?.stop());

describe("subagents through tapgate acp", () => {
  it("advertises subagents; a child's request is shown under its parent and gets the human's answer", async () => {
    const { editor, sessionId } = await startProxy(["--", ...SUBAGENT_AGENT], signedInEnv(worker.url, key));
    const turn = prompt(editor, sessionId, "ask");
    const child = `${sessionId}.tests`;
    const approval = await person.waitForOne(child);
    expect(approval.snapshot.session.parent).toEqual({
      sessionId,
      title: expect.stringContaining("subagent-agent"),
      name: "tests",
      task: "run the suite",
    });
    const sessions = (await (await person.fetch("/v1/sessions?state=recent")).json()) as {
      sessions: { sessionId: string; parent?: { sessionId: string; name?: string } }[];
    };
    expect(sessions.sessions.find((s) => s.sessionId === child)?.parent).toMatchObject({ sessionId, name: "tests" });
    expect((await person.decide(approval, "yes")).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe("child: yes");
    editor.child.stdin?.end();
  });

  it("a child whose work ended has its open request answered cancelled, and its card withdrawn", async () => {
    const { editor, sessionId } = await startProxy(["--", ...SUBAGENT_AGENT], signedInEnv(worker.url, key));
    const turn = prompt(editor, sessionId, "end");
    const approval = await person.waitForOne(`${sessionId}.tests`);
    editor.send({ method: "session/cancel", params: { sessionId } });
    const ended = await editor.waitFor(
      (m) => m.method === "session/update" && m.params?.update?.state?.state === "idle",
      "the child's idle update",
    );
    expect(ended.params.update.sessionId).toBe(`${sessionId}.tests`);
    expect((await turn).result.stopReason).toBe("cancelled");
    expect(messageText(editor, sessionId)).toBe("child: cancelled");
    await vi.waitFor(async () => expect((await person.approval(approval.id)).state).toBe("cancelled"));
    // Nobody can allow it any more.
    expect((await person.decide(approval, "yes")).status).toBe(410);
    editor.child.stdin?.end();
  });
});

describe("a subagent's Tapgate session", () => {
  it("ends with its parent's connection: its request is denied and its card resolves agent_disconnected", async () => {
    const gate = new Tapgate({ url: worker.url, apiKey: key, onLog: () => undefined });
    const sessions = sessionsOf(gate);
    const parentId = unique("parent");
    const childId = `${parentId}.tests`;
    const parent = await sessions.open(parentId, { title: "fix flaky test" });
    await sessions.open(childId, { title: "tests", parent: { sessionId: parentId, title: "fix flaky test" } });
    const asked = askParams(childId);
    const answer = sessions.ask(asked, { meta: {}, log: () => undefined });
    const approval = await person.waitForOne(childId);
    parent.close();
    expect((await answer)?.outcome).toEqual({ outcome: "selected", optionId: "deny" });
    await vi.waitFor(async () => expect((await person.approval(approval.id)).reason).toBe("agent_disconnected"));
    gate.close();
  });
});
