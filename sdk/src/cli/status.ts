/**
 * `tapgate status`: which server, team, user and key this machine uses, and whether the server
 * takes the key. Exit 0 only when it does, so scripts can check before starting an agent.
 */
import { z } from "zod";
import { baseUrl, callServer, detail, keyHint, printable, type Reply, Unreachable } from "./account.js";
import { type CliConfig, configPath, credentials, readConfig } from "./config.js";

const meAnswer = z.object({
  team: z.object({ id: z.string(), name: z.string() }),
  user: z.object({ id: z.string(), name: z.string(), email: z.string() }),
  key: z.object({ id: z.string(), prefix: z.string(), label: z.string() }),
});
type Me = z.infer<typeof meAnswer>;

const show = (label: string, value: string) => process.stdout.write(`${`${label}:`.padEnd(8)}${value}\n`);
const fail = (line: string) => {
  process.stderr.write(`${line}\n`);
  return 1;
};

export async function main(args: string[]): Promise<number> {
  if (args.length > 0) return fail("usage: tapgate status");
  const { url, apiKey } = credentials();
  show("url", url);
  if (!apiKey) return fail("not signed in: run `tapgate login`");
  show("key", `${keyHint(apiKey)} (from ${process.env.TAPGATE_API_KEY ? "TAPGATE_API_KEY" : configPath()})`);
  const stored = readConfig();
  let reply: Reply;
  try {
    reply = await callServer(baseUrl(url), "/v1/agent/me", { apiKey });
  } catch (error) {
    if (!(error instanceof Unreachable || error instanceof TypeError)) throw error;
    if (stored?.apiKey === apiKey) showWho(stored, "(as stored; not checked)");
    return fail(error.message);
  }
  if (reply.status === 401) return fail("key rejected (401): run `tapgate login` again");
  const me = meAnswer.safeParse(reply.body);
  if (reply.status !== 200 || !me.success) return fail(`unexpected answer from ${url}: ${detail(reply)}`);
  showWho(me.data, `(key "${printable(me.data.key.label)}")`);
  show("server", "reachable, key valid");
  return 0;
}

function showWho(who: Pick<Me, "team" | "user"> | CliConfig, note: string): void {
  if (who.team) show("team", `${printable(who.team.name)} ${note}`);
  if (who.user) show("user", `${printable(who.user.name)} <${printable(who.user.email)}>`);
}
