import { describe, expect, it } from "vitest";
import { LIMITS, RPC_ERROR } from "../../sdk/src/protocol";
import { depthExceeds, exceedsBytes, parseFrame, rpcIdKey } from "./frames";

const errorCode = (r: object) => (r as { error: { code: number } }).error.code;

describe("parseFrame", () => {
  it("classifies requests, notifications and responses", () => {
    const parsed = parseFrame(
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "a", params: {} },
        { jsonrpc: "2.0", method: "b" },
        { jsonrpc: "2.0", id: 7, result: {} },
      ]),
    );
    expect(parsed).toEqual({
      ok: true,
      batch: true,
      messages: [
        { kind: "request", id: 1, method: "a", params: {} },
        { kind: "notification", method: "b", params: undefined },
        { kind: "response" },
      ],
    });
  });

  it("answers frames that are not JSON with a parse error, and an empty batch as invalid", () => {
    const bad = parseFrame("{nope");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(errorCode(bad.response)).toBe(RPC_ERROR.parse);
    const empty = parseFrame("[]");
    if (!empty.ok) expect(errorCode(empty.response)).toBe(RPC_ERROR.invalidRequest);
    expect(empty.ok).toBe(false);
  });

  it("refuses frames over the size limit and JSON nested too deep, echoing a valid id", () => {
    const big = parseFrame(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "m", params: { s: "x".repeat(LIMITS.frameBytes) } }),
    );
    expect(big.ok).toBe(false);
    let nested: unknown = {};
    for (let i = 0; i < LIMITS.jsonDepth + 1; i++) nested = { n: nested };
    const deep = parseFrame(JSON.stringify({ jsonrpc: "2.0", id: "x", method: "m", params: nested }));
    expect(deep).toMatchObject({ ok: false, response: { id: "x", error: { code: RPC_ERROR.invalidRequest } } });
  });

  it("marks malformed messages invalid one by one, with their id when it is valid", () => {
    const parsed = parseFrame(
      JSON.stringify([
        { jsonrpc: "1.0", id: 2, method: "m" },
        { jsonrpc: "2.0", id: 3, method: "m", params: 5 },
        { jsonrpc: "2.0", id: { no: 1 }, method: "m" },
        42,
      ]),
    );
    expect(parsed.ok && parsed.messages.map((m) => m.kind)).toEqual(["invalid", "invalid", "invalid", "invalid"]);
    expect(
      parsed.ok && parsed.messages.map((m) => (m.kind === "invalid" ? (m.response as { id: unknown }).id : 0)),
    ).toEqual([2, 3, null, null]);
  });
});

describe("limits and ids", () => {
  it("counts UTF-8 bytes, not UTF-16 units", () => {
    expect(exceedsBytes("é".repeat(100), 150)).toBe(true);
    expect(exceedsBytes("e".repeat(100), 150)).toBe(false);
  });

  it("measures depth without recursion", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(depthExceeds(deep, 64)).toBe(true);
    expect(depthExceeds({ a: [1, { b: 2 }] }, 3)).toBe(false);
  });

  it("keeps 1 and '1' apart", () => {
    expect(rpcIdKey(1)).not.toBe(rpcIdKey("1"));
  });
});
