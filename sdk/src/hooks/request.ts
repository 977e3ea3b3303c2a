/**
 * What every agent hook's payload → permission-request mapping shares: session ids mapped into
 * Tapgate's charset, and titles that never carry what tends to hold secrets. Pure and
 * environment-neutral (the Worker's HTTP hook endpoint imports the Claude mapping built on it).
 *
 * Does not own: any one agent's tool names or payload (`claude/`, `codex/`, `gemini/`).
 */

/** Session ids are 1-128 of [A-Za-z0-9._:-] (agents' UUIDs already fit); anything else is mapped into that. */
export function sanitizeSessionId(id: string, fallback: string): string {
  const cleaned = id.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128);
  return cleaned || fallback;
}

/** How a title shows a tool's main argument: a command keeps only its program, a URL only its host. */
export type SummaryStyle = "command" | "url" | "text";

const SUMMARY_CHARS = 80;

/**
 * Whitespace collapsed and cut at 80 code points. The title may reach a lock screen, so it never
 * carries what tends to hold secrets (the card shows the full input).
 */
export function summarizeAs(style: SummaryStyle, raw: string): string {
  const text = withoutArguments(style, raw.replace(/\s+/g, " ").trim());
  const chars = Array.from(text);
  return chars.length > SUMMARY_CHARS ? `${chars.slice(0, SUMMARY_CHARS - 1).join("")}…` : text;
}

function withoutArguments(style: SummaryStyle, text: string): string {
  if (style === "command") {
    const [program = "", ...rest] = text.split(" ");
    return rest.length > 0 ? `${program} …` : program;
  }
  if (style === "url") {
    try {
      return new URL(text).host;
    } catch {
      return "";
    }
  }
  return text;
}

/** `Tool: summary`, or the tool alone when there is nothing to summarise. */
export const titleOf = (toolName: string, summary: string) => (summary ? `${toolName}: ${summary}` : toolName);

export const stringOf = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
