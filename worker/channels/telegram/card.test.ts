import { describe, expect, it } from "vitest";
import { randomBase62 } from "../../crypto";
import { cardKeyboard, cardText, endedText, HIGH_RISK_LINE, readTap } from "./card";

const card = {
  text: "Run npm test",
  noAllow: null as string | null,
  link: "https://tapgate.example.com/approvals/apr_x",
};

describe("the Telegram card", () => {
  it("shows the lock-screen text, and Allow once / Deny / Open in Tapgate", () => {
    const key = randomBase62(22);
    expect(cardText(card)).toContain("Run npm test");
    expect(cardText(card)).not.toContain(HIGH_RISK_LINE);
    expect(cardKeyboard(card, key)).toEqual({
      inline_keyboard: [
        [
          { text: "Allow once", callback_data: `a:${key}` },
          { text: "Deny", callback_data: `d:${key}` },
        ],
        [{ text: "Open in Tapgate", url: card.link }],
      ],
    });
  });

  it("has no Allow button for a high-risk request, and says why", () => {
    const risky = { ...card, noAllow: HIGH_RISK_LINE };
    const buttons = cardKeyboard(risky, randomBase62(22)).inline_keyboard.flat();
    expect(buttons.map((b) => b.text)).toEqual(["Deny", "Open in Tapgate"]);
    expect(cardText(risky)).toContain("needs your passkey: open in Tapgate");
  });

  it("keeps every callback_data within Telegram's 64 bytes, and reads it back", () => {
    const key = randomBase62(22);
    const data = cardKeyboard(card, key)
      .inline_keyboard.flat()
      .flatMap((b) => ("callback_data" in b ? [b.callback_data] : []));
    for (const value of data) expect(new TextEncoder().encode(value).length).toBeLessThanOrEqual(64);
    expect(data.map(readTap)).toEqual([
      { answer: "allow_once", key },
      { answer: "deny", key },
    ]);
  });

  it("reads nothing from data it did not write", () => {
    for (const data of [
      undefined,
      "",
      "a:",
      "x:abc",
      `a:${randomBase62(21)}`,
      `a:${randomBase62(22)}x`,
      "a:../../etc",
    ]) {
      expect(readTap(data)).toBeNull();
    }
  });

  it("ends with who decided and where, and the request's line", () => {
    const ended = endedText(card, { state: "allowed", text: "Allowed by Ada on Telegram" });
    expect(ended).toContain("Run npm test");
    expect(ended).toContain("Allowed by Ada on Telegram");
  });
});
