import { describe, expect, it } from "vitest";
import { checkContent, formFields } from "./elicitation-form.js";
import { createElicitationParamsSchema, elicitationSchemaSchema } from "./elicitation-protocol.js";

const schema = elicitationSchemaSchema.parse({
  type: "object",
  properties: {
    name: { type: "string", title: "Project name", minLength: 2, maxLength: 5, default: "demo" },
    port: { type: "integer", title: "Port", minimum: 1024, maximum: 65535, default: 3000 },
    ratio: { type: "number", minimum: 0, maximum: 1 },
    logging: { type: "boolean", title: "Enable logging", default: true },
    color: { type: "string", enum: ["red", "green"] },
    strategy: {
      type: "string",
      oneOf: [
        { const: "safe", title: "Conservative", description: "minimal changes" },
        { const: "bold", title: "Aggressive" },
      ],
    },
    email: { type: "string", format: "email" },
    day: { type: "string", format: "date" },
    at: { type: "string", format: "date-time" },
    site: { type: "string", format: "uri" },
  },
  required: ["name", "strategy"],
});

describe("formFields", () => {
  it("lists fields in order with labels, defaults, choices and required marks", () => {
    const fields = formFields(schema);
    expect(fields.map((f) => [f.name, f.label, f.input, f.required])).toEqual([
      ["name", "Project name", "text", true],
      ["port", "Port", "integer", false],
      ["ratio", "ratio", "number", false],
      ["logging", "Enable logging", "boolean", false],
      ["color", "color", "choice", false],
      ["strategy", "strategy", "choice", true],
      ["email", "email", "text", false],
      ["day", "day", "text", false],
      ["at", "at", "text", false],
      ["site", "site", "text", false],
    ]);
    expect(fields[0]?.default).toBe("demo");
    expect(fields[3]?.default).toBe(true);
    expect(fields[4]?.choices).toEqual([
      { value: "red", label: "red" },
      { value: "green", label: "green" },
    ]);
    expect(fields[5]?.choices?.[0]).toEqual({ value: "safe", label: "Conservative", description: "minimal changes" });
    expect(fields[6]?.format).toBe("email");
  });
});

describe("checkContent", () => {
  const ok = { name: "abc", strategy: "safe" };
  const problem = (content: unknown) => {
    const r = checkContent(schema, content);
    return r.ok ? "ok" : `${r.field}: ${r.message}`;
  };

  it("accepts content that fits, optional fields left out", () => {
    expect(checkContent(schema, ok)).toEqual({ ok: true, content: ok });
    const full = {
      ...ok,
      port: 8080,
      ratio: 0.5,
      logging: false,
      color: "red",
      email: "a@b.co",
      day: "2026-02-28",
      at: "2026-02-28T09:30:00Z",
      site: "https://example.com/x",
    };
    expect(problem(full)).toBe("ok");
  });

  it("names the field of the first problem, and never echoes the value", () => {
    expect(problem({ strategy: "safe" })).toBe("name: Project name is required");
    expect(problem({ ...ok, name: "a" })).toBe("name: Project name must be at least 2 characters");
    expect(problem({ ...ok, name: "abcdef" })).toBe("name: Project name must be at most 5 characters");
    expect(problem({ ...ok, name: 5 })).toBe("name: Project name must be text");
    expect(problem({ ...ok, port: 80 })).toBe("port: Port must be at least 1024");
    expect(problem({ ...ok, port: 70000 })).toBe("port: Port must be at most 65535");
    expect(problem({ ...ok, port: 3000.5 })).toBe("port: Port must be a whole number");
    expect(problem({ ...ok, port: "3000" })).toBe("port: Port must be a number");
    expect(problem({ ...ok, ratio: 2 })).toBe("ratio: ratio must be at most 1");
    expect(problem({ ...ok, logging: "yes" })).toBe("logging: Enable logging must be true or false");
    expect(problem({ ...ok, color: "blue" })).toBe("color: color must be one of the choices");
    expect(problem({ ...ok, strategy: "Conservative" })).toBe("strategy: strategy must be one of the choices");
    expect(problem({ ...ok, email: "not-an-email" })).toBe("email: email must be an email address");
    expect(problem({ ...ok, day: "2026-02-30" })).toBe("day: day must be a date (YYYY-MM-DD)");
    expect(problem({ ...ok, at: "2026-02-28 09:30" })).toContain("at: at must be a date and time");
    expect(problem({ ...ok, site: "example.com" })).toContain("site: site must be a URI");
    expect(problem({ ...ok, extra: 1 })).toBe("extra: extra is not in the form");
    expect(problem([ok])).toBe("content: content must be an object of field values");
    expect(problem(null)).toBe("content: content must be an object of field values");
  });

  it("counts characters, not UTF-16 units", () => {
    expect(problem({ ...ok, name: "😀😀" })).toBe("ok");
  });
});

describe("createElicitationParamsSchema", () => {
  const base = { sessionId: "s1", message: "Which port?" };
  it("takes form and URL mode, session- or tool-call-scoped", () => {
    expect(createElicitationParamsSchema.safeParse({ ...base, mode: "form", requestedSchema: schema }).success).toBe(
      true,
    );
    const url = { ...base, toolCallId: "t1", mode: "url", url: "https://github.com/login/oauth", elicitationId: "e1" };
    expect(createElicitationParamsSchema.safeParse(url).success).toBe(true);
  });

  it("refuses what Tapgate does not render or cannot route", () => {
    const refused = (p: object) => createElicitationParamsSchema.safeParse({ ...base, ...p }).success;
    const url = { mode: "url", elicitationId: "e1" };
    expect(refused({ ...url, url: "http://example.com" })).toBe(false);
    expect(refused({ ...url, url: "javascript:alert(1)" })).toBe(false);
    expect(refused({ ...url, url: "https://github.com@evil.example/" })).toBe(false);
    expect(refused({ ...url, url: "https://x.example/", elicitationId: undefined })).toBe(false);
    const form = (properties: object, required?: string[]) => ({
      mode: "form",
      requestedSchema: { type: "object", properties, required },
    });
    expect(refused(form({ tags: { type: "array", items: { type: "string", enum: ["a"] } } }))).toBe(false);
    expect(refused(form({ nested: { type: "object", properties: {} } }))).toBe(false);
    expect(refused(form({ a: { type: "string" } }, ["b"]))).toBe(false);
    expect(
      createElicitationParamsSchema.safeParse({ requestId: 1, message: "x", mode: "form", requestedSchema: schema })
        .success,
    ).toBe(false);
  });
});
