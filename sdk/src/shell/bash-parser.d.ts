/**
 * The part of `@ericcornelissen/bash-parser` (which ships no types) that `commands.ts` reads:
 * a parse into a tree of plain objects, each with a `type`. The walk reads nodes generically, so
 * only the shapes it looks into are named here.
 */
declare module "@ericcornelissen/bash-parser" {
  interface BashNode {
    type: string;
    [key: string]: unknown;
  }
  /** Throws on what it cannot parse (a `SyntaxError` or another `Error`). */
  function parse(source: string, options?: { mode?: "posix" | "bash" }): BashNode;
  export default parse;
}
