import { describe, expect, it } from "vitest";
import type { ApprovalSnapshot } from "../../sdk/src/approval";
import { jsonBytes, storedSnapshot } from "./stored-snapshot";

const session = { title: "fix tests", agent: { name: "claude" }, host: "laptop", cwd: "/src" };
const snapshot = (toolCall: Record<string, unknown>): ApprovalSnapshot =>
  ({ toolCall: { toolCallId: "call-1", ...toolCall }, session }) as ApprovalSnapshot;

describe("stored snapshot", () => {
  it("keeps a snapshot that fits as it is, without a marker", () => {
    const small = snapshot({ title: "ls", rawInput: { command: "ls" } });
    expect(storedSnapshot(small, 4096)).toBe(small);
  });

  it("cuts long strings to fit, keeps the shape and the id, and counts what was not stored", () => {
    const big = snapshot({ title: "write", rawInput: { content: "x".repeat(100_000), path: "/src/a.ts" } });
    const stored = storedSnapshot(big, 8192);
    expect(jsonBytes(stored)).toBeLessThanOrEqual(8192);
    expect(stored.toolCall.toolCallId).toBe("call-1");
    expect((stored.toolCall.rawInput as { path: string }).path).toBe("/src/a.ts");
    expect((stored.toolCall.rawInput as { content: string }).content.startsWith("xxxx")).toBe(true);
    const { truncated, ...rest } = stored;
    expect(truncated?.bytesNotStored).toBe(jsonBytes(big) - jsonBytes(rest));
  });

  it("falls back to the tool call's id, title and kind when many short strings cannot fit", () => {
    const many = snapshot({
      title: "edit",
      kind: "edit",
      locations: Array.from({ length: 5_000 }, () => ({ path: "a" })),
    });
    const stored = storedSnapshot(many, 4096);
    expect(jsonBytes(stored)).toBeLessThanOrEqual(4096);
    expect(stored.toolCall).toEqual({ toolCallId: "call-1", title: "edit", kind: "edit" });
    expect(stored.truncated?.bytesNotStored).toBeGreaterThan(20_000);
  });

  it("never splits a surrogate pair", () => {
    const emoji = snapshot({ title: "😀".repeat(20_000) });
    const stored = storedSnapshot(emoji, 4096);
    expect(JSON.stringify(stored)).not.toMatch(/\\ud83d"/);
    expect(jsonBytes(stored)).toBeLessThanOrEqual(4096);
  });
});
