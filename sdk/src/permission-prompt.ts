/**
 * What ACP adapters say about a permission prompt beside ACP's own fields, read in one place for
 * the Worker and the PWA:
 *
 * - the prompt's words: `_meta.permission{title, description}` on the request and
 *   `_meta.permission{title?, description}` on each option (codex-acp's `requestPermissionMeta` /
 *   `optionPermissionMeta`, `version: 1`). The agent's own words, unverified: the card shows them
 *   marked as such, and the option's `optionId` goes back unchanged;
 * - whether the agent asks for no standing answer: a `matchedAskRule` (a user's ask rule forced the
 *   prompt) or `suppress_always_allow_rule: true` (Claude Code's `can_use_tool` flags), in the
 *   request's `_meta` or `_meta.claudeCode` (docs/agent-protocol.md "Prompt words and standing answers").
 *
 * Does not own: which options humans are offered (`worker/policy.ts` `offeredOptions`), rendering.
 */
import { z } from "zod";

/** The adapter's words for a prompt or an option, cut to what a card shows. */
export const agentPromptSchema = z.object({
  title: z.string().max(2048).optional(),
  description: z.string().max(8192).optional(),
});
export type AgentPrompt = z.infer<typeof agentPromptSchema>;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const text = (v: unknown, max: number) => (typeof v === "string" && v.trim() ? v.slice(0, max) : undefined);

/** `_meta.permission`'s `title` and `description` when either is non-blank text; else undefined. */
export function agentPromptOf(meta: unknown): AgentPrompt | undefined {
  const permission = isRecord(meta) ? meta.permission : undefined;
  if (!isRecord(permission)) return undefined;
  const title = text(permission.title, 2048);
  const description = text(permission.description, 8192);
  if (title === undefined && description === undefined) return undefined;
  return { ...(title !== undefined && { title }), ...(description !== undefined && { description }) };
}

/** The keys that ask for no standing answer, each as Claude Code's SDK (camelCase) and its wire (snake_case) spell it. */
const NO_STANDING_ANSWER = [
  "matchedAskRule",
  "matched_ask_rule",
  "suppressAlwaysAllowRule",
  "suppress_always_allow_rule",
];

/**
 * Whether the request's `_meta` (or its `_meta.claudeCode`) carries a `matchedAskRule` or
 * `suppress_always_allow_rule`: any value but absent, `null` or `false` counts (removing choices
 * is the safe side).
 */
export function forbidsStandingAnswer(meta: unknown): boolean {
  if (!isRecord(meta)) return false;
  return [meta, meta.claudeCode].some(
    (m) => isRecord(m) && NO_STANDING_ANSWER.some((k) => m[k] !== undefined && m[k] !== null && m[k] !== false),
  );
}
