/**
 * `npm run deploy`'s first step: a deployment that would misbehave does not start. Without
 * `APP_ORIGIN` the server answers for any host name (no 421 against DNS rebinding) and builds
 * links from whatever `Host` a request names; without `RP_ID`, passkeys are bound to whatever
 * host served the page. Each must be a secret (`wrangler secret put`) or a `[vars]` entry.
 *
 *   node scripts/deploy-check.mjs     (exit 1, with the fix, when one is unset)
 *
 * Owns: that check (`deployProblems`, pure and unit-tested). Does not own: the deploy itself
 * (package.json `deploy`).
 */
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";

/** The settings a deployment needs, each with how to set it. */
export const REQUIRED_SETTINGS = {
  APP_ORIGIN: "npx wrangler secret put APP_ORIGIN   # the public origin, e.g. https://tapgate.example.com",
  RP_ID: "npx wrangler secret put RP_ID        # the passkey domain: APP_ORIGIN's host name, or a parent domain of it",
};

/**
 * What would make the deployment misbehave, each line with its fix; empty when nothing would.
 * @param {{ vars: Record<string, unknown>, secretNames: string[] }} settings
 * @returns {string[]}
 */
export function deployProblems({ vars, secretNames }) {
  const set = (name) => secretNames.includes(name) || (typeof vars[name] === "string" && vars[name] !== "");
  const problems = Object.entries(REQUIRED_SETTINGS)
    .filter(([name]) => !set(name))
    .map(([name, fix]) => `${name} is unset. Set it:\n  ${fix}`);
  const origin = vars.APP_ORIGIN;
  if (typeof origin === "string" && origin !== "" && !isHttpsOrigin(origin)) {
    problems.push(
      `APP_ORIGIN in [vars] is ${JSON.stringify(origin)}: it must be an https origin, e.g. https://tapgate.example.com`,
    );
  }
  return problems;
}

function isHttpsOrigin(text) {
  try {
    const url = new URL(text);
    return url.protocol === "https:" && url.origin === text.replace(/\/$/, "");
  } catch {
    return false;
  }
}

async function main() {
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: "wrangler.toml" });
  let secretNames;
  try {
    const listed = execFileSync("npx", ["wrangler", "secret", "list", "--format", "json"], { encoding: "utf8" });
    secretNames = JSON.parse(listed).map((s) => s.name);
  } catch (error) {
    console.error(`deploy: could not list the Worker's secrets (${error.message.split("\n")[0]}).`);
    console.error("  Sign in with `npx wrangler login`, and set the secrets first (README: Deploy to Cloudflare).");
    process.exit(1);
  }
  const problems = deployProblems({ vars: config.vars ?? {}, secretNames });
  if (problems.length === 0) return;
  console.error(`deploy: not deploying, this Worker would misbehave:\n${problems.map((p) => `- ${p}`).join("\n")}`);
  process.exit(1);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
