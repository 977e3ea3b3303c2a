/** Small HTTP helpers shared by the routes: precise errors and schema validation at the edge. */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { validator } from "hono/validator";
import { z } from "zod";
import type { AppEnv } from "./types";

export function apiError(c: Context, status: ContentfulStatusCode, error: string, message: string, extra?: object) {
  return c.json({ error, message, ...extra }, status);
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
    return apiError(c, 400, "invalid_request", z.prettifyError(parsed.error), { issues: parsed.error.issues });
  });
}

/** The public origin: configured, or the one the request came to. */
export function appOrigin(c: Context<AppEnv>): string {
  return c.env.APP_ORIGIN ?? new URL(c.req.url).origin;
}
