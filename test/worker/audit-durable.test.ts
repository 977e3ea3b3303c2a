/**
 * Route-side audit events are durable: each is queued in D1 (`audit_outbox`) in the same batch
 * as the action it records, so an action that cannot be recorded does not happen, and one the
 * hub cannot chain now is chained later.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../worker/audit-chain";
import { sha256Hex } from "../../worker/crypto";
import { DEFAULT_POLICY } from "../../worker/policy";
import { api, createKey, hubStub, json, lastMailLink, type Member, signUp, tokenOf, unique } from "./helpers";
import { addMember } from "./team-helpers";

const verify = async (m: Member) => json(await api("/v1/audit/verify", { cookie: m.cookie }));
const rows = async (teamId: string) =>
  (
    await env.DB.prepare("SELECT event_id AS eventId, action, detail FROM audit_log WHERE team_id = ? ORDER BY seq")
      .bind(teamId)
      .all<{ eventId: string; action: string; detail: string }>()
  ).results;
const queued = async (teamId: string) =>
  (
    await env.DB.prepare(
      "SELECT event_id AS eventId, json_extract(event, '$.action') AS action FROM audit_outbox WHERE team_id = ? ORDER BY created_at, rowid",
    )
      .bind(teamId)
      .all<{ eventId: string; action: string }>()
  ).results;

function event(teamId: string, action = "test.event"): AuditEvent {
  return { eventId: unique("evt"), teamId, at: Date.now(), actor: "system", action, subject: teamId, detail: { n: 1 } };
}

/** Runs `work` while every insert of the team's rows into `table` aborts (D1 refusing them). */
async function refusingInserts<T>(table: "audit_log" | "audit_outbox", teamId: string, work: () => Promise<T>) {
  const trigger = `${table}_block_${teamId.replace(/\W/g, "_")}`;
  await env.DB.exec(
    `CREATE TRIGGER ${trigger} BEFORE INSERT ON ${table} WHEN NEW.team_id = '${teamId}' BEGIN SELECT RAISE(ABORT, 'audit down'); END;`,
  );
  try {
    return await work();
  } finally {
    await env.DB.exec(`DROP TRIGGER ${trigger}`);
  }
}

const post = (path: string, body: unknown, cookie?: string) =>
  api(path, { method: "POST", cookie, body: JSON.stringify(body) });
const changeRole = (by: Member, target: Member, role: string) =>
  api(`/v1/members/${target.userId}`, { method: "PATCH", cookie: by.cookie, body: JSON.stringify({ role }) });
const remove = (by: Member, target: Member) =>
  api(`/v1/members/${target.userId}`, { method: "DELETE", cookie: by.cookie });
async function inviteToken(by: Member, role: string): Promise<string> {
  const response = await post("/v1/invites", { role }, by.cookie);
  expect(response.status).toBe(201);
  return tokenOf((await json<{ url: string }>(response)).url);
}
async function pairingToken(m: Member): Promise<string> {
  const response = await post("/v1/pairing", {}, m.cookie);
  expect(response.status).toBe(201);
  return tokenOf((await json<{ url: string }>(response)).url);
}
const membership = (teamId: string, userId: string) =>
  env.DB.prepare("SELECT role FROM memberships WHERE team_id = ? AND user_id = ?")
    .bind(teamId, userId)
    .first<{ role: string }>();

describe("durable route-side audit", () => {
  it("an action whose hub append fails still succeeds recorded: the event lands once the hub can write", async () => {
    const owner = await signUp();
    // The hub's writes to the chain fail (as if D1 refused them or the hub were down).
    const trigger = `audit_block_${owner.teamId.replace(/\W/g, "_")}`;
    await env.DB.exec(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON audit_log WHEN NEW.team_id = '${owner.teamId}' BEGIN SELECT RAISE(ABORT, 'audit down'); END;`,
    );
    let keyId: string;
    try {
      keyId = (await createKey(owner, "while the hub is down")).id;
      // Revoking twice: the second revokes nothing, so it records nothing.
      for (let i = 0; i < 2; i++) {
        expect((await api(`/v1/keys/${keyId}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(200);
      }
      const policy = { ...DEFAULT_POLICY, lifetimeMs: 120_000 };
      const put = await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify(policy) });
      expect(put.status).toBe(200);
      expect((await rows(owner.teamId)).map((e) => e.action)).toEqual(["team.created", "auth.signed_in"]);
      const queued = await env.DB.prepare(
        "SELECT event_id FROM audit_outbox WHERE team_id = ? ORDER BY created_at, rowid",
      )
        .bind(owner.teamId)
        .all<{ event_id: string }>();
      expect(queued.results.map((r) => r.event_id)).toEqual([
        `key_created:${keyId}`,
        `key_revoked:${keyId}`,
        `policy_changed:${owner.teamId}:1`,
      ]);
    } finally {
      await env.DB.exec(`DROP TRIGGER ${trigger}`);
    }
    // The hub's next append (a gate's, here one of ours) drains the outbox behind its own events.
    const next = event(owner.teamId);
    await hubStub(owner.teamId).appendAudit([next]);
    expect((await rows(owner.teamId)).map((e) => e.eventId)).toEqual([
      expect.any(String),
      expect.any(String),
      next.eventId,
      `key_created:${keyId}`,
      `key_revoked:${keyId}`,
      `policy_changed:${owner.teamId}:1`,
    ]);
    expect(await verify(owner)).toMatchObject({ ok: true, entries: 6 });
    const left = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_outbox WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("an action whose audit event cannot be queued does not happen: the batch rolls back and the route errs", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const carol = await addMember(owner, "viewer", "Carol");
    const invited = await signUp("Ivan");
    const invite = await inviteToken(owner, "approver");
    const pairing = await pairingToken(owner);
    const before = await queued(owner.teamId);

    await refusingInserts("audit_outbox", owner.teamId, async () => {
      expect((await changeRole(owner, bob, "viewer")).status).toBe(500);
      expect((await remove(owner, carol)).status).toBe(500);
      expect((await post("/v1/invites/accept", { token: invite }, invited.cookie)).status).toBe(500);
      const claim = await post("/v1/pairing/claim", { token: pairing, confirm: true });
      expect(claim.status).toBe(500);
      expect(claim.headers.get("Set-Cookie")).toBeNull();
    });

    expect(await membership(owner.teamId, bob.userId)).toEqual({ role: "approver" });
    expect(await membership(owner.teamId, carol.userId)).toEqual({ role: "viewer" });
    const removals = await env.DB.prepare("SELECT COUNT(*) AS n FROM removed_members WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ n: number }>();
    expect(removals?.n).toBe(0);
    expect((await api("/v1/me", { cookie: carol.cookie })).status).toBe(200);
    expect(await membership(owner.teamId, invited.userId)).toBeNull();
    const unused = await env.DB.prepare("SELECT used_at FROM invites WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ used_at: number | null }>();
    expect(unused?.used_at).toBeNull();
    const token = await env.DB.prepare("SELECT used_at FROM pairing_tokens WHERE team_id = ?")
      .bind(owner.teamId)
      .first<{ used_at: number | null }>();
    expect(token?.used_at).toBeNull();
    expect(await queued(owner.teamId)).toEqual(before);

    // Once the outbox takes inserts again, the same actions go through, each recorded.
    expect((await changeRole(owner, bob, "viewer")).status).toBe(200);
    expect((await remove(owner, carol)).status).toBe(200);
    expect((await post("/v1/invites/accept", { token: invite }, invited.cookie)).status).toBe(200);
    expect((await post("/v1/pairing/claim", { token: pairing, confirm: true })).status).toBe(200);
    expect((await rows(owner.teamId)).map((e) => e.action)).toEqual([
      "team.created",
      "auth.signed_in",
      "member.invited",
      "pairing.created",
      "member.role_changed",
      "member.removed",
      "member.joined",
      "pairing.claimed",
      "auth.signed_in",
    ]);
  });

  it("members, invites and pairing claims succeed while the hub cannot chain, and their events land later", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const bobKey = await createKey(bob);
    const invited = await signUp("Ivan");
    const pairing = await pairingToken(owner);

    await refusingInserts("audit_log", owner.teamId, async () => {
      expect((await changeRole(owner, bob, "viewer")).status).toBe(200);
      expect((await remove(owner, bob)).status).toBe(200);
      const invite = await inviteToken(owner, "approver");
      expect((await post("/v1/invites/accept", { token: invite }, invited.cookie)).status).toBe(200);
      expect((await post("/v1/pairing/claim", { token: pairing, confirm: true })).status).toBe(200);
      expect((await rows(owner.teamId)).map((e) => e.action)).toEqual([
        "team.created",
        "auth.signed_in",
        "key.created",
        "pairing.created",
      ]);
      expect((await queued(owner.teamId)).map((e) => e.action)).toEqual([
        "member.role_changed",
        "member.removed",
        "member.invited",
        "member.joined",
        "pairing.claimed",
        "auth.signed_in",
      ]);
    });
    expect(await membership(owner.teamId, bob.userId)).toBeNull();
    expect(await membership(owner.teamId, invited.userId)).toEqual({ role: "approver" });

    await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const chained = await rows(owner.teamId);
    expect(chained.map((e) => e.action).slice(5)).toEqual([
      "member.role_changed",
      "member.removed",
      "member.invited",
      "member.joined",
      "pairing.claimed",
      "auth.signed_in",
    ]);
    // The removal's batch filled in what it found: the role it removed and the key it revoked.
    const removed = chained.find((e) => e.action === "member.removed");
    expect(JSON.parse(removed?.detail as string)).toEqual({ role: "viewer", left: false, revokedKeys: 1 });
    expect(chained.find((e) => e.eventId === `key_created:${bobKey.id}`)).toBeDefined();
    expect(await queued(owner.teamId)).toEqual([]);
    expect(await verify(owner)).toMatchObject({ ok: true, entries: chained.length });
  });

  it("invites, device codes and sign-ins whose event cannot be queued do not happen either", async () => {
    const owner = await signUp("Olga");
    const pending = await inviteToken(owner, "viewer");
    const inviteId = await env.DB.prepare("SELECT id FROM invites WHERE token_hash = ?")
      .bind(sha256Hex(pending))
      .first<{ id: string }>();
    const code = await json<{ deviceCode: string; userCode: string }>(
      await post("/v1/device/code", { clientName: "olga-laptop" }),
    );
    const approve = () => api(`/v1/device/${code.userCode}/approve`, { method: "POST", cookie: owner.cookie });
    const poll = async () => {
      // The terminal waited its interval (without sleeping in the test).
      await env.DB.prepare("UPDATE device_codes SET last_polled_at = NULL WHERE device_code_hash = ?")
        .bind(sha256Hex(code.deviceCode))
        .run();
      return post("/v1/device/token", { deviceCode: code.deviceCode });
    };
    const status = async () =>
      (
        await env.DB.prepare("SELECT status FROM device_codes WHERE device_code_hash = ?")
          .bind(sha256Hex(code.deviceCode))
          .first<{ status: string }>()
      )?.status;
    const invites = async () =>
      (
        await env.DB.prepare("SELECT COUNT(*) AS n FROM invites WHERE team_id = ? AND revoked_at IS NULL")
          .bind(owner.teamId)
          .first<{ n: number }>()
      )?.n;
    const sessions = async () =>
      (
        await env.DB.prepare("SELECT COUNT(*) AS n FROM web_sessions WHERE user_id = ?")
          .bind(owner.userId)
          .first<{ n: number }>()
      )?.n;
    const before = { queued: await queued(owner.teamId), sessions: await sessions() };
    expect(await invites()).toBe(1);
    expect((await post("/v1/auth/signin", { email: owner.email })).status).toBe(202);
    const signInLink = tokenOf(await lastMailLink(owner.email));

    await refusingInserts("audit_outbox", owner.teamId, async () => {
      expect((await post("/v1/invites", { role: "viewer" }, owner.cookie)).status).toBe(500);
      expect((await api(`/v1/invites/${inviteId?.id}`, { method: "DELETE", cookie: owner.cookie })).status).toBe(500);
      expect((await approve()).status).toBe(500);
    });
    expect(await status()).toBe("pending");
    expect(await invites()).toBe(1);
    expect((await approve()).status).toBe(200);
    expect(await status()).toBe("approved");
    await refusingInserts("audit_outbox", owner.teamId, async () => {
      expect((await poll()).status).toBe(500);
      const signIn = await post("/v1/auth/link", { token: signInLink });
      expect(signIn.status).toBe(500);
      expect(signIn.headers.get("Set-Cookie")).toBeNull();
    });
    expect(await status()).toBe("approved");
    expect(await sessions()).toBe(before.sessions);
    expect((await queued(owner.teamId)).slice(0, before.queued.length)).toEqual(before.queued);

    const issued = await poll();
    expect(issued.status).toBe(200);
    const { keyId } = await json<{ keyId: string }>(issued);
    expect(await status()).toBe("consumed");
    const actions = (await rows(owner.teamId)).map((e) => e.eventId);
    expect(actions).toContain(`key_created:${keyId}`);
    expect(actions.filter((id) => id.startsWith("device_approved:"))).toHaveLength(1);
  });
});

describe("an unexpected failure's answer", () => {
  it("says nothing was decided only when nothing could have been: a failed write says to reload first", async () => {
    const owner = await signUp("Broken");
    const trigger = `broken_keys_${owner.teamId.replace(/\W/g, "")}`;
    await env.DB.exec(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON api_keys WHEN NEW.team_id = '${owner.teamId}' BEGIN SELECT RAISE(ABORT, 'keys down'); END;`,
    );
    try {
      const res = await post("/v1/keys", { label: "while D1 is down" }, owner.cookie);
      expect(res.status).toBe(500);
      const body = await json<{ error: string; message: string }>(res);
      expect(body.error).toBe("internal_error");
      expect(body.message).not.toContain("nothing was decided");
      expect(body.message).toContain("may have taken effect");
    } finally {
      await env.DB.exec(`DROP TRIGGER ${trigger}`);
    }
  });
});
