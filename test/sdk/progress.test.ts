/**
 * `_tapgate/progress` through the real SDK against `wrangler dev`: a request that reaches no
 * device says so within seconds, the ladder's mail follows at once, and a visible open page that
 * shows the card is seen — each notification in order, to `requestPermission(…, {onProgress})`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { type Progress, progressLine, Tapgate } from "../../sdk/src/index";
import { askParams, Person, unique } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let key: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url, "Ada");
  key = (await person.createKey("progress tests")).key;
});
afterAll(() => worker?.stop());

/** The team's live feed as a browser page holds it. */
function openPage(): Promise<WebSocket> {
  const ws = new WebSocket(`${worker.url.replace(/^http/, "ws")}/v1/live`, {
    headers: { Cookie: person.cookie, Origin: worker.url },
  });
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

describe("progress of a request", () => {
  it("arrives in order: nothing reached, mailed, then seen on a visible page", async () => {
    const tapgate = new Tapgate({ url: worker.url, apiKey: key, onLog: () => undefined });
    const sessionId = unique("progress");
    const session = await tapgate.session(sessionId);
    const seen: Progress[] = [];
    const answer = session.requestPermission(askParams(sessionId), { onProgress: (p) => seen.push(p) });
    const approval = await person.waitForOne(sessionId);

    // Ada has no device and no open page: the agent learns it at once, and the ladder runs on to the mail.
    await vi.waitFor(() => expect(seen.some((p) => p.escalatedTo?.via === "email")).toBe(true), { timeout: 10_000 });
    expect(seen[0]).toMatchObject({ requestId: 1, approvalId: approval.id, unreachable: true, deliveredTo: [] });
    const mailed = seen.findIndex((p) => p.escalatedTo?.via === "email");
    expect(seen[mailed]).toMatchObject({ unreachable: true, escalatedTo: { names: ["Ada"], via: "email" } });
    expect(progressLine(seen[mailed] as Progress)).toMatch(
      /^waiting — no device could be reached; escalated to Ada by mail /,
    );
    const { messages } = (await (await fetch(`${worker.url}/v1/dev/outbox`)).json()) as {
      messages: Array<{ link: string; text: string }>;
    };
    const mail = messages.find((m) => m.link.endsWith(`/approvals/${approval.id}`));
    expect(mail?.text).not.toContain("git push");

    const page = await openPage();
    page.send(JSON.stringify({ type: "visibility", visible: true }));
    page.send(JSON.stringify({ type: "seen", approvalIds: [approval.id] }));
    await vi.waitFor(() => expect(seen.at(-1)?.seenBy).toEqual([{ name: "Ada", at: expect.any(Number) }]), {
      timeout: 10_000,
    });
    const last = seen.at(-1) as Progress;
    expect(last.deliveredTo).toEqual([expect.objectContaining({ name: "Ada", device: "app" })]);
    expect(last.unreachable).toBeUndefined();
    // In order, each a change: unreachable first, seen last, never the other way round.
    expect(seen.findIndex((p) => p.seenBy.length > 0)).toBe(seen.length - 1);
    expect(new Set(seen.map((p) => JSON.stringify(p))).size).toBe(seen.length);

    expect((await person.decide(approval, "allow")).status).toBe(200);
    expect((await answer).outcome).toEqual({ outcome: "selected", optionId: "allow" });
    page.close();
    tapgate.close();
  });
});
