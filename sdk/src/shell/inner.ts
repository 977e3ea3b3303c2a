/**
 * What a command runs in its turn, read from its arguments: the script of a shell (`bash -c`),
 * `eval`, `ssh host …` or `watch`; the command behind a wrapper (`env`, `sudo`, `xargs`, `timeout`,
 * `find -exec`, …); an interpreter's inline code (`python3 -c`); and whether it runs its input as
 * a script (`… | sh`, `… | python3`).
 *
 * Owns: those tables and how each reads its arguments. Does not own: parsing the line, or reading
 * what is found (`commands.ts`).
 */
/**
 * What a command runs in its turn: other commands (argv), scripts (shell text), code in another
 * language that may run anything (`python3 -c …`: not read, matched anywhere), and whether it runs
 * its input as a script (`… | sh`: the script around it is then opaque).
 */
export interface Inner {
  commands: string[][];
  scripts: string[];
  code?: string[];
  runsInput?: boolean;
}

const NONE: Inner = { commands: [], scripts: [] };

/**
 * Commands that run the rest of their arguments as a command: options taking a separate
 * argument, leading positional arguments (`timeout 10 …`), `NAME=value` words (`env`), and
 * options whose argument is a script (`env -S`, `su -c`, `flock -c`).
 */
interface Wrapper {
  withArgument?: readonly string[];
  positionals?: number;
  assignments?: boolean;
  script?: readonly string[];
}

const WRAPPERS: Record<string, Wrapper> = {
  env: { withArgument: ["-u", "--unset", "-C", "--chdir"], assignments: true, script: ["-S", "--split-string"] },
  sudo: {
    withArgument: [
      ...["-u", "--user", "-g", "--group", "-p", "--prompt", "-C", "--close-from", "-D", "--chdir", "-h", "--host"],
      ...["-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout", "-R", "--chroot"],
    ],
  },
  doas: { withArgument: ["-u", "-C"] },
  xargs: {
    withArgument: [
      ...["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"],
      ...["--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars"],
    ],
  },
  nohup: {},
  coproc: {},
  setsid: {},
  builtin: {},
  command: {},
  caffeinate: {},
  unbuffer: {},
  chronic: {},
  exec: { withArgument: ["-a"] },
  time: { withArgument: ["-f", "--format", "-o", "--output"] },
  nice: { withArgument: ["-n", "--adjustment"] },
  ionice: { withArgument: ["-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"] },
  stdbuf: { withArgument: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  timeout: { withArgument: ["-s", "--signal", "-k", "--kill-after"], positionals: 1 },
  chroot: { withArgument: ["--userspec", "--groups"], positionals: 1 },
  flock: {
    withArgument: ["-w", "--timeout", "-E", "--conflict-exit-code"],
    positionals: 1,
    script: ["-c", "--command"],
  },
  su: {
    withArgument: ["-s", "--shell", "-g", "--group", "-G", "--supp-group"],
    positionals: 1,
    script: ["-c", "--command"],
  },
};

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"]);
/** Shell options that take a separate argument (`bash -o pipefail -c …`). */
const SHELL_ARGUMENT_OPTIONS = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);
const SSH_ARGUMENT_OPTIONS = new Set("BbcDEeFIiJLlmOopQRSWw".split("").map((letter) => `-${letter}`));

/** Programs whose arguments are another command or script (shells, `eval`, `ssh`, `watch`, `find -exec`, wrappers). */
export function runsOtherCommands(program: string): boolean {
  return SHELLS.has(program) || ["eval", "ssh", "watch", "find"].includes(program) || Object.hasOwn(WRAPPERS, program);
}

export function innerOf(argv: string[]): Inner {
  const [name = "", ...args] = argv;
  if (SHELLS.has(name)) return shellScript(args);
  const interpreter = name.replace(/[\d.]+$/, "");
  if (Object.hasOwn(INLINE_CODE, interpreter)) return interpreted(args, INLINE_CODE[interpreter] as Interpreter);
  if (name === "eval") return { commands: [], scripts: [args.join(" ")] };
  if (name === "ssh") return sshCommand(args);
  if (name === "watch") return watchCommand(args);
  if (name === "find") return { commands: findExecs(args), scripts: [] };
  const wrapper = Object.hasOwn(WRAPPERS, name) ? WRAPPERS[name] : undefined;
  if (!wrapper) return NONE;
  const inner = wrapped(args, wrapper);
  // xargs adds its input as arguments: `xargs rm -rf` removes something.
  return name === "xargs" ? { ...inner, commands: inner.commands.map((c) => [...c, "…"]) } : inner;
}

/**
 * `bash -c 'script'`, `sh -ec 'script'`, `zsh -o x -c 'script'`; a script file is not read; with
 * neither, or with `-s` (`sh`, `bash -s -- args`, `sh -`, `sh /dev/stdin`), the shell runs its
 * input as a script.
 */
function shellScript(args: string[]): Inner {
  let inline = false;
  let fromInput = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") continue;
    if (SHELL_ARGUMENT_OPTIONS.has(arg)) i++;
    else if (/^-[A-Za-z]*c[A-Za-z]*$/.test(arg) || arg === "--command") inline = true;
    else if (/^-[A-Za-z]*s[A-Za-z]*$/.test(arg)) fromInput = true;
    else if (arg === "-" || arg === "/dev/stdin") return { ...NONE, runsInput: true };
    else if (!arg.startsWith("-") && !arg.startsWith("+")) {
      if (inline) return { commands: [], scripts: [arg] };
      return fromInput ? { ...NONE, runsInput: true } : NONE;
    }
  }
  return inline ? NONE : { ...NONE, runsInput: true };
}

/**
 * Interpreters whose options take code to run (`python3 -c`, `perl -e`, `node -e`), by name
 * without a version (`python3.12` is `python`); options that take a separate argument; and the
 * option after which the rest is a module's (`python -m`).
 */
interface Interpreter {
  code: readonly string[];
  withArgument: readonly string[];
  module?: string;
}

const INLINE_CODE: Record<string, Interpreter> = {
  python: { code: ["-c"], withArgument: ["-W", "-X"], module: "-m" },
  perl: { code: ["-e", "-E"], withArgument: ["-I", "-M", "-m", "-x", "-i"] },
  ruby: { code: ["-e"], withArgument: ["-I", "-r", "-C", "-E", "-x"] },
  node: { code: ["-e", "--eval", "-p", "--print"], withArgument: ["-r", "--require", "--import", "-C"] },
  php: { code: ["-r"], withArgument: ["-d", "-c", "-z"] },
};

/**
 * What an interpreter runs that the reading can see: the code its options carry (`-c code`,
 * `-ccode`, a cluster like `perl -ne code`, `--eval=code`), or its input when it names no script
 * (`… | python3`, `python3 -`). A script file or a module is not read.
 */
function interpreted(args: string[], interpreter: Interpreter): Inner {
  const code: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--" || arg === "-" || !arg.startsWith("-")) {
      // The code read, or a script file (not read); with neither, the interpreter runs its input.
      const script = arg === "--" ? args[i + 1] : arg;
      return code.length > 0 || (script !== undefined && script !== "-") ? { ...NONE, code } : stdin;
    }
    if (arg === interpreter.module) return { ...NONE, code };
    if (arg.startsWith("--")) {
      const [option = arg, attached] = arg.split(/=(.*)/s);
      if (interpreter.code.includes(option)) code.push(attached ?? args[++i] ?? "");
      else if (attached === undefined && interpreter.withArgument.includes(option)) i++;
      continue;
    }
    // A cluster of short options: the first that takes a value takes the rest of it, or the next word.
    for (let j = 1; j < arg.length; j++) {
      const option = `-${arg[j]}`;
      const rest = arg.slice(j + 1);
      if (option === interpreter.module) return { ...NONE, code };
      if (interpreter.code.includes(option)) code.push(rest || (args[++i] ?? ""));
      else if (!interpreter.withArgument.includes(option)) continue;
      else if (rest === "") i++;
      break;
    }
  }
  return code.length > 0 ? { ...NONE, code } : stdin;
}

const stdin: Inner = { ...NONE, runsInput: true };

/** `ssh [options] host command…`: the remote shell runs the rest as one line, or else its input. */
function sshCommand(args: string[]): Inner {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith("-"))
    i += SSH_ARGUMENT_OPTIONS.has(args[i] as string) ? 2 : 1;
  const rest = args.slice(i + 1);
  // With no command the remote shell runs its input (`… | ssh host`).
  return rest.length > 0 ? { commands: [], scripts: [rest.join(" ")] } : { ...NONE, runsInput: true };
}

/** `watch [options] command…` runs the rest through `sh -c` (or as argv with `-x`: read both ways alike). */
function watchCommand(args: string[]): Inner {
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith("-"))
    i += ["-n", "--interval"].includes(args[i] as string) ? 2 : 1;
  const rest = args.slice(i);
  return rest.length > 0 ? { commands: [], scripts: [rest.join(" ")] } : NONE;
}

/** `find … -exec cmd {} ;` (also `-execdir`, `-ok`, `-okdir`, ending at `;` or `+`). */
function findExecs(args: string[]): string[][] {
  const commands: string[][] = [];
  for (let i = 0; i < args.length; i++) {
    if (!["-exec", "-execdir", "-ok", "-okdir"].includes(args[i] as string)) continue;
    const end = args.findIndex((a, j) => j > i && (a === ";" || a === "+"));
    const stop = end === -1 ? args.length : end;
    commands.push(args.slice(i + 1, stop));
    i = stop;
  }
  return commands;
}

/** The command a wrapper runs: past its options, their arguments, its positionals and `NAME=value` words. */
function wrapped(args: string[], wrapper: Wrapper): Inner {
  const scripts: string[] = [];
  let positionals = wrapper.positionals ?? 0;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      i++;
      break;
    }
    if (arg.startsWith("-")) {
      const [option = arg, attached] = arg.startsWith("--") ? arg.split(/=(.*)/s) : [arg];
      if (wrapper.script?.includes(option)) {
        const script = attached ?? args[++i];
        if (script !== undefined) scripts.push(script);
      } else if (attached === undefined && wrapper.withArgument?.includes(option)) {
        i++;
      }
      continue;
    }
    if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) continue;
    if (positionals > 0) {
      positionals--;
      continue;
    }
    break;
  }
  const rest = args.slice(i);
  return { commands: rest.length > 0 ? [rest] : [], scripts };
}
