/** ACP v1 and v2 draft permission requests, side by side, through the one schema the gate and the SDK use. */
import { describe, expect, it } from "vitest";
import { requestPermissionResponseSchema, requestPermissionParamsSchema as schema } from "./protocol.js";

const options = [
  { optionId: "ok", name: "Allow", kind: "allow_once" },
  { optionId: "no", name: "Deny", kind: "reject_once" },
  { optionId: "later", name: "Ask me at lunch", kind: "_acme.dev/snooze" },
];

describe("v2 draft permission requests", () => {
  it("a command subject: the card's tool call from title, description, command and cwd; the v2 fields as sent", () => {
    const sent = {
      sessionId: "s1",
      title: "Run the migration?",
      description: "It rewrites the users table.",
      subject: { type: "command", command: "npm run migrate", cwd: "/srv/app", terminalId: "term-1" },
      options,
    };
    const parsed = schema.parse(sent);
    expect(parsed).toMatchObject(sent);
    expect(parsed.toolCall).toEqual({
      toolCallId: "command",
      title: "Run the migration?",
      kind: "execute",
      content: [{ type: "content", content: { type: "text", text: "It rewrites the users table." } }],
      rawInput: { command: "npm run migrate", cwd: "/srv/app" },
    });
    expect(schema.parse({ ...sent, subject: { ...sent.subject, toolCallId: "call-9" } }).toolCall.toolCallId).toBe(
      "call-9",
    );
  });

  it("a tool_call subject: its tool call, headed by the prompt's title", () => {
    const toolCall = { toolCallId: "call-1", title: "Edit main.rs", kind: "edit", locations: [{ path: "/p/main.rs" }] };
    const parsed = schema.parse({
      sessionId: "s1",
      title: "Approve file edit?",
      subject: { type: "tool_call", toolCall },
      options,
    });
    expect(parsed.toolCall).toEqual({ ...toolCall, title: "Approve file edit?", content: [] });
  });

  it("no subject, or one Tapgate does not know: a generic card; the unknown subject is kept byte for byte", () => {
    expect(schema.parse({ sessionId: "s1", title: "Continue elevated?", options }).toolCall).toEqual({
      toolCallId: "permission",
      title: "Continue elevated?",
      kind: "other",
      content: [],
    });
    const subject = { type: "_acme.dev/deploy", target: { env: "prod" }, weird: [1, "two", null] };
    const parsed = schema.parse({ sessionId: "s1", title: "Deploy?", subject, options });
    expect(JSON.stringify(parsed.subject)).toBe(JSON.stringify(subject));
    expect(parsed.options[2]).toEqual(options[2]);
  });

  it("refuses what it cannot read safely, naming the field", () => {
    const issues = (value: unknown) => schema.safeParse(value).error?.issues ?? [];
    const relative = { sessionId: "s1", title: "x", subject: { type: "command", command: "ls", cwd: "src" }, options };
    expect(issues(relative)).toEqual([expect.objectContaining({ path: ["subject"] })]);
    expect(issues({ sessionId: "s1", title: "x", subject: { type: "tool_call" }, options })).not.toEqual([]);
    const futureKind = [{ optionId: "x", name: "x", kind: "allow_forever" }];
    expect(issues({ sessionId: "s1", title: "x", options: futureKind })[0]?.path).toEqual(["options", 0, "kind"]);
    expect(issues({ sessionId: "s1", options })[0]?.path).toEqual(["toolCall"]);
    const twice = { sessionId: "s1", toolCall: { toolCallId: "t" }, options: [options[0], options[0]] };
    expect(issues(twice)).toEqual([
      expect.objectContaining({ path: ["options"], message: "optionId values must be unique" }),
    ]);
  });

  it("v1 is read as before, a custom option kind included", () => {
    const v1 = { sessionId: "s1", toolCall: { toolCallId: "t", title: "ls" }, options, _meta: { traceparent: "00-x" } };
    expect(schema.parse(v1)).toEqual(v1);
  });
});

describe("the answer", () => {
  it("an unknown outcome is not an answer at all: callers fall back to the fail-closed answer", () => {
    const unknown = { outcome: { outcome: "_acme.dev/approved_forever", optionId: "ok" } };
    expect(requestPermissionResponseSchema.safeParse(unknown).success).toBe(false);
    expect(requestPermissionResponseSchema.safeParse({ outcome: { outcome: "approved" } }).success).toBe(false);
  });
});
