/**
 * Line diffs for `diff` content blocks: Myers' O(ND) algorithm on the lines between the common
 * prefix and suffix, grouped into unified-diff hunks. Pure: no DOM.
 */

export type DiffOp = "equal" | "delete" | "insert";

export interface DiffLine {
  op: DiffOp;
  text: string;
  /** 1-based line numbers; null on the side the line does not exist. */
  oldNo: number | null;
  newNo: number | null;
}

export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  lines: DiffLine[];
}

/** Past this many edits the diff is shown as "all old lines removed, all new lines added". */
const MAX_EDITS = 2000;

/** Splits text into lines; a final newline ends the last line rather than starting an empty one. */
export function splitLines(text: string | null | undefined): string[] {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The shortest edit script from `a` to `b`, as one entry per line of either side. */
export function diffLines(a: readonly string[], b: readonly string[], maxEdits = MAX_EDITS): DiffLine[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: DiffOp[] = [
    ...Array<DiffOp>(start).fill("equal"),
    ...myers(a.slice(start, endA), b.slice(start, endB), maxEdits),
    ...Array<DiffOp>(a.length - endA).fill("equal"),
  ];
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  for (const op of ops) {
    if (op === "equal") out.push({ op, text: a[i] ?? "", oldNo: ++i, newNo: ++j });
    else if (op === "delete") out.push({ op, text: a[i] ?? "", oldNo: ++i, newNo: null });
    else out.push({ op, text: b[j] ?? "", oldNo: null, newNo: ++j });
  }
  return out;
}

function myers(a: readonly string[], b: readonly string[], maxEdits: number): DiffOp[] {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) return [...Array<DiffOp>(n).fill("delete"), ...Array<DiffOp>(m).fill("insert")];
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds v for diagonals -d-1..d+1 as it was before step d: enough to walk back.
  const trace: Int32Array[] = [];
  for (let d = 0; d <= Math.min(max, maxEdits); d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, n, m);
    }
  }
  return [...Array<DiffOp>(n).fill("delete"), ...Array<DiffOp>(m).fill("insert")];
}

function backtrack(trace: Int32Array[], n: number, m: number): DiffOp[] {
  const ops: DiffOp[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d] as Int32Array;
    const at = (k: number) => v[k + d + 1] ?? 0;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push("equal");
      x--;
      y--;
    }
    if (d > 0) ops.push(down ? "insert" : "delete");
    x = prevX;
    y = prevY;
  }
  return ops.reverse();
}

/** Unified-diff hunks with `context` unchanged lines around each change. */
export function unifiedDiff(oldText: string | null | undefined, newText: string, context = 3): Hunk[] {
  const lines = diffLines(splitLines(oldText), splitLines(newText));
  const shown = new Uint8Array(lines.length);
  lines.forEach((l, i) => {
    if (l.op === "equal") return;
    shown.fill(1, Math.max(0, i - context), Math.min(lines.length, i + context + 1));
  });
  const hunks: Hunk[] = [];
  let oldSeen = 0;
  let newSeen = 0;
  let hunk: Hunk | null = null;
  lines.forEach((l, i) => {
    if (!shown[i]) hunk = null;
    else {
      if (!hunk) {
        // As in `diff -u`, an empty side names the line before it.
        hunk = { oldStart: oldSeen, oldCount: 0, newStart: newSeen, newCount: 0, lines: [] };
        hunks.push(hunk);
      }
      hunk.lines.push(l);
      if (l.oldNo !== null && hunk.oldCount++ === 0) hunk.oldStart = l.oldNo;
      if (l.newNo !== null && hunk.newCount++ === 0) hunk.newStart = l.newNo;
    }
    if (l.oldNo !== null) oldSeen = l.oldNo;
    if (l.newNo !== null) newSeen = l.newNo;
  });
  return hunks;
}
