/**
 * Elicitation end to end: real ACP SDK 2.x agents over stdio, through the built `tapgate acp`
 * (and the SDK's `acpElicitationHandler`), against the Worker started by `wrangler dev`.
 */
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import type { Approval } from "../../sdk/src/approval";
import { acpElicitationHandler, ELICITATION_CAPABILITIES, Tapgate } from "../../sdk/src/index";
import { ELICIT_AGENT, messageText, prompt, signedInEnv, signedOutEnv, startProxy } from "./acp-helpers";
import { Person } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  key = (await person.createKey("elicitation tests")).key;
  env = signedInEnv(worker.url, key);
});
afterAll(() => worker?.stop());

const answer = (approval: Approval, body: object) =>
  person.fetch(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    body: JSON.stringify({ requestHash: approval.requestHash, ...body }),
  });

describe("tapgate acp, with a 2.x agent that asks questions", () => {
  it("advertises the elicitation modes Tapgate renders, over what the editor said", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env);
    await prompt(editor, sessionId, "caps");
    expect(messageText(editor, sessionId)).toBe(`caps: ${JSON.stringify(ELICITATION_CAPABILITIES)}`);
    editor.child.stdin?.end();
  });

  it("advertises codex-acp's continueOnReject in clientCapabilities._meta, beside the editor's own keys", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env, undefined, {
      _meta: { "zed.dev/terminal": true },
    });
    await prompt(editor, sessionId, "meta");
    expect(messageText(editor, sessionId)).toBe(
      `meta: ${JSON.stringify({ "zed.dev/terminal": true, continueOnReject: true })}`,
    );
    editor.child.stdin?.end();
  });

  it("a form answered on the phone: the agent gets the content; the editor never sees the question", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env);
    const turn = prompt(editor, sessionId, "form");
    const approval = await person.waitForOne(sessionId);
    expect(approval).toMatchObject({ type: "elicitation", snapshot: { elicitation: { mode: "form" } } });
    const refused = await answer(approval, { action: "accept", content: { name: "demo", port: 99 } });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: "invalid_content", field: "port" });
    const content = { name: "demo", port: 8080, strategy: "bold", logging: false };
    expect((await answer(approval, { action: "accept", content })).status).toBe(200);
    expect((await turn).result).toEqual({ stopReason: "end_turn" });
    expect(messageText(editor, sessionId)).toBe(`elicited: ${JSON.stringify({ action: "accept", content })}`);
    expect(editor.messages.some((m) => m.method === "elicitation/create")).toBe(false);
    editor.child.stdin?.end();
  });

  it("decline reaches the agent as decline", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env);
    const turn = prompt(editor, sessionId, "form");
    expect((await answer(await person.waitForOne(sessionId), { action: "decline" })).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe(`elicited: ${JSON.stringify({ action: "decline" })}`);
    editor.child.stdin?.end();
  });

  it("URL mode: elicitation/complete from the agent closes the card; the agent is answered cancel", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env);
    const turn = prompt(editor, sessionId, "url");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.elicitation).toMatchObject({
      mode: "url",
      url: "https://github.com/login/oauth/authorize?client_id=abc&state=xyz",
    });
    editor.send({ method: "_test/complete", params: {} });
    await turn;
    expect(messageText(editor, sessionId)).toBe(`elicited: ${JSON.stringify({ action: "cancel" })}`);
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled", reason: "agent_cancelled" });
    // The editor hears the completion too (it passes through).
    expect(editor.messages.some((m) => m.method === "elicitation/complete")).toBe(true);
    editor.child.stdin?.end();
  });

  it("the editor's session/cancel answers a pending question cancel and closes its card", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], env);
    const turn = prompt(editor, sessionId, "form");
    const approval = await person.waitForOne(sessionId);
    editor.send({ method: "session/cancel", params: { sessionId } });
    await turn;
    expect(messageText(editor, sessionId)).toBe(`elicited: ${JSON.stringify({ action: "cancel" })}`);
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled" });
    editor.child.stdin?.end();
  });

  it("race: the editor answers first, the card is withdrawn", async () => {
    const { editor, sessionId } = await startProxy(["--decide", "race", "--", ...ELICIT_AGENT], env);
    const turn = prompt(editor, sessionId, "form");
    const offer = await editor.waitFor((m) => m.method === "elicitation/create");
    const approval = await person.waitForOne(sessionId);
    editor.send({ id: offer.id, result: { action: "accept", content: { name: "ed", port: 2000 } } });
    await turn;
    expect(messageText(editor, sessionId)).toBe(
      `elicited: ${JSON.stringify({ action: "accept", content: { name: "ed", port: 2000 } })}`,
    );
    await person.waitForPending(sessionId, 0);
    expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled" });
    editor.child.stdin?.end();
  });

  it("without credentials the agent's question is answered cancel", async () => {
    const { editor, sessionId } = await startProxy(["--", ...ELICIT_AGENT], signedOutEnv(worker.url));
    await prompt(editor, sessionId, "form");
    expect(messageText(editor, sessionId)).toBe(`elicited: ${JSON.stringify({ action: "cancel" })}`);
    expect(editor.stderr).toContain("not signed in");
    editor.child.stdin?.end();
  });
});

describe("acpElicitationHandler in an SDK 2.x client", () => {
  it("routes the agent's question to the phone and hands the content back", async () => {
    const gate = new Tapgate({ url: worker.url, apiKey: key, onLog: () => undefined });
    const agent = spawn(ELICIT_AGENT[0] as string, ELICIT_AGENT.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    const texts: string[] = [];
    const conn = acp
      .client({ name: "elicitation test client" })
      .onRequest("elicitation/create", acpElicitationHandler(gate, { meta: { title: "handler test" } }))
      .onNotification("session/update", (ctx) => {
        const update = ctx.params.update;
        if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text")
          texts.push(update.content.text);
      })
      .connect(acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)));
    try {
      await conn.agent.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { elicitation: ELICITATION_CAPABILITIES },
      });
      const { sessionId } = await conn.agent.request("session/new", { cwd: process.cwd(), mcpServers: [] });
      const turn = conn.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "form" }] });
      const approval = await person.waitForOne(sessionId);
      expect(approval.snapshot.session).toMatchObject({ title: "handler test" });
      await answer(approval, { action: "accept", content: { name: "via-handler", port: 4000 } });
      await turn;
      expect(texts.join("")).toBe(
        `elicited: ${JSON.stringify({ action: "accept", content: { name: "via-handler", port: 4000 } })}`,
      );
    } finally {
      gate.close();
      agent.kill();
    }
  });
});
