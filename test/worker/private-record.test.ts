/**
 * A private request recorded and routed (docs/human-api.md "Approval" `sealed`): the envelope
 * reaches D1 (migration 0039's `sealed` column) through the gate's outbox, and history, the live
 * feed and the lists carry it; the export says which rows are private and carries none of their
 * content.
 */
import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, connectAgent, createKey, decide, flush, json, pendingApprovals, signUp, unique } from "./helpers";
import { CANARY, sealedPermission, setPrivacy } from "./private-helpers";
import { openLive } from "./team-helpers";

describe("a private request's record", () => {
  it("D1, history, the live feed and the export: the envelope where the approval goes, no content anywhere", async () => {
    const owner = await signUp();
    await setPrivacy(owner);
    const { key } = await createKey(owner);
    const live = await openLive(owner);
    const sessionId = unique("sealed-rec");
    const agent = await connectAgent(key, sessionId);
    const { params, sealed } = await sealedPermission(sessionId);
    await agent.ask(1, params);
    const [held] = await vi.waitFor(async () => {
      const found = await pendingApprovals(owner, sessionId);
      if (found.length === 0) throw new Error("not held yet");
      return found;
    });
    expect(held?.sealed).toEqual(sealed);
    const shown = await live.next((f) => (f.approval as Approval | undefined)?.id === held?.id);
    expect((shown.approval as Approval).sealed).toEqual(sealed);

    expect((await decide(owner, held as Approval, "deny")).status).toBe(200);
    await agent.next();
    await flush(owner.teamId, sessionId);
    const row = await env.DB.prepare("SELECT * FROM approvals WHERE id = ?")
      .bind(held?.id)
      .first<Record<string, unknown>>();
    expect(JSON.parse(String(row?.sealed))).toEqual(sealed);
    expect(row?.tool_title).toBeNull();
    const { sealed: _, ...withoutEnvelope } = row ?? {};
    expect(JSON.stringify(withoutEnvelope)).not.toContain(CANARY);

    const history = await json<{ approvals: Approval[] }>(await api("/v1/history", { cookie: owner.cookie }));
    expect(history.approvals.find((a) => a.id === held?.id)?.sealed).toEqual(sealed);

    const csv = await (await api("/v1/history/export?format=csv", { cookie: owner.cookie })).text();
    const [header, line] = csv.trim().split("\r\n");
    expect(header?.split(",").at(-1)).toBe("private");
    expect(line?.split(",").at(-1)).toBe("true");
    expect(csv).not.toContain(CANARY);
    expect(csv).not.toContain(sealed.ciphertext);
  });
});
