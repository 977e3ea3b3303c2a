/**
 * The human-API contract (sdk/src/human): every answer the PWA reads parses with its schema, and
 * the approval's owner has one name everywhere, `owner: {userId, name}`, in REST and the live feed.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import * as H from "../../sdk/src/human/index";
import { api, askOnce, decide, flush, json, signUp } from "./helpers";
import { openLive } from "./team-helpers";

async function answer<S extends z.ZodType>(schema: S, path: string, cookie: string, init: RequestInit = {}) {
  const response = await api(path, { cookie, ...init });
  const body = await response.json();
  expect(response.ok, `${path} answered ${response.status}: ${JSON.stringify(body)}`).toBe(true);
  const parsed = schema.safeParse(body);
  expect(parsed.error?.issues ?? [], `${path} does not match its schema`).toEqual([]);
  return parsed.data as z.output<S>;
}

describe("the human-API contract", () => {
  it("names the owner of an approval the same way in the list, the approval, the live feed and the history", async () => {
    const owner = await signUp("Ada");
    const feed = await openLive(owner);
    const { approval, sessionId, agent } = await askOnce(owner);
    const expected = { userId: owner.userId, name: "Ada" };

    const live = await feed.next((f) => f.type === "approval" && (f.approval as { id: string }).id === approval.id);
    const event = H.liveEventSchema.parse(live);
    expect(event.type === "approval" && event.approval.owner).toEqual(expected);
    expect(live.approval).not.toHaveProperty("ownerUserId");

    for (const scope of ["team", "mine"]) {
      const page = await answer(H.approvalPageSchema, `/v1/approvals?state=pending&scope=${scope}`, owner.cookie);
      expect(page.approvals.find((a) => a.id === approval.id)?.owner).toEqual(expected);
    }
    const detail = await answer(H.approvalAnswerSchema, `/v1/approvals/${approval.id}`, owner.cookie);
    expect(detail.owner).toEqual(expected);

    const decided = await decide(owner, approval, "allow");
    expect(decided.status).toBe(200);
    H.decisionAnswerSchema.parse(await decided.json());
    const resolved = await feed.next((f) => f.type === "resolved" && (f.approval as { id: string }).id === approval.id);
    expect(H.liveEventSchema.parse(resolved)).toMatchObject({ type: "resolved", approval: { owner: expected } });

    await agent.next();
    await flush(owner.teamId, sessionId);
    const resolvedPage = await answer(H.approvalPageSchema, "/v1/approvals?state=resolved", owner.cookie);
    expect(resolvedPage.approvals.find((a) => a.id === approval.id)?.owner).toEqual(expected);
    const history = await answer(H.historyPageSchema, "/v1/history", owner.cookie);
    expect(history.approvals.find((a) => a.id === approval.id)?.owner).toEqual(expected);
    const session = await answer(H.sessionDetailSchema, `/v1/sessions/${sessionId}`, owner.cookie);
    expect(session.owner).toEqual(expected);
    feed.ws.close();
  });

  it("answers every dashboard read in the contract's shapes", async () => {
    const owner = await signUp("Bea");
    await askOnce(owner);
    const c = owner.cookie;
    expect((await answer(H.meSchema, "/v1/me", c)).role).toBe("owner");
    await answer(H.teamListSchema, "/v1/teams", c);
    await answer(H.memberListSchema, "/v1/members", c);
    await answer(H.createdInviteSchema, "/v1/invites", c, { method: "POST", body: JSON.stringify({ role: "viewer" }) });
    await answer(H.inviteListSchema, "/v1/invites", c);
    await answer(H.keyListSchema, "/v1/keys?scope=team", c);
    await answer(H.teamPolicySchema, "/v1/policy", c);
    await answer(H.sessionListSchema, "/v1/sessions?state=recent", c);
    await answer(H.deviceListSchema, "/v1/devices", c);
    await answer(H.auditPageSchema, "/v1/audit", c);
    await answer(H.auditVerdictSchema, "/v1/audit/verify", c);
    await answer(H.statsSchema, "/v1/stats?days=7", c);
    await answer(H.pairingAnswerSchema, "/v1/pairing", c, { method: "POST", body: "{}" });
    await answer(H.createdKeySchema, "/v1/keys", c, { method: "POST", body: JSON.stringify({ label: "ci" }) });
  });

  it("renders every refusal as the error table's body", async () => {
    const owner = await signUp("Cy");
    const refused = await api("/v1/approvals/apr_nope", { cookie: owner.cookie });
    expect(refused.status).toBe(404);
    expect(H.errorBodySchema.parse(await json(refused)).error).toBe("not_found");
  });
});
