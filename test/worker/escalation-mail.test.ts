/**
 * An escalation step's mail the provider fails (outside the machine, so faked at `fetch`): the
 * step fails, and the gate's retry of it mails only those the first run did not, each with the
 * same idempotency key; a provider that stays down holds the ladder a few runs at most. The
 * team's hub is pointed at the provider for the test; the rest of the service (gate, hub, D1) is
 * real, and the gate's retry is asked as its alarm asks it (`escalateDue`).
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ACK_RETRY_MS } from "../../worker/gate/escalation-rules";
import { MAIL_STEP_RUNS } from "../../worker/hub/escalation-mail";
import {
  api,
  connectAgent,
  createKey,
  gateStub,
  hubStub,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember } from "./team-helpers";

const restores: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const restore of restores.splice(0)) await restore();
});

/** Points the team's hub at a mail provider whose answer `answer` picks, per mail; records each mail asked. */
async function mailProvider(teamId: string, answer: (to: string, tries: number) => number) {
  const asked: Array<{ to: string; key: string | null }> = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith("http://127.0.0.1:9/")) throw new Error(`unexpected fetch ${request.url}`);
    const { to } = (await request.json()) as { to: string[] };
    const tries = asked.filter((a) => a.to === to[0]).length;
    asked.push({ to: to[0] ?? "", key: request.headers.get("Idempotency-Key") });
    return new Response(null, { status: answer(to[0] ?? "", tries) });
  });
  const provider = {
    DEV_OUTBOX: "0",
    MAIL_API_URL: "http://127.0.0.1:9/send",
    MAIL_API_KEY: "test",
    MAIL_FROM: "tapgate@example.com",
  };
  const before = await runInDurableObject(hubStub(teamId), (hub) => {
    const env = (hub as unknown as { env: Record<string, unknown> }).env;
    const saved = Object.fromEntries(Object.keys(provider).map((k) => [k, env[k]]));
    Object.assign(env, provider);
    return saved;
  });
  restores.push(() =>
    runInDurableObject(hubStub(teamId), (hub) => {
      Object.assign((hub as unknown as { env: Record<string, unknown> }).env, before);
    }),
  );
  return asked;
}

/** Owner and Bea, a ladder that mails both at once, and a request of the owner's: the step's first run starts. */
async function mailBoth(answer: (to: string, tries: number, bea: string) => number) {
  const owner = await signUp();
  const bea = await addMember(owner, "approver", "Bea");
  const policy = await api("/v1/policy", {
    method: "PUT",
    cookie: owner.cookie,
    body: JSON.stringify({ escalation: [{ afterMs: 0, to: [owner.userId, bea.userId], via: "email" }] }),
  });
  expect(policy.status).toBe(200);
  const asked = await mailProvider(owner.teamId, (to, tries) => answer(to, tries, bea.email));
  const { key } = await createKey(owner);
  const sessionId = unique("mail");
  const agent = await connectAgent(key, sessionId);
  await agent.ask(1, permissionParams(sessionId));
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("not pending");
  await vi.waitFor(() => expect(asked).toHaveLength(2));
  const stepRun = () =>
    runInDurableObject(hubStub(owner.teamId), (_hub, state) =>
      state.storage.sql.exec("SELECT outcome FROM escalations WHERE approval_id = ?", approval.id).toArray(),
    );
  /** The gate asks for the unacknowledged step again, as its alarm does `n` × ACK_RETRY_MS on. */
  const retry = (n: number) =>
    runInDurableObject(gateStub(owner.teamId, sessionId), (gate) =>
      gate.escalateDue(approval.createdAt + n * ACK_RETRY_MS + n),
    );
  return { owner, bea, approval, asked, stepRun, retry };
}

describe("an escalation mail the provider fails", () => {
  it("fails the step; the gate's retry mails only whom it did not, with the same key, and the step then counts both", async () => {
    // Bea's first mail meets a provider failing for now; every other mail goes.
    const { owner, bea, approval, asked, stepRun, retry } = await mailBoth((to, tries, beaEmail) =>
      to === beaEmail && tries === 0 ? 503 : 200,
    );
    expect(await stepRun()).toEqual([]);

    await retry(1);
    await vi.waitFor(async () => expect(await stepRun()).toHaveLength(1));
    expect(asked.map((a) => a.to)).toEqual([owner.email, bea.email, bea.email]);
    expect(asked[2]?.key).toBe(asked[1]?.key);
    expect(asked[2]?.key).toContain(approval.id);
    const [run] = await stepRun();
    expect(JSON.parse(String(run?.outcome))).toMatchObject({ reached: 2 });
  });

  it("that stays down holds the ladder MAIL_STEP_RUNS runs at most: then the step is done with whom it reached", async () => {
    const { owner, bea, asked, stepRun, retry } = await mailBoth((to, _tries, beaEmail) =>
      to === beaEmail ? 503 : 200,
    );
    vi.spyOn(console, "error").mockImplementation(() => {});
    for (let n = 1; n < MAIL_STEP_RUNS - 1; n++) {
      await retry(n);
      await vi.waitFor(() => expect(asked).toHaveLength(2 + n));
      expect(await stepRun()).toEqual([]);
    }
    await retry(MAIL_STEP_RUNS - 1);
    await vi.waitFor(async () => expect(await stepRun()).toHaveLength(1));
    expect(asked.map((a) => a.to)).toEqual([owner.email, ...Array(MAIL_STEP_RUNS).fill(bea.email)]);
    const [run] = await stepRun();
    expect(JSON.parse(String(run?.outcome))).toMatchObject({ reached: 1 });
  });
});
