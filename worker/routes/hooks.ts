/**
 * Claude Code's HTTP hooks (`type: "http"`), for machines without the `tapgate` binary:
 * `POST /v1/hooks/claude-code?timeout=SECONDS` takes a `PreToolUse` or `PermissionRequest` hook
 * input, opens it on the session's gate (HTTP-held, like the long poll), holds the HTTP request
 * until a human decides or just before the hook's timeout, and answers exactly the JSON
 * `tapgate claude-hook` prints.
 *
 * Claude Code treats a non-2xx answer, a connection failure and a timeout as a non-blocking
 * error and carries on (for `PreToolUse`, into its own permission flow, which may allow). So this
 * route answers 200 with a deny for every failure it sees — a missing or bad key, bad input, a
 * refusal, expiry — and never an empty 2xx ("no decision").
 *
 * Owns: the endpoint, its timeout and its answers. Does not own: the payload → request mapping
 * (`sdk/src/claude/hook.ts`, shared with the command hook), what an answer means
 * (`sdk/src/hooks/decision.ts`), or holding the request (the gate's HTTP side).
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import {
  eventOf,
  type HookEvent,
  type HookInput,
  hookInputSchema,
  hookOutput,
  sanitizeSessionId,
  toolCallIdOf,
  toPermissionRequest,
} from "../../sdk/src/claude/hook";
import { duplicateKeyMessage, findDuplicateKey } from "../../sdk/src/duplicate-keys";
import { decisionOf, deny, type HookDecision, requestAcceptsEdits } from "../../sdk/src/hooks/decision";
import { depthExceeds } from "../../sdk/src/jsonrpc";
import { LIMITS, parseJson } from "../../sdk/src/protocol";
import { agentOf } from "../auth";
import { DomainError } from "../errors";
import { holdOverHttp } from "../team/http-hold";
import type { AppEnv } from "../types";

export const CLAUDE_HOOK_PATH = "/v1/hooks/claude-code";

/** When the settings block names no `?timeout=`: hold no longer than the shortest hook default Claude has (30 s). */
const DEFAULT_TIMEOUT_S = 30;
const MAX_TIMEOUT_S = 24 * 60 * 60;
/** Answer this long before Claude's own timeout, so the answer lands before Claude gives up (at most 5 s, a quarter of short ones). */
const MAX_MARGIN_MS = 5_000;

const timeoutQuery = z.coerce.number().int().min(1).max(MAX_TIMEOUT_S);

/**
 * How long to hold the request: answered `answerByMs` after it arrived, the hook's timeout less a
 * margin; the card expires a little sooner (`lifetimeMs`, at least the gate's 1 s), so that the
 * gate's own expiry, not a withdrawal, normally ends it.
 */
export function holdFor(timeoutS: number): { lifetimeMs: number; answerByMs: number } {
  const timeoutMs = timeoutS * 1000;
  const margin = Math.min(MAX_MARGIN_MS, timeoutMs / 4);
  const answerByMs = Math.max(1_000, timeoutMs - margin);
  return { lifetimeMs: Math.max(1_000, answerByMs - Math.min(1_000, margin / 2)), answerByMs };
}

/** The most the hook reads of a body, counted while it streams: more is a deny, and the rest is never read. */
export const HOOK_BODY_BYTES = 64 * 1024;

/** Claude can read only a hook answer with a decision: every failure is a deny, in the event's shape when known. */
function answer(c: Context, event: HookEvent | undefined, decision: HookDecision) {
  // No event Tapgate answers: the top-level `decision: "block"` every blocking event honours.
  return c.json(event ? hookOutput(event, decision) : { decision: "block", reason: decision.reason }, 200);
}

/**
 * A failure's deny: a refusal's own words (another user's session, a just-revoked key), else
 * whether a human may have seen the request already (it was opened) or nothing was decided.
 */
function failed(err: unknown, opened: boolean): HookDecision {
  if (err instanceof DomainError) return deny(`Tapgate: ${err.message}`);
  console.error("claude http hook failed", err instanceof Error ? err.name : "");
  return deny(
    opened
      ? "Tapgate: something went wrong while waiting for a decision; denied here (see the request on Tapgate)"
      : "Tapgate: something went wrong; nothing was decided",
  );
}

/**
 * A failure the app's error handler caught on this path, before the body was read (a host the
 * server does not answer for, the key's lookup failing): a 200 deny like every other, never the
 * 421 or 500 other routes get.
 */
export const hookFailure = (c: Context, err: unknown) => answer(c, undefined, failed(err, false));

/**
 * The key first, with nothing read of the body; then the body, at most `HOOK_BODY_BYTES`; only
 * then is anything parsed. A caller without a key costs no read, and a caller with one no more
 * than the limit.
 */
export const hookRoutes = new Hono<AppEnv>().post(CLAUDE_HOOK_PATH, async (c) => {
  const agent = await agentOrProblem(c);
  if (typeof agent === "string") return answer(c, undefined, deny(`Tapgate: ${agent}`));
  const body = await readAtMost(c.req.raw, HOOK_BODY_BYTES);
  if ("tooLarge" in body) {
    return answer(c, eventNamedIn(body.start), deny(`Tapgate: the hook input is larger than ${HOOK_BODY_BYTES} bytes`));
  }
  const input = parseJson(body.text);
  const progress = { opened: false };
  try {
    return answer(c, eventOf(input), await decide(c, agent, body.text, input, progress));
  } catch (err) {
    return answer(c, eventOf(input), failed(err, progress.opened));
  }
});

/** The body's text, read chunk by chunk and no further than `maxBytes`; past it, the start (to find the event). */
async function readAtMost(
  request: Request,
  maxBytes: number,
): Promise<{ text: string } | { tooLarge: true; start: string }> {
  const decoder = new TextDecoder();
  if (!request.body) return { text: "" };
  const reader = request.body.getReader();
  let text = "";
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode() };
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel();
      return { tooLarge: true, start: text };
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** The event an oversized body names near its start (Claude sends `hook_event_name` before the tool's input), for the deny's shape only. */
function eventNamedIn(start: string): HookEvent | undefined {
  return eventOf({ hook_event_name: /"hook_event_name"\s*:\s*"([A-Za-z]+)"/.exec(start)?.[1] });
}

async function decide(
  c: Context<AppEnv>,
  agent: Agent,
  text: string,
  input: unknown,
  progress: { opened: boolean },
): Promise<HookDecision> {
  if (input === undefined) return deny("Tapgate: the hook input is not JSON");
  const duplicate = findDuplicateKey(text);
  if (duplicate) return deny(`Tapgate: ${duplicateKeyMessage(duplicate)}`);
  if (depthExceeds(input, LIMITS.jsonDepth)) return deny(`Tapgate: JSON nested deeper than ${LIMITS.jsonDepth}`);
  const timeout = c.req.query("timeout");
  const timeoutS = timeout === undefined ? DEFAULT_TIMEOUT_S : timeoutQuery.safeParse(timeout).data;
  if (timeoutS === undefined) {
    return deny(`Tapgate: invalid ?timeout=${JSON.stringify(timeout)}: use whole seconds from 1 to ${MAX_TIMEOUT_S}`);
  }
  const parsed = hookInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    return deny(`Tapgate: invalid hook input (${where}${issue?.message})`);
  }
  return hold(c, agent, parsed.data, holdFor(timeoutS), progress);
}

/** The key's identity, or why there is none, worded for the person reading Claude's transcript. */
async function agentOrProblem(c: Context<AppEnv>) {
  const header = c.req.header("Authorization") ?? "";
  if (/^\s*(Bearer\s*)?$/i.test(header)) {
    // Claude Code sends an empty string for a variable that `allowedEnvVars` does not list, or that is unset.
    return 'no API key: set TAPGATE_API_KEY and list it in the hook\'s "allowedEnvVars"';
  }
  try {
    return await agentOf(c);
  } catch (err) {
    if (err instanceof DomainError) return `${err.message} — create a new one (tapgate login, or POST /v1/keys)`;
    throw err;
  }
}

type Agent = Awaited<ReturnType<typeof agentOf>>;

async function hold(
  c: Context<AppEnv>,
  agent: Agent,
  input: HookInput,
  { lifetimeMs, answerByMs }: ReturnType<typeof holdFor>,
  progress: { opened: boolean },
): Promise<HookDecision> {
  const sessionId = sanitizeSessionId(input.session_id);
  const request = toPermissionRequest(input, sessionId, toolCallIdOf(input), () => ({
    withheld: "the HTTP hook cannot read the agent's files",
  }));
  const info = { title: "Claude Code", agent: { name: "claude-code" }, ...(input.cwd && { cwd: input.cwd }) };
  const onOpened = () => {
    progress.opened = true;
  };
  const later = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  const asked = await holdOverHttp(c.env, agent, request, info, { lifetimeMs, answerByMs, onOpened }, later);
  return decisionOf(asked, requestAcceptsEdits(request));
}
