/**
 * Property test: random sequences of socket and HTTP requests, decisions (by two members, from
 * several devices, repeated), long polls, cancels, session cancels, disconnects, time passing
 * and restarts, checking the invariants of docs/state-machine.md against a model after every
 * step (the model and the checks: invariants-model.ts).
 *
 * Seeded: the same sequences every run unless `TAPGATE_FUZZ_SEED` says otherwise, so a failure
 * replays. `npm test` runs `DEFAULT_RUNS` cases; `npm run fuzz` 1,000, in slices of fresh workerd
 * processes (`scripts/fuzz.mjs`), each slice `TAPGATE_FUZZ_RUNS` cases of its own seed.
 * A failure prints its seed, path and shrunk sequence: add the sequence to `REGRESSIONS`, where
 * it runs as a plain test on every `npm test` from then on.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { api, createKey, signUp, unique } from "./helpers";
import { type Action, action, type Cast, Run } from "./invariants-model";
import { addMember } from "./team-helpers";

const DEFAULT_SEED = 20_261_201;
const DEFAULT_RUNS = 30;
const seed = Number(env.TAPGATE_FUZZ_SEED ?? DEFAULT_SEED);
const numRuns = Number(env.TAPGATE_FUZZ_RUNS ?? DEFAULT_RUNS);
/** With the seed, replays one failing case exactly (fast-check's `path` from the report). */
const path = env.TAPGATE_FUZZ_PATH;

/**
 * Fixed sequences, run as plain tests before the random ones: shrunk failures (add each one
 * here as it is found, named for what broke) and hand-picked paths through the corners.
 */
const REGRESSIONS: Record<string, Action[]> = {
  // Shrunk by the seeded run (seed 20261201, path 8:3:3:5:2:4) against the gate before
  // idempotent decisions, where a decider's repeat was a 409.
  "shrunk: the decider repeating a long-polled HTTP request's decision gets its 200 again": [
    { kind: "httpRequest" },
    { kind: "longPoll", pick: 0, option: "allow" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "web" },
  ],
  "a long-polled HTTP request decided, repeated by its decider from two devices, contested by others": [
    { kind: "httpRequest" },
    { kind: "longPoll", pick: 0, option: "allow" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "phone" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "web" },
    { kind: "repeat", pick: 0, sameOption: false, sameDecider: true, device: "web" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: false, device: "laptop" },
    { kind: "httpCancel", pick: 0 },
    { kind: "restart" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "laptop" },
  ],
  "a colleague's decision is theirs alone to repeat; after a session cancel, decisions are 410": [
    { kind: "request" },
    { kind: "httpRequest" },
    { kind: "decide", pick: 0, option: "deny", staleHash: false, byColleague: true, device: "phone" },
    { kind: "decide", pick: 0, option: "deny", staleHash: false, byColleague: false, device: "phone" },
    { kind: "decide", pick: 0, option: "deny", staleHash: true, byColleague: true, device: "phone" },
    { kind: "decide", pick: 0, option: "deny", staleHash: false, byColleague: true, device: "web" },
    { kind: "sessionCancel" },
    { kind: "decide", pick: 1, option: "allow", staleHash: false, byColleague: false, device: "web" },
    { kind: "httpCancel", pick: 0 },
  ],
  "HTTP-held requests outlive a restart and a disconnect, then expire; the socket's do not": [
    { kind: "httpRequest" },
    { kind: "request" },
    { kind: "restart" },
    { kind: "decide", pick: 1, option: "allow", staleHash: false, byColleague: false, device: "web" },
    { kind: "httpRequest" },
    { kind: "request" },
    { kind: "disconnect" },
    { kind: "decide", pick: 0, option: "allow", staleHash: false, byColleague: false, device: "web" },
    { kind: "timePasses" },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "phone" },
    { kind: "decide", pick: 2, option: "allow", staleHash: false, byColleague: false, device: "web" },
  ],
  "a stale hash, an unoffered option, then the real decision, and a cancel that comes too late": [
    { kind: "request" },
    { kind: "decide", pick: 0, option: "allow", staleHash: true, byColleague: false, device: "web" },
    { kind: "decide", pick: 0, option: "always", staleHash: false, byColleague: false, device: "web" },
    { kind: "decide", pick: 0, option: "allow", staleHash: false, byColleague: false, device: "web" },
    { kind: "cancel", pick: 0 },
    { kind: "repeat", pick: 0, sameOption: true, sameDecider: true, device: "web" },
    { kind: "decide", pick: 0, option: "allow", staleHash: true, byColleague: false, device: "web" },
  ],
  "a decision racing its agent's socket close is heard by the agent or answered 410, never lost": [
    { kind: "request" },
    { kind: "request" },
    { kind: "decideWhileClosing", pick: 0, option: "allow", closeFirst: false },
    { kind: "request" },
    { kind: "decideWhileClosing", pick: 0, option: "allow", closeFirst: true },
    { kind: "request" },
    { kind: "decideWhileClosing", pick: 0, option: "deny", closeFirst: false },
  ],
  "decisions in a D1 outage and a hub outage, each through a dozen alarm wakes, all reach D1 and the audit log": [
    { kind: "request" },
    { kind: "httpRequest" },
    { kind: "outage", of: "d1", wakes: 12, decide: { pick: 0, option: "allow" } },
    { kind: "request" },
    { kind: "outage", of: "hub", wakes: 12, decide: { pick: 1, option: "deny" } },
    { kind: "outage", of: "d1", wakes: 3, decide: { pick: 2, option: "allow" } },
    { kind: "timePasses" },
  ],
};

let reported = false;

async function play(cast: Cast, actions: Action[]) {
  const run = new Run(cast, unique("prop"));
  await run.connect();
  try {
    for (const a of actions) {
      await run.step(a);
      await run.check();
    }
    await run.finish();
  } catch (error) {
    // The first failure, before shrinking: shown at once (`--silent=false`), however long shrinking takes.
    if (!reported) console.error(`first failing sequence: ${JSON.stringify(actions)}\n${error}`);
    reported = true;
    throw error;
  } finally {
    // No run leaves its socket open (a failed one may have lost it already).
    if (run.socket.ws.readyState === WebSocket.OPEN) run.socket.ws.close(1000);
  }
}

describe("invariants under random sequences", () => {
  let cast: Cast;
  beforeAll(async () => {
    const owner = await signUp("Prop");
    const { key, id: keyId } = await createKey(owner, "property");
    cast = { owner, key, keyId, colleague: await addMember(owner, "approver", "Col") };
    // Hundreds of requests a minute on one key: lift the team's rate quota (quotas.test.ts tests it).
    const limits = { requestsPerKeyPerMinute: 6000, burstPerKey: 1000 };
    await api("/v1/policy", { method: "PUT", cookie: owner.cookie, body: JSON.stringify({ limits }) });
  });

  for (const [name, actions] of Object.entries(REGRESSIONS)) {
    it(`regression: ${name}`, () => play(cast, actions), 30_000);
  }

  it(
    `hold after every step (${numRuns} runs, seed ${seed})`,
    async () => {
      const property = fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 14 }), (actions) =>
        play(cast, actions),
      );
      const details = await fc.check(property, { seed, numRuns, ...(path && { path, endOnFailure: true }) });
      if (!details.failed) return;
      const replay = `TAPGATE_FUZZ_SEED=${details.seed} TAPGATE_FUZZ_PATH=${details.counterexamplePath} npx vitest run --project worker test/worker/invariants.test.ts`;
      throw new Error(
        `${fc.defaultReportMessage(details)}\nReplay: ${replay}\nThen add the shrunk sequence to REGRESSIONS.`,
      );
    },
    Math.max(120_000, numRuns * 6_000),
  );
});
