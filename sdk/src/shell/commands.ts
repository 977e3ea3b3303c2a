/**
 * What a shell command line runs, read once for matching: every simple command it contains,
 * wherever it sits (a chain, `&`, a pipeline, a subshell, a group, a function, a loop, a `$(…)`
 * or backtick substitution, a `bash -c`/`sh -c`/`eval`/`su -c`/`ssh host …`/`watch` string, or
 * behind a wrapper like `env`, `sudo`, `xargs`, `nohup`, `coproc`, `time`, `command`, `exec`,
 * `nice`, `timeout`, `find -exec`), with quotes removed and the program's path reduced to its name
 * (`/usr/bin/git` is `git`); a few canonical spellings (`git push origin +main` also reads as
 * `git push --force origin +main`, `rm -r -v -f x` as `rm -rf x`, `terraform apply -destroy` as
 * `terraform destroy`); the files it redirects output to (`>`, `>>`, `tee`); and the arguments
 * of a program chosen at run time (`$GIT push -f`). Parsed by `@ericcornelissen/bash-parser`
 * (pure JavaScript: the same in workerd, Node and the browser).
 *
 * Owns: the reading. Does not own: patterns or what a match means (`request-match.ts`). What
 * is not read stays as text in `opaque`, and callers match that text anywhere: a line the parser
 * refuses, or with a `$((…))` or a substitution inside a `${…}`; a script a shell runs from its
 * input (`… | sh`, `… | python3`); an interpreter's inline code (`python3 -c …`); a line longer than
 * `MAX_PARSED_CHARS` or with brackets nested deeper than `MAX_BRACKETS`, scripts nested deeper
 * than `MAX_DEPTH`, more than `MAX_COMMANDS` commands.
 */
/// <reference path="./bash-parser.d.ts" />
import parseBash from "@ericcornelissen/bash-parser";
import { innerOf } from "./inner.js";

/** What a command line runs: argv texts to match, text that could not be read, files written. */
export interface ShellReading {
  /** Each simple command (and its canonical spellings) as its words joined by single spaces. */
  readonly commands: readonly string[];
  /** Scripts that were not parsed, as written: a pattern found anywhere in one matches. */
  readonly opaque: readonly string[];
  /** Targets of output redirections and `tee`, as written (quotes removed). */
  readonly writes: readonly string[];
  /**
   * The arguments of each simple command whose program is chosen at run time (`$TOOL push -f`,
   * `${X:-git} push -f`, `$(which git) push -f`): it may be any program, so a pattern matches
   * when its own arguments do.
   */
  readonly chosenAtRunTime: readonly string[];
}

/**
 * The parser's time grows faster than the text (a 4 KiB line takes milliseconds, a 40 KiB heredoc
 * seconds), so a longer line is not parsed: it is read as opaque text.
 */
const MAX_PARSED_CHARS = 4_096;
/** Deeply nested brackets are the parser's slowest case (seconds for 2,000 `(`): not parsed. */
const MAX_BRACKETS = 32;
/** `bash -c "sh -c '…'"` nests; past this depth the rest is read as opaque text. */
const MAX_DEPTH = 8;
/** Past this many commands the whole line is read as opaque text (bounds matching work). */
const MAX_COMMANDS = 2_000;

/** A reading as it is made; `overflow` when a limit is met (the whole line is then opaque). */
interface Reader {
  commands: string[];
  opaque: string[];
  writes: string[];
  chosenAtRunTime: string[];
  overflow: boolean;
  /** The script being read (a shell reading its input makes it opaque). */
  script: string;
}

/**
 * The last readings, by command line: a request's command is read on open and again by rules.
 * Only lines short enough to parse are kept (a longer one costs nothing to read, and keeping it
 * would hold on to its text).
 */
const recent = new Map<string, ShellReading>();
const RECENT_READINGS = 64;

export function readShell(command: string): ShellReading {
  if (command.length > MAX_PARSED_CHARS) return opaqueReading(command);
  const known = recent.get(command);
  if (known) return known;
  const reading = read(command);
  if (recent.size >= RECENT_READINGS) recent.delete(recent.keys().next().value as string);
  recent.set(command, reading);
  return reading;
}

function read(command: string): ShellReading {
  const reader: Reader = {
    commands: [],
    opaque: [],
    writes: [],
    chosenAtRunTime: [],
    overflow: false,
    script: command,
  };
  readScript(command, 0, reader);
  if (reader.overflow) return opaqueReading(command);
  const { commands, opaque, writes, chosenAtRunTime } = reader;
  return { commands, opaque, writes, chosenAtRunTime };
}

const opaqueReading = (command: string): ShellReading => ({
  commands: [],
  opaque: [command],
  writes: [],
  chosenAtRunTime: [],
});

function readScript(script: string, depth: number, reader: Reader): void {
  if (script.trim() === "") return;
  if (depth > MAX_DEPTH || script.length > MAX_PARSED_CHARS || bracketDepth(script) > MAX_BRACKETS) {
    reader.opaque.push(script);
    return;
  }
  const outer = reader.script;
  reader.script = script;
  try {
    const tree = parseBash(script, { mode: "bash" });
    if (holdsUnreadPart(tree)) throw new SyntaxError("a part bash runs commands in, not read as commands");
    walk(tree, depth, reader);
  } catch {
    // A parse error, a stack overflow on absurd nesting, or a part not read: either way, not readable.
    reader.opaque.push(script);
  } finally {
    reader.script = outer;
  }
}

/**
 * Whether the tree holds a part the parser does not read as commands though bash runs commands
 * in it: a `$((…))` (`x=$(( \`git push -f\` ))`; the parser reads its inside as a JavaScript
 * expression, with `babylon`, or not at all in the Worker's bundle: `worker/no-babylon.ts`), or a
 * `${…}` with a substitution inside (`${x:-$(git push -f)}`; the parser drops the word). Such a
 * script is opaque: a pattern anywhere in it matches.
 */
function holdsUnreadPart(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsUnreadPart);
  if (!isNode(value)) return false;
  if (value.type === "ArithmeticExpansion") return true;
  if (typeof value.text === "string" && Array.isArray(value.expansion)) {
    const text = value.text;
    if (value.expansion.some((part) => isNode(part) && substitutesInside(text, part))) return true;
  }
  return Object.entries(value).some(([key, child]) => key !== "loc" && holdsUnreadPart(child));
}

function substitutesInside(text: string, part: Node): boolean {
  if (part.type !== "ParameterExpansion" || !isNode(part.loc)) return false;
  const { start, end } = part.loc;
  if (typeof start !== "number" || typeof end !== "number") return true;
  const written = text.slice(start, end + 1);
  return written.includes("$(") || written.includes("`");
}

/** How deep `(` and `{` nest, counted over the raw text (quotes too: overcounting only means not parsing). */
function bracketDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (const c of text) {
    if (c === "(" || c === "{") deepest = Math.max(deepest, ++depth);
    else if ((c === ")" || c === "}") && depth > 0) depth--;
  }
  return deepest;
}

type Node = Record<string, unknown>;
const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null;

/** Every `Command` node anywhere in the tree, substitutions included (their `commandAST`). */
function walk(value: unknown, depth: number, reader: Reader): void {
  if (reader.overflow) return;
  if (Array.isArray(value)) {
    for (const item of value) walk(item, depth, reader);
    return;
  }
  if (!isNode(value)) return;
  if (value.type === "Command") readCommandNode(value, depth, reader);
  for (const [key, child] of Object.entries(value)) if (key !== "loc") walk(child, depth, reader);
}

function readCommandNode(node: Node, depth: number, reader: Reader): void {
  const words = [node.name, ...(Array.isArray(node.suffix) ? node.suffix : [])].filter(isNode);
  const argv: string[] = [];
  for (const word of words) {
    if (word.type === "Redirect") readRedirect(word, reader);
    else argv.push(wordText(word));
  }
  for (const word of Array.isArray(node.prefix) ? node.prefix.filter(isNode) : []) {
    if (word.type === "Redirect") readRedirect(word, reader);
  }
  if (argv.length > 0) readArgv([commandName(argv[0] as string), ...argv.slice(1)], depth, reader);
}

/** A word with quotes removed: the parser removes them itself unless the word holds an expansion. */
function wordText(word: Node): string {
  const text = typeof word.text === "string" ? word.text : "";
  return Array.isArray(word.expansion) ? text.replace(/["'\\]/g, "") : text;
}

/** A program named by path is matched by its name. */
const commandName = (word: string) => word.slice(word.lastIndexOf("/") + 1);

function readRedirect(redirect: Node, reader: Reader): void {
  const op = isNode(redirect.op) && typeof redirect.op.text === "string" ? redirect.op.text : "";
  const target = isNode(redirect.file) ? wordText(redirect.file) : "";
  // `2>&1`, `>&-`: a file descriptor, not a file.
  if (op.includes(">") && target !== "" && !/^(\d+|-)$/.test(target)) reader.writes.push(target);
}

/** One simple command: itself, its canonical spellings, and what it runs in turn. */
function readArgv(argv: string[], depth: number, reader: Reader): void {
  if (argv.length === 0) return;
  if (reader.commands.length >= MAX_COMMANDS || depth > MAX_DEPTH) {
    reader.overflow = true;
    return;
  }
  const text = argv.join(" ");
  reader.commands.push(text);
  for (const form of canonicalForms(argv)) {
    const formText = form.join(" ");
    if (formText !== text) reader.commands.push(formText);
  }
  const name = argv[0] as string;
  if (/[$`]/.test(name)) reader.chosenAtRunTime.push(argv.slice(1).join(" "));
  if (name === "tee") reader.writes.push(...argv.slice(1).filter((a) => !a.startsWith("-")));
  const inner = innerOf(argv);
  if (inner.runsInput) reader.opaque.push(reader.script);
  reader.opaque.push(...(inner.code ?? []));
  for (const script of inner.scripts) readScript(script, depth + 1, reader);
  for (const command of inner.commands) {
    if (command.length > 0) readArgv([commandName(command[0] as string), ...command.slice(1)], depth + 1, reader);
  }
}

/**
 * Spellings that mean the same as a form the patterns name: a tool's global options before its
 * subcommand dropped (`git -C dir push` is `git push`), a force push however it is asked for
 * (`-f` in a cluster, `+refspec`, `--mirror`) also as `git push --force …`, and `rm` with
 * recursive and force in any spelling also as `rm -rf …`.
 */
function canonicalForms(argv: string[]): string[][] {
  const [name = "", ...args] = argv;
  if (name === "rm") return rmForms(args);
  const globals = Object.hasOwn(GLOBAL_OPTIONS, name) ? GLOBAL_OPTIONS[name] : undefined;
  if (!globals) return [];
  const rest = withoutLeadingOptions(args, globals);
  const forms = [[name, ...rest]];
  if (name === "git" && rest[0] === "push" && isForcePush(rest.slice(1))) {
    forms.push([name, "push", "--force", ...rest.slice(1)]);
  }
  // `terraform apply -destroy` is `terraform destroy`.
  const applyArgs = name === "terraform" && rest[0] === "apply" ? rest.slice(1) : [];
  const destroyArgs = applyArgs.filter((arg) => arg !== "-destroy" && arg !== "--destroy");
  if (destroyArgs.length < applyArgs.length) forms.push([name, "destroy", ...destroyArgs]);
  return forms;
}

/** Global options that take a separate argument, of the tools whose subcommands the patterns name. */
const GLOBAL_OPTIONS: Record<string, readonly string[]> = {
  git: ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path"],
  kubectl: [
    ...["-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-s", "--server", "--token"],
    ...["--as", "--as-group", "--as-uid", "-v", "--request-timeout", "--certificate-authority"],
  ],
  terraform: [],
};

function withoutLeadingOptions(args: string[], withArgument: readonly string[]): string[] {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith("-")) i += withArgument.includes(args[i] as string) ? 2 : 1;
  return args.slice(i);
}

function isForcePush(args: string[]): boolean {
  return args.some(
    (arg) =>
      arg.startsWith("--force") ||
      arg === "--mirror" ||
      /^-[A-Za-z]*f[A-Za-z]*$/.test(arg) ||
      (arg.startsWith("+") && arg.length > 1),
  );
}

function rmForms(args: string[]): string[][] {
  const end = args.indexOf("--");
  const before = end === -1 ? args : args.slice(0, end);
  const options = before.filter((a) => a.startsWith("-") && a !== "-");
  const operands = [...before.filter((a) => !options.includes(a)), ...(end === -1 ? [] : args.slice(end + 1))];
  const short = options.filter((o) => !o.startsWith("--")).join("");
  const recursive = /[rR]/.test(short) || options.includes("--recursive");
  const force = short.includes("f") || options.includes("--force");
  return recursive && force ? [["rm", "-rf", ...operands]] : [];
}
