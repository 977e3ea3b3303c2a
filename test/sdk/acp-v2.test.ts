/**
 * ACP, current and next, through `tapgate acp` with a real ACP SDK agent over stdio against
 * `wrangler dev`: v2 draft permission requests beside v1, `_` extensions kept end to end, the
 * W3C trace keys forwarded untouched, a dismissed card answered `cancelled`, and an expired
 * request answered ACP's `-32800` way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { messageText, prompt, signedInEnv, startProxy, V2_PERMISSION_AGENT } from "./acp-helpers";
import { Person } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  env = signedInEnv(worker.url, (await person.createKey("acp v2 tests")).key);
});
afterAll(() => worker?.stop());

/** What the agent sends (test/sdk/agents/v2-permission-agent.mjs), for byte-for-byte comparison. */
const TRACE = {
  traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
  baggage: "userId=alice,serverNode=DF%2028,isProduction=false",
};

describe("ACP v2 draft permission requests through tapgate acp", () => {
  it("a command subject: the card shows title, description, command and cwd; trace keys arrive untouched", async () => {
    const { editor, sessionId } = await startProxy(["--", ...V2_PERMISSION_AGENT], env);
    const turn = prompt(editor, sessionId, "command");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({
      title: "Run the database migration?",
      kind: "execute",
      content: [{ type: "content", content: { type: "text", text: "It rewrites the users table." } }],
      rawInput: { command: "npm run migrate -- --force", cwd: "/srv/app" },
    });
    expect(approval.snapshot.permission).toEqual({
      title: "Run the database migration?",
      description: "It rewrites the users table.",
      subject: { type: "command", command: "npm run migrate -- --force", cwd: "/srv/app", terminalId: "term-1" },
    });
    const meta = approval.snapshot.meta ?? {};
    for (const [k, v] of Object.entries(TRACE)) expect(JSON.stringify(meta[k])).toBe(JSON.stringify(v));
    expect(meta["acme.dev/run"]).toBe(7);
    // A team with once-only options (the default) is not offered a custom kind: it might remember.
    expect(approval.options.map((o) => o.optionId)).toEqual(["yes", "no"]);
    await person.decide(approval, "yes");
    await turn;
    expect(messageText(editor, sessionId)).toBe("outcome: selected yes");
    editor.child.stdin?.end();
  });

  it("a custom subject is stored as sent; picking the custom option gives the agent that option, recorded as no allow", async () => {
    // A team that allows more than once-only options is offered the custom kind, as sent.
    const open = await Person.signUp(worker.url, "Oona");
    const policy = (await (await open.fetch("/v1/policy")).json()) as Record<string, unknown>;
    const put = await open.fetch("/v1/policy", {
      method: "PUT",
      body: JSON.stringify({ ...policy, onceOnlyOptions: false }),
    });
    expect(put.status).toBe(200);
    const openEnv = signedInEnv(worker.url, (await open.createKey("custom kinds")).key);
    const { editor, sessionId } = await startProxy(["--", ...V2_PERMISSION_AGENT], openEnv);
    const turn = prompt(editor, sessionId, "custom");
    const approval = await open.waitForOne(sessionId);
    expect(approval.options).toEqual([
      { optionId: "yes", name: "Run it", kind: "allow_once" },
      { optionId: "snooze", name: "Ask me after lunch", kind: "_acme.dev/snooze" },
      { optionId: "no", name: "Don't", kind: "reject_once" },
    ]);
    expect(JSON.stringify(approval.snapshot.permission?.subject)).toBe(
      JSON.stringify({ type: "_acme.dev/deploy", target: { env: "prod", replicas: 3 } }),
    );
    expect(approval.snapshot.toolCall).toMatchObject({ title: "Run the database migration?", kind: "other" });
    expect((await open.decide(approval, "snooze")).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe("outcome: selected snooze");
    expect(await open.approval(approval.id)).toMatchObject({ state: "denied", optionId: "snooze" });
    editor.child.stdin?.end();
  });

  it("v1 beside it: the same agent's v1 request is shown as before", async () => {
    const { editor, sessionId } = await startProxy(["--", ...V2_PERMISSION_AGENT], env);
    const turn = prompt(editor, sessionId, "v1");
    const approval = await person.waitForOne(sessionId);
    expect(approval.snapshot.toolCall).toMatchObject({ toolCallId: "t1", title: "Run the migration" });
    expect(approval.snapshot.permission).toBeUndefined();
    await person.decide(approval, "no");
    await turn;
    expect(messageText(editor, sessionId)).toBe("outcome: selected no");
    editor.child.stdin?.end();
  });

  it("a dismissed card is ACP's cancelled, for v2 and v1 requests; an unoffered optionId is refused, never an allow", async () => {
    for (const scenario of ["command", "v1"]) {
      const { editor, sessionId } = await startProxy(["--", ...V2_PERMISSION_AGENT], env);
      const turn = prompt(editor, sessionId, scenario);
      const approval = await person.waitForOne(sessionId);
      // The agent offered "snooze", but a once-only team is not offered it: naming it allows nothing.
      const unoffered = await person.decide(approval, "snooze");
      expect(unoffered.status).toBe(400);
      expect(await unoffered.json()).toMatchObject({ error: "option_not_offered" });
      expect((await person.approval(approval.id)).state).toBe("pending");
      const dismissed = await person.fetch(`/v1/approvals/${approval.id}/decision`, {
        method: "POST",
        body: JSON.stringify({ dismiss: true, requestHash: approval.requestHash }),
      });
      expect(dismissed.status).toBe(200);
      await turn;
      expect(messageText(editor, sessionId)).toBe("outcome: cancelled");
      expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled", reason: "dismissed" });
      editor.child.stdin?.end();
    }
  });

  it("expiry is ACP's internal cancellation: the agent gets error -32800, never an outcome", async () => {
    const { editor, sessionId } = await startProxy(["--timeout", "1", "--", ...V2_PERMISSION_AGENT], env);
    await prompt(editor, sessionId, "command");
    expect(messageText(editor, sessionId)).toMatch(/^error: -32800 /);
    editor.child.stdin?.end();
  });
});
