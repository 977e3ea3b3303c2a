/**
 * Agent-supplied text, made safe to look at: characters that reorder, hide or smuggle text
 * (bidi overrides and isolates, zero-width and other invisible characters, blank "letters" such as
 * the Hangul fillers, tag characters that spell hidden ASCII, variation selectors, line and
 * paragraph separators, terminal escapes, C0/C1 controls, lone surrogates) become visible tokens
 * like ⟨U+202E⟩ or ⟨ESC⟩, and very long
 * lines are cut, so what a person approves is what the agent sent. Pure: no DOM.
 */

export type Segment =
  | { kind: "text"; text: string }
  /** `label` is what to show, e.g. "U+202E" or "ESC"; `name` explains it. */
  | { kind: "escape"; label: string; name: string }
  /** A line was cut here; `hidden` characters follow in the original. */
  | { kind: "cut"; hidden: number };

export interface SafeText {
  segments: Segment[];
  /** Whether any character had to be made visible, shown or cut: the card warns about it. */
  suspicious: boolean;
  /** Characters hidden by line cuts. */
  hidden: number;
}

/** Lines longer than this are cut until the person asks for everything. */
export const DEFAULT_LINE_LIMIT = 2000;

// biome-ignore format: a table
const C0_NAMES = [
  "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI",
  "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
];

const NAMES: Record<number, string> = {
  127: "delete",
  173: "soft hyphen",
  847: "combining grapheme joiner",
  1564: "Arabic letter mark",
  4447: "Hangul choseong filler (a blank letter)",
  4448: "Hangul jungseong filler (a blank letter)",
  6068: "Khmer vowel inherent aq (invisible)",
  6069: "Khmer vowel inherent aa (invisible)",
  6158: "Mongolian vowel separator",
  8203: "zero-width space",
  8204: "zero-width non-joiner",
  8205: "zero-width joiner",
  8206: "left-to-right mark",
  8207: "right-to-left mark",
  8234: "left-to-right embedding",
  8235: "right-to-left embedding",
  8236: "pop directional formatting",
  8237: "left-to-right override",
  8238: "right-to-left override",
  8288: "word joiner",
  8294: "left-to-right isolate",
  8295: "right-to-left isolate",
  8296: "first strong isolate",
  8297: "pop directional isolate",
  8232: "line separator",
  8233: "paragraph separator",
  10240: "Braille pattern blank",
  12644: "Hangul filler (a blank letter)",
  65279: "zero-width no-break space (BOM)",
  65440: "halfwidth Hangul filler (a blank letter)",
};

/**
 * One unsafe character each: controls except tab and newline (CRLF line ends are split off
 * first, so any CR left is a lone one that could overwrite a terminal line), C1 controls,
 * invisible formatting and bidi controls, characters that draw nothing but count as letters
 * (Hangul fillers, U+180E, U+034F, Braille blank), line and paragraph separators, variation
 * selectors (U+FE00–FE0F, and U+E0100–E01EF as surrogate pairs), tag characters (U+E0000–E007F,
 * which can spell hidden ASCII), invisible musical format characters, and lone surrogates.
 */
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u2800\u3164\ufeff\uffa0\ufff9-\ufffb]|\u034f|\u17b4|\u17b5|[\ufe00-\ufe0f]|\udb40[\udc00-\udc7f\udd00-\uddef]|\ud834[\udd73-\udd7a]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function describe(ch: string): { label: string; name: string } {
  const code = ch.codePointAt(0) ?? 0;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
  if (code < 0x20) {
    const abbr = C0_NAMES[code] ?? hex;
    return { label: abbr, name: `${hex} control character ${abbr}${code === 0x1b ? " (terminal escape)" : ""}` };
  }
  if (code >= 0xd800 && code <= 0xdfff) return { label: hex, name: `${hex} lone surrogate` };
  if (code >= 0x80 && code <= 0x9f) return { label: hex, name: `${hex} C1 control character` };
  if (code >= 0xe0000 && code <= 0xe007f) return { label: hex, name: `${hex} ${tagName(code)}` };
  if ((code >= 0xfe00 && code <= 0xfe0f) || (code >= 0xe0100 && code <= 0xe01ef)) {
    return { label: hex, name: `${hex} variation selector (changes how the character before it looks)` };
  }
  return { label: hex, name: `${hex} ${NAMES[code] ?? "invisible formatting character"}` };
}

/** Tag characters mirror ASCII (U+E0041 is a hidden "A"): say which, since that is what they smuggle. */
function tagName(code: number): string {
  const ascii = code - 0xe0000;
  return ascii > 0x20 && ascii < 0x7f ? `tag character (a hidden "${String.fromCharCode(ascii)}")` : "tag character";
}

/** `lineLimit: null` shows every character. */
export function toSafeText(input: string, lineLimit: number | null = DEFAULT_LINE_LIMIT): SafeText {
  const segments: Segment[] = [];
  let suspicious = false;
  let hidden = 0;
  const lines = input.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (hasUnsafe(line)) suspicious = true;
    let kept = line;
    if (lineLimit !== null && line.length > lineLimit) {
      // Never split a surrogate pair: that would itself look like a lone surrogate.
      const end = isHighSurrogate(line.charCodeAt(lineLimit - 1)) ? lineLimit - 1 : lineLimit;
      kept = line.slice(0, end);
      hidden += line.length - end;
    }
    let last = 0;
    for (const m of kept.matchAll(UNSAFE)) {
      if (m.index > last) segments.push({ kind: "text", text: kept.slice(last, m.index) });
      segments.push({ kind: "escape", ...describe(m[0]) });
      last = m.index + m[0].length;
    }
    if (last < kept.length) segments.push({ kind: "text", text: kept.slice(last) });
    if (kept.length < line.length) segments.push({ kind: "cut", hidden: line.length - kept.length });
    if (i < lines.length - 1) segments.push({ kind: "text", text: "\n" });
  });
  return { segments: mergeText(segments), suspicious, hidden };
}

/** Plain text with every unsafe character replaced by its ⟨token⟩: for surfaces that render raw text (lock screens). */
export function withVisibleTokens(text: string): string {
  return text.replace(UNSAFE, (ch) => `⟨${describe(ch).label}⟩`);
}

// Not global: `test` on a global regex moves its lastIndex, which `matchAll` would then inherit.
const UNSAFE_ANY = new RegExp(UNSAFE.source);

function hasUnsafe(text: string): boolean {
  return UNSAFE_ANY.test(text);
}

/** Whether any string anywhere in `value` (keys too) would be shown with tokens or cut. */
export function containsUnsafeText(value: unknown, lineLimit = DEFAULT_LINE_LIMIT): boolean {
  if (typeof value === "string") {
    const lines = value.split(/\r?\n/);
    return lines.some((l) => l.length > lineLimit || hasUnsafe(l));
  }
  if (Array.isArray(value)) return value.some((v) => containsUnsafeText(v, lineLimit));
  if (value && typeof value === "object") {
    return Object.entries(value).some(([k, v]) => containsUnsafeText(k, lineLimit) || containsUnsafeText(v, lineLimit));
  }
  return false;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

function mergeText(segments: Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const prev = out[out.length - 1];
    if (s.kind === "text" && prev?.kind === "text") prev.text += s.text;
    else out.push(s.kind === "text" ? { ...s } : s);
  }
  return out;
}
