/**
 * ACP subagents, as the `tapgate acp` proxy and `tapgate run` see them: a parent session's
 * `session/update {sessionUpdate: "subagent_update"}` announces a child session (the id its own
 * requests carry), what the parent calls it, its task and its state. Owns the child → parent map
 * and what counts as a child's end. Does not own the child's requests (the proxy ends them) or its
 * Tapgate session (`GateSessions` ties it to the parent's connection).
 *
 * Both spellings are read: ACP 2.x's `{sessionId, title, description, state: {state}}` and the
 * earlier draft's `{subagentSessionId, name, task, state}`. Fields patch: absent leaves the stored
 * value, `null` clears it.
 */
import { isRecord } from "../jsonrpc.js";
import type { SessionParent } from "../protocol.js";

export interface Subagent {
  parentId: string;
  name?: string;
  task?: string;
}

/** States after which the child has no foreground work, so a request of its still open is stale. */
const ENDED_STATES = new Set(["idle", "completed", "failed", "cancelled", "ended"]);

export class Subagents {
  readonly #children = new Map<string, Subagent>();

  /** The child an update announces or changes, and whether it says the child's work ended; else undefined. */
  observe(params: unknown): { childId: string; ended: boolean } | undefined {
    if (!isRecord(params) || typeof params.sessionId !== "string" || !isRecord(params.update)) return undefined;
    const update = params.update;
    if (update.sessionUpdate !== "subagent_update") return undefined;
    const childId = stringField(update, "sessionId") ?? stringField(update, "subagentSessionId");
    if (!childId || childId === params.sessionId) return undefined;
    const known = this.#children.get(childId);
    const child: Subagent = { parentId: known?.parentId ?? params.sessionId };
    const name = patched(known?.name, update, "title", "name");
    const task = patched(known?.task, update, "description", "task");
    if (name !== undefined) child.name = name;
    if (task !== undefined) child.task = task;
    this.#children.set(childId, child);
    const state = isRecord(update.state) ? update.state.state : update.state;
    return { childId, ended: typeof state === "string" && ENDED_STATES.has(state) };
  }

  parentOf(sessionId: string): Subagent | undefined {
    return this.#children.get(sessionId);
  }

  /** Whether `sessionId` is `ancestorId`'s subagent, or a subagent of one of them. */
  descendsFrom(sessionId: string, ancestorId: string): boolean {
    const seen = new Set<string>();
    for (let id = this.#children.get(sessionId)?.parentId; id && !seen.has(id); id = this.#children.get(id)?.parentId) {
      if (id === ancestorId) return true;
      seen.add(id);
    }
    return false;
  }

  /** What a subagent's session tells Tapgate about its parent (`title` is the parent's). */
  parentMeta(sessionId: string, parentTitle: string | undefined): SessionParent | undefined {
    const child = this.#children.get(sessionId);
    if (!child) return undefined;
    return {
      sessionId: child.parentId,
      ...(parentTitle === undefined ? {} : { title: parentTitle }),
      ...(child.name === undefined ? {} : { name: child.name }),
      ...(child.task === undefined ? {} : { task: child.task }),
    };
  }
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === "string" && value ? value : undefined;
}

/** The first of `keys` the update carries wins: a string replaces, `null` clears, absent keeps `known`. */
function patched(known: string | undefined, update: Record<string, unknown>, ...keys: string[]): string | undefined {
  for (const key of keys) {
    if (!(key in update)) continue;
    const value = update[key];
    return typeof value === "string" ? value : undefined;
  }
  return known;
}
