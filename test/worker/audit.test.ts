import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { type AuditEvent, auditHash, GENESIS_HASH } from "../../worker/audit-chain";
import { api, askOnce, decide, flush, hubStub, json, type Member, signUp, unique } from "./helpers";

interface Entry {
  seq: number;
  eventId: string;
  action: string;
  prevHash: string;
  hash: string;
  at: number;
}

interface Head {
  teamId: string;
  count: number;
  seq: number;
  hash: string;
  at: number;
}

const verify = async (m: Member) => json(await api("/v1/audit/verify", { cookie: m.cookie }));
const rows = async (teamId: string) =>
  (
    await env.DB.prepare(
      "SELECT seq, event_id AS eventId, action, prev_hash AS prevHash, hash, at FROM audit_log WHERE team_id = ? ORDER BY seq",
    )
      .bind(teamId)
      .all<Entry>()
  ).results;

const head = async (m: Member) => json<Head>(await api("/v1/audit/head", { cookie: m.cookie }));
const verifyAgainst = (m: Member, h: Head) =>
  api("/v1/audit/verify", { method: "POST", cookie: m.cookie, body: JSON.stringify(h) });

/** Runs `edit` with the log's append-only trigger `name` dropped, and puts it back after. */
async function withoutTrigger(name: "audit_log_no_update" | "audit_log_no_delete", edit: () => Promise<unknown>) {
  const verb = name === "audit_log_no_update" ? "UPDATE" : "DELETE";
  await env.DB.exec(`DROP TRIGGER ${name}`);
  try {
    await edit();
  } finally {
    await env.DB.exec(
      `CREATE TRIGGER ${name} BEFORE ${verb} ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;`,
    );
  }
}

function event(teamId: string, action = "test.event"): AuditEvent {
  return { eventId: unique("evt"), teamId, at: Date.now(), actor: "system", action, subject: teamId, detail: { n: 1 } };
}

describe("the audit chain", () => {
  it("links every entry of a team to the one before, from sign-up through a decision", async () => {
    const team = await signUp();
    // A ladder whose one step waits a day: no escalation entry joins this chain (escalation.test.ts has those).
    const escalation = [{ afterMs: 86_400_000, to: "session_owner", via: "push" }];
    const put = await api("/v1/policy", { method: "PUT", cookie: team.cookie, body: JSON.stringify({ escalation }) });
    expect(put.status).toBe(200);
    const { owner, approval, sessionId } = await askOnce(team);
    expect((await decide(owner, approval, "allow")).status).toBe(200);
    await flush(owner.teamId, sessionId);

    const chain = await rows(owner.teamId);
    expect(chain.map((e) => e.action)).toEqual([
      "team.created",
      "auth.signed_in",
      "team.policy_changed",
      "key.created",
      "approval.requested",
      "approval.allowed",
    ]);
    expect(chain[0]?.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < chain.length; i++) expect(chain[i]?.prevHash).toBe(chain[i - 1]?.hash);
    expect(await verify(owner)).toMatchObject({ ok: true, entries: 6 });

    const { entries } = await json<{ entries: Entry[] }>(await api("/v1/audit", { cookie: owner.cookie }));
    expect(entries.map((e) => e.action)).toEqual(chain.map((e) => e.action).reverse());
    const page = await json<{ entries: Entry[]; cursor: string }>(
      await api("/v1/audit?limit=3", { cookie: owner.cookie }),
    );
    const rest = await json<{ entries: Entry[]; cursor: null }>(
      await api(`/v1/audit?limit=3&cursor=${page.cursor}`, { cookie: owner.cookie }),
    );
    expect([...page.entries, ...rest.entries].map((e) => e.seq)).toEqual(entries.map((e) => e.seq));
  });

  it("a replayed event neither advances nor forks the chain, alone or among new ones", async () => {
    const owner = await signUp();
    const first = event(owner.teamId);
    await hubStub(owner.teamId).appendAudit([first]);
    await hubStub(owner.teamId).appendAudit([first]);
    const [a, b] = [event(owner.teamId), event(owner.teamId)];
    await hubStub(owner.teamId).appendAudit([a, first, b, a]);
    // After the team's creation and the owner's sign-in.
    expect((await rows(owner.teamId)).map((e) => e.eventId).slice(2)).toEqual([first.eventId, a.eventId, b.eventId]);
    expect(await verify(owner)).toMatchObject({ ok: true, entries: 5 });
  });

  it("concurrent appends and a write the hub did not make still give one unbroken chain", async () => {
    const owner = await signUp();
    await Promise.all(Array.from({ length: 12 }, () => hubStub(owner.teamId).appendAudit([event(owner.teamId)])));
    // Another writer (a stale or second hub) appends behind this hub's back: its head is now stale.
    const [last] = (await rows(owner.teamId)).slice(-1);
    const intruder = event(owner.teamId, "test.elsewhere");
    await env.DB.prepare(
      `INSERT INTO audit_log (event_id, team_id, at, actor, action, subject, detail, prev_hash, hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
      .bind(
        intruder.eventId,
        owner.teamId,
        intruder.at,
        intruder.actor,
        intruder.action,
        intruder.subject,
        JSON.stringify(intruder.detail),
        last?.hash,
        auditHash(last?.hash as string, intruder),
      )
      .run();
    await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    expect(await verify(owner)).toMatchObject({ ok: true, entries: 16 });
  });
});

describe("tampering", () => {
  afterEach(async () => {
    await env.DB.exec(
      "CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;",
    );
  });

  it("the log refuses updates while its trigger stands", async () => {
    const owner = await signUp();
    await expect(
      env.DB.prepare("UPDATE audit_log SET actor = 'x' WHERE team_id = ?").bind(owner.teamId).run(),
    ).rejects.toThrow(/append-only/);
  });

  it("verify reports the first broken link: an edited row, then a row whose hash was forged to match", async () => {
    const owner = await signUp();
    for (let i = 0; i < 5; i++) await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const chain = await rows(owner.teamId);
    const [third, fourth] = [chain[2] as Entry, chain[3] as Entry];
    await env.DB.exec("DROP TRIGGER audit_log_no_update");

    await env.DB.prepare("UPDATE audit_log SET detail = '{\"n\":2}' WHERE seq = ?").bind(third.seq).run();
    expect(await verify(owner)).toEqual({
      ok: false,
      entries: 3,
      brokenAt: { seq: third.seq, eventId: third.eventId, reason: "hash_mismatch" },
    });

    // Recomputing the edited row's hash moves the break to the next link.
    const row = await env.DB.prepare("SELECT * FROM audit_log WHERE seq = ?")
      .bind(third.seq)
      .first<Record<string, string>>();
    const forged = auditHash(third.prevHash, {
      eventId: third.eventId,
      teamId: owner.teamId,
      at: Number(row?.at),
      actor: row?.actor as string,
      action: third.action,
      subject: row?.subject as string,
      detail: { n: 2 },
    });
    await env.DB.prepare("UPDATE audit_log SET hash = ? WHERE seq = ?").bind(forged, third.seq).run();
    expect(await verify(owner)).toEqual({
      ok: false,
      entries: 4,
      brokenAt: { seq: fourth.seq, eventId: fourth.eventId, reason: "prev_mismatch" },
    });
  });

  it("a removed row breaks the chain at the row after it", async () => {
    const owner = await signUp();
    for (let i = 0; i < 3; i++) await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const chain = await rows(owner.teamId);
    await env.DB.exec("DROP TRIGGER audit_log_no_delete");
    try {
      await env.DB.prepare("DELETE FROM audit_log WHERE seq = ?").bind(chain[1]?.seq).run();
    } finally {
      await env.DB.exec(
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;",
      );
    }
    expect(await verify(owner)).toMatchObject({ ok: false, brokenAt: { seq: chain[2]?.seq, reason: "prev_mismatch" } });
  });
});

describe("the anchor", () => {
  it("exports the head the hub last wrote, and verify compares D1 with it", async () => {
    const owner = await signUp();
    for (let i = 0; i < 3; i++) await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const chain = await rows(owner.teamId);
    const last = chain.at(-1) as Entry;
    const exported = await head(owner);
    expect(exported).toEqual({
      teamId: owner.teamId,
      count: chain.length,
      seq: last.seq,
      hash: last.hash,
      at: last.at,
    });
    expect(await verify(owner)).toEqual({ ok: true, entries: chain.length, head: exported });
  });

  it("deleting the newest entries is reported, and stays reported after the hub writes on", async () => {
    const owner = await signUp();
    for (let i = 0; i < 4; i++) await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const anchored = await head(owner);
    const chain = await rows(owner.teamId);
    await withoutTrigger("audit_log_no_delete", () =>
      env.DB.prepare("DELETE FROM audit_log WHERE team_id = ? AND seq >= ?")
        .bind(owner.teamId, chain[chain.length - 2]?.seq)
        .run(),
    );
    // The remaining rows are a perfect chain: only the anchor can tell.
    expect(await verify(owner)).toMatchObject({
      ok: false,
      entries: chain.length - 2,
      mismatch: { reason: "entries_missing", head: anchored },
    });
    // The hub's next append finds its anchored row gone, writes on, and keeps the lost anchor.
    await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    expect(await verify(owner)).toMatchObject({ ok: false, mismatch: { reason: "entries_missing", head: anchored } });
  });

  it("setting every hash to NULL (rows that look older than the chain) is reported", async () => {
    const owner = await signUp();
    for (let i = 0; i < 2; i++) await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const anchored = await head(owner);
    await withoutTrigger("audit_log_no_update", () =>
      env.DB.prepare("UPDATE audit_log SET hash = NULL, prev_hash = NULL WHERE team_id = ?").bind(owner.teamId).run(),
    );
    expect(await verify(owner)).toMatchObject({
      ok: false,
      entries: anchored.count,
      mismatch: { reason: "head_mismatch", head: anchored },
    });
  });

  it("an exported head is checked too: a rewritten tail the hub's anchor moved along with is caught", async () => {
    const owner = await signUp();
    await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const kept = await head(owner);
    await hubStub(owner.teamId).appendAudit([event(owner.teamId)]);
    const ok = await verifyAgainst(owner, kept);
    expect(ok.status).toBe(200);
    expect(await json(ok)).toMatchObject({ ok: true, entries: kept.count + 1 });

    // An insider who could also reset the hub's storage rewrites history from the kept entry
    // on: every link holds and the hub adopts the rewrite, but the exported head does not match.
    await withoutTrigger("audit_log_no_delete", () =>
      env.DB.prepare("DELETE FROM audit_log WHERE team_id = ? AND seq >= ?").bind(owner.teamId, kept.seq).run(),
    );
    await runInDurableObject(hubStub(owner.teamId), (_, state) => {
      state.storage.sql.exec("DELETE FROM meta WHERE k IN ('audit_anchor', 'audit_lost')");
    });
    await hubStub(owner.teamId).appendAudit([event(owner.teamId, "test.rewritten"), event(owner.teamId)]);
    expect(await verify(owner)).toMatchObject({ ok: true });
    expect(await json(await verifyAgainst(owner, kept))).toMatchObject({
      ok: false,
      mismatch: { reason: "entries_missing", head: kept },
    });

    const forged = await verifyAgainst(owner, { ...kept, hash: "f".repeat(64), seq: (await head(owner)).seq });
    expect(await json(forged)).toMatchObject({ ok: false, mismatch: { reason: "head_mismatch" } });
    const other = await signUp();
    expect((await verifyAgainst(other, kept)).status).toBe(400);
    expect((await verifyAgainst(owner, { ...kept, hash: "nope" })).status).toBe(400);
  });
});

describe("decision events", () => {
  it("carry the request hash and the option chosen", async () => {
    const { owner, approval, sessionId } = await askOnce();
    expect((await decide(owner, approval, "deny")).status).toBe(200);
    await flush(owner.teamId, sessionId);
    const row = await env.DB.prepare("SELECT detail FROM audit_log WHERE event_id = ?")
      .bind(`${approval.id}:approval.denied`)
      .first<{ detail: string }>();
    expect(JSON.parse(row?.detail as string)).toMatchObject({
      state: "denied",
      reason: "decided",
      requestHash: approval.requestHash,
      truncated: null,
      optionId: "deny",
      option: { name: "Deny", kind: "reject_once" },
    });
  });
});
