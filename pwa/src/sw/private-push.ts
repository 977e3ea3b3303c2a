/**
 * A private request's notification (docs/threat-model.md "Private mode"): its push names only the
 * session, so the service worker fetches the approval, opens it with this browser's device key
 * (IndexedDB, shared with the app) and shows its title, within the team's lock-screen policy
 * (`generic`: nothing of the content). Any failure says only where a request waits.
 * No DOM and no service-worker types in this file.
 */
import { approvalSchema } from "../../../sdk/src/approval";
import { teamPolicySchema } from "../../../sdk/src/human/policy";
import { approvalTitle } from "../../../sdk/src/human/push";
import { allDeviceKeys } from "../private/key-store";
import { openWithKeys } from "../private/open";

/** What every failure shows: where the request waits, never what it is. */
export const privateWaitingLine = (sessionTitle: string | undefined) =>
  `A private request waits in ${sessionTitle?.trim() || "an agent session"}`;

async function getJson(path: string): Promise<unknown> {
  const res = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.json();
}

/** The lock-screen title of a private request: opened and allowed by the policy, or the waiting line. */
export async function privateNotificationTitle(push: {
  approvalId: string;
  sessionTitle?: string | undefined;
  risk?: "high" | undefined;
}): Promise<string> {
  const fallback = approvalTitle({
    title: privateWaitingLine(push.sessionTitle),
    ...(push.risk && { risk: push.risk }),
  });
  try {
    const [approval, policy] = await Promise.all([
      getJson(`/v1/approvals/${encodeURIComponent(push.approvalId)}`).then((j) => approvalSchema.parse(j)),
      getJson("/v1/policy").then((j) => teamPolicySchema.parse(j)),
    ]);
    if (policy.lockScreen === "generic") return fallback;
    const opened = await openWithKeys(approval, await allDeviceKeys());
    if (opened.state !== "opened") return fallback;
    const { toolCall, elicitation } = opened.plaintext.snapshot;
    const title = elicitation?.message || (typeof toolCall.title === "string" ? toolCall.title : "");
    return title ? approvalTitle({ title, ...(approval.risk === "high" && { risk: "high" }) }) : fallback;
  } catch {
    return fallback;
  }
}
