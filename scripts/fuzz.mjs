#!/usr/bin/env node
// `npm run fuzz`: the model-based property test (test/worker/invariants.test.ts) for 1,000 cases.
// The cases run in slices, each in a fresh workerd: @cloudflare/vitest-pool-workers wraps a
// Durable Object class in one more Proxy per instance, so one process overflows its stack after
// a few hundred cases' worth of gates. Slice i uses seed SEED + i, so every slice draws other
// cases and a failure names the seed that replays it.
//   TAPGATE_FUZZ_CASES (default 1000), TAPGATE_FUZZ_SLICE (default 100), TAPGATE_FUZZ_SEED (default 20261201)
import { spawnSync } from "node:child_process";

const cases = Number(process.env.TAPGATE_FUZZ_CASES ?? 1000);
const slice = Number(process.env.TAPGATE_FUZZ_SLICE ?? 100);
const seed = Number(process.env.TAPGATE_FUZZ_SEED ?? 20261201);
const started = Date.now();
let done = 0;
for (let i = 0; done < cases; i++) {
  const runs = Math.min(slice, cases - done);
  const env = { ...process.env, TAPGATE_FUZZ_RUNS: String(runs), TAPGATE_FUZZ_SEED: String(seed + i) };
  const args = ["vitest", "run", "--project", "worker", "test/worker/invariants.test.ts"];
  console.log(`fuzz: slice ${i + 1}, ${runs} cases, seed ${seed + i}`);
  const { status } = spawnSync("npx", args, { env, stdio: "inherit" });
  if (status !== 0) {
    console.error(`fuzz: FAILED in the slice of seed ${seed + i} after ${done} cases passed`);
    process.exit(status ?? 1);
  }
  done += runs;
}
console.log(`fuzz: ${done} cases passed in ${Math.round((Date.now() - started) / 1000)} s`);
