/**
 * Private mode from the agent's side, against `wrangler dev`: a team with a registered device key
 * (endorsed by its person's passkey on a software authenticator) gets sealed requests from a real
 * ACP agent behind `tapgate acp` and from `tapgate claude-hook`; the service holds `sealed` and
 * none of the canary; the device opens the plaintext; the decision reaches the agent. A key the
 * server slips in without a valid endorsement is not sealed to; a changed passkey is refused until
 * `tapgate trust`.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { Approval } from "../../sdk/src/approval";
import { readConfig, writeConfig } from "../../sdk/src/cli/config";
import { Tapgate } from "../../sdk/src/client";
import { newDeviceKeyPair, openSealed } from "../../sdk/src/private/envelope";
import { newRuleKey, RULE_KEY_PATTERN, ruleFingerprint } from "../../sdk/src/private/fingerprint";
import { fileKnownApprovers } from "../../sdk/src/private/node-known-approvers";
import type { SoftAuthenticator } from "../worker/authenticator";
import { CANARY_AGENT, Cli, messageText, prompt, startProxy } from "./acp-helpers";
import { askParams, Person, unique } from "./helpers";
import { answerOf, runHook } from "./hook-helpers";
import { addPasskey, makePrivate, registerDeviceKey } from "./private-helpers";

const CANARY = "canary-5e9d1b";

let worker: Awaited<ReturnType<typeof startLocalWorker>>;
let ada: Person;
let passkey: SoftAuthenticator;
let device: Awaited<ReturnType<typeof newDeviceKeyPair>>;
let key: string;
/** The agent machine's config directory: its pins live here across the tests. */
const configHome = mkdtempSync(join(tmpdir(), "tapgate-private-"));
const agentEnv = () => ({ TAPGATE_URL: worker.url, TAPGATE_API_KEY: key, XDG_CONFIG_HOME: configHome });

beforeAll(async () => {
  worker = await startLocalWorker();
  ada = await Person.signUp(worker.url, "Ada");
  passkey = await addPasskey(ada);
  device = await registerDeviceKey(ada, passkey);
  await makePrivate(ada, passkey);
  key = (await ada.createKey("private tests")).key;
});
afterAll(() => worker?.stop());

/** The approval as the service answers it, raw: what a scan for the canary must read. */
async function held(approvalId: string, reader = ada): Promise<{ text: string; approval: Approval }> {
  const text = await (await reader.fetch(`/v1/approvals/${approvalId}`)).text();
  return { text, approval: JSON.parse(text) as Approval };
}

async function opened(approval: Approval, with_ = device) {
  if (!approval.sealed) throw new Error("not sealed");
  const result = await openSealed(approval.sealed, approval.requestHash, with_);
  if (!result.ok) throw new Error(`did not open: ${result.reason}`);
  return result.plaintext;
}

describe("a private team's requests, sealed on the agent's machine", () => {
  it("tapgate acp: a real ACP agent's request is held sealed, opens on the device, and the decision reaches the agent", async () => {
    const { editor, sessionId } = await startProxy(["--", ...CANARY_AGENT], { ...process.env, ...agentEnv() });
    const turn = prompt(editor, sessionId, CANARY);
    const pending = await ada.waitForOne(sessionId);
    const { text, approval } = await held(pending.id);
    expect(text).not.toContain(CANARY);
    expect(approval.snapshot.toolCall).toEqual({ toolCallId: "private", kind: "execute" });
    expect(approval.sealed?.recipients.map((r) => r.deviceId)).toEqual([device.deviceId]);
    expect(approval.sealed?.fingerprint).toBeUndefined(); // no rule key on this machine
    const plaintext = await opened(approval);
    // The card's tool call: the request over what the agent's tool_call update said of it.
    expect(plaintext.snapshot.toolCall).toMatchObject({
      toolCallId: "t1",
      title: `echo ${CANARY}`,
      rawInput: { command: `echo ${CANARY}` },
      content: [{ type: "content", content: { type: "text", text: `about to run ${CANARY}` } }],
      locations: [{ path: `/srv/${CANARY}/file` }],
    });
    expect(plaintext.snapshot.meta).toEqual({ note: CANARY });
    expect(plaintext.options.map((o) => o.name)).toEqual([`Allow ${CANARY}`, `Deny ${CANARY}`]);
    expect((await ada.decide(approval, "allow")).status).toBe(200);
    await turn;
    expect(messageText(editor, sessionId)).toBe("outcome: allow");
    expect(editor.stderr).not.toContain(CANARY);
    editor.child.stdin?.end();
  });

  it("tapgate claude-hook: the hook's request is sealed too, and a deny reaches Claude Code", async () => {
    const sessionId = unique("claude-private");
    const input = {
      session_id: sessionId,
      cwd: `/home/ada/${CANARY}`,
      hook_event_name: "PermissionRequest",
      tool_name: "Bash",
      tool_input: { command: `cat ${CANARY}.txt`, description: `Read ${CANARY}` },
    };
    const ruleKey = newRuleKey();
    const run = runHook("claude-hook", input, { env: { ...agentEnv(), TAPGATE_RULE_KEY: ruleKey } });
    const pending = await ada.waitForOne(sessionId);
    const { text, approval } = await held(pending.id);
    expect(text).not.toContain(CANARY);
    const plaintext = await opened(approval);
    expect(plaintext.snapshot.toolCall.rawInput).toMatchObject({ command: `cat ${CANARY}.txt` });
    expect(plaintext.snapshot.session.cwd).toBe(`/home/ada/${CANARY}`);
    // With a rule key, the fingerprint a private rule matches on: kind, command, cwd, host.
    const fingerprint = ruleFingerprint(ruleKey, {
      kind: "execute",
      command: `cat ${CANARY}.txt`,
      cwd: `/home/ada/${CANARY}`,
      host: hostname(),
    });
    expect(approval.sealed?.fingerprint).toBe(fingerprint);
    expect(plaintext.fingerprint).toBe(fingerprint);
    const deny = approval.options.find((o) => o.kind === "reject_once");
    expect((await ada.decide(approval, deny?.optionId ?? "")).status).toBe(200);
    const answer = answerOf(await run) as { hookSpecificOutput: { decision: { behavior: string } } };
    expect(answer.hookSpecificOutput.decision.behavior).toBe("deny");
  });
});

describe("which devices the SDK seals to", () => {
  const ask = async (logs: string[]) => {
    const gate = new Tapgate({
      url: worker.url,
      apiKey: key,
      knownApprovers: fileKnownApprovers(join(configHome, "tapgate", "known-approvers.json")),
      onLog: (_level, message) => logs.push(message),
    });
    const sessionId = unique("sdk-private");
    const session = await gate.session(sessionId);
    const answer = session.requestPermission(askParams(sessionId));
    const approval = await ada.waitForOne(sessionId);
    await ada.decide(approval, "deny");
    await answer;
    gate.close();
    return approval.sealed?.recipients.map((r) => r.deviceId);
  };

  it("not to a key the server slipped in beside a real one's endorsement", async () => {
    const slipped = await newDeviceKeyPair();
    // What a compromised service could do: list a key of its own, reusing Ada's endorsement of her phone's.
    d1(
      `INSERT INTO device_keys (team_id, device_id, user_id, web_session_id, push_device_id, credential_id,
                                public_key, endorsement, name, created_at)
       SELECT team_id, '${slipped.deviceId}', user_id, web_session_id, NULL, credential_id, '${slipped.publicKey}',
              endorsement, 'Injected', created_at FROM device_keys WHERE device_id = '${device.deviceId}'`,
    );
    const logs: string[] = [];
    expect(await ask(logs)).toEqual([device.deviceId]);
    expect(logs.join("\n")).toContain(`Ada's device ${slipped.deviceId} is not sealed to`);
    d1(`DELETE FROM device_keys WHERE device_id = '${slipped.deviceId}'`);
  });

  it("not to a device of a changed passkey, until `tapgate trust` accepts it", async () => {
    const newPasskey = await addPasskey(ada);
    const newDevice = await registerDeviceKey(ada, newPasskey);
    const logs: string[] = [];
    expect(await ask(logs)).toEqual([device.deviceId]);
    expect(logs.join("\n")).toContain("Ada's passkey changed: run `tapgate trust Ada` if Ada really made a new one");

    const shown = new Cli(["trust"], { ...process.env, ...agentEnv() }, "ignore");
    expect(await shown.exited).toBe(0);
    expect(shown.lines.join("\n")).toContain("Ada");
    const trusted = new Cli(["trust", "Ada"], { ...process.env, ...agentEnv() }, "ignore");
    expect(await trusted.exited, trusted.stderr).toBe(0);

    // Now the new passkey is Ada's: its device is sealed to, and the old passkey's is the changed one.
    expect(await ask([])).toEqual([newDevice.deviceId]);
  });
});

describe("a team that turns private while a session is open", () => {
  it("the gate's private_required refusal makes the SDK learn the keys and ask again, sealed", async () => {
    const bob = await Person.signUp(worker.url, "Bob");
    const bobsPasskey = await addPasskey(bob);
    const bobsDevice = await registerDeviceKey(bob, bobsPasskey);
    const gate = new Tapgate({
      url: worker.url,
      apiKey: (await bob.createKey("turns private")).key,
      knownApprovers: fileKnownApprovers(join(configHome, "tapgate", "known-approvers.json")),
      onLog: () => undefined,
    });
    const sessionId = unique("sdk-turns-private");
    const session = await gate.session(sessionId); // the team is standard now: the session knows no keys
    await makePrivate(bob, bobsPasskey);
    const answer = session.requestPermission({
      ...askParams(sessionId),
      toolCall: { toolCallId: "c1", kind: "execute", title: `echo ${CANARY}` },
    });
    const pending = await bob.waitForOne(sessionId);
    const { text, approval } = await held(pending.id, bob);
    expect(text).not.toContain(CANARY);
    expect((await opened(approval, bobsDevice)).snapshot.toolCall.title).toBe(`echo ${CANARY}`);
    await bob.decide(approval, "allow");
    expect((await answer).outcome).toEqual({ outcome: "selected", optionId: "allow" });
    gate.close();
  });
});

describe("tapgate rule-key", () => {
  it("new stores one and prints it once, show prints it, set takes one made elsewhere and refuses a malformed one", async () => {
    const home = mkdtempSync(join(tmpdir(), "tapgate-rulekey-"));
    const env: NodeJS.ProcessEnv = { ...process.env, TAPGATE_URL: worker.url, XDG_CONFIG_HOME: home };
    delete env.TAPGATE_RULE_KEY;
    writeConfig({ url: worker.url, apiKey: key }, env);
    const cli = async (...args: string[]) => {
      const run = new Cli(["rule-key", ...args], env, "ignore");
      return { code: await run.exited, out: run.lines.join("\n"), err: run.stderr };
    };
    const made = await cli("new");
    expect(made.code, made.err).toBe(0);
    const stored = readConfig(env)?.ruleKey ?? "";
    expect(stored).toMatch(RULE_KEY_PATTERN);
    expect(made.out).toContain(`tapgate rule-key set ${stored}`);
    expect((await cli("new")).code).toBe(1); // a second would orphan the rules made with the first
    expect((await cli("show")).out).toContain(stored);
    expect((await cli("set", "trk_short")).code).toBe(1);
    const other = newRuleKey();
    expect((await cli("set", other)).code).toBe(0);
    expect(readConfig(env)?.ruleKey).toBe(other);
  });
});

/** A statement on the local D1 that `wrangler dev` serves (what only the service itself could do). */
function d1(sql: string): void {
  execFileSync(
    "npx",
    ["wrangler", "d1", "execute", "tapgate", "--local", "--persist-to", worker.persistTo, "--command", sql],
    { cwd: ROOT, stdio: "pipe" },
  );
}
