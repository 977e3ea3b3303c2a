import { describe, expect, it } from "vitest";
import { DEFAULT_HIGH_RISK } from "../human/policy.js";
import type { RequestPermissionRequest } from "../protocol.js";
import { CANARY, canaryRequest as request, canarySession as session } from "./__tests__/canary-request.js";
import { SEALED_ELICITATION_MESSAGE, SEALED_TOOL_CALL_ID } from "./contract.js";
import { newDeviceKeyPair, openSealed } from "./envelope.js";
import { newRuleKey, ruleFingerprint } from "./fingerprint.js";
import { sealElicitation, sealPermissionRequest } from "./seal-params.js";

describe("sealing a permission request", () => {
  it("sends only routing: a generic tool call and option names, the sealed request and the lifetime", async () => {
    const device = await newDeviceKeyPair();
    const sealed = await sealPermissionRequest(request, { recipients: [device], highRisk: DEFAULT_HIGH_RISK, session });
    expect(JSON.stringify(sealed)).not.toContain(CANARY);
    expect(sealed).toEqual({
      sessionId: "sess",
      toolCall: { toolCallId: SEALED_TOOL_CALL_ID, kind: "execute" },
      options: [
        { optionId: "yes", name: "Allow once", kind: "allow_once" },
        { optionId: "no", name: "Deny", kind: "reject_once" },
      ],
      _meta: { tapgate: { sealed: expect.objectContaining({ risk: "high" }), timeoutMs: 30_000 } },
    });
    expect(sealed._meta.tapgate.sealed.fingerprint).toBeUndefined();
  });

  it("carries the keyed fingerprint of kind, command, cwd and host with a rule key", async () => {
    const ruleKey = newRuleKey();
    const device = await newDeviceKeyPair();
    const sealed = await sealPermissionRequest(request, { recipients: [device], highRisk: [], session, ruleKey });
    const fingerprint = ruleFingerprint(ruleKey, {
      kind: "execute",
      command: `rm -rf ${CANARY}`,
      cwd: session.cwd,
      host: "laptop",
    });
    expect(sealed._meta.tapgate.sealed.fingerprint).toBe(fingerprint);
    const opened = await openSealed(sealed._meta.tapgate.sealed, sealed._meta.tapgate.sealed.requestHash, device);
    expect(opened.ok && opened.plaintext.fingerprint).toBe(fingerprint);
  });

  it("keeps a v2 request's own fields in the plaintext", async () => {
    const device = await newDeviceKeyPair();
    const v2: RequestPermissionRequest = {
      sessionId: "sess",
      title: `Run ${CANARY}?`,
      subject: { type: "command", command: `ls ${CANARY}`, cwd: "/tmp" },
      options: [{ optionId: "ok", name: "OK", kind: "allow_once" }],
    };
    const sealed = await sealPermissionRequest(v2, { recipients: [device], highRisk: [], session });
    expect(JSON.stringify(sealed)).not.toContain(CANARY);
    const opened = await openSealed(sealed._meta.tapgate.sealed, sealed._meta.tapgate.sealed.requestHash, device);
    expect(opened.ok && opened.plaintext.snapshot.permission).toEqual({
      title: `Run ${CANARY}?`,
      subject: { type: "command", command: `ls ${CANARY}`, cwd: "/tmp" },
    });
  });

  it("is high-risk when a pattern cannot be read, rather than skipping it", async () => {
    const device = await newDeviceKeyPair();
    const sealed = await sealPermissionRequest(request, {
      recipients: [device],
      highRisk: [{ nonsense: true }],
      session,
    });
    expect(sealed._meta.tapgate.sealed.risk).toBe("high");
  });

  it("refuses invalid params without echoing them", async () => {
    const bad = { sessionId: "sess", toolCall: { toolCallId: CANARY }, options: [] } as RequestPermissionRequest;
    await expect(sealPermissionRequest(bad, { recipients: [], highRisk: [], session })).rejects.toThrow(
      /^invalid params \(invalid at options\)$/,
    );
  });
});

describe("sealing an elicitation", () => {
  it("sends a fieldless form with the fixed message; the question (here a URL) opens on the device", async () => {
    const device = await newDeviceKeyPair();
    const sealed = await sealElicitation(
      {
        sessionId: "sess",
        mode: "url",
        message: `Sign in ${CANARY}`,
        url: `https://example.com/${CANARY}`,
        elicitationId: "el_1",
      },
      { recipients: [device], highRisk: [], session },
    );
    expect(JSON.stringify(sealed)).not.toContain(CANARY);
    expect(sealed).toEqual({
      sessionId: "sess",
      mode: "form",
      message: SEALED_ELICITATION_MESSAGE,
      requestedSchema: { type: "object", properties: {} },
      _meta: { tapgate: { sealed: expect.objectContaining({ risk: "normal" }) } },
    });
    const opened = await openSealed(sealed._meta.tapgate.sealed, sealed._meta.tapgate.sealed.requestHash, device);
    expect(opened.ok && opened.plaintext.snapshot.elicitation).toEqual({
      mode: "url",
      message: `Sign in ${CANARY}`,
      url: `https://example.com/${CANARY}`,
      elicitationId: "el_1",
    });
  });
});
