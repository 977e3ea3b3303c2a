import { describe, expect, it } from "vitest";
import { agentPromptOf, forbidsStandingAnswer } from "./permission-prompt.js";

describe("agentPromptOf: an adapter's _meta.permission words", () => {
  it("reads codex-acp's request and option shapes, without its version", () => {
    expect(agentPromptOf({ permission: { version: 1, title: "Run command?", description: "why" } })).toEqual({
      title: "Run command?",
      description: "why",
    });
    expect(agentPromptOf({ permission: { version: 1, description: "Only this run" } })).toEqual({
      description: "Only this run",
    });
  });

  it("ignores blank or non-text words, and cuts long ones to what a card shows", () => {
    expect(agentPromptOf({ permission: { title: "  ", description: 42 } })).toBeUndefined();
    expect(agentPromptOf({ permission: "Run?" })).toBeUndefined();
    expect(agentPromptOf(undefined)).toBeUndefined();
    expect(agentPromptOf({ permission: { title: "x".repeat(3000) } })?.title).toHaveLength(2048);
  });
});

describe("forbidsStandingAnswer", () => {
  it.each([
    [{ matchedAskRule: { source: "projectSettings", toolName: "Bash" } }, true],
    [{ matched_ask_rule: { source: "userSettings" } }, true],
    [{ suppress_always_allow_rule: true }, true],
    [{ claudeCode: { suppressAlwaysAllowRule: true } }, true],
    [{ claudeCode: { matchedAskRule: null }, suppress_always_allow_rule: false }, false],
    [{ tapgate: { matchedAskRule: {} } }, false],
    [null, false],
  ])("%j → %s", (meta, forbids) => {
    expect(forbidsStandingAnswer(meta)).toBe(forbids);
  });
});
