/** Small HTTP helpers shared by the routes: precise errors and schema validation at the edge. */

import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { validator } from "hono/validator";
import { z } from "zod";
import { duplicateKeyMessage, findDuplicateKey } from "../sdk/src/duplicate-keys";
import { ERRORS, type ErrorCode } from "../sdk/src/errors";
import { parseJson } from "../sdk/src/protocol";
import { DomainError } from "./errors";
import type { AppEnv } from "./types";

/**
 * The one way an error answer is written: `{error, message, ...extra}` with the status the error
 * table gives the code. The message defaults to the table's.
 */
export function apiError(c: Context, error: ErrorCode, message?: string, extra?: object) {
  const known = ERRORS[error];
  return c.json({ error, message: message ?? known.message, ...extra }, known.status);
}

/**
 * The sentence of an unexpected failure: a read changed nothing and decided nothing; a write may
 * have taken effect before it failed (a decision made, then a later step broke), so it says so.
 */
export function internalErrorMessage(method: string): string {
  return ["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase())
    ? "something went wrong; nothing was decided or changed"
    : "something went wrong; it may have taken effect: reload to see before trying again";
}

/**
 * Validates a JSON body or the query with a zod schema; bad input gets a 400 that names the field.
 *
 * @example
 * app.post("/v1/keys", validate("json", z.object({ label: z.string() })), (c) => c.req.valid("json").label)
 */
export function validate<T extends z.ZodType, Target extends "json" | "query" | "param">(target: Target, schema: T) {
  return validator(target, async (value, c) => {
    const parsed = await schema.safeParseAsync(value);
    if (parsed.success) return parsed.data as z.infer<T>;
    return apiError(c, "invalid_request", z.prettifyError(parsed.error), { issues: parsed.error.issues });
  });
}

/** Bodies larger than `maxBytes` are refused with 413 `too_large`. */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => apiError(c, "too_large", `the body is larger than ${maxBytes} bytes`),
  });
}

/**
 * A JSON body with a key twice in one object is refused (400 `invalid_request`), as the agent
 * socket refuses such a frame: `JSON.parse` would keep the last one silently. Text that is not
 * JSON passes on, for `validate` to answer.
 */
export const refuseDuplicateKeys: MiddlewareHandler = async (c, next) => {
  const text = await c.req.text();
  const duplicate = parseJson(text) === undefined ? null : findDuplicateKey(text);
  if (duplicate) return apiError(c, "invalid_request", duplicateKeyMessage(duplicate));
  return next();
};

/** WebSocket endpoints: anything but an upgrade is refused with 426 `upgrade_required`. */
export const requireUpgrade: MiddlewareHandler = async (c, next) => {
  if (c.req.header("Upgrade")?.toLowerCase() === "websocket") return next();
  throw new DomainError("upgrade_required", "open this URL as a WebSocket");
};

/** The public origin: configured, or the one the request came to. */
/**
 * The device or surface a decision (or a stop) came from, from `X-Tapgate-Device`. Browsers only
 * send Latin-1 header values, so the app percent-encodes the name; anything undecodable is shown as sent.
 */
export function deviceOf(c: Context): string {
  const header = c.req.header("X-Tapgate-Device");
  if (!header) return "web";
  try {
    return decodeURIComponent(header).slice(0, 64) || "web";
  } catch {
    return header.slice(0, 64);
  }
}

export function appOrigin(c: Context<AppEnv>): string {
  return c.env.APP_ORIGIN ?? new URL(c.req.url).origin;
}

/** The WebAuthn relying party: `RP_ID` (else the app's host name) and the app's origin. */
export function relyingParty(c: Context<AppEnv>): { rpID: string; origin: string } {
  const origin = appOrigin(c);
  return { rpID: c.env.RP_ID ?? new URL(origin).hostname, origin };
}

/** Keyset pagination: the last row of the previous page, opaque to clients. */
export interface PageCursor {
  createdAt: number;
  id: string;
}

const pageCursorSchema = z.object({ createdAt: z.number().int(), id: z.string().max(200) });

/** A `cursor` query parameter, decoded (400 when it is not one of ours). */
export const cursorParam = z
  .string()
  .max(300)
  .transform((s, ctx) => {
    const parsed = pageCursorSchema.safeParse(parseJson(Buffer.from(s, "base64url").toString()));
    if (parsed.success) return parsed.data;
    ctx.addIssue({ code: "custom", message: "invalid cursor" });
    return z.NEVER;
  });

/** The cursor of the next page, or null when this page was the last. */
export function nextCursor(rows: PageCursor[], limit: number): string | null {
  const last = rows.length === limit ? rows[rows.length - 1] : undefined;
  return last ? Buffer.from(JSON.stringify({ createdAt: last.createdAt, id: last.id })).toString("base64url") : null;
}
