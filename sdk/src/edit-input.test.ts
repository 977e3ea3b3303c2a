import { describe, expect, it } from "vitest";
import { acceptsEdits, editFieldOf, editProblem } from "./edit-input.js";

describe("editProblem: the edited input keeps the request's shape", () => {
  const original = { command: "ls", timeout: 5, flags: ["-l"], edits: [{ old_string: "a", new_string: "b" }], x: null };

  it("takes new values of the same kinds, arrays of any length", () => {
    const edited = {
      command: "ls -a",
      timeout: 9,
      flags: [],
      edits: [
        { old_string: "c", new_string: "d" },
        { old_string: "e", new_string: "f" },
      ],
      x: null,
    };
    expect(editProblem(original, edited)).toBeNull();
  });

  it.each([
    [{ ...original, command: 1 }, "updatedInput.command must be a string, as in the request (not a number)"],
    [{ ...original, extra: true }, "updatedInput.extra is not in the request's input: add no keys"],
    [
      { command: "ls", timeout: 5, flags: [], edits: [] },
      "updatedInput.x is missing: keep every key of the request's input",
    ],
    [{ ...original, flags: [1] }, "updatedInput.flags[0] must be a string, as in the request (not a number)"],
    [
      { ...original, edits: [{ old_string: "a" }] },
      "updatedInput.edits[0].new_string is missing: keep every key of the request's input",
    ],
    [{ ...original, x: "now a string" }, "updatedInput.x must be a null, as in the request (not a string)"],
    [[], "updatedInput must be an object, as in the request (not an array)"],
  ])("refuses %j", (edited, problem) => {
    expect(editProblem(original, edited)).toBe(problem);
  });

  it("an originally empty array stays empty", () => {
    expect(editProblem({ a: [] }, { a: ["x"] })).toBe("updatedInput.a must stay empty, as in the request");
  });
});

describe("acceptsEdits", () => {
  it("needs the agent's word and an object input", () => {
    const meta = { tapgate: { acceptsEdits: true } };
    expect(acceptsEdits({ toolCall: { rawInput: { command: "ls" } }, meta })).toBe(true);
    expect(acceptsEdits({ toolCall: { rawInput: { command: "ls" } } })).toBe(false);
    expect(acceptsEdits({ toolCall: { rawInput: "ls" }, meta })).toBe(false);
    expect(
      acceptsEdits({ toolCall: { rawInput: { command: "ls" } }, meta: { tapgate: { acceptsEdits: "yes" } } }),
    ).toBe(false);
  });
});

describe("editFieldOf: the editor the card offers", () => {
  it("a command, a written file's content, else the JSON", () => {
    expect(editFieldOf({ command: "ls" }).field).toBe("command");
    expect(editFieldOf({ file_path: "/a", content: "x" }).field).toBe("content");
    expect(editFieldOf({ file_path: "/a", old_string: "x", new_string: "y" }).field).toBeNull();
  });
});
