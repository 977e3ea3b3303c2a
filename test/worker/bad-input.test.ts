import { describe, expect, it } from "vitest";
import { LIMITS, RPC_ERROR } from "../../sdk/src/protocol";
import { askOnce, decide, permissionParams } from "./helpers";

const request = (id: unknown, params: unknown, method = "session/request_permission") => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

/** A permission request whose tool call names its title twice: a harmless one, then the real one. */
function duplicated(id: number, sessionId: string): string {
  const frame = JSON.stringify(request(id, permissionParams(sessionId)));
  return frame.replace('"toolCall":{', '"toolCall":{"title":"ls","title":"rm -rf /",');
}

describe("bad input gets the named error and disturbs nothing", () => {
  it("answers every malformed frame precisely while a real request keeps waiting", async () => {
    const { owner, agent, sessionId, approval } = await askOnce();
    const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
    const cases: Array<[unknown, number, unknown]> = [
      ["{not json", RPC_ERROR.parse, null],
      ["x".repeat(LIMITS.frameBytes + 1), RPC_ERROR.invalidRequest, null],
      [
        { jsonrpc: "2.0", id: 7, method: "session/update", params: { sessionId, update: deep(70) } },
        RPC_ERROR.invalidRequest,
        7,
      ],
      [
        { jsonrpc: "2.0", id: null, method: "session/request_permission", params: permissionParams(sessionId) },
        RPC_ERROR.invalidRequest,
        null,
      ],
      [{ jsonrpc: "2.0", id: 1.5, method: "x", params: {} }, RPC_ERROR.invalidRequest, null],
      [{ jsonrpc: "2.0", id: "a".repeat(129), method: "x", params: {} }, RPC_ERROR.invalidRequest, null],
      [{ jsonrpc: "1.0", id: 3, method: "x" }, RPC_ERROR.invalidRequest, 3],
      [42, RPC_ERROR.invalidRequest, null],
      [[], RPC_ERROR.invalidRequest, null],
      [request(4, {}, "fs/write_text_file"), RPC_ERROR.methodNotFound, 4],
      [request(5, { sessionId, toolCall: {}, options: [] }), RPC_ERROR.invalidParams, 5],
      [request(6, permissionParams("another-session")), RPC_ERROR.invalidParams, 6],
      [
        request(8, {
          ...permissionParams(sessionId),
          options: Array.from({ length: 9 }, (_, i) => ({ optionId: `o${i}`, name: "x", kind: "allow_once" })),
        }),
        RPC_ERROR.invalidParams,
        8,
      ],
      [
        request(9, {
          ...permissionParams(sessionId),
          options: [
            { optionId: "a", name: "A", kind: "allow_once" },
            { optionId: "a", name: "B", kind: "reject_once" },
          ],
        }),
        RPC_ERROR.invalidParams,
        9,
      ],
      [
        request(10, {
          ...permissionParams(sessionId),
          options: [{ optionId: "a", name: "A", kind: "allow_everything" }],
        }),
        RPC_ERROR.invalidParams,
        10,
      ],
      [
        request(11, permissionParams(sessionId, { _meta: { tapgate: { timeoutMs: "soon" } } })),
        RPC_ERROR.invalidParams,
        11,
      ],
      [request(1, permissionParams(sessionId)), RPC_ERROR.invalidRequest, 1], // id 1 is already pending
      // A key twice in one object: JSON.parse would keep the last silently, so it is refused.
      [duplicated(12, sessionId), RPC_ERROR.invalidRequest, 12],
      [`{"jsonrpc":"2.0","id":13,"method":"_tapgate/hello","params":{},"\\u0069d":14}`, RPC_ERROR.invalidRequest, null],
    ];
    for (const [frame, code, id] of cases) {
      agent.sendRaw(typeof frame === "string" ? frame : JSON.stringify(frame));
      const reply = await agent.next<{ id: unknown; error: { code: number; message: string } }>();
      expect({ frame: String(JSON.stringify(frame)).slice(0, 60), code: reply.error?.code, id: reply.id }).toEqual({
        frame: String(JSON.stringify(frame)).slice(0, 60),
        code,
        id,
      });
      expect(reply.error.message.length).toBeGreaterThan(0);
    }
    // The socket and the object stayed healthy: the original request is decided and answered.
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: { outcome: { outcome: "selected", optionId: "allow" } },
    });
  });

  it("answers a batch element by element and rejects binary frames", async () => {
    const { agent } = await askOnce();
    agent.sendRaw(
      JSON.stringify([
        { jsonrpc: "2.0", id: "h", method: "_tapgate/hello", params: {} },
        { jsonrpc: "2.0", id: "u", method: "nope" },
      ]),
    );
    const replies = await agent.next<Array<{ id: string }>>();
    expect(replies.map((r) => r.id)).toEqual(["h", "u"]);
    agent.sendRaw(new Uint8Array([1, 2, 3]));
    expect(await agent.next()).toMatchObject({ id: null, error: { code: RPC_ERROR.invalidRequest } });
  });

  it('echoes string and numeric ids exactly, keeping 1 and "1" apart', async () => {
    const { owner, agent, sessionId } = await askOnce();
    await agent.send(request("1", permissionParams(sessionId))); // a string "1" while the number 1 is pending
    await agent.send(request(Number.MAX_SAFE_INTEGER, permissionParams(sessionId)));
    await agent.send(request("ünïcødé-🙂", permissionParams(sessionId)));
    const { pendingApprovals } = await import("./helpers");
    const pending = await pendingApprovals(owner, sessionId);
    expect(pending).toHaveLength(4);
    for (const approval of pending) await decide(owner, approval, "deny");
    const ids = [await agent.next(), await agent.next(), await agent.next(), await agent.next()].map((m) => m.id);
    expect(ids).toHaveLength(4);
    expect(new Set(ids)).toEqual(new Set([1, "1", Number.MAX_SAFE_INTEGER, "ünïcødé-🙂"]));
  });

  it("stores agent strings as data, exactly as given", async () => {
    const { owner, agent, sessionId } = await askOnce();
    const title = "<img src=x onerror=alert(1)> \u202E evil \u200B \u001b[31m red'; DROP TABLE approvals;--";
    await agent.send(
      request(2, permissionParams(sessionId, { toolCall: { toolCallId: "odd", title, rawInput: { $where: "1" } } })),
    );
    const { pendingApprovals } = await import("./helpers");
    const approval = (await pendingApprovals(owner, sessionId)).find((a) => a.snapshot.toolCall.toolCallId === "odd");
    expect(approval?.snapshot.toolCall).toEqual({ toolCallId: "odd", title, rawInput: { $where: "1" } });
  });

  it("refuses more than 32 pending requests in a session", async () => {
    const { agent, sessionId } = await askOnce();
    for (let id = 2; id <= LIMITS.pendingPerSession; id++) await agent.send(request(id, permissionParams(sessionId)));
    agent.sendRaw(JSON.stringify(request(99, permissionParams(sessionId))));
    expect(await agent.next()).toMatchObject({ id: 99, error: { code: RPC_ERROR.tooManyPending } });
  }, 20_000); // 33 requests, each admitted by the team's hub first

  it("answers bad human input with a 400 that names the field", async () => {
    const { owner, approval } = await askOnce();
    const { api } = await import("./helpers");
    const response = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ optionId: "allow", requestHash: "abc" }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; message: string };
    expect(body.error).toBe("invalid_request");
    expect(body.message).toContain("requestHash");
    const malformed = await api(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      cookie: owner.cookie,
      body: "{",
    });
    expect(malformed.status).toBe(400);
  });
});

describe("body limits", () => {
  it("refuses a human API body over 64 KiB with 413, while an agent's permission body may be larger", async () => {
    const { owner, key, sessionId } = await askOnce();
    const { api } = await import("./helpers");
    const big = await api("/v1/keys", {
      method: "POST",
      cookie: owner.cookie,
      body: JSON.stringify({ label: "x".repeat(70_000) }),
    });
    expect(big.status).toBe(413);
    const { SELF } = await import("cloudflare:test");
    const params = permissionParams(sessionId, { _meta: { note: "y".repeat(100_000) } });
    const asked = await SELF.fetch(`https://tapgate.test/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify(params),
    });
    expect(asked.status).toBe(201);
  });
});
