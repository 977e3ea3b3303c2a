/**
 * The SDK's side of "an unoffered optionId is never an allow": a service that answers a request
 * with an option the agent never offered (or an outcome ACP does not define) gets the fail-closed
 * answer from `GateSession`, for ACP v1 and v2 requests alike. The real gate never answers so
 * (test/worker/permission-prompts.test.ts), so a misbehaving service on loopback stands in for one
 * that is compromised or broken: the fault is outside the SDK, which is what is under test.
 */
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import { Tapgate } from "../../sdk/src/index";
import { unique } from "./helpers";

/** What the misbehaving service answers to the next `session/request_permission`. */
let nextOutcome: Record<string, unknown> = {};
let server: WebSocketServer;
let url: string;

beforeAll(async () => {
  server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  server.on("connection", (ws: WebSocket) => {
    ws.on("message", (data) => {
      const text = data.toString();
      if (text === "ping") return ws.send("pong");
      const frames = [JSON.parse(text)].flat() as Array<{ id?: unknown; method?: string }>;
      for (const frame of frames) {
        if (frame.method !== "session/request_permission") continue;
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: frame.id, result: { outcome: nextOutcome } }));
      }
    });
  });
  await new Promise((resolve) => server.once("listening", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const OPTIONS = [
  { optionId: "go", name: "Run it", kind: "allow_once" as const },
  { optionId: "stop", name: "Don't", kind: "reject_once" as const },
];

const v1 = (sessionId: string) => ({
  sessionId,
  toolCall: { toolCallId: "c1", title: "npm run migrate", kind: "execute" as const },
  options: OPTIONS,
});
const v2 = (sessionId: string) => ({
  sessionId,
  title: "Run the migration?",
  subject: { type: "command" as const, command: "npm run migrate", cwd: "/srv/app" },
  options: OPTIONS,
});

describe("GateSession: an answer naming an option the agent never offered", () => {
  it.each([
    ["v1", "an unoffered allow_always", v1, { outcome: "selected", optionId: "allow_always" }],
    ["v2", "an unoffered allow_always", v2, { outcome: "selected", optionId: "allow_always" }],
    ["v2", "an unoffered id that looks like an allow", v2, { outcome: "selected", optionId: "go " }],
    ["v2", "an outcome ACP does not define", v2, { outcome: "_approved", optionId: "go" }],
  ])("%s, %s: the fail-closed answer (the agent's own reject_once)", async (_, __, params, outcome) => {
    nextOutcome = outcome;
    const tapgate = new Tapgate({ url, apiKey: "tg_test_only", onLog: () => undefined });
    const sessionId = unique("unoffered");
    const session = await tapgate.session(sessionId);
    const answer = await session.requestPermission(params(sessionId));
    expect(answer).toEqual({ outcome: { outcome: "selected", optionId: "stop" } });
    tapgate.close();
  });

  it("an offered option is passed through as sent (the stand-in service is heard at all)", async () => {
    nextOutcome = { outcome: "selected", optionId: "go" };
    const tapgate = new Tapgate({ url, apiKey: "tg_test_only", onLog: () => undefined });
    const sessionId = unique("unoffered");
    const session = await tapgate.session(sessionId);
    expect(await session.requestPermission(v2(sessionId))).toEqual({
      outcome: { outcome: "selected", optionId: "go" },
    });
    tapgate.close();
  });
});
