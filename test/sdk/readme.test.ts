import { spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import { Person } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
beforeAll(async () => {
  worker = await startLocalWorker();
});
afterAll(() => worker?.stop());

function run(command: string, args: string[], env: Record<string, string> = {}) {
  return spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
}

it("the README's example agent asks and prints the human's answer", async () => {
  const person = await Person.signUp(worker.url);
  const { key } = await person.createKey("example");

  const agent = run(process.execPath, ["examples/ask.mjs", "make deploy"], {
    TAPGATE_URL: worker.url,
    TAPGATE_API_KEY: key,
  });
  let stdout = "";
  agent.stdout.on("data", (d) => {
    stdout += d;
  });
  const [approval] = await person.waitForPendingWhere((a) => a.snapshot.toolCall.title === "Run make deploy");
  expect((await person.decide(approval as NonNullable<typeof approval>, "allow")).status).toBe(200);
  const [code] = await once(agent, "exit");
  expect(code).toBe(0);
  expect(stdout).toContain("asking to run: make deploy");
  expect(stdout).toContain('{"outcome":{"outcome":"selected","optionId":"allow"},"_meta":{"tapgate":{');
  expect(stdout).toContain(
    `"approvalId":"${approval?.id}","reason":"decided","decidedBy":{"name":"Ada","device":"web"}}}}`,
  );
}, 60_000);
