import { afterAll, beforeAll, expect, it } from "vitest";
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import {
  ABORT_AWARE_AGENT,
  Cli,
  ELICIT_AGENT,
  EXAMPLE_AGENT,
  STRING_ID_AGENT,
  signedInEnv,
  signedOutEnv,
} from "./acp-helpers";
import { Person } from "./helpers";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let person: Person;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  worker = await startLocalWorker();
  person = await Person.signUp(worker.url);
  env = signedInEnv(worker.url, (await person.createKey("acp run tests")).key);
});
afterAll(() => worker?.stop());

const pendingFor = (title: string) => person.waitForPendingWhere((a) => a.snapshot.toolCall.title === title);

it("runs a turn of the example agent: streams text and tool calls, asks Tapgate, exits 0 on end_turn", async () => {
  const run = new Cli(["run", "--prompt", "update the config", "--", ...EXAMPLE_AGENT], env, "ignore");
  const [approval] = await pendingFor("Modifying critical configuration file");
  if (!approval) throw new Error("no approval");
  expect(approval.snapshot.session).toMatchObject({ title: "update the config" });
  await run.waitForLine((l) => l.startsWith("[permission] Modifying critical configuration file: asking"));
  await person.decide(approval, "allow");
  expect(await run.exited).toBe(0);
  const out = run.lines.join("\n");
  expect(out).toContain("I'll help you with that.");
  expect(out).toContain("[tool pending] Reading project files");
  expect(out).toContain("[tool completed] Reading project files");
  expect(out).toContain("[permission] Modifying critical configuration file: Allow this change");
  expect(out).toContain("Perfect! I've successfully updated the configuration.");
});

it("a reject from the phone: the agent skips the change", async () => {
  const run = new Cli(["run", "--prompt", "update the config, maybe", "--", ...EXAMPLE_AGENT], env, "ignore");
  const [approval] = await person.waitForPendingWhere((a) => a.snapshot.session.title === "update the config, maybe");
  if (!approval) throw new Error("no approval");
  await person.decide(approval, "reject");
  expect(await run.exited).toBe(0);
  expect(run.lines.join("\n")).toContain("I'll skip the configuration update.");
});

it("reads the prompt from stdin; without credentials the request is refused and stderr says how to fix it", async () => {
  const run = new Cli(["run", "--", ...EXAMPLE_AGENT], signedOutEnv(worker.url));
  run.child.stdin?.end("update the config\n");
  expect(await run.exited).toBe(0);
  expect(run.lines.join("\n")).toContain("[permission] Modifying critical configuration file: Skip this change");
  expect(run.stderr).toContain("not signed in: run `tapgate login`");
});

it("Ctrl-C cancels the turn: the card closes, the exit code says cancelled", async () => {
  const run = new Cli(["run", "--prompt", "ask", "--", ...STRING_ID_AGENT], env, "ignore");
  const [approval] = await pendingFor("Delete the build cache");
  if (!approval) throw new Error("no approval");
  run.child.kill("SIGINT");
  expect(await run.exited).toBe(130);
  expect(run.stderr).toContain("cancelling the turn");
  expect(run.lines.join("\n")).toContain("outcome: cancelled");
  await person.waitForPending(approval.sessionId, 0);
  expect(await person.approval(approval.id)).toMatchObject({ state: "cancelled" });
});

it("Ctrl-C: the agent hears session/cancel before its permission request is answered, so the turn ends cancelled", async () => {
  const run = new Cli(["run", "--prompt", "migrate", "--", ...ABORT_AWARE_AGENT], env, "ignore");
  const [approval] = await pendingFor("Run the migrations");
  if (!approval) throw new Error("no approval");
  run.child.kill("SIGINT");
  expect(await run.exited).toBe(130);
  expect(run.lines.join("\n")).toContain("answer: cancelled, aborted: true");
  await person.waitForPending(approval.sessionId, 0);
});

it("asks the agent's questions on Tapgate: the phone's answer reaches the agent", async () => {
  const run = new Cli(["run", "--prompt", "form", "--", ...ELICIT_AGENT], env, "ignore");
  const [approval] = await person.waitForPendingWhere(
    (a) => a.type === "elicitation" && a.snapshot.session.agent?.name === "elicit-agent",
  );
  if (!approval) throw new Error("no approval");
  await run.waitForLine((l) => l === "[question] How should I set the project up?: asking Tapgate");
  const content = { name: "cli", port: 5000 };
  const decided = await person.fetch(`/v1/approvals/${approval.id}/decision`, {
    method: "POST",
    body: JSON.stringify({ action: "accept", content, requestHash: approval.requestHash }),
  });
  expect(decided.status).toBe(200);
  expect(await run.exited).toBe(0);
  const out = run.lines.join("\n");
  expect(out).toContain("[question] answered: accept");
  expect(out).toContain(`elicited: ${JSON.stringify({ action: "accept", content })}`);
});

it("other stop reasons have their own exit codes; a missing command is a usage error", async () => {
  const refused = new Cli(["run", "--prompt", "refuse", "--", ...STRING_ID_AGENT], env, "ignore");
  expect(await refused.exited).toBe(5);
  const usage = new Cli(["run", "--prompt", "x"], env, "ignore");
  expect(await usage.exited).toBe(2);
  expect(usage.stderr).toContain("missing `-- <agent command…>`");
});
