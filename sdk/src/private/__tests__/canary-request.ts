/**
 * One permission request with a canary in every content field, and its session: what the sealing
 * tests (seal-params.test.ts, the gate's sealed-snapshot.test.ts) seal and look for. Not built.
 */
import type { RequestPermissionRequest } from "../../protocol.js";

export const CANARY = "canary-7f3a";

export const canarySession = {
  title: `title ${CANARY}`,
  agent: { name: "claude-code" },
  host: "laptop",
  cwd: `/home/ada/${CANARY}`,
};

export const canaryRequest: RequestPermissionRequest = {
  sessionId: "sess",
  toolCall: { toolCallId: "t1", kind: "execute", title: `rm -rf ${CANARY}`, rawInput: { command: `rm -rf ${CANARY}` } },
  options: [
    { optionId: "yes", name: `Yes ${CANARY}`, kind: "allow_once" },
    { optionId: "no", name: `No ${CANARY}`, kind: "reject_once" },
  ],
  _meta: { agentNote: CANARY, tapgate: { timeoutMs: 30_000 } },
};
