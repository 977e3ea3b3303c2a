/**
 * `tapgate login [--url URL]`: signs this machine in by device code (RFC 8628). A person approves
 * the code in a browser where they are signed in to Tapgate; the server then creates an agent key
 * for them, and this command stores it in the config file. The prompt and the QR code go to
 * stderr, so stdout carries only the result.
 */
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import QRCode from "qrcode";
import { z } from "zod";
import { errorBodySchema } from "../errors.js";
import { baseUrl, callServer, detail, keyHint, printable, type Reply, Unreachable } from "./account.js";
import { credentials, readConfig, writeConfig } from "./config.js";

const USAGE = `usage: tapgate login [--url URL]

Signs this machine in: approve the code it shows in a browser where you use Tapgate, and the
agent key is stored in the config file. URL default: TAPGATE_URL, then the stored URL, then
http://localhost:8787. Plain http:// is refused except to localhost, 127.0.0.0/8 and [::1].
`;

/** RFC 8628 §3.5: a client told to slow down adds 5 s to its interval for good. */
const SLOW_DOWN_MS = 5_000;

const codeAnswer = z.object({
  deviceCode: z.string(),
  userCode: z.string(),
  verificationUriComplete: z.string(),
  expiresIn: z.number().positive(),
  interval: z.number().positive(),
});
type CodeAnswer = z.infer<typeof codeAnswer>;

const tokenAnswer = z.object({
  key: z.string(),
  keyId: z.string(),
  prefix: z.string(),
  team: z.object({ id: z.string(), name: z.string() }),
  user: z.object({ id: z.string(), name: z.string(), email: z.string() }),
});
type TokenAnswer = z.infer<typeof tokenAnswer>;

const say = (line: string) => process.stderr.write(`${line}\n`);

export async function main(args: string[]): Promise<number> {
  const url = parseUrl(args);
  if (url === null) return 2;
  const cancel = new AbortController();
  const onInterrupt = () => cancel.abort();
  process.once("SIGINT", onInterrupt);
  try {
    return await login(url, cancel.signal);
  } catch (error) {
    if (cancel.signal.aborted) {
      say("\nlogin cancelled: nothing was stored");
      return 130;
    }
    if (!(error instanceof Unreachable)) throw error;
    say(`tapgate login: ${error.message}`);
    return 1;
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}

/** The server to sign in to, or null after printing usage. */
function parseUrl(args: string[]): string | null {
  try {
    const { values } = parseArgs({ args, options: { url: { type: "string" }, help: { type: "boolean", short: "h" } } });
    if (values.help) {
      process.stdout.write(USAGE);
      return null;
    }
    return baseUrl(values.url ?? credentials().url);
  } catch (error) {
    process.stderr.write(`tapgate login: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return null;
  }
}

async function login(url: string, signal: AbortSignal): Promise<number> {
  const code = await requestCode(url, signal);
  if (typeof code === "string") {
    say(`tapgate login: ${code}`);
    return 1;
  }
  await showCode(code);
  const result = await pollForKey(url, code, signal);
  if (typeof result === "string") {
    say(`tapgate login: ${result}`);
    return 1;
  }
  store(url, result);
  return 0;
}

/** The code to show, or why there is none. */
async function requestCode(url: string, signal: AbortSignal): Promise<CodeAnswer | string> {
  const reply = await callServer(url, "/v1/device/code", {
    method: "POST",
    json: { clientName: hostname().slice(0, 100) },
    signal,
  });
  if (reply.status === 429) {
    const wait = reply.headers.get("Retry-After");
    return `too many sign-in attempts from this address; try again${wait ? ` in ${wait} s` : " later"}`;
  }
  if (reply.status !== 200) return `${url} refused to start a sign-in: ${detail(reply)}`;
  const parsed = codeAnswer.safeParse(reply.body);
  return parsed.success ? parsed.data : `${url} answered something that is not a sign-in code; is it a Tapgate server?`;
}

async function showCode(code: CodeAnswer): Promise<void> {
  const qr = await QRCode.toString(code.verificationUriComplete, { type: "terminal", small: true });
  const minutes = Math.round(code.expiresIn / 60);
  say(`To sign in, open this page on your phone or in a browser where you use Tapgate:

  ${code.verificationUriComplete}

and check that it shows the code  ${code.userCode}
${qr}
Waiting for approval (the code expires in ${minutes} minutes; Ctrl-C to cancel)…`);
}

/** Polls until the code is approved (the key), or why it never will be. */
async function pollForKey(url: string, code: CodeAnswer, signal: AbortSignal): Promise<TokenAnswer | string> {
  const deadline = Date.now() + code.expiresIn * 1000;
  let interval = code.interval * 1000;
  let lostContact = false;
  while (Date.now() + interval < deadline) {
    await sleep(interval, undefined, { signal });
    let reply: Reply;
    try {
      reply = await callServer(url, "/v1/device/token", {
        method: "POST",
        json: { deviceCode: code.deviceCode },
        signal,
      });
    } catch (error) {
      // A blip while the person is still reading the code is no reason to make them start again.
      if (!(error instanceof Unreachable)) throw error;
      if (!lostContact) say(`${error.message}; still trying`);
      lostContact = true;
      continue;
    }
    lostContact = false;
    if (reply.status === 200) {
      const parsed = tokenAnswer.safeParse(reply.body);
      return parsed.success ? parsed.data : `${url} answered the sign-in with something unexpected`;
    }
    const error = errorBodySchema.safeParse(reply.body).data?.error;
    if (error === "authorization_pending" || reply.status >= 500) continue;
    if (error === "slow_down") interval += SLOW_DOWN_MS;
    else if (error === "access_denied") return "the sign-in was denied in the browser; nothing was stored";
    else if (error === "expired_token") return "the code expired before it was approved: run `tapgate login` again";
    else return `${url} refused the sign-in: ${detail(reply)}`;
  }
  return "the code expired before it was approved: run `tapgate login` again";
}

function store(url: string, t: TokenAnswer): void {
  const previous = readConfig();
  const path = writeConfig({
    url,
    apiKey: t.key,
    keyId: t.keyId,
    keyPrefix: t.prefix,
    team: t.team,
    user: t.user,
    // The team's rule key is this machine's, not the key's: a new sign-in keeps it.
    ...(previous?.ruleKey && { ruleKey: previous.ruleKey }),
  });
  process.stdout.write(
    `Signed in to ${printable(t.team.name)} as ${printable(t.user.email)}. Key ${keyHint(t.key)} stored in ${path}\n`,
  );
  if (previous && previous.apiKey !== t.key) {
    say(`The key it replaced (${keyHint(previous.apiKey)}) still works until you revoke it in Tapgate.`);
  }
  if (process.env.TAPGATE_API_KEY)
    say("Note: TAPGATE_API_KEY is set and wins over the stored key; unset it to use this one.");
}
