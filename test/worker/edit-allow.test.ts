/**
 * "Edit, then allow": a decider changes a tool's input before allowing, where the agent said it
 * takes edits (the Claude Code hooks, an SDK agent with `_meta.tapgate.acceptsEdits`). The agent
 * gets the edited input with the allow; agents that cannot take it (plain ACP, Codex, Gemini)
 * are refused `edit_not_supported`; input of another shape `invalid_request`; the edit is
 * classified again (a high-risk edit needs a step-up bound to that edit); no rule is made from
 * an edit; history and the audit chain keep both hashes.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import { toCodexRequest } from "../../sdk/src/codex/hook";
import { toGeminiRequest } from "../../sdk/src/gemini/hook";
import { stepUpOptionsAnswerSchema, stepUpProofSchema } from "../../sdk/src/human/step-up";
import { canonicalJson, sha256Hex } from "../../worker/crypto";
import {
  api,
  connectAgent,
  createKey,
  flush,
  gateStub,
  json,
  type Member,
  ORIGIN,
  pendingApprovals,
  permissionParams,
  signUp,
  unique,
} from "./helpers";
import { offlineProblem } from "./offline-proof";
import { type Approver, withPasskey } from "./team-helpers";

const EDITS = { _meta: { tapgate: { acceptsEdits: true } } };

const post = (member: Member, path: string, body: unknown) =>
  api(path, { method: "POST", cookie: member.cookie, body: JSON.stringify(body) });

const decideEdited = (member: Member, approval: Approval, body: Record<string, unknown>) =>
  post(member, `/v1/approvals/${approval.id}/decision`, {
    optionId: "allow",
    requestHash: approval.requestHash,
    ...body,
  });

const hashOf = (input: unknown) => sha256Hex(canonicalJson(input));

/** A socket agent asking once with `toolCall` (and `extra` params): the team's owner, the agent, the pending approval. */
async function ask(toolCall: Record<string, unknown>, extra: Record<string, unknown> = EDITS, owner?: Approver) {
  const member = owner ?? (await withPasskey(await signUp("Ada")));
  const { key } = await createKey(member);
  const sessionId = unique("edit");
  const agent = await connectAgent(key, sessionId);
  const params = permissionParams(sessionId, { toolCall: { toolCallId: unique("call"), ...toolCall } as never });
  await agent.ask(1, { ...params, ...extra });
  const [approval] = await pendingApprovals(member, sessionId);
  if (!approval) throw new Error("no pending approval");
  return { owner: member, agent, sessionId, approval };
}

const BASH = { title: "Bash: git push", kind: "execute", rawInput: { command: "git push origin main", timeout: 60 } };

function claudeHook(sessionId: string, event: "PreToolUse" | "PermissionRequest", key: string) {
  const body = {
    session_id: sessionId,
    cwd: "/home/ada/demo",
    hook_event_name: event,
    tool_name: "Bash",
    tool_input: { command: "git push origin main", description: "Push" },
    ...(event === "PreToolUse" && { tool_use_id: unique("toolu") }),
  };
  return SELF.fetch(`${ORIGIN}/v1/hooks/claude-code?timeout=600`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
}

async function pendingOf(owner: Member, sessionId: string): Promise<Approval> {
  for (;;) {
    const [approval] = await pendingApprovals(owner, sessionId);
    if (approval) return approval;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("Claude Code hooks take an edited allow", () => {
  it.each([
    [
      "PreToolUse",
      (input: unknown) => ({
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "allowed on Tapgate with edited input",
        updatedInput: input,
      }),
    ],
    [
      "PermissionRequest",
      (input: unknown) => ({
        hookEventName: "PermissionRequest",
        decision: { behavior: "allow", updatedInput: input },
      }),
    ],
  ] as const)("%s: the hook's answer carries updatedInput, the whole edited input", async (event, expected) => {
    const owner = await signUp();
    const { key } = await createKey(owner);
    const sessionId = unique("claude-edit");
    const answer = claudeHook(sessionId, event, key);
    const approval = await pendingOf(owner, sessionId);
    expect(approval.snapshot.meta).toMatchObject({ tapgate: { acceptsEdits: true } });
    const updatedInput = { command: "git push origin feature", description: "Push the branch" };
    const decided = await decideEdited(owner, approval, { updatedInput });
    expect(decided.status).toBe(200);
    expect(await json(decided)).toMatchObject({
      state: "allowed",
      requestHash: approval.requestHash,
      editedInput: updatedInput,
      editedInputHash: hashOf(updatedInput),
    });
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ hookSpecificOutput: expected(updatedInput) });
  });
});

describe("an SDK agent that accepts edits", () => {
  it("gets _meta.tapgate.updatedInput with the allow; history and the audit chain keep both hashes", async () => {
    const { owner, agent, sessionId, approval } = await ask(BASH);
    const updatedInput = { command: "git push origin feature", timeout: 30 };
    expect((await decideEdited(owner, approval, { updatedInput })).status).toBe(200);
    expect(await agent.next()).toMatchObject({
      id: 1,
      result: {
        outcome: { outcome: "selected", optionId: "allow" },
        _meta: { tapgate: { approvalId: approval.id, reason: "decided", updatedInput } },
      },
    });
    await flush(owner.teamId, sessionId);
    const history = await json<{ approvals: Approval[] }>(await api("/v1/history", { cookie: owner.cookie }));
    expect(history.approvals.find((a) => a.id === approval.id)).toMatchObject({
      requestHash: approval.requestHash,
      editedInput: updatedInput,
      editedInputHash: hashOf(updatedInput),
      snapshot: { toolCall: { rawInput: BASH.rawInput } },
    });
    const { entries } = await json<{ entries: Array<{ action: string; subject: string; detail: unknown }> }>(
      await api("/v1/audit", { cookie: owner.cookie }),
    );
    const allowed = entries.find((e) => e.subject === approval.id && e.action === "approval.allowed");
    expect(allowed?.detail).toMatchObject({ requestHash: approval.requestHash, editedInputHash: hashOf(updatedInput) });
    // The audit chain keeps hashes only: the edited arguments stay out of it.
    expect(JSON.stringify(allowed)).not.toContain("feature");
  });

  it("a repeat of the same edited allow gets the stored result; the same allow with another edit is a conflict", async () => {
    const { owner, approval } = await ask(BASH);
    const updatedInput = { command: "git push origin feature", timeout: 30 };
    expect((await decideEdited(owner, approval, { updatedInput })).status).toBe(200);
    expect((await decideEdited(owner, approval, { updatedInput })).status).toBe(200);
    const other = await decideEdited(owner, approval, { updatedInput: { ...updatedInput, timeout: 5 } });
    expect(other.status).toBe(409);
    expect(await json(other)).toMatchObject({ error: "already_decided" });
  });
});

describe("agents that cannot take edited input", () => {
  const codex = (sessionId: string) =>
    toCodexRequest(
      {
        session_id: "s",
        turn_id: "t",
        transcript_path: null,
        cwd: "/home/ada/demo",
        hook_event_name: "PermissionRequest",
        model: "gpt-5",
        permission_mode: "default",
        tool_name: "Bash",
        tool_input: { command: "git push origin main" },
      },
      sessionId,
      unique("codex"),
    );
  const gemini = (sessionId: string) =>
    toGeminiRequest(
      {
        session_id: "s",
        hook_event_name: "BeforeTool",
        tool_name: "run_shell_command",
        tool_input: { command: "git push origin main" },
      },
      sessionId,
      unique("gemini"),
    );

  it.each([
    ["plain ACP", null],
    ["Codex's hook", codex],
    ["Gemini's hook", gemini],
  ] as const)("%s: 400 edit_not_supported, and the request stays pending", async (_, build) => {
    const owner = await withPasskey(await signUp("Ada"));
    const { key } = await createKey(owner);
    const sessionId = unique("no-edit");
    const agent = await connectAgent(key, sessionId);
    await agent.ask(1, build ? build(sessionId) : permissionParams(sessionId));
    const [approval] = await pendingApprovals(owner, sessionId);
    const original = (approval as Approval).snapshot.toolCall.rawInput as Record<string, unknown>;
    const refused = await decideEdited(owner, approval as Approval, { updatedInput: { ...original, command: "ls" } });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "edit_not_supported" });
    const [still] = await pendingApprovals(owner, sessionId);
    expect(still?.state).toBe("pending");
    // Nor can a step-up be had for an edit of it.
    const options = await post(owner, `/v1/approvals/${approval?.id}/step-up`, {
      optionId: "allow",
      updatedInput: { ...original, command: "ls" },
    });
    expect(await json(options)).toMatchObject({ error: "edit_not_supported" });
  });
});

describe("the edited input must keep the request's shape", () => {
  it.each([
    ["a key missing", { command: "git push origin feature" }, "updatedInput.timeout is missing"],
    ["a key added", { ...BASH.rawInput, cwd: "/" }, "updatedInput.cwd is not in the request's input"],
    ["a value of another kind", { ...BASH.rawInput, timeout: "60" }, "updatedInput.timeout must be a number"],
    ["a string for the command's object", { command: ["git", "push"], timeout: 1 }, "must be a string"],
  ])("%s: 400 invalid_request naming the path", async (_, updatedInput, words) => {
    const { owner, approval } = await ask(BASH);
    const refused = await decideEdited(owner, approval, { updatedInput });
    expect(refused.status).toBe(400);
    const body = await json<{ error: string; message: string }>(refused);
    expect(body.error).toBe("invalid_request");
    expect(body.message).toContain(words);
  });

  it("edited input only with an allow: a deny with updatedInput is 400 edit_needs_allow", async () => {
    const { owner, approval } = await ask(BASH);
    const refused = await decideEdited(owner, approval, { optionId: "deny", updatedInput: BASH.rawInput });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "edit_needs_allow" });
  });

  it("no rule is made from an edited decision: 400 rule_from_edit, nothing decided", async () => {
    const { owner, sessionId, approval } = await ask(BASH);
    const updatedInput = { ...BASH.rawInput, command: "git push origin feature" };
    const refused = await decideEdited(owner, approval, { updatedInput, rule: { expiresInMs: 3_600_000 } });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "rule_from_edit" });
    expect((await pendingApprovals(owner, sessionId))[0]?.state).toBe("pending");
  });
});

describe("an edit is classified again", () => {
  async function stepUp(owner: Approver, approval: Approval, body: Record<string, unknown>) {
    const response = await post(owner, `/v1/approvals/${approval.id}/step-up`, { optionId: "allow", ...body });
    expect(response.status).toBe(200);
    const answer = stepUpOptionsAnswerSchema.parse(await json(response));
    return owner.authenticator.assert(answer.options as unknown as PublicKeyCredentialRequestOptionsJSON);
  }

  it("an edit that makes a normal request high-risk needs a step-up for that edit", async () => {
    const { owner, agent, approval } = await ask(BASH);
    expect(approval.risk).toBe("normal");
    const updatedInput = { command: "git push --force origin main", timeout: 60 };
    const refused = await decideEdited(owner, approval, { updatedInput });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "step_up_required" });
    const assertion = await stepUp(owner, approval, { updatedInput });
    expect((await decideEdited(owner, approval, { updatedInput, stepUp: assertion })).status).toBe(200);
    expect(await agent.next()).toMatchObject({ result: { _meta: { tapgate: { updatedInput } } } });
  });

  it("a step-up for the request as asked, or for another edit, does not cover an edit", async () => {
    const force = { ...BASH, rawInput: { command: "git push --force origin main", timeout: 60 } };
    const { owner, agent, approval } = await ask(force);
    expect(approval.risk).toBe("high");
    const updatedInput = { command: "git push --force origin feature", timeout: 60 };
    const forOriginal = await stepUp(owner, approval, {});
    const wrong = await decideEdited(owner, approval, { updatedInput, stepUp: forOriginal });
    expect(wrong.status).toBe(403);
    expect(await json(wrong)).toMatchObject({ error: "step_up_wrong_request" });
    const forOtherEdit = await stepUp(owner, approval, { updatedInput: { ...updatedInput, timeout: 1 } });
    const other = await decideEdited(owner, approval, { updatedInput, stepUp: forOtherEdit });
    expect(other.status).toBe(403);
    expect(await json(other)).toMatchObject({ error: "step_up_wrong_request" });
    // And one for the edit does not allow the request as asked.
    const forEdit = await stepUp(owner, approval, { updatedInput });
    const asAsked = await decideEdited(owner, approval, { stepUp: forEdit });
    expect(asAsked.status).toBe(403);
    expect(await json(asAsked)).toMatchObject({ error: "step_up_wrong_request" });
    const ok = await decideEdited(owner, approval, {
      updatedInput,
      stepUp: await stepUp(owner, approval, { updatedInput }),
    });
    expect(ok.status).toBe(200);
    expect(await agent.next()).toMatchObject({ result: { _meta: { tapgate: { updatedInput } } } });
    const proof = stepUpProofSchema.parse(
      await json(await api(`/v1/approvals/${approval.id}/proof`, { cookie: owner.cookie })),
    );
    expect(proof.assertions).toMatchObject([{ editedInputHash: hashOf(updatedInput) }]);
    // The proof verifies offline, its challenge (v3) committing to the edit.
    const [assertion] = proof.assertions;
    expect(await offlineProblem(approval.id, approval.requestHash, assertion as never)).toBeNull();
    expect(
      await offlineProblem(approval.id, approval.requestHash, { ...assertion, editedInputHash: undefined } as never),
    ).toMatch(/challenge/);
  });

  it("the gate checks the step-up's edit too: one verified for the original is refused for an edit", async () => {
    const force = { ...BASH, rawInput: { command: "git push --force origin main", timeout: 60 } };
    const { owner, sessionId, approval } = await ask(force);
    const stepUp = {
      approvalId: approval.id,
      requestHash: approval.requestHash,
      userId: owner.userId,
      optionId: "allow",
    } as never;
    const result = await runInDurableObject(gateStub(owner.teamId, sessionId), (gate) =>
      gate.decide({
        approvalId: approval.id,
        teamId: owner.teamId,
        userId: owner.userId,
        name: "Ada",
        role: "owner",
        device: "web",
        optionId: "allow",
        requestHash: approval.requestHash,
        updatedInput: { command: "git push --force origin feature", timeout: 60 },
        stepUp,
      }),
    );
    expect(result).toMatchObject({ ok: false, error: "step_up_wrong_request" });
  });

  it("under a quorum of two, a high-risk request is allowed only as asked", async () => {
    const owner = await withPasskey(await signUp("Ada"));
    const put = await api("/v1/policy", {
      method: "PUT",
      cookie: owner.cookie,
      body: JSON.stringify({ highRiskQuorum: 2 }),
    });
    expect(put.status).toBe(200);
    const { approval } = await ask(BASH, EDITS, owner);
    const refused = await decideEdited(owner, approval, {
      updatedInput: { command: "git push --force origin main", timeout: 60 },
    });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "edit_not_supported" });
  });
});
