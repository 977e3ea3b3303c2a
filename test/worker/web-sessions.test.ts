/** Web sessions a person can see and end, idle expiry, the reauth window, and audited sign-ins. */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newId, randomToken, sha256Hex } from "../../worker/crypto";
import { WEB_SESSION_IDLE_MS } from "../../worker/db";
import { api, confirmLink, cookieOf, hubStub, json, lastMailLink, type Member, signUp, tokenOf } from "./helpers";
import { addMember, openLive } from "./team-helpers";

interface SessionInfo {
  id: string;
  device: string | null;
  method: string;
  createdAt: number;
  lastSeenAt: number;
  current: boolean;
}

const post = (path: string, body: unknown, init: RequestInit & { cookie?: string } = {}) =>
  api(path, { method: "POST", body: JSON.stringify(body), ...init });

/** Signs the same person in from another browser (by mailed link); answers that browser's cookie. */
async function signInElsewhere(m: Member, userAgent: string, cookie?: string): Promise<string> {
  await post("/v1/auth/signin", { email: m.email });
  const confirmed = await api("/v1/auth/link", {
    method: "POST",
    body: JSON.stringify({ token: tokenOf(await lastMailLink(m.email)) }),
    headers: { "User-Agent": userAgent },
    cookie,
  });
  expect(confirmed.status).toBe(200);
  return cookieOf(confirmed) || (cookie ?? "");
}

const sessionsOf = async (cookie: string) =>
  (await json<{ sessions: SessionInfo[] }>(await api("/v1/auth/sessions", { cookie }))).sessions;

/** A web session written straight to D1 (never looked up, so not cached), with chosen times. */
async function sessionWith(m: Member, t: { lastSeenAgo?: number; signedInAgo?: number }): Promise<string> {
  const token = randomToken();
  const now = Date.now();
  await env.DB.prepare(
    `INSERT INTO web_sessions (token_hash, id, user_id, team_id, method, created_at, signed_in_at, expires_at,
                               last_seen_at)
     VALUES (?1, ?2, ?3, ?4, 'email_link', ?5, ?6, ?7, ?8)`,
  )
    .bind(
      sha256Hex(token),
      newId("wss"),
      m.userId,
      m.teamId,
      now - 20 * 86_400_000,
      now - (t.signedInAgo ?? 0),
      now + 86_400_000,
      now - (t.lastSeenAgo ?? 0),
    )
    .run();
  return `__Host-tapgate=${token}`;
}

describe("signed-in devices", () => {
  it("lists my sessions by id (never by token), and ending one signs that browser out and closes its feed", async () => {
    const ada = await signUp("Ada");
    const phone = await signInElsewhere(ada, "Phone/1.0");
    const list = await sessionsOf(ada.cookie);
    expect(list).toHaveLength(2);
    const current = list.find((s) => s.current);
    const other = list.find((s) => !s.current);
    expect(other).toMatchObject({ device: "Phone/1.0", method: "email_link", id: expect.stringMatching(/^wss_/) });
    expect(current?.id).not.toBe(other?.id);
    const raw = JSON.stringify(list);
    for (const cookie of [ada.cookie, phone]) {
      const token = cookie.split("=")[1] ?? "";
      expect(raw).not.toContain(token);
      expect(raw).not.toContain(sha256Hex(token));
    }

    const feed = await openLive({ ...ada, cookie: phone });
    const closed = new Promise<CloseEvent>((resolve) => feed.ws.addEventListener("close", resolve));
    const stranger = await signUp("Mallory");
    expect((await api(`/v1/auth/sessions/${other?.id}`, { method: "DELETE", cookie: stranger.cookie })).status).toBe(
      404,
    );
    expect((await api("/v1/me", { cookie: phone })).status).toBe(200);

    const ended = await api(`/v1/auth/sessions/${other?.id}`, { method: "DELETE", cookie: ada.cookie });
    expect(ended.status).toBe(200);
    expect((await closed).code).toBe(4003);
    expect((await api("/v1/me", { cookie: phone })).status).toBe(401);
    expect((await api("/v1/me", { cookie: ada.cookie })).status).toBe(200);
    expect((await sessionsOf(ada.cookie)).map((s) => s.id)).toEqual([current?.id]);
  });

  it("signs out everywhere else: every other session ends and its feed closes; this one stays", async () => {
    const ada = await signUp("Ada");
    const phone = await signInElsewhere(ada, "Phone/1.0");
    const tablet = await signInElsewhere(ada, "Tablet/1.0");
    const feeds = await Promise.all([phone, tablet].map((cookie) => openLive({ ...ada, cookie })));
    const closed = feeds.map((f) => new Promise<CloseEvent>((resolve) => f.ws.addEventListener("close", resolve)));
    const mine = await openLive(ada);

    const answer = await post("/v1/auth/sessions/end-others", {}, { cookie: ada.cookie });
    expect(await json(answer)).toEqual({ ok: true, ended: 2 });
    expect((await Promise.all(closed)).map((e) => e.code)).toEqual([4003, 4003]);
    for (const cookie of [phone, tablet]) expect((await api("/v1/me", { cookie })).status).toBe(401);
    expect((await api("/v1/me", { cookie: ada.cookie })).status).toBe(200);
    expect(mine.ws.readyState).toBe(WebSocket.READY_STATE_OPEN);
  });

  it("an idle session expires after 14 days; a used one is kept alive", async () => {
    const ada = await signUp("Ada");
    const idle = await sessionWith(ada, { lastSeenAgo: WEB_SESSION_IDLE_MS + 60_000 });
    const used = await sessionWith(ada, { lastSeenAgo: WEB_SESSION_IDLE_MS - 60 * 60_000 });
    expect((await api("/v1/me", { cookie: idle })).status).toBe(401);
    expect((await api("/v1/me", { cookie: used })).status).toBe(200);
    const seen = await env.DB.prepare("SELECT last_seen_at FROM web_sessions WHERE token_hash = ?")
      .bind(sha256Hex(used.split("=")[1] ?? ""))
      .first<{ last_seen_at: number }>();
    expect(Date.now() - (seen?.last_seen_at ?? 0)).toBeLessThan(60_000);
  });

  it("a live socket closes once its session expires", async () => {
    const ada = await signUp("Ada");
    const feed = await openLive(ada);
    const closed = new Promise<CloseEvent>((resolve) => feed.ws.addEventListener("close", resolve));
    const hub = hubStub(ada.teamId);
    await runInDurableObject(hub, (h) => h.closeExpired(Date.now() + 60_000));
    expect(feed.ws.readyState).toBe(WebSocket.READY_STATE_OPEN);
    await runInDurableObject(hub, (h) => h.closeExpired(Date.now() + WEB_SESSION_IDLE_MS + 60_000));
    expect((await closed).code).toBe(4003);
  });
});

describe("recent sign-in for passkey changes, pairing and signing the others out", () => {
  it("adding or removing a passkey or ending the other sessions needs a sign-in within 10 minutes (401 reauth_required), then works", async () => {
    const ada = await signUp("Ada");
    const stale = await sessionWith(ada, { signedInAgo: 11 * 60_000 });
    const options = await post("/v1/auth/passkey/register/options", {}, { cookie: stale });
    expect(options.status).toBe(401);
    expect(await json(options)).toMatchObject({ error: "reauth_required" });
    const removal = await api("/v1/auth/passkeys/abc", { method: "DELETE", cookie: stale });
    expect(removal.status).toBe(401);
    expect(await json(removal)).toMatchObject({ error: "reauth_required" });
    const pairing = await post("/v1/pairing", {}, { cookie: stale });
    expect(await json(pairing)).toMatchObject({ error: "reauth_required" });
    // A stolen cookie alone cannot sign the owner's other browsers out.
    const endOthers = await post("/v1/auth/sessions/end-others", {}, { cookie: stale });
    expect(endOthers.status).toBe(401);
    expect(await json(endOthers)).toMatchObject({ error: "reauth_required" });
    expect((await api("/v1/me", { cookie: ada.cookie })).status).toBe(200);

    // Signing in again in the same browser refreshes the same session: no new cookie.
    const before = await sessionsOf(stale);
    expect(await signInElsewhere(ada, "Laptop/1.0", stale)).toBe(stale);
    expect(await sessionsOf(stale)).toHaveLength(before.length);
    expect((await post("/v1/auth/passkey/register/options", {}, { cookie: stale })).status).toBe(200);
    expect((await api("/v1/auth/passkeys/abc", { method: "DELETE", cookie: stale })).status).toBe(404);
  });
});

describe("sign-ins", () => {
  it("are audited in every team of the person, with the method and no secret", async () => {
    const olga = await signUp("Olga");
    const ada = await addMember(olga, "approver", "ada");
    const own = await api("/v1/teams", { method: "POST", cookie: ada.cookie, body: JSON.stringify({ name: "Own" }) });
    const ownTeam = (await json<{ team: { id: string } }>(own)).team.id;
    const cookie = await signInElsewhere(ada, "Phone/1.0");
    const sessionId = (await sessionsOf(cookie)).find((s) => s.current)?.id;

    for (const teamId of [olga.teamId, ownTeam]) {
      const row = await env.DB.prepare(
        "SELECT actor, subject, detail FROM audit_log WHERE team_id = ? AND action = 'auth.signed_in' ORDER BY seq DESC",
      )
        .bind(teamId)
        .first<{ actor: string; subject: string; detail: string }>();
      expect(row).toMatchObject({ actor: `user:${ada.userId}`, subject: ada.userId });
      expect(JSON.parse(row?.detail ?? "{}")).toEqual({ sessionId, method: "email_link" });
      expect(row?.detail).not.toContain(cookie.split("=")[1]);
    }
  });

  it("someone removed from their last team can sign in again, into a new team of their own", async () => {
    const olga = await signUp("Olga");
    const bob = await addMember(olga, "approver", "bob");
    expect((await api(`/v1/members/${bob.userId}`, { method: "DELETE", cookie: olga.cookie })).status).toBe(200);
    await post("/v1/auth/signin", { email: bob.email });
    const confirmed = await confirmLink(await lastMailLink(bob.email));
    expect(confirmed.status).toBe(200);
    const me = await json<{ team: { id: string; name: string }; role: string }>(
      await api("/v1/me", { cookie: cookieOf(confirmed) }),
    );
    expect(me).toMatchObject({ team: { name: "My team" }, role: "owner" });
    expect(me.team.id).not.toBe(olga.teamId);
  });
});
