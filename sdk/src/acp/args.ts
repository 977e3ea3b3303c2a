/** `tapgate acp|run [options] -- <agent command…>`, parsed the same way for both. */
import { parseArgs } from "node:util";

export interface AgentArgs {
  command: string[];
  decide: string;
  timeoutMs?: number;
  prompt?: string;
}

/** The options, or the message to print with the usage. */
export function parseAgentArgs(
  args: string[],
  { decideModes, prompt }: { decideModes: readonly string[]; prompt: boolean },
): AgentArgs | { error: string } {
  const split = args.indexOf("--");
  if (split === -1 || split === args.length - 1) return { error: "missing `-- <agent command…>`" };
  let values: { decide?: string; timeout?: string; prompt?: string };
  try {
    ({ values } = parseArgs({
      args: args.slice(0, split),
      options: { decide: { type: "string" }, timeout: { type: "string" }, prompt: { type: "string" } },
      strict: true,
    }));
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
  if (!prompt && values.prompt !== undefined) return { error: "unknown option --prompt" };
  const decide = values.decide ?? "phone";
  if (!decideModes.includes(decide)) return { error: `--decide must be one of: ${decideModes.join(", ")}` };
  const seconds = values.timeout === undefined ? undefined : Number(values.timeout);
  if (seconds !== undefined && !(seconds >= 1 && Number.isFinite(seconds))) {
    return { error: "--timeout must be a number of seconds, at least 1" };
  }
  return {
    command: args.slice(split + 1),
    decide,
    prompt: values.prompt,
    ...(seconds === undefined ? {} : { timeoutMs: seconds * 1000 }),
  };
}

export function wantsHelp(args: string[]): boolean {
  const split = args.indexOf("--");
  const own = split === -1 ? args : args.slice(0, split);
  return own.includes("--help") || own.includes("-h");
}
