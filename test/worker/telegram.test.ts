/**
 * Telegram end to end in workerd with real D1, against the fake Bot API on 127.0.0.1
 * (test/fakes/telegram-bot-api.mjs, which checks each call as Telegram would): the webhook's
 * secret token, linking a chat by `/start <code>`, the ladder posting a card with
 * `via: "telegram"`, a tap deciding through the one decision use case (or refused, with nothing
 * decided), and the card edited when the request ends. Time moves by running the gate's ladder
 * at a chosen moment and the hub's alarm (`runDurableObjectAlarm`), never by sleeping.
 */
import { createExecutionContext, env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { channelLinkCodeSchema } from "../../sdk/src/human/channels";
import { NOT_REACHED } from "../../worker/channels/telegram/webhook";
import { sha256Hex } from "../../worker/crypto";
import { SessionGate } from "../../worker/gate/session-gate";
import app from "../../worker/index";
import {
  api,
  connectAgent,
  createKey,
  flush,
  gateStub,
  hubStub,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { addMember, putPolicyConfirmed, withPasskey } from "./team-helpers";
import {
  answersTo,
  type BotApiCall,
  callsTo,
  newTelegramUser,
  postUpdate,
  tapUpdate,
  textUpdate,
  WEBHOOK_PATH,
} from "./telegram-helpers";

const LINK_PATH = "/v1/channels/telegram/link";

async function newLinkCode(member: Member) {
  const response = await api(LINK_PATH, { method: "POST", cookie: member.cookie });
  expect(response.status).toBe(201);
  return channelLinkCodeSchema.parse(await response.json());
}

/** Links a fresh Telegram account to `member` the way a person does: the deep link's `/start <code>`. */
async function linkTelegram(member: Member): Promise<number> {
  const telegramUser = newTelegramUser();
  const { code } = await newLinkCode(member);
  expect((await postUpdate(textUpdate(telegramUser, `/start ${code}`))).status).toBe(200);
  return telegramUser;
}

const sent = (calls: BotApiCall[], method: string) => calls.filter((c) => c.method === method);
const lastText = async (chat: number) => String(sent(await callsTo(chat), "sendMessage").at(-1)?.body.text);

async function linkedChannel(member: Member): Promise<boolean> {
  const { channels } = await json<{ channels: Array<{ channel: string; linked: boolean }> }>(
    await api("/v1/channels", { cookie: member.cookie }),
  );
  return channels.find((c) => c.channel === "telegram")?.linked ?? false;
}

/** The team's ladder: one Telegram step at once, for the session's owner. */
async function telegramLadder(owner: Member, to: unknown = "session_owner") {
  const escalation = [{ afterMs: 0, to, via: "telegram" }];
  expect((await putPolicyConfirmed(await withPasskey(owner), { escalation })).status).toBe(200);
}

/** Asks once over a socket and runs the ladder's first step, as the gate's alarm would. */
async function askAndEscalate(owner: Member, toolCall?: Record<string, unknown>) {
  const { key } = await createKey(owner);
  const sessionId = unique("sess");
  const agent = await connectAgent(key, sessionId);
  const base = permissionParams(sessionId);
  await agent.ask(1, { ...base, toolCall: { ...base.toolCall, ...toolCall } });
  const [approval] = await pendingApprovals(owner, sessionId);
  if (!approval) throw new Error("not pending");
  const gate = gateStub(owner.teamId, sessionId);
  await runDurableObjectAlarm(gate);
  return { agent, sessionId, approval };
}

/** The card the ladder sent to `chat`: its message id and its buttons' `callback_data`. */
async function cardIn(chat: number) {
  const card = await vi.waitFor(async () => {
    const found = sent(await callsTo(chat), "sendMessage").find((c) => c.body.reply_markup);
    if (!found) throw new Error("no card yet");
    return found;
  });
  const messageId = typeof card.result === "object" ? Number(card.result.message_id) : Number.NaN;
  const markup = card.body.reply_markup as { inline_keyboard: Array<Array<Record<string, string>>> };
  const buttons = markup.inline_keyboard.flat();
  const data = (label: string) => buttons.find((b) => b.text === label)?.callback_data;
  return { body: card.body, buttons, data, messageId };
}

async function editsOf(chat: number) {
  return sent(await callsTo(chat), "editMessageText");
}

async function approvalOf(member: Member, id: string): Promise<Approval> {
  return json<Approval>(await api(`/v1/approvals/${id}`, { cookie: member.cookie }));
}

describe("the Telegram webhook's secret token", () => {
  it("takes an update with the right secret, and refuses a wrong or missing one with 401", async () => {
    const update = textUpdate(newTelegramUser(), "hello");
    expect((await postUpdate(update)).status).toBe(200);
    const wrong = await postUpdate(update, "not-the-secret");
    expect(wrong.status).toBe(401);
    expect(await json(wrong)).toMatchObject({ error: "bad_webhook_secret" });
    const missing = await postUpdate(update, null);
    expect(missing.status).toBe(401);
    expect(await json(missing)).toMatchObject({ error: "bad_webhook_secret" });
  });

  it("answers 200 to an update it cannot read (Telegram would retry anything else), deciding nothing", async () => {
    for (const body of [{ nonsense: true }, { update_id: "x" }, [1, 2]]) {
      expect((await postUpdate(body)).status).toBe(200);
    }
    const raw = await api(WEBHOOK_PATH, {
      method: "POST",
      headers: { "X-Telegram-Bot-Api-Secret-Token": env.TELEGRAM_WEBHOOK_SECRET ?? "" },
      body: "{not json",
    });
    expect(raw.status).toBe(200);
  });
});

describe("Telegram not set up", () => {
  it("answers 404 on its webhook and its link route, and GET /v1/channels says not set up", async () => {
    const owner = await signUp();
    const bare = { ...env, TELEGRAM_BOT_TOKEN: undefined, TELEGRAM_WEBHOOK_SECRET: undefined };
    const call = (path: string, init: RequestInit) =>
      app.request(`${ORIGIN}${path}`, init, bare, createExecutionContext());
    const webhook = await call(WEBHOOK_PATH, {
      method: "POST",
      headers: { "X-Telegram-Bot-Api-Secret-Token": "anything", "Content-Type": "application/json" },
      body: JSON.stringify(textUpdate(1, "/start x")),
    });
    expect(webhook.status).toBe(404);
    const link = await call(LINK_PATH, { method: "POST", headers: { Cookie: owner.cookie, Origin: ORIGIN } });
    expect(link.status).toBe(404);
    const list = await json<{ channels: Array<{ channel: string; setUp: boolean }> }>(
      await call("/v1/channels", { headers: { Cookie: owner.cookie } }),
    );
    expect(list.channels.find((c) => c.channel === "telegram")?.setUp).toBe(false);
  });
});

describe("linking a chat by /start <code>", () => {
  it("gives a deep link to the bot, links once and says so in the chat", async () => {
    const ada = await signUp("Ada");
    const link = await newLinkCode(ada);
    expect(link.url).toBe(`https://t.me/tapgate_test_bot?start=${link.code}`);

    const chat = newTelegramUser();
    expect(await linkedChannel(ada)).toBe(false);
    expect((await postUpdate(textUpdate(chat, `/start ${link.code}`))).status).toBe(200);
    expect(await lastText(chat)).toBe("Linked to Ada in Ada's team.");
    expect(await linkedChannel(ada)).toBe(true);

    // The same code again, from another account: nothing is linked to it.
    const other = newTelegramUser();
    await postUpdate(textUpdate(other, `/start ${link.code}`));
    expect(await lastText(other)).toContain("Nothing was linked");
    const { n } = (await env.DB.prepare("SELECT COUNT(*) AS n FROM channel_links WHERE external_user_id = ?")
      .bind(String(other))
      .first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(0);
  });

  it("refuses an expired code, and a code sent in a group chat", async () => {
    const ada = await signUp("Ada");
    const expired = await newLinkCode(ada);
    await env.DB.prepare("UPDATE channel_link_codes SET expires_at = ? WHERE code_hash = ?")
      .bind(Date.now() - 1, sha256Hex(expired.code))
      .run();
    const chat = newTelegramUser();
    await postUpdate(textUpdate(chat, `/start ${expired.code}`));
    expect(await lastText(chat)).toContain("Nothing was linked");

    const fresh = await newLinkCode(ada);
    const group = -newTelegramUser();
    const inGroup = textUpdate(chat, `/start ${fresh.code}`);
    await postUpdate({ ...inGroup, message: { ...inGroup.message, chat: { id: group, type: "group" } } });
    expect(await lastText(group)).toContain("private chat");
    expect(await linkedChannel(ada)).toBe(false);
  });
});

describe("a card on Telegram", () => {
  it("is posted by the ladder with via telegram, without tool arguments; a tap allows; the card ends", async () => {
    const ada = await signUp("Ada");
    const chat = await linkTelegram(ada);
    await telegramLadder(ada);
    const { agent, sessionId, approval } = await askAndEscalate(ada, {
      title: "Build the project",
      rawInput: { command: "make SECRET_TOKEN=hunter2" },
    });

    const card = await cardIn(chat);
    expect(card.body.text).toContain("Build the project");
    expect(JSON.stringify(card.body)).not.toContain("hunter2");
    expect(card.buttons.map((b) => b.text)).toEqual(["Allow once", "Deny", "Open in Tapgate"]);
    expect(card.buttons.find((b) => b.text === "Open in Tapgate")?.url).toContain(`/approvals/${approval.id}`);

    const tap = tapUpdate(chat, chat, card.messageId, card.data("Allow once") ?? "");
    expect((await postUpdate(tap.update)).status).toBe(200);

    const answer = await agent.next<{ result: { outcome: { outcome: string; optionId?: string } } }>();
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    const [toast] = await answersTo(tap.id);
    expect(toast?.body).toMatchObject({ text: "Allowed", show_alert: false });

    await flush(ada.teamId, sessionId);
    const decided = await approvalOf(ada, approval.id);
    expect(decided.decidedBy).toMatchObject({ userId: ada.userId, via: "telegram" });

    // The hub learns of the end from the gate's report and edits the card: its buttons go.
    const edit = await vi.waitFor(async () => {
      await runDurableObjectAlarm(hubStub(ada.teamId));
      const [found] = await editsOf(chat);
      if (!found) throw new Error("not edited yet");
      return found;
    });
    expect(edit.body).toMatchObject({ message_id: card.messageId });
    expect(edit.body.text).toContain("Allowed by Ada on Telegram");
    expect(edit.body).not.toHaveProperty("reply_markup");

    // A second tap on the ended card decides nothing and says so.
    const again = tapUpdate(chat, chat, card.messageId, card.data("Deny") ?? "");
    await postUpdate(again.update);
    expect((await answersTo(again.id))[0]?.body).toMatchObject({ show_alert: true });
    expect((await approvalOf(ada, approval.id)).state).toBe("allowed");
  });

  it("refuses a tap by an unlinked account, and one from another chat, deciding nothing", async () => {
    const ada = await signUp("Ada");
    const chat = await linkTelegram(ada);
    await telegramLadder(ada);
    const { approval } = await askAndEscalate(ada);
    const card = await cardIn(chat);

    const stranger = tapUpdate(newTelegramUser(), chat, 1, card.data("Allow once") ?? "");
    await postUpdate(stranger.update);
    const [refused] = await answersTo(stranger.id);
    expect(refused?.body).toMatchObject({ show_alert: true });
    expect(String(refused?.body.text)).not.toBe("Allowed");

    const elsewhere = tapUpdate(chat, newTelegramUser(), 1, card.data("Allow once") ?? "");
    await postUpdate(elsewhere.update);
    expect((await answersTo(elsewhere.id))[0]?.body).toMatchObject({ show_alert: true });

    expect((await approvalOf(ada, approval.id)).state).toBe("pending");
  });

  it("answers a tap whose decision fails on the way (a gate that throws) with 200, saying nothing was confirmed", async () => {
    const ada = await signUp("Ada");
    const chat = await linkTelegram(ada);
    await telegramLadder(ada);
    const { approval } = await askAndEscalate(ada);
    const card = await cardIn(chat);

    const failing = vi.spyOn(SessionGate.prototype, "getApproval").mockRejectedValue(new Error("gate down"));
    const tap = tapUpdate(chat, chat, card.messageId, card.data("Allow once") ?? "");
    expect((await postUpdate(tap.update)).status).toBe(200);
    failing.mockRestore();
    const [answer] = await answersTo(tap.id);
    expect(answer?.body).toMatchObject({ text: NOT_REACHED, show_alert: true });
    expect((await approvalOf(ada, approval.id)).state).toBe("pending");
  });

  it("shows a high-risk request without Allow, and refuses an Allow for it", async () => {
    const ada = await signUp("Ada");
    const chat = await linkTelegram(ada);
    await telegramLadder(ada);
    const { approval } = await askAndEscalate(ada, { title: "Wipe", rawInput: { command: "rm -rf /srv" } });
    const card = await cardIn(chat);
    expect(card.body.text).toContain("needs your passkey: open in Tapgate");
    expect(card.buttons.map((b) => b.text)).toEqual(["Deny", "Open in Tapgate"]);

    // A forged Allow on the card's key (only Telegram could send it; still refused).
    const key = (card.data("Deny") ?? "").slice(2);
    const forged = tapUpdate(chat, chat, 1, `a:${key}`);
    await postUpdate(forged.update);
    const [refused] = await answersTo(forged.id);
    expect(refused?.body).toMatchObject({ show_alert: true });
    expect(String(refused?.body.text)).toContain("passkey");
    expect((await approvalOf(ada, approval.id)).state).toBe("pending");
  });

  it("reaches only linked people: a ladder step to someone without a chat posts nothing", async () => {
    const ada = await signUp("Ada");
    const bea = await addMember(ada, "approver", "Bea");
    const chat = await linkTelegram(ada);
    await telegramLadder(ada, [bea.userId]);
    await askAndEscalate(ada);
    const { n } = (await env.DB.prepare("SELECT COUNT(*) AS n FROM telegram_cards WHERE team_id = ?")
      .bind(ada.teamId)
      .first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(0);
    expect(sent(await callsTo(chat), "sendMessage").filter((c) => c.body.reply_markup)).toHaveLength(0);
  });
});
