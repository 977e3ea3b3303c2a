/** CSV cells as the history export writes them (the Worker's export, and private rows built in the browser). */

/**
 * Quotes what needs quoting, and defuses text a spreadsheet would run as a formula (a tool title
 * is agent-controlled): such a cell starts with a single quote.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** RFC 4180 lines (CRLF, a final one) of `rows`, each cell through `csvCell`. */
export function csvLines(rows: ReadonlyArray<readonly unknown[]>): string {
  return `${rows.map((row) => row.map(csvCell).join(",")).join("\r\n")}\r\n`;
}
