/**
 * An elicitation form as people see it and as the Worker checks it: the fields of a flat
 * `requestedSchema` in order (label, description, default, choices, required), and whether some
 * content fits the schema. The Worker refuses content that does not (`400 invalid_content` naming
 * the field); the PWA runs the same check inline before it sends.
 *
 * Owns: the rendering model and the content rules. Does not own: the schemas themselves
 * (`protocol.ts`) or how a form is drawn (the PWA). Pure and environment-neutral.
 */
import type { z } from "zod";
import type {
  ElicitationContent,
  ElicitationProperty,
  ElicitationSchema,
  elicitationNumberSchema,
  elicitationStringSchema,
} from "./elicitation-protocol.js";

/** Loose objects (unknown keys pass through) do not narrow on `type`, so the variants are named. */
type StringProperty = z.infer<typeof elicitationStringSchema>;
type NumberProperty = z.infer<typeof elicitationNumberSchema>;

export interface FormChoice {
  value: string;
  label: string;
  description?: string;
}

export interface FormField {
  name: string;
  /** The schema's `title`, else the property name. */
  label: string;
  description?: string;
  required: boolean;
  input: "text" | "number" | "integer" | "boolean" | "choice";
  /** For text fields: `email`, `uri`, `date`, `date-time`. */
  format?: string;
  choices?: FormChoice[];
  default?: string | number | boolean;
  property: ElicitationProperty;
}

export function formFields(schema: ElicitationSchema): FormField[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, p]) => {
    const base = {
      name,
      label: p.title || name,
      ...(p.description ? { description: p.description } : {}),
      required: required.has(name),
      ...(p.default !== null && p.default !== undefined ? { default: p.default } : {}),
      property: p,
    };
    if (p.type === "boolean") return { ...base, input: "boolean" };
    if (p.type === "number" || p.type === "integer") return { ...base, input: p.type };
    const text = p as StringProperty;
    const choices = choicesOf(text);
    if (choices) return { ...base, input: "choice", choices };
    return { ...base, input: "text", ...(text.format ? { format: text.format } : {}) };
  });
}

function choicesOf(p: StringProperty): FormChoice[] | undefined {
  if (p.oneOf) {
    return p.oneOf.map((o) => ({
      value: o.const,
      label: o.title,
      ...(o.description ? { description: o.description } : {}),
    }));
  }
  return p.enum?.map((value) => ({ value, label: value }));
}

export type ContentCheck = { ok: true; content: ElicitationContent } | { ok: false; field: string; message: string };

/**
 * Whether `content` answers the form: an object with only the schema's fields, every required one
 * present, each value of its field's type and within its bounds. The first problem is reported,
 * in field order, naming the field (never echoing the value: it may be something the human typed).
 */
export function checkContent(schema: ElicitationSchema, content: unknown): ContentCheck {
  if (content === null || typeof content !== "object" || Array.isArray(content)) {
    return { ok: false, field: "content", message: "content must be an object of field values" };
  }
  const values = content as Record<string, unknown>;
  for (const name of Object.keys(values)) {
    if (!Object.hasOwn(schema.properties, name))
      return { ok: false, field: name, message: `${name} is not in the form` };
  }
  for (const field of formFields(schema)) {
    const value = values[field.name];
    if (value === undefined) {
      if (field.required) return { ok: false, field: field.name, message: `${field.label} is required` };
      continue;
    }
    const problem = valueProblem(field, value);
    if (problem) return { ok: false, field: field.name, message: `${field.label} ${problem}` };
  }
  return { ok: true, content: values as ElicitationContent };
}

/** What is wrong with one field's value, worded to follow the field's label; undefined when nothing. */
export function valueProblem(field: FormField, value: unknown): string | undefined {
  if (field.property.type === "boolean") return typeof value === "boolean" ? undefined : "must be true or false";
  if (field.property.type === "number" || field.property.type === "integer") {
    const p = field.property as NumberProperty;
    if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number";
    if (p.type === "integer" && !Number.isInteger(value)) return "must be a whole number";
    if (p.minimum !== null && p.minimum !== undefined && value < p.minimum) return `must be at least ${p.minimum}`;
    if (p.maximum !== null && p.maximum !== undefined && value > p.maximum) return `must be at most ${p.maximum}`;
    return undefined;
  }
  if (typeof value !== "string") return "must be text";
  const p = field.property as StringProperty;
  if (field.choices) return field.choices.some((c) => c.value === value) ? undefined : "must be one of the choices";
  const length = [...value].length;
  if (p.minLength !== null && p.minLength !== undefined && length < p.minLength) {
    return `must be at least ${p.minLength} characters`;
  }
  if (p.maxLength !== null && p.maxLength !== undefined && length > p.maxLength) {
    return `must be at most ${p.maxLength} characters`;
  }
  if (p.format && !FORMATS[p.format](value)) return `must be ${FORMAT_WORDS[p.format]}`;
  return undefined;
}

const FORMATS: Record<NonNullable<StringProperty["format"]>, (v: string) => boolean> = {
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  uri: (v) => {
    try {
      return /^[a-z][a-z0-9+.-]*:/i.test(v) && Boolean(new URL(v));
    } catch {
      return false;
    }
  },
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && isRealDate(v),
  "date-time": (v) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(v) &&
    isRealDate(v.slice(0, 10)) &&
    !Number.isNaN(Date.parse(v)),
};

const FORMAT_WORDS: Record<NonNullable<StringProperty["format"]>, string> = {
  email: "an email address",
  uri: "a URI (like https://example.com)",
  date: "a date (YYYY-MM-DD)",
  "date-time": "a date and time (like 2026-01-31T09:30:00Z)",
};

/** 2026-02-30 matches the pattern but is no day. */
function isRealDate(ymd: string): boolean {
  const date = new Date(`${ymd}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === ymd;
}
