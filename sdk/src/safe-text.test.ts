import { describe, expect, it } from "vitest";
import { containsUnsafeText, toSafeText, withVisibleTokens } from "./safe-text.js";

const tokens = (text: string) =>
  toSafeText(text).segments.flatMap((s) => (s.kind === "escape" ? [s.label] : s.kind === "text" ? [s.text] : []));

describe("toSafeText: invisible and confusable characters become tokens", () => {
  it.each([
    ["Hangul choseong filler", "\u115f", "U+115F"],
    ["Hangul jungseong filler", "\u1160", "U+1160"],
    ["Hangul filler", "\u3164", "U+3164"],
    ["halfwidth Hangul filler", "\uffa0", "U+FFA0"],
    ["Mongolian vowel separator", "\u180e", "U+180E"],
    ["combining grapheme joiner", "\u034f", "U+034F"],
    ["line separator", "\u2028", "U+2028"],
    ["paragraph separator", "\u2029", "U+2029"],
    ["variation selector 1", "\ufe00", "U+FE00"],
    ["variation selector 16", "\ufe0f", "U+FE0F"],
    ["variation selector 17", "\u{e0100}", "U+E0100"],
    ["variation selector 256", "\u{e01ef}", "U+E01EF"],
    ["tag begin", "\u{e0001}", "U+E0001"],
    ["tag A", "\u{e0041}", "U+E0041"],
    ["cancel tag", "\u{e007f}", "U+E007F"],
    ["deprecated format character", "\u206a", "U+206A"],
    ["Braille blank", "\u2800", "U+2800"],
  ])("%s", (_, ch, label) => {
    const safe = toSafeText(`rm${ch}-rf`);
    expect(safe.suspicious).toBe(true);
    expect(tokens(`rm${ch}-rf`)).toEqual(["rm", label, "-rf"]);
    expect(containsUnsafeText({ command: `ls${ch}` })).toBe(true);
  });

  it("names what tag characters spell, so hidden ASCII can be read", () => {
    const hidden = Array.from("hi", (c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("");
    const escapes = toSafeText(`ok${hidden}`).segments.filter((s) => s.kind === "escape");
    expect(escapes.map((s) => s.kind === "escape" && s.name)).toEqual([
      'U+E0068 tag character (a hidden "h")',
      'U+E0069 tag character (a hidden "i")',
    ]);
  });

  it("leaves ordinary text, other astral characters and newlines alone", () => {
    for (const text of ["git push --force", "héllo wörld", "日本語 한국어", "emoji 😀 𝄞", "a\tb\nc"]) {
      expect(toSafeText(text).suspicious, text).toBe(false);
      expect(containsUnsafeText(text)).toBe(false);
    }
    // Neighbours of the ranges are not swept up.
    for (const ch of ["\u202f", "\ufe10", "\u{e0080}", "\u{e01f0}", "\u115e", "\u1161"]) {
      expect(toSafeText(`x${ch}`).suspicious, ch.codePointAt(0)?.toString(16)).toBe(false);
    }
  });

  it("withVisibleTokens (lock screens) shows the same tokens in plain text", () => {
    expect(withVisibleTokens("a\u3164b\u{e0041}\u202e\u001b")).toBe("a⟨U+3164⟩b⟨U+E0041⟩⟨U+202E⟩⟨ESC⟩");
  });
});
