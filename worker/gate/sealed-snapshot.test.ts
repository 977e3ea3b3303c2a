/**
 * The SDK seals what the gate would have shown: a private request's plaintext snapshot is the
 * standard snapshot (`newApproval`), so cards read the same either way.
 */
import { describe, expect, it } from "vitest";
import {
  CANARY,
  canaryRequest as request,
  canarySession as session,
} from "../../sdk/src/private/__tests__/canary-request";
import { newDeviceKeyPair, openSealed } from "../../sdk/src/private/envelope";
import { sealPermissionRequest } from "../../sdk/src/private/seal-params";
import { DEFAULT_POLICY } from "../policy";
import { EMPTY_INFO, newApproval } from "./rules";

describe("a sealed request's snapshot", () => {
  it("opens on the device to the snapshot the gate would have built, hashed the same, with the real option names", async () => {
    const device = await newDeviceKeyPair();
    const known = { toolCallId: "t1", content: [{ type: "content", content: { type: "text", text: CANARY } }] };
    const { tapgate: _, ...agentMeta } = request._meta ?? {};
    const sealed = await sealPermissionRequest(request, {
      recipients: [device],
      highRisk: [],
      session,
      knownToolCall: known,
    });
    const opened = await openSealed(sealed._meta.tapgate.sealed, sealed._meta.tapgate.sealed.requestHash, device);
    if (!opened.ok) throw new Error(opened.reason);
    const gate = newApproval({
      id: "apr_1",
      meta: {
        teamId: "team",
        sessionId: "sess",
        ownerUserId: "ada",
        policy: DEFAULT_POLICY,
        policyVersion: 1,
        info: { ...EMPTY_INFO, ...session },
      },
      params: { ...request, _meta: agentMeta } as never,
      knownToolCall: known,
      lifetimeMs: 60_000,
      now: 1,
    });
    expect(opened.plaintext.snapshot).toEqual(gate.snapshot);
    expect(sealed._meta.tapgate.sealed.requestHash).not.toBe(gate.requestHash); // the plaintext covers the options too
    expect(opened.plaintext.options).toEqual([
      { optionId: "yes", name: `Yes ${CANARY}`, kind: "allow_once" },
      { optionId: "no", name: `No ${CANARY}`, kind: "reject_once" },
    ]);
    expect(sealed._meta.tapgate.sealed.risk).toBe("normal");
  });
});
