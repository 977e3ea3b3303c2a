/** Driving the built `tapgate` CLI as a child process: a scripted editor speaking raw ndjson. */
import { type ChildProcess, spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../scripts/local-worker.mjs";

export const CLI = join(ROOT, "sdk", "dist", "cli", "main.js");
export const EXAMPLE_AGENT = [process.execPath, join(ROOT, "node_modules/acp-sdk-v1/dist/examples/agent.js")];
export const STRING_ID_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/string-id-agent.mjs")];
export const V2_PERMISSION_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/v2-permission-agent.mjs")];
export const ABORT_AWARE_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/abort-aware-agent.mjs")];
export const ELICIT_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/elicit-agent.mjs")];
export const SUBAGENT_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/subagent-agent.mjs")];
export const EDIT_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/edit-agent.mjs")];
export const CANARY_AGENT = [process.execPath, join(ROOT, "test/sdk/agents/canary-agent.mjs")];

/** An environment with no credentials at all: an empty config directory and no key. */
export function signedOutEnv(url: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TAPGATE_URL: url,
    XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "tapgate-cfg-")),
  };
  delete env.TAPGATE_API_KEY;
  return env;
}

export function signedInEnv(url: string, key: string): NodeJS.ProcessEnv {
  return { ...signedOutEnv(url), TAPGATE_API_KEY: key };
}

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary protocol JSON and let assertions check it
type Loose = any;
export type Json = Record<string, unknown> & { id?: unknown; method?: string; params?: Loose; result?: Loose };

/** Stdout lines arrive as events; `waitFor` looks at what came already, then at what comes. */
export class Cli {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = "";
  readonly exited: Promise<number>;
  readonly #events = new EventEmitter();
  #nextId = 0;

  constructor(args: string[], env: NodeJS.ProcessEnv, stdin: "pipe" | "ignore" = "pipe") {
    this.child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: [stdin, "pipe", "pipe"] });
    this.exited = once(this.child, "exit").then(([code]) => code as number);
    let partial = "";
    this.child.stdout?.on("data", (d: Buffer) => {
      const parts = (partial + d.toString("utf8")).split("\n");
      partial = parts.pop() ?? "";
      for (const line of parts) {
        this.lines.push(line);
        this.#events.emit("line", line);
      }
    });
    this.child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString("utf8");
      this.#events.emit("stderr");
    });
  }

  get messages(): Json[] {
    return this.lines.map((l) => JSON.parse(l) as Json);
  }

  sendRaw(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  send(message: Json): void {
    this.sendRaw(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  /** Sends a request and resolves with its response. */
  request(method: string, params: unknown, id: unknown = `ed-${++this.#nextId}`): Promise<Json> {
    this.send({ id, method, params });
    return this.waitFor((m) => m.id === id && !("method" in m));
  }

  waitFor(match: (message: Json) => boolean, what = "a matching message"): Promise<Json> {
    return this.#waitUntil(() => this.messages.find(match), "line", what);
  }

  waitForLine(match: (line: string) => boolean): Promise<string> {
    return this.#waitUntil(() => this.lines.find(match), "line", "a matching line");
  }

  waitForStderr(text: string): Promise<string> {
    return this.#waitUntil(() => (this.stderr.includes(text) ? this.stderr : undefined), "stderr", text);
  }

  #waitUntil<T>(probe: () => T | undefined, event: string, what: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = probe();
        if (found === undefined) return false;
        done();
        resolve(found);
        return true;
      };
      const onExit = () => {
        if (check()) return;
        done();
        reject(new Error(`the CLI exited before ${what}\nstdout:\n${this.lines.join("\n")}\nstderr:\n${this.stderr}`));
      };
      const listener = () => void check();
      const done = () => {
        this.#events.off(event, listener);
        this.child.off("exit", onExit);
      };
      if (check()) return;
      this.#events.on(event, listener);
      this.child.once("exit", onExit);
    });
  }
}

/** `tapgate acp` with an editor that initializes (with `clientCapabilities`) and opens one session. */
export async function startProxy(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT, clientCapabilities: Json = {}) {
  const editor = new Cli(["acp", ...args], env);
  const init = await editor.request("initialize", { protocolVersion: 1, clientCapabilities }, 0);
  const created = await editor.request("session/new", { cwd, mcpServers: [] });
  return { editor, init, sessionId: created.result.sessionId as string };
}

export function prompt(editor: Cli, sessionId: string, text: string): Promise<Json> {
  return editor.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
}

/** The agent's message text so far, for one session. */
export function messageText(editor: Cli, sessionId: string): string {
  return editor.messages
    .filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId)
    .filter((m) => m.params.update.sessionUpdate === "agent_message_chunk")
    .map((m) => m.params.update.content.text as string)
    .join("");
}
