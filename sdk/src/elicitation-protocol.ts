/**
 * The elicitation half of the agent wire contract (docs/agent-protocol.md): ACP's
 * `elicitation/create` and `elicitation/complete`, the restricted form schema Tapgate renders, the
 * answers, and how an agent's ask is told apart from a permission request. Defined once, as
 * `protocol.ts` defines the rest; environment-neutral.
 */
import { z } from "zod";
import {
  metaSchema,
  type RequestPermissionParams,
  type RequestPermissionResponse,
  sessionIdSchema,
} from "./protocol.js";

/** The modes Tapgate renders: what `tapgate acp` advertises as `clientCapabilities.elicitation`. */
export const ELICITATION_CAPABILITIES: { form: Record<string, never>; url: Record<string, never> } = {
  form: {},
  url: {},
};

const fieldText = {
  title: z.string().max(256).nullish(),
  description: z.string().max(2048).nullish(),
  _meta: metaSchema,
};
const lengthBound = z.number().int().min(0).max(65_536).nullish();

/** A titled choice of a single-select enum (`oneOf`). */
export const elicitationEnumOptionSchema = z.looseObject({
  const: z.string().max(256),
  title: z.string().max(256),
  description: z.string().max(2048).nullish(),
});

/**
 * A string field; with `enum` or `oneOf`, a single-select choice. `pattern` is accepted and shown
 * as the agent's hint, never enforced: a regular expression from an agent run in the Worker could
 * backtrack for seconds (the agent checks its own pattern).
 */
export const elicitationStringSchema = z.looseObject({
  type: z.literal("string"),
  ...fieldText,
  minLength: lengthBound,
  maxLength: lengthBound,
  pattern: z.string().max(512).nullish(),
  format: z.enum(["email", "uri", "date", "date-time"]).nullish(),
  default: z.string().max(4096).nullish(),
  enum: z.array(z.string().max(256)).min(1).max(64).nullish(),
  oneOf: z.array(elicitationEnumOptionSchema).min(1).max(64).nullish(),
});
export const elicitationNumberSchema = z.looseObject({
  type: z.enum(["number", "integer"]),
  ...fieldText,
  minimum: z.number().nullish(),
  maximum: z.number().nullish(),
  default: z.number().nullish(),
});
export const elicitationBooleanSchema = z.looseObject({
  type: z.literal("boolean"),
  ...fieldText,
  default: z.boolean().nullish(),
});
/** One field: strings (and enums), numbers, integers, booleans. Nested objects and arrays are refused. */
export const elicitationPropertySchema = z.discriminatedUnion("type", [
  elicitationStringSchema,
  elicitationNumberSchema,
  elicitationBooleanSchema,
]);
export type ElicitationProperty = z.infer<typeof elicitationPropertySchema>;

/** ACP's restricted JSON Schema: a flat object of at most 32 fields; `required` names only its fields. */
export const elicitationSchemaSchema = z
  .looseObject({
    type: z.literal("object").default("object"),
    title: z.string().max(256).nullish(),
    description: z.string().max(2048).nullish(),
    properties: z
      .record(z.string().min(1).max(128), elicitationPropertySchema)
      .refine((p) => Object.keys(p).length <= 32, "at most 32 properties"),
    required: z.array(z.string()).nullish(),
  })
  .refine((s) => (s.required ?? []).every((k) => Object.hasOwn(s.properties, k)), {
    message: "required names a property that is not in properties",
    path: ["required"],
  });
export type ElicitationSchema = z.infer<typeof elicitationSchemaSchema>;

/**
 * A URL a human may be sent to: absolute `https:` only, and no user name or password in it (which
 * could dress `https://github.com@evil.example` up as a trusted host). Never fetched by Tapgate.
 */
export const elicitationUrlSchema = z
  .string()
  .max(4096)
  .refine((u) => {
    try {
      const url = new URL(u);
      return url.protocol === "https:" && url.username === "" && url.password === "" && url.hostname !== "";
    } catch {
      return false;
    }
  }, "url must be an absolute https:// URL without a user name or password");

/** Session scope (optionally one tool call's). ACP's request scope has no session to route to, so it is refused. */
const elicitationScope = {
  sessionId: sessionIdSchema,
  toolCallId: z.string().min(1).max(256).nullish(),
  message: z.string().min(1).max(4096),
  _meta: metaSchema,
};

/** `elicitation/create` params: form mode (a `requestedSchema`) or URL mode (`url`, `elicitationId`). */
export const createElicitationParamsSchema = z.discriminatedUnion("mode", [
  z.looseObject({ ...elicitationScope, mode: z.literal("form"), requestedSchema: elicitationSchemaSchema }),
  z.looseObject({
    ...elicitationScope,
    mode: z.literal("url"),
    url: elicitationUrlSchema,
    elicitationId: z.string().min(1).max(256),
  }),
]);
export type CreateElicitationParams = z.infer<typeof createElicitationParamsSchema>;

/** What an accepted form answers: one value per field (multi-select arrays are not rendered, so never sent). */
export const elicitationContentSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));
export type ElicitationContent = z.infer<typeof elicitationContentSchema>;

export const elicitationActionSchema = z.enum(["accept", "decline", "cancel"]);
export type ElicitationAction = z.infer<typeof elicitationActionSchema>;

/** The `elicitation/create` result. `content` only with `accept` of a form. */
export const createElicitationResponseSchema = z.looseObject({
  action: elicitationActionSchema,
  content: elicitationContentSchema.nullish(),
  _meta: metaSchema,
});
export type CreateElicitationResponse = z.infer<typeof createElicitationResponseSchema>;

/** `elicitation/complete` (a notification): the URL-mode interaction `elicitationId` is over. */
export const completeElicitationParamsSchema = z.looseObject({
  elicitationId: z.string().min(1).max(256),
  _meta: metaSchema,
});

/**
 * The fail-closed answer to an elicitation: every end that is not a human's answer (expiry, a lost
 * agent, revocation, restart, the agent's own cancel, any local failure) is `cancel`, never an
 * `accept` and never content nobody typed.
 */
export const ELICITATION_CANCELLED: CreateElicitationResponse = { action: "cancel" };

/** What an agent asks: a permission or an elicitation (told apart by `mode`, which only the latter has). */
export type AgentAsk = RequestPermissionParams | CreateElicitationParams;
export type AgentAnswer = RequestPermissionResponse | CreateElicitationResponse;

export function isElicitation(params: AgentAsk): params is CreateElicitationParams {
  return "mode" in params && (params.mode === "form" || params.mode === "url");
}
