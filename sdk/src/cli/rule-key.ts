/**
 * `tapgate rule-key`: the team's rule key on this machine (docs/guides/private-mode.md "The rule
 * key"). Private requests carry a fingerprint keyed with it, so a rule made from a private card
 * matches the same command again without the service reading it. `new` makes one and prints it
 * once, `set` stores one made elsewhere, `show` prints the one in use. `TAPGATE_RULE_KEY` wins
 * over the stored one.
 *
 * Owns: the command. Does not own: the key's format or the fingerprint (`private/fingerprint.ts`).
 */
import { newRuleKey, RULE_KEY_PATTERN } from "../private/fingerprint.js";
import { configPath, readConfig, writeConfig } from "./config.js";

const USAGE = `usage: tapgate rule-key new | set <key> | show

  new         make the team's rule key, store it here and print it once
  set <key>   store a rule key made on another machine (trk_…)
  show        print the rule key in use, and where it comes from

Every machine whose agents should match the same private rules needs the same key
(env TAPGATE_RULE_KEY wins over the stored one). The service never sees it.
`;

const out = (line: string) => process.stdout.write(`${line}\n`);
const fail = (line: string) => {
  process.stderr.write(`tapgate rule-key: ${line}\n`);
  return line.startsWith("usage") ? 2 : 1;
};

export async function main(args: string[]): Promise<number> {
  const [command, key, ...rest] = args;
  if (command === "--help" || command === "-h") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === "show" && key === undefined) return show();
  if (command === "new" && key === undefined) return store(newRuleKey(), true);
  if (command === "set" && key !== undefined && rest.length === 0) {
    if (!RULE_KEY_PATTERN.test(key)) return fail("a rule key is trk_ and 43 base64url characters");
    return store(key, false);
  }
  return fail(USAGE);
}

function show(): number {
  const env = process.env.TAPGATE_RULE_KEY;
  if (env) {
    out(`${env}  (from TAPGATE_RULE_KEY)`);
    return 0;
  }
  const stored = readConfig()?.ruleKey;
  if (!stored) return fail("no rule key: `tapgate rule-key new` makes one, `tapgate rule-key set <key>` stores one");
  out(`${stored}  (from ${configPath()})`);
  return 0;
}

function store(ruleKey: string, made: boolean): number {
  const config = readConfig();
  if (!config) return fail("not signed in: run `tapgate login` first (or set TAPGATE_RULE_KEY)");
  if (made && config.ruleKey) {
    return fail(
      "this machine already has a rule key: rules made with it would stop matching (`tapgate rule-key show`)",
    );
  }
  const path = writeConfig({ ...config, ruleKey });
  if (!made) {
    out(`Stored the rule key in ${path}.`);
    return 0;
  }
  out(ruleKey);
  out(`\nStored in ${path}. Copy it to every other machine whose agents ask this team:`);
  out(`  tapgate rule-key set ${ruleKey}`);
  out("or set TAPGATE_RULE_KEY there. Keep it like a password: with it, anyone can tell which command a rule names.");
  if (process.env.TAPGATE_RULE_KEY) out("Note: TAPGATE_RULE_KEY is set and wins over the stored key.");
  return 0;
}
