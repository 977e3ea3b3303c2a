/**
 * What leaves the service for a private request carries no content (docs/human-api.md "Push
 * payload", docs/threat-model.md "Private mode"): the push payload before encryption, the
 * escalation mail (the dev outbox), the Telegram card the fake Bot API received and a webhook's
 * body hold none of a canary sealed into every content field, and do name the session's title
 * (pushes, mail, chat) or carry `requestHash` and `sealedHash` (webhooks, the audit chain). A chat
 * card offers no Allow for a private request.
 */

import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pushPayloadSchema } from "../../sdk/src/human/push";
import { fakePushService } from "./fake-push";
import {
  api,
  connectAgent,
  createKey,
  flush,
  gateStub,
  hubStub,
  json,
  type Member,
  outbox,
  pendingApprovals,
  signUp,
  unique,
} from "./helpers";
import { CANARY, sealedPermission, setPolicy, setPrivacy } from "./private-helpers";
import { addToSlack, linkSlackUser, untilSlackCalls } from "./slack-helpers";
import { callsTo, newTelegramUser, postUpdate, textUpdate } from "./telegram-helpers";

afterEach(() => vi.restoreAllMocks());

const AGENT = "deploy-bot";

const ladder = (owner: Member, via: "push" | "email" | "telegram" | "slack") =>
  setPolicy(owner, { escalation: [{ afterMs: 0, to: "session_owner", via }] });

/**
 * A sealed request in a private team's session, held, its ladder's first step run. The hello's title
 * is content (often the prompt): the service names the session by its agent and id instead.
 */
async function askSealed(owner: Member) {
  const { key } = await createKey(owner);
  const sessionId = unique("sealed-out");
  const agent = await connectAgent(key, sessionId);
  await agent.send({
    jsonrpc: "2.0",
    method: "_tapgate/hello",
    params: { title: `deploy ${CANARY}`, agent: { name: AGENT } },
  });
  const { params, sealed } = await sealedPermission(sessionId);
  await agent.ask(1, params);
  const [approval] = await vi.waitFor(async () => {
    const found = await pendingApprovals(owner, sessionId);
    if (found.length === 0) throw new Error("not held yet");
    return found;
  });
  await runDurableObjectAlarm(gateStub(owner.teamId, sessionId));
  return { agent, sessionId, sealed, approval: approval as NonNullable<typeof approval> };
}

describe("a private request's outbound messages", () => {
  it("the push names the session, not the request, and says private", async () => {
    const fake = fakePushService();
    const owner = await signUp();
    const phone = await fake.addPhone(owner);
    await ladder(owner, "push");
    await setPrivacy(owner);
    const { approval, sessionId } = await askSealed(owner);
    await fake.untilPushes(1);
    const [payload] = fake.to(phone);
    expect(JSON.stringify(payload)).not.toContain(CANARY);
    expect(pushPayloadSchema.parse(payload)).toEqual({
      v: 1,
      type: "approval",
      approvalId: approval.id,
      title: "",
      expiresAt: approval.expiresAt,
      private: true,
      sessionTitle: `${AGENT} session ${sessionId}`,
    });
    expect((payload as { notification: { title: string } }).notification.title).toBe(
      `A request waits in ${AGENT} session ${sessionId} — open Tapgate`,
    );
  });

  it("the escalation mail says where it waits, nothing of what", async () => {
    const owner = await signUp();
    await ladder(owner, "email");
    await setPrivacy(owner);
    const { sessionId } = await askSealed(owner);
    const mail = await vi.waitFor(async () => {
      const { messages } = await json<{ messages: Array<{ subject: string; text: string }> }>(
        await outbox(owner.email),
      );
      const found = messages.find((m) => m.subject.includes("waiting for your answer"));
      if (!found) throw new Error("no mail yet");
      return found;
    });
    expect(mail.text).toContain(`A request waits in ${AGENT} session ${sessionId} — open Tapgate`);
    expect(JSON.stringify(mail)).not.toContain(CANARY);
  });

  it("the Telegram card names the session, offers no Allow, and carries no content", async () => {
    const owner = await signUp();
    const chat = newTelegramUser();
    const { code } = await json<{ code: string }>(
      await api("/v1/channels/telegram/link", { method: "POST", cookie: owner.cookie }),
    );
    expect((await postUpdate(textUpdate(chat, `/start ${code}`))).status).toBe(200);
    await ladder(owner, "telegram");
    await setPrivacy(owner);
    const { sessionId } = await askSealed(owner);
    const card = await vi.waitFor(async () => {
      const found = (await callsTo(chat)).find((c) => c.method === "sendMessage" && c.body.reply_markup);
      if (!found) throw new Error("no card yet");
      return found;
    });
    expect(String(card.body.text)).toContain(`A request waits in ${AGENT} session ${sessionId} — open Tapgate`);
    expect(JSON.stringify(card.body)).not.toContain(CANARY);
    const markup = card.body.reply_markup as { inline_keyboard: Array<Array<{ text: string }>> };
    expect(markup.inline_keyboard.flat().map((b) => b.text)).not.toContain("Allow once");
  });

  it("the Slack card names the session, offers no Allow, and carries no content", async () => {
    const owner = await signUp();
    const { workspace } = await addToSlack(owner);
    await linkSlackUser(owner, workspace);
    await ladder(owner, "slack");
    await setPrivacy(owner);
    const { sessionId } = await askSealed(owner);
    const posts = await untilSlackCalls(workspace, "chat.postMessage", 2); // the link's reply, then the card
    const card = posts.at(-1);
    const body = JSON.stringify(card?.body);
    expect(body).toContain(`A request waits in ${AGENT} session ${sessionId} — open Tapgate`);
    expect(body).not.toContain(CANARY);
    expect(body).not.toContain("Allow once");
  });

  it("webhooks and the audit chain carry requestHash and the ciphertext's hash, never content", async () => {
    const received: string[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const request = new Request(input, init);
      if (!request.url.startsWith("http://127.0.0.1:9797")) return realFetch(input, init);
      received.push(await request.text());
      return new Response(null, { status: 200 });
    });
    const owner = await signUp();
    const added = await SELF.fetch("http://localhost:8787/v1/webhooks", {
      method: "POST",
      headers: {
        "CF-Connecting-IP": "127.0.0.1",
        Cookie: owner.cookie,
        Origin: "http://localhost:8787",
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ url: "http://127.0.0.1:9797/private", events: ["approval.requested"] }),
    });
    expect(added.status).toBe(201);
    await setPrivacy(owner);
    const { sessionId, sealed } = await askSealed(owner);
    await flush(owner.teamId, sessionId);
    const body = await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(hubStub(owner.teamId));
        await runInDurableObject(hubStub(owner.teamId), (hub) => hub.wake(Date.now()));
        const found = received.find((b) => b.includes(sealed.requestHash));
        if (!found) throw new Error("not delivered yet");
        return found;
      },
      { timeout: 5_000, interval: 20 },
    );
    const sealedHash = createHash("sha256").update(Buffer.from(sealed.ciphertext, "base64url")).digest("hex");
    expect(body).toContain(sealedHash);
    expect(body).not.toContain(CANARY);
    expect(body).not.toContain(sealed.ciphertext);
    const audit = await env.DB.prepare(
      "SELECT detail FROM audit_log WHERE action = 'approval.requested' AND team_id = ?",
    )
      .bind(owner.teamId)
      .first<{ detail: string }>();
    expect(JSON.parse(audit?.detail ?? "{}")).toMatchObject({
      requestHash: sealed.requestHash,
      private: true,
      sealedHash,
    });
  });
});
