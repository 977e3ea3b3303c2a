/**
 * A decision takes the web identity from the isolate's cache and has the team's hub vouch for it
 * (worker/hub/vouching.ts), so it reads no D1. Each change below is made as another isolate
 * would make it, D1 first and then the team's hub, while this isolate still caches the session.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { sha256Hex } from "../../worker/crypto";
import type { TeamHub } from "../../worker/hub/team-hub";
import { ENDED_MEMORY_MS, VOUCH_DIRECTORY_MS } from "../../worker/hub/vouching";
import { api, askOnce, decide, hubStub, json, type Member, signUp } from "./helpers";
import { addMember } from "./team-helpers";

const tokenHashOf = (m: Member) => sha256Hex(m.cookie.slice(m.cookie.indexOf("=") + 1));

/** An approver whose identity this isolate caches, and a pending request of their team. */
async function cachedApprover() {
  const owner = await signUp("Olga");
  const bob = await addMember(owner, "approver", "Bob");
  const { approval } = await askOnce(owner);
  expect((await api("/v1/me", { cookie: bob.cookie })).status).toBe(200);
  return { owner, bob, approval };
}

/** Moves the member's web session to another team they join, straight in D1, as another isolate would. */
async function moveToAnotherTeam(m: Member): Promise<Member> {
  const other = await signUp("Oscar");
  await env.DB.batch([
    env.DB.prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'approver', ?)").bind(
      other.teamId,
      m.userId,
      Date.now(),
    ),
    env.DB.prepare("UPDATE web_sessions SET team_id = ? WHERE token_hash = ?").bind(other.teamId, tokenHashOf(m)),
  ]);
  return other;
}

async function expectRefused(m: Member, approval: Approval, status: number, error: string) {
  const refused = await decide(m, approval, "allow");
  expect(refused.status).toBe(status);
  expect(await json(refused)).toMatchObject({ error });
}

const stateOf = async (owner: Member, approval: Approval) =>
  (await json<Approval>(await api(`/v1/approvals/${approval.id}`, { cookie: owner.cookie }))).state;

describe("a decision's web identity, vouched for by the team's hub", () => {
  it("decides with the cached identity while nothing changed", async () => {
    const { owner, bob, approval } = await cachedApprover();
    expect((await decide(bob, approval, "allow")).status).toBe(200);
    expect(await stateOf(owner, approval)).toBe("allowed");
  });

  it("a demotion made elsewhere refuses the next decision", async () => {
    const { owner, bob, approval } = await cachedApprover();
    await env.DB.prepare("UPDATE memberships SET role = 'viewer' WHERE team_id = ? AND user_id = ?")
      .bind(owner.teamId, bob.userId)
      .run();
    await hubStub(owner.teamId).forgetDirectory();
    await expectRefused(bob, approval, 403, "forbidden");
    expect(await stateOf(owner, approval)).toBe("pending");
  });

  it("a sign-out made elsewhere refuses the next decision", async () => {
    const { owner, bob, approval } = await cachedApprover();
    await env.DB.prepare("DELETE FROM web_sessions WHERE token_hash = ?").bind(tokenHashOf(bob)).run();
    await hubStub(owner.teamId).closeWebSession(tokenHashOf(bob));
    await expectRefused(bob, approval, 401, "unauthenticated");
    expect(await stateOf(owner, approval)).toBe("pending");
  });

  it("after a move to another team made elsewhere, the old team's request is not found", async () => {
    const { owner, bob, approval } = await cachedApprover();
    await moveToAnotherTeam(bob);
    await hubStub(owner.teamId).closeWebSession(tokenHashOf(bob));
    await expectRefused(bob, approval, 404, "not_found");
    expect(await stateOf(owner, approval)).toBe("pending");
  });

  it("a sign-out through an isolate that still caches the old team reaches the team the session moved to", async () => {
    const { owner, bob } = await cachedApprover();
    const other = await moveToAnotherTeam(bob);
    expect(await hubStub(other.teamId).currentRole(tokenHashOf(bob), bob.userId)).toBe("approver");
    const out = await api("/v1/auth/signout", { method: "POST", cookie: bob.cookie });
    expect(out.status).toBe(200);
    expect(await hubStub(other.teamId).currentRole(tokenHashOf(bob), bob.userId)).toBeNull();
    expect(await hubStub(owner.teamId).currentRole(tokenHashOf(bob), bob.userId)).toBeNull();
  });

  it("a removal ends the member's sessions at the hub, so a quick re-invite does not revive them", async () => {
    const { owner, bob } = await cachedApprover();
    expect((await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
    await env.DB.prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'approver', ?)")
      .bind(owner.teamId, bob.userId, Date.now())
      .run();
    await hubStub(owner.teamId).forgetDirectory();
    expect(await hubStub(owner.teamId).currentRole(tokenHashOf(bob), bob.userId)).toBeNull();
  });

  it("vouches only with roles read within VOUCH_DIRECTORY_MS, so a removal the hub never heard of still refuses", async () => {
    const { owner, bob, approval } = await cachedApprover();
    await env.DB.prepare("DELETE FROM memberships WHERE team_id = ? AND user_id = ?")
      .bind(owner.teamId, bob.userId)
      .run();
    await runInDurableObject(hubStub(owner.teamId), (_hub: TeamHub, state) => {
      state.storage.sql.exec(
        "UPDATE meta SET v = ? WHERE k = 'directory'",
        String(Date.now() - VOUCH_DIRECTORY_MS - 1),
      );
    });
    await expectRefused(bob, approval, 401, "unauthenticated");
    expect(await stateOf(owner, approval)).toBe("pending");
  });

  it("remembers an ended session for ENDED_MEMORY_MS, then forgets it", async () => {
    const { owner, bob } = await cachedApprover();
    const hub = hubStub(owner.teamId);
    await hub.closeWebSession(tokenHashOf(bob));
    expect(await hub.currentRole(tokenHashOf(bob), bob.userId)).toBeNull();
    expect(await hub.currentRole(sha256Hex("another browser"), bob.userId)).toBe("approver");
    const ended = () =>
      runInDurableObject(hub, (_hub: TeamHub, state) =>
        state.storage.sql.exec("SELECT token_hash FROM ended_web_sessions").toArray(),
      );
    await runInDurableObject(hub, (_hub: TeamHub, state) => {
      state.storage.sql.exec("UPDATE ended_web_sessions SET ended_at = ?", Date.now() - ENDED_MEMORY_MS - 1);
    });
    expect(await hub.currentRole(tokenHashOf(bob), bob.userId)).toBe("approver");
    // The next session to end sweeps the forgotten one away.
    await hub.closeWebSession(sha256Hex("another browser"));
    expect(await ended()).toEqual([{ token_hash: sha256Hex("another browser") }]);
  });
});
