import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { api, connectAgent, createKey, flush, json, permissionParams, signUp, unique } from "./helpers";
import { openLive } from "./team-helpers";

interface SessionView {
  sessionId: string;
  owner: { userId: string; name: string };
  title: string | null;
  host: string | null;
  connectedAt: number | null;
  disconnectedAt: number | null;
  pending: number;
  approvals?: Approval[];
}

describe("sessions", () => {
  it("lists connected sessions with owner, metadata and pending count, live as they come and go", async () => {
    const owner = await signUp("Olga");
    const feed = await openLive(owner);
    const { key } = await createKey(owner);
    const sessionId = unique("sess");
    const agent = await connectAgent(key, sessionId);
    await agent.send({
      jsonrpc: "2.0",
      method: "_tapgate/hello",
      params: { title: "fix the build", host: "laptop", agent: { name: "claude" } },
    });
    await agent.ask(1, permissionParams(sessionId));
    await agent.ask(2, permissionParams(sessionId));

    const live = await feed.next((f) => f.type === "session" && (f.session as SessionView).title === "fix the build");
    expect(live.session).toMatchObject({ sessionId, owner: { userId: owner.userId, name: "Olga" }, host: "laptop" });
    expect((live.session as SessionView).connectedAt).toBeTypeOf("number");

    await flush(owner.teamId, sessionId);
    const { sessions } = await json<{ sessions: SessionView[] }>(
      await api("/v1/sessions?state=connected", { cookie: owner.cookie }),
    );
    expect(sessions).toEqual([
      expect.objectContaining({
        sessionId,
        owner: { userId: owner.userId, name: "Olga" },
        title: "fix the build",
        host: "laptop",
        agent: { name: "claude" },
        disconnectedAt: null,
        pending: 2,
      }),
    ]);

    const detail = await json<SessionView>(await api(`/v1/sessions/${sessionId}`, { cookie: owner.cookie }));
    expect(detail.approvals?.map((a) => a.createdAt)).toEqual(
      [...(detail.approvals ?? [])].map((a) => a.createdAt).sort((a, b) => a - b),
    );
    expect(detail.approvals).toHaveLength(2);

    agent.ws.close(1000, "done");
    await feed.next((f) => f.type === "session" && (f.session as SessionView).disconnectedAt !== null);
    await flush(owner.teamId, sessionId);
    const after = await json<{ sessions: SessionView[] }>(
      await api("/v1/sessions?state=connected", { cookie: owner.cookie }),
    );
    expect(after.sessions).toEqual([]);
    const recent = await json<{ sessions: SessionView[] }>(
      await api("/v1/sessions?state=recent", { cookie: owner.cookie }),
    );
    expect(recent.sessions).toEqual([expect.objectContaining({ sessionId, pending: 0 })]);
    expect(recent.sessions[0]?.disconnectedAt).toBeTypeOf("number");
  });

  it("an unknown session answers 404", async () => {
    const owner = await signUp();
    expect((await api("/v1/sessions/nope", { cookie: owner.cookie })).status).toBe(404);
    expect((await api(`/v1/sessions/${"x".repeat(200)}`, { cookie: owner.cookie })).status).toBe(400);
  });
});
