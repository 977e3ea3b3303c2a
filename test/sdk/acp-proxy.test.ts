import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import {
  ABORT_AWARE_AGENT,
  EXAMPLE_AGENT,
  messageText,
  prompt,
  STRING_ID_AGENT,
  signedInEnv,
  signedOutEnv,
  startProxy,
} from "./acp-helpers";
import { Person } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  env = signedInEnv(worker.url, (await person.createKey("acp proxy tests")).key);
});
afterAll(() => worker?.stop());

const isProxyOffer = (m: { id?: unknown; method?: string }) =>
  m.method === "session/request_permission" && typeof m.id === "string" && m.id.startsWith("tapgate-");

describe("tapgate acp, with the ACP 1.9.0 example agent", () => {
  it("an allow reaches the agent, which goes on with the change; the editor never sees the request", async () => {
    const { editor, sessionId } = await startProxy(["--", ...EXAMPLE_AGENT], env);
    const turn = prompt(editor, sessionId, "update the config");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({ title: "Modifying critical configuration file", kind: "edit" });
    expect(approval.snapshot.session).toMatchObject({ cwd: ROOT });
    expect((await person.decide(approval, "allow")).status).toBe(200);
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toContain("I've successfully updated the configuration");
    expect(editor.messages.some((m) => m.method === "session/request_permission")).toBe(false);
    expect(editor.messages.every((m) => m.jsonrpc === "2.0")).toBe(true);
    editor.child.stdin?.end();
    expect(await editor.exited).toBe(0);
  });

  it("a reject reaches the agent, which skips the change", async () => {
    const { editor, sessionId } = await startProxy(["--", ...EXAMPLE_AGENT], env);
    const turn = prompt(editor, sessionId, "update the config");
    await person.decide(await person.waitForOne(sessionId), "reject");
    await turn;
    expect(messageText(editor, sessionId)).toContain("I'll skip the configuration update");
    expect(messageText(editor, sessionId)).not.toContain("successfully updated");
    editor.child.stdin?.end();
  });

  it("the editor's session/cancel answers the agent cancelled and closes the card", async () => {
    const { editor, sessionId } = await startProxy(["--", ...EXAMPLE_AGENT], env);
    const turn = prompt(editor, sessionId, "update the config");
    const approval = await person.waitForOne(sessionId);
    editor.send({ method: "session/cancel", params: { sessionId } });
    await turn;
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled" });
    const text = messageText(editor, sessionId);
    expect(text).not.toContain("successfully updated");
    expect(text).not.toContain("skip the configuration update");
    editor.child.stdin?.end();
  });

  it("without credentials the agent still starts; the request gets the fail-closed answer and stderr says how to fix it", async () => {
    const { editor, init, sessionId } = await startProxy(["--", ...EXAMPLE_AGENT], signedOutEnv(worker.url));
    expect(init.result).toMatchObject({ protocolVersion: 1 });
    await prompt(editor, sessionId, "update the config");
    expect(messageText(editor, sessionId)).toContain("I'll skip the configuration update");
    expect(editor.stderr).toContain("not signed in: run `tapgate login`");
    editor.child.stdin?.end();
    expect(await editor.exited).toBe(0);
  });
});

describe("tapgate acp, with a 2.x agent using string ids", () => {
  it("an unreachable Tapgate refuses the request and names the address", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const { editor, sessionId } = await startProxy(["--", ...STRING_ID_AGENT], { ...env, TAPGATE_URL: url });
    await prompt(editor, sessionId, "ask");
    expect(messageText(editor, sessionId)).toBe("outcome: selected no");
    expect(editor.stderr).toContain(`cannot reach Tapgate at ${url}`);
    editor.child.stdin?.end();
  });

  it("the agent's $/cancel_request withdraws the card", async () => {
    const { editor, sessionId } = await startProxy(["--", ...STRING_ID_AGENT], env);
    const turn = prompt(editor, sessionId, "withdraw");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({ title: "Delete the build cache", kind: "delete" });
    expect(approval.snapshot.session).toMatchObject({ agent: { name: "string-id-agent", version: "2.0.0" } });
    editor.send({ method: "_test/withdraw", params: {} });
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe("withdrawn");
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
    editor.child.stdin?.end();
  });

  it("a deny's reason reaches the agent over stdio, in _meta.tapgate.message", async () => {
    const { editor, sessionId } = await startProxy(["--", ...STRING_ID_AGENT], env);
    const turn = prompt(editor, sessionId, "ask");
    const approval = await person.waitForOne(sessionId);
    expect((await person.decide(approval, "no", "keep the cache: the release build needs it")).status).toBe(200);
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe(
      "outcome: selected no; message: keep the cache: the release build needs it",
    );
    editor.child.stdin?.end();
  });

  it("a stop denies the agent's request with the stopper's reason, refuses the next until resumed, and says who on stderr", async () => {
    const { editor, sessionId } = await startProxy(["--", ...STRING_ID_AGENT], env);
    const first = prompt(editor, sessionId, "ask");
    await person.waitForOne(sessionId);
    expect((await person.stop(sessionId, "runaway loop")).status).toBe(200);
    expect((await first).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe("outcome: selected no; message: runaway loop");
    expect(editor.stderr).toContain("denied, stopped by Ada: runaway loop");

    // Refused by the gate (-32001, session_stopped): the agent gets the fail-closed answer, nothing is held.
    await prompt(editor, sessionId, "ask");
    expect(messageText(editor, sessionId)).toBe("outcome: selected no; message: runaway loopoutcome: selected no");
    expect(editor.stderr).toContain("refused, stopped by Ada: runaway loop (until someone resumes the session)");
    await person.waitForPending(sessionId, 0);

    expect((await person.resume(sessionId)).status).toBe(200);
    const third = prompt(editor, sessionId, "ask");
    expect((await person.decide(await person.waitForOne(sessionId), "yes")).status).toBe(200);
    await third;
    expect(messageText(editor, sessionId)).toMatch(/outcome: selected yes$/);
    editor.child.stdin?.end();
  });

  it("an agent crash mid-request resolves the card agent_disconnected; the proxy exits with the agent's code", async () => {
    const { editor, sessionId } = await startProxy(["--", ...STRING_ID_AGENT], env);
    void prompt(editor, sessionId, "crash").catch(() => undefined);
    const approval = await person.waitForOne(sessionId);
    editor.send({ method: "_test/crash", params: {} });
    expect(await editor.exited).toBe(7);
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ reason: "agent_disconnected" });
  });

  it("race: the phone wins, the editor's copy is withdrawn and its late answer never reaches the agent", async () => {
    const { editor, sessionId } = await startProxy(["--decide", "race", "--", ...STRING_ID_AGENT], env);
    const turn = prompt(editor, sessionId, "ask");
    const offer = await editor.waitFor(isProxyOffer);
    expect(offer.params).toMatchObject({
      sessionId,
      toolCall: { toolCallId: "t1" },
      _meta: { "x-test": { nested: [1, 2] } },
    });
    await person.decide(await person.waitForOne(sessionId), "yes");
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe("outcome: selected yes");
    await editor.waitFor((m) => m.method === "$/cancel_request" && m.params?.requestId === offer.id);
    editor.send({ id: offer.id, result: { outcome: { outcome: "selected", optionId: "no" } } });
    const seen = await editor.request("_test/received", { marker: String(offer.id) });
    expect(seen.result).toEqual({ lines: [] });
    editor.child.stdin?.end();
  });

  it("race: the editor wins, the card is withdrawn", async () => {
    const { editor, sessionId } = await startProxy(["--decide", "race", "--", ...STRING_ID_AGENT], env);
    const turn = prompt(editor, sessionId, "ask");
    const offer = await editor.waitFor(isProxyOffer);
    const approval = await person.waitForOne(sessionId);
    editor.send({ id: offer.id, result: { outcome: { outcome: "selected", optionId: "no" } } });
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe("outcome: selected no");
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled" });
    expect((await person.decide(approval, "yes")).status).toBe(410);
    expect(editor.messages.some((m) => m.method === "$/cancel_request")).toBe(false);
    editor.child.stdin?.end();
  });

  it("unknown fields, _meta and string ids pass through byte for byte, both ways", async () => {
    const { editor } = await startProxy(["--", ...STRING_ID_AGENT], env);
    const toAgent =
      '{"jsonrpc":"2.0",  "method":"_test/mark","params":{"b":1.0,"a":"\\u00e9","_meta":{"x":[1, 2]}},"x-extra":true}';
    editor.sendRaw(toAgent);
    const seen = await editor.request("_test/received", { marker: "_test/mark" }, "editor-id-ω");
    expect(seen.result).toEqual({ lines: [toAgent] });
    const fromAgent =
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x_custom","v":1.50}},"_meta":{"k":"\\n"}}';
    await editor.request("_test/emit", { line: fromAgent });
    await editor.waitForLine((line) => line === fromAgent);
    editor.child.stdin?.end();
    await editor.exited;
    expect(editor.lines.every((line) => JSON.parse(line).jsonrpc === "2.0")).toBe(true);
  });
});

describe("tapgate acp, with a 2.x agent that decides its stop reason from its own abort signal", () => {
  it("session/cancel reaches the agent before the cancelled answer, so the turn ends cancelled", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ABORT_AWARE_AGENT], env);
    const turn = prompt(editor, sessionId, "migrate");
    const approval = await person.waitForOne(sessionId);
    editor.send({ method: "session/cancel", params: { sessionId } });
    expect((await turn).result).toEqual({ stopReason: "cancelled" });
    expect(messageText(editor, sessionId)).toBe("answer: cancelled, aborted: true");
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
    editor.child.stdin?.end();
  });

  it("without a cancel the same agent ends its turn end_turn with the human's answer", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ABORT_AWARE_AGENT], env);
    const turn = prompt(editor, sessionId, "migrate");
    await person.decide(await person.waitForOne(sessionId), "no");
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe("answer: no, aborted: false");
    editor.child.stdin?.end();
  });
});
