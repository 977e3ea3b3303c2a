/**
 * What the Worker's bundle takes for `babylon` (wrangler.toml `[alias]`). `bash-parser` parses
 * the inside of a `$((…))` as JavaScript with it, and `sdk/src/shell/commands.ts` reads any script
 * holding one as opaque text whatever that parse gives: so the 127 KB JavaScript parser is left
 * out, and the parse fails here as babylon's own would on a bad expression (the script is then
 * opaque all the same).
 */
export function parse(): never {
  throw new SyntaxError("arithmetic expansions are not parsed in the Worker");
}
