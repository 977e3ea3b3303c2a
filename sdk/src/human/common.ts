/** Small answers several human routes share. */
import { z } from "zod";

/** `{ok: true}`, sometimes with the id acted on. */
export const okAnswerSchema = z.object({ ok: z.literal(true), id: z.string().optional() });
export type OkAnswer = z.infer<typeof okAnswerSchema>;

/** An empty JSON body: routes that take no input still read `{}`. */
export const emptyBodySchema = z.object({});

/** A `cursor` query parameter as clients send it (opaque; the Worker decodes it). */
export const cursorQuerySchema = z.string().max(300);

/** Keyset pages: the items and the cursor of the next page (null on the last). */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ approvals: z.array(item), cursor: z.string().nullable() });
