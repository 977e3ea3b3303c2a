import { describe, expect, it } from "vitest";
import {
  classify,
  classifyLoose,
  classifyLooseText,
  depthExceeds,
  encodeFrame,
  exceedsBytes,
  parseFrame,
  rpcError,
  rpcIdKey,
  rpcNotification,
  rpcRequest,
  rpcResult,
} from "./jsonrpc.js";
import { LIMITS, RPC_ERROR } from "./protocol.js";

/** `depth` nested arrays around a 0: depth 1 is `[0]`. */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("parseFrame", () => {
  it("refuses malformed JSON with a parse error and a null id", () => {
    expect(parseFrame("{not json")).toEqual({
      ok: false,
      response: { jsonrpc: "2.0", id: null, error: { code: RPC_ERROR.parse, message: expect.any(String) } },
    });
  });

  it("refuses a frame over the byte limit, counting UTF-8 bytes rather than characters", () => {
    const fits = JSON.stringify({ jsonrpc: "2.0", method: "m", params: { s: "x".repeat(1000) } });
    expect(parseFrame(fits, { frameBytes: fits.length, jsonDepth: 64 }).ok).toBe(true);
    const wide = JSON.stringify({ jsonrpc: "2.0", method: "m", params: { s: "é".repeat(100) } });
    const parsed = parseFrame(wide, { frameBytes: wide.length + 50, jsonDepth: 64 });
    expect(parsed).toMatchObject({ ok: false, response: { id: null, error: { code: RPC_ERROR.invalidRequest } } });
  });

  it("refuses a frame nested deeper than the limit, echoing a valid id", () => {
    const deep = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "m", params: nested(LIMITS.jsonDepth) });
    expect(parseFrame(deep)).toMatchObject({
      ok: false,
      response: {
        id: 7,
        error: { code: RPC_ERROR.invalidRequest, message: `JSON nested deeper than ${LIMITS.jsonDepth}` },
      },
    });
    const fits = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "m", params: nested(LIMITS.jsonDepth - 1) });
    expect(parseFrame(fits).ok).toBe(true);
  });

  it("refuses a frame with a duplicated key, echoing the id unless the id is what is duplicated", () => {
    const frame = '{"jsonrpc":"2.0","id":4,"method":"m","params":{"toolCall":{"title":"ls","title":"rm -rf /"}}}';
    expect(parseFrame(frame)).toEqual({
      ok: false,
      response: {
        jsonrpc: "2.0",
        id: 4,
        error: { code: RPC_ERROR.invalidRequest, message: 'duplicate key "title" in a JSON object' },
      },
    });
    expect(parseFrame('{"jsonrpc":"2.0","id":4,"method":"m","\u0069d":5}')).toMatchObject({
      ok: false,
      response: { id: null, error: { code: RPC_ERROR.invalidRequest, message: 'duplicate key "id" in a JSON object' } },
    });
    expect(parseFrame('[{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","method":"m","method":"n"}]')).toMatchObject({
      ok: false,
      response: { id: null, error: { code: RPC_ERROR.invalidRequest } },
    });
  });

  it("reads a single message and a batch, and refuses an empty batch", () => {
    const one = parseFrame(JSON.stringify(rpcNotification("m", {})));
    expect(one).toEqual({ ok: true, batch: false, messages: [{ kind: "notification", method: "m", params: {} }] });
    const batch = parseFrame(JSON.stringify([rpcRequest(1, "a", []), rpcNotification("b", undefined), 5]));
    expect(batch.ok && batch.batch).toBe(true);
    expect(batch.ok && batch.messages.map((m) => m.kind)).toEqual(["request", "notification", "invalid"]);
    expect(parseFrame("[]")).toMatchObject({ ok: false, response: { error: { message: "empty batch" } } });
  });
});

describe("classify", () => {
  it("tells requests, notifications and responses (results and errors) apart", () => {
    expect(classify({ jsonrpc: "2.0", id: "a", method: "m", params: [1] })).toEqual({
      kind: "request",
      id: "a",
      method: "m",
      params: [1],
    });
    expect(classify({ jsonrpc: "2.0", method: "m" })).toEqual({ kind: "notification", method: "m", params: undefined });
    expect(classify(rpcResult(3, { ok: 1 }))).toEqual({ kind: "response", id: 3, result: { ok: 1 }, error: undefined });
    expect(classify(rpcError(3, -1, "no"))).toMatchObject({ kind: "response", id: 3, error: { code: -1 } });
  });

  it("accepts string ids up to 128 characters and safe integers, and nothing else", () => {
    const request = (id: unknown) => classify({ jsonrpc: "2.0", id, method: "m" });
    expect(request("x".repeat(LIMITS.rpcIdChars)).kind).toBe("request");
    expect(request(0).kind).toBe("request");
    expect(request(-5).kind).toBe("request");
    for (const id of ["x".repeat(LIMITS.rpcIdChars + 1), 1.5, 2 ** 53, null, { a: 1 }, [1], true]) {
      expect(request(id)).toMatchObject({ kind: "invalid", response: { id: null } });
    }
  });

  it("answers what breaks JSON-RPC 2.0 as invalid, echoing the id when it is valid", () => {
    const invalid = (value: unknown) => classify(value);
    expect(invalid(42)).toMatchObject({ kind: "invalid", response: { id: null, error: { code: -32600 } } });
    expect(invalid(null)).toMatchObject({ kind: "invalid" });
    expect(invalid([1])).toMatchObject({ kind: "invalid" });
    expect(invalid({ id: 1, method: "m" })).toMatchObject({ kind: "invalid", response: { id: 1 } });
    expect(invalid({ jsonrpc: "1.0", id: 1, method: "m" })).toMatchObject({ kind: "invalid" });
    expect(invalid({ jsonrpc: "2.0", id: 1 })).toMatchObject({ kind: "invalid", response: { id: 1 } });
    expect(invalid({ jsonrpc: "2.0", id: 1, method: 5 })).toMatchObject({ kind: "invalid" });
    expect(invalid({ jsonrpc: "2.0", id: 1, method: "m", params: "s" })).toMatchObject({ kind: "invalid" });
    expect(invalid({ jsonrpc: "2.0", id: 1, method: "m", params: null })).toMatchObject({ kind: "invalid" });
  });
});

describe("classifyLoose", () => {
  it("classifies without validating, keeping ids of any kind", () => {
    expect(classifyLoose({ id: { odd: true }, method: "m" })).toMatchObject({ kind: "request", id: { odd: true } });
    expect(classifyLoose({ method: "m", params: 1 })).toEqual({ kind: "notification", method: "m", params: 1 });
    expect(classifyLoose({ id: null })).toEqual({ kind: "response", id: null, result: undefined, error: undefined });
  });

  it("gives undefined for what it cannot route", () => {
    for (const value of [undefined, null, 1, "s", [rpcRequest(1, "m", {})], { method: 1 }, {}]) {
      expect(classifyLoose(value)).toBeUndefined();
    }
    expect(classifyLooseText("not json")).toBeUndefined();
    expect(classifyLooseText('{"id":1,"result":{}}')).toMatchObject({ kind: "response", id: 1 });
  });
});

describe("builders and keys", () => {
  it("build messages with jsonrpc first and the fields in order", () => {
    expect(JSON.stringify(rpcRequest(1, "m", { a: 1 }))).toBe('{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}');
    expect(JSON.stringify(rpcNotification("m", undefined))).toBe('{"jsonrpc":"2.0","method":"m"}');
    expect(JSON.stringify(rpcResult("a", null))).toBe('{"jsonrpc":"2.0","id":"a","result":null}');
    expect(rpcError(null, -32600, "bad")).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "bad" },
    });
    expect(rpcError(1, -32602, "bad", { issues: [] }).error).toEqual({
      code: -32602,
      message: "bad",
      data: { issues: [] },
    });
  });

  it("keys 1 and '1' apart", () => {
    expect(rpcIdKey(1)).not.toBe(rpcIdKey("1"));
    expect(rpcIdKey(undefined)).toBe("undefined");
  });
});

describe("limits", () => {
  it("depthExceeds counts a bare object or array as depth 1 and ignores scalars", () => {
    expect(depthExceeds(7, 0)).toBe(false);
    expect(depthExceeds({}, 1)).toBe(false);
    expect(depthExceeds({ a: {} }, 1)).toBe(true);
    expect(depthExceeds(nested(10_000), 10_000)).toBe(false);
    expect(depthExceeds(nested(10_001), 10_000)).toBe(true);
  });

  it("exceedsBytes agrees with the UTF-8 length", () => {
    for (const text of ["", "abc", "é".repeat(40), "😀".repeat(30), "a".repeat(90)]) {
      const bytes = new TextEncoder().encode(text).length;
      for (const max of [0, 1, 59, 60, 61, 89, 90, 91, 119, 120, 121]) {
        expect(exceedsBytes(text, max)).toBe(bytes > max);
      }
    }
  });

  it("encodeFrame refuses what the gate would refuse", () => {
    expect(encodeFrame(rpcNotification("m", { a: 1 }))).toBe('{"jsonrpc":"2.0","method":"m","params":{"a":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(encodeFrame({ cyclic })).toEqual({ error: "params are not JSON-serializable" });
    expect(encodeFrame({ s: "x".repeat(LIMITS.frameBytes) })).toEqual({
      error: `frame exceeds ${LIMITS.frameBytes} bytes`,
    });
    expect(encodeFrame(rpcNotification("m", nested(LIMITS.jsonDepth)))).toEqual({
      error: `JSON nests deeper than ${LIMITS.jsonDepth}`,
    });
    expect(typeof encodeFrame(rpcNotification("m", nested(LIMITS.jsonDepth - 2)))).toBe("string");
  });
});
