/**
 * `tapgate trust`: the passkeys this machine pinned for a private team's approvers
 * (`known-approvers.json`, docs/guides/private-mode.md "tapgate trust"). Without arguments it
 * shows who is refused now and why; `tapgate trust <name|userId>` accepts that person's new
 * passkey (only one whose endorsements verify); `--list` prints the pins.
 *
 * Owns: the command. Does not own: what a pin means or the endorsement check (`private/`).
 */

import { fileKnownApprovers, knownApproversPath, pinIn, readKnownApprovers } from "../private/node-known-approvers.js";
import { fetchRecipients, passkeyOf, serviceOf, trustRecipients } from "../private/recipients.js";
import { baseUrl, printable } from "./account.js";
import { credentials } from "./config.js";

const USAGE = `usage: tapgate trust [--list | <name or user id>]

Private mode seals each request to the team's device keys, each endorsed by its person's passkey,
pinned here the first time it is seen. When someone's passkey changes, their devices are refused
until you accept the new one:

  tapgate trust           who is refused now, and why
  tapgate trust Ada       accept Ada's new passkey (by name or user id)
  tapgate trust --list    the pinned passkeys (${knownApproversPath()})
`;

const out = (line: string) => process.stdout.write(`${line}\n`);
const fail = (line: string) => {
  process.stderr.write(`tapgate trust: ${line}\n`);
  return 1;
};

export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.length > 1) return fail(`one person at a time\n\n${USAGE}`);
  const { url, apiKey } = credentials();
  let base: string;
  try {
    base = baseUrl(url);
  } catch (err) {
    return fail((err as Error).message);
  }
  if (args[0] === "--list") return list(serviceOf(base));
  if (!apiKey) return fail("not signed in: run `tapgate login`");
  return review(base, apiKey, args[0]);
}

function list(service: string): number {
  const teams = readKnownApprovers(knownApproversPath())[service] ?? {};
  const rows = Object.entries(teams).flatMap(([teamId, people]) =>
    Object.entries(people).map(([userId, pin]) => ({ teamId, userId, pin })),
  );
  if (rows.length === 0) {
    out(`No passkeys pinned for ${service} yet.`);
    return 0;
  }
  for (const { teamId, userId, pin } of rows) {
    const at = new Date(pin.pinnedAt).toISOString();
    out(`${teamId}  ${printable(pin.name)} (${userId})  passkey ${pin.credentialId.slice(0, 16)}…  pinned ${at}`);
  }
  return 0;
}

/** Who is refused now; with `who`, re-pins that person's new passkey. */
async function review(base: string, apiKey: string, who: string | undefined): Promise<number> {
  const answer = await fetchRecipients(base, apiKey, AbortSignal.timeout(10_000)).catch((err: Error) => err);
  if (answer instanceof Error) return fail(`cannot fetch the team's device keys: ${answer.message}`);
  if (answer?.privacy !== "private") {
    out("The team is not in private mode: requests are not sealed, and no passkey is pinned for it.");
    return 0;
  }
  const service = serviceOf(base);
  const path = knownApproversPath();
  const { refused } = await trustRecipients(answer, service, fileKnownApprovers(path));
  const changed = refused.filter((r) => r.why === "changed");
  if (who === undefined) {
    if (refused.length === 0) out("Every device key of the team is endorsed by its person's pinned passkey.");
    for (const r of refused) {
      const name = printable(r.name);
      if (r.why === "changed") out(`${name} (${r.userId}): passkey changed — \`tapgate trust ${name}\` accepts it`);
      else out(`${name} (${r.userId}): device ${r.deviceId} refused, ${r.detail}`);
    }
    return 0;
  }
  const chosen = changed.filter((r) => r.userId === who || r.name === who);
  const userIds = [...new Set(chosen.map((r) => r.userId))];
  if (userIds.length === 0) return fail(`no one named ${JSON.stringify(who)} has a changed passkey`);
  if (userIds.length > 1) return fail(`${JSON.stringify(who)} names more than one person: use a user id`);
  const recipient = answer.recipients.find((r) => r.deviceId === chosen[0]?.deviceId);
  if (!recipient) return fail("the device disappeared meanwhile: run `tapgate trust` again");
  pinIn(path, service, answer.teamId, recipient.userId, passkeyOf(recipient, Date.now()));
  out(`Trusted ${printable(recipient.name)}'s new passkey: requests are sealed to their devices again.`);
  return 0;
}
