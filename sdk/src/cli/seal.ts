/**
 * `tapgate seal`: seals a `session/request_permission`'s params (JSON on stdin) for a private
 * team and prints what the service receives instead (docs/guides/api-by-curl.md "Private mode"),
 * so any HTTP client, `curl` included, can ask over the long poll without the service reading
 * the request. Only to devices whose endorsement verifies against the passkey pinned for their
 * person; a team not in private mode gets its params back unchanged.
 *
 * Owns: the command. Does not own: sealing, endorsements or pins (`private/`).
 */
import { hostname } from "node:os";
import { fileKnownApprovers } from "../private/node-known-approvers.js";
import { fetchRecipients, refusalWarning, serviceOf, trustRecipients } from "../private/recipients.js";
import { sealPermissionRequest } from "../private/seal-params.js";
import { type RequestPermissionRequest, requestPermissionParamsSchema } from "../protocol.js";
import { baseUrl } from "./account.js";
import { credentials } from "./config.js";

const USAGE = `usage: tapgate seal [--title <session title>] < params.json > sealed.json

Reads session/request_permission params on stdin and prints them sealed to your team's devices
(private mode), ready for POST /v1/agent/sessions/:sessionId/permissions.
`;

const fail = (line: string) => {
  process.stderr.write(`tapgate seal: ${line}\n`);
  return 1;
};

export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  const titleAt = args.indexOf("--title");
  const title = titleAt >= 0 ? args[titleAt + 1] : undefined;
  const { url, apiKey, ruleKey } = credentials();
  if (!apiKey) return fail("not signed in: run `tapgate login` or set TAPGATE_API_KEY");
  const input = await readStdin();
  let params: unknown;
  try {
    params = JSON.parse(input);
  } catch {
    return fail("stdin is not JSON");
  }
  const parsed = requestPermissionParamsSchema.safeParse(params);
  if (!parsed.success) return fail(`not session/request_permission params: ${parsed.error.issues[0]?.message}`);
  let base: string;
  try {
    base = baseUrl(url);
  } catch (err) {
    return fail((err as Error).message);
  }
  const team = await fetchRecipients(base, apiKey, AbortSignal.timeout(10_000)).catch((err: Error) => err);
  if (team instanceof Error) return fail(`cannot fetch the team's device keys: ${team.message}`);
  if (team?.privacy !== "private") {
    process.stderr.write("tapgate seal: the team is not in private mode; the params are unchanged\n");
    process.stdout.write(`${JSON.stringify(params)}\n`);
    return 0;
  }
  const { trusted, refused } = await trustRecipients(team, serviceOf(base), fileKnownApprovers());
  for (const r of refused) process.stderr.write(`tapgate seal: ${refusalWarning(r)}\n`);
  if (trusted.length === 0) return fail("no trusted device can read it: nothing sealed (do not run the tool)");
  const sealed = await sealPermissionRequest(params as RequestPermissionRequest, {
    recipients: trusted,
    highRisk: team.highRisk,
    ...(ruleKey && { ruleKey }),
    session: { ...(title && { title }), host: hostname(), cwd: process.cwd() },
  });
  process.stdout.write(`${JSON.stringify(sealed)}\n`);
  return 0;
}

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}
