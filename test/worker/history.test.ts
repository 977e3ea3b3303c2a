import { describe, expect, it } from "vitest";
import { csvCell } from "../../sdk/src/csv";
import { api, json, signUp } from "./helpers";
import { addMember, seedApprovals } from "./team-helpers";

const HOUR = 3_600_000;

describe("history", () => {
  it("filters resolved requests, newest first, with latency and who decided", async () => {
    const owner = await signUp("Olga");
    const bob = await addMember(owner, "approver", "Bob");
    const t0 = Date.now() - 10 * HOUR;
    const decider = { userId: bob.userId, name: "Bob", device: "Pixel" };
    const [allowed, denied, expired] = await seedApprovals(owner.teamId, [
      {
        ownerUserId: owner.userId,
        state: "allowed",
        createdAt: t0,
        latencyMs: 4200,
        decidedBy: decider,
        sessionId: "s1",
      },
      {
        ownerUserId: bob.userId,
        state: "denied",
        createdAt: t0 + HOUR,
        kind: "edit",
        decidedBy: decider,
        sessionId: "s2",
      },
      { ownerUserId: owner.userId, state: "expired", reason: "expired", createdAt: t0 + 2 * HOUR, sessionId: "s1" },
      { ownerUserId: owner.userId, state: "pending", createdAt: t0 + 3 * HOUR },
    ]);
    const ids = async (query: string) =>
      (
        await json<{ approvals: Array<{ id: string }> }>(await api(`/v1/history${query}`, { cookie: owner.cookie }))
      ).approvals.map((a) => a.id);
    expect(await ids("")).toEqual([expired, denied, allowed]);
    expect(await ids("?state=allowed")).toEqual([allowed]);
    expect(await ids("?reason=expired")).toEqual([expired]);
    expect(await ids("?kind=edit")).toEqual([denied]);
    expect(await ids("?session=s1")).toEqual([expired, allowed]);
    expect(await ids(`?member=${bob.userId}`)).toEqual([denied, allowed]); // owner of s2, decider of both
    expect(await ids(`?from=${t0 + HOUR}&to=${t0 + 2 * HOUR}`)).toEqual([denied]);
    const [first] = (
      await json<{ approvals: Array<Record<string, unknown>> }>(
        await api("/v1/history?state=allowed", { cookie: owner.cookie }),
      )
    ).approvals;
    expect(first).toMatchObject({ latencyMs: 4200, decidedBy: decider, owner: { userId: owner.userId, name: "Olga" } });
    expect((await api("/v1/history?state=pending", { cookie: owner.cookie })).status).toBe(400);
  });

  it("pages with a cursor through rows that share a timestamp, without gaps or repeats", async () => {
    const owner = await signUp();
    const at = Date.now() - HOUR;
    const seeded = await seedApprovals(
      owner.teamId,
      Array.from({ length: 7 }, (_, i) => ({
        ownerUserId: owner.userId,
        state: "allowed" as const,
        createdAt: at + (i % 3),
      })),
    );
    const seen: string[] = [];
    let cursor: string | null = "";
    while (cursor !== null) {
      const page: { approvals: Array<{ id: string }>; cursor: string | null } = await json(
        await api(`/v1/history?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { cookie: owner.cookie }),
      );
      seen.push(...page.approvals.map((a) => a.id));
      cursor = page.cursor;
    }
    expect(seen.sort()).toEqual([...seeded].sort());
    expect((await api("/v1/history?cursor=garbage", { cookie: owner.cookie })).status).toBe(400);
  });

  it("exports only the team's rows, as RFC 4180 CSV with formulas defused, or as JSON", async () => {
    const owner = await signUp("Olga");
    const other = await signUp("Mallory");
    const now = Date.now() - HOUR;
    const [mine] = await seedApprovals(owner.teamId, [
      { ownerUserId: owner.userId, state: "allowed", createdAt: now, title: '=HYPERLINK("http://x", "a, b")\nnext' },
    ]);
    await seedApprovals(other.teamId, [{ ownerUserId: other.userId, state: "denied", createdAt: now }]);

    const csv = await api("/v1/history/export?format=csv", { cookie: owner.cookie });
    expect(csv.headers.get("Content-Type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("Content-Disposition")).toMatch(/^attachment; filename="tapgate-history-.*\.csv"$/);
    const text = await csv.text();
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(
      "id,createdAt,resolvedAt,state,reason,sessionId,ownerUserId,ownerName,toolTitle,toolKind,optionId,decidedByUserId,decidedByName,decidedByDevice,latencyMs,message,private",
    );
    expect(text).toContain(`${mine},${new Date(now).toISOString()},`);
    expect(text).toContain(`"'=HYPERLINK(""http://x"", ""a, b"")\nnext"`);
    expect(text).not.toContain(other.userId);

    const asJson = await api("/v1/history/export?format=json", { cookie: owner.cookie });
    expect(asJson.headers.get("Content-Disposition")).toMatch(/\.json"$/);
    const { approvals } = await json<{ approvals: Array<{ id: string }> }>(asJson);
    expect(approvals.map((a) => a.id)).toEqual([mine]);
    const theirs = await json<{ approvals: Array<{ id: string }> }>(
      await api("/v1/history/export?format=json", { cookie: other.cookie }),
    );
    expect(theirs.approvals.map((a) => a.id)).not.toContain(mine);
  });

  it("quotes cells the RFC 4180 way and defuses every formula prefix", () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell("a,b")).toBe('"a,b"');
    expect(csvCell("line\r\nbreak")).toBe('"line\r\nbreak"');
    for (const lead of ["=", "+", "-", "@", "\t"]) expect(csvCell(`${lead}1+1`)).toBe(`'${lead}1+1`);
    expect(csvCell(-5)).toBe("-5");
    expect(csvCell(null)).toBe("");
  });
});
