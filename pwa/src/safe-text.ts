/**
 * Agent-supplied text, made safe to look at: characters that reorder, hide or smuggle text
 * (bidi overrides and isolates, zero-width and other invisible characters, terminal escapes,
 * C0/C1 controls, lone surrogates) become visible tokens like ⟨U+202E⟩ or ⟨ESC⟩, and very long
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
  1564: "Arabic letter mark",
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
  65279: "zero-width no-break space (BOM)",
};

/**
 * One unsafe character each: controls except tab and newline (CRLF line ends are split off
 * first, so any CR left is a lone one that could overwrite a terminal line), C1 controls,
 * invisible formatting and bidi controls, and lone surrogates.
 */
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function describe(ch: string): { label: string; name: string } {
  const code = ch.charCodeAt(0);
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
  if (code < 0x20) {
    const abbr = C0_NAMES[code] ?? hex;
    return { label: abbr, name: `${hex} control character ${abbr}${code === 0x1b ? " (terminal escape)" : ""}` };
  }
  if (code >= 0xd800 && code <= 0xdfff) return { label: hex, name: `${hex} lone surrogate` };
  if (code >= 0x80 && code <= 0x9f) return { label: hex, name: `${hex} C1 control character` };
  return { label: hex, name: `${hex} ${NAMES[code] ?? "invisible formatting character"}` };
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
